// Standalone reproduction (node, langchain's createAgent over @langchain/openai's ChatOpenAI, a few
// lines of node:http; no harness code): an agent streamed as LangChain.js streams one
// (`agent.stream(input, { streamMode: ["messages", "values"] })`) returns the text of a chat stream
// that ended before its stop reason as its answer: the body ends cleanly after a text delta, or
// inside one (a proxy or gateway closing it leaves it so: the `network` tier), without the
// `finish_reason` chunk and `data: [DONE]`. The last message carries no `finish_reason` in its
// `response_metadata`, the only sign. docs/wire-campaigns.md, "The JavaScript frameworks".
// Exit 0: it still reproduces; 1: it no longer does.
import { createServer } from "node:http";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent } from "langchain";

const chunk = (delta) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-test", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
const START = chunk({ role: "assistant", content: "" });
const BODIES = {
  "after a text delta": START + chunk({ content: "Done." }),
  "inside a text delta": START + chunk({ content: "The answer is 5." }).replace("er is 5.", ""),
};

async function streamedAnswer(body) {
  const server = createServer((request, response) => {
    request.resume().on("end", () => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const baseURL = `http://127.0.0.1:${server.address().port}/v1`;
  const model = new ChatOpenAI({ model: "gpt-test", apiKey: "k", maxRetries: 0, configuration: { baseURL } });
  const agent = createAgent({ model, tools: [] });
  let state;
  try {
    const input = { messages: [{ role: "user", content: "hi" }] };
    for await (const [mode, chunk] of await agent.stream(input, { streamMode: ["messages", "values"] })) {
      if (mode === "values") state = chunk;
    }
  } finally {
    server.close();
  }
  const last = state.messages.at(-1);
  return { text: last.content, finish: last.response_metadata?.finish_reason };
}

let reproduced = 0;
for (const [where, body] of Object.entries(BODIES)) {
  let outcome;
  try {
    const { text, finish } = await streamedAnswer(body);
    outcome = `returned ${JSON.stringify(text)} (finish_reason ${finish ?? "absent"})`;
    reproduced += typeof text === "string" && text.length > 0 && !finish;
  } catch (error) {
    outcome = `raised ${error?.name}: ${error?.message}`;
  }
  console.log(`the body ended cleanly ${where}: ${outcome}`);
}
process.exit(reproduced === Object.keys(BODIES).length ? 0 : 1);
