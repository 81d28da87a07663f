import { ChatOpenAI } from "@langchain/openai";
const m = new ChatOpenAI({ model: "gpt-test", streaming: true, configuration: { baseURL: process.env.OPENAI_BASE_URL } });
setTimeout(()=>{console.error("still pending");}, 3000);
const r = await m.invoke("hi");
console.error("got", JSON.stringify(r.tool_calls), JSON.stringify(r.content));
