// Standalone reproduction (node, the AI SDK and @ai-sdk/openai, a few lines of node:http; no
// harness code): a tool call whose arguments hold a key the tool's schema does not have (a model
// sends such calls: the `provider` tier) is validated with the tool's zod schema, which strips the
// key, and the next request sends the call back with the stripped arguments, not the ones the
// model sent: the history is rewritten. With `z.strictObject` the call is refused as invalid
// input instead, and goes back as it was sent. docs/wire-campaigns.md, "The JavaScript frameworks".
// Exit 0: it still reproduces; 1: it no longer does.
import { createServer } from "node:http";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, tool } from "ai";
import { z } from "zod";

const SENT = '{"unexpected": "x", "word": "hi"}';
const message = (body) => ({ role: "assistant", content: null, ...body });
const completion = (msg, finish_reason) =>
  JSON.stringify({ id: "c1", object: "chat.completion", created: 1, model: "gpt-test", choices: [{ index: 0, message: message(msg), finish_reason }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });
const CALL = completion({ tool_calls: [{ id: "call_1", type: "function", function: { name: "lookup", arguments: SENT } }] }, "tool_calls");
const ANSWER = completion({ content: "Done." }, "stop");

async function sentBack(schema) {
  const requests = [];
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk)).on("end", () => {
      requests.push(JSON.parse(body));
      response.writeHead(200, { "content-type": "application/json" });
      response.end(requests.length === 1 ? CALL : ANSWER);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const model = createOpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: "k" }).chat("gpt-test");
  const lookup = tool({ description: "Look a word up.", inputSchema: schema, execute: async ({ word }) => `${word}: a word` });
  await generateText({ model, tools: { lookup }, prompt: "hi", stopWhen: stepCountIs(5) });
  server.close();
  return requests[1].messages.find((m) => m.role === "assistant").tool_calls[0].function.arguments;
}

const stripped = await sentBack(z.object({ word: z.string() }));
const strict = await sentBack(z.strictObject({ word: z.string() }));
console.log(`the model sent ${SENT}; sent back with z.object: ${stripped}; with z.strictObject: ${strict}`);
const reproduced = JSON.stringify(JSON.parse(stripped)) !== JSON.stringify(JSON.parse(SENT));
console.log(reproduced ? "reproduced: the call came back rewritten" : "NOT reproduced: the call came back as sent");
process.exit(reproduced ? 0 : 1);
