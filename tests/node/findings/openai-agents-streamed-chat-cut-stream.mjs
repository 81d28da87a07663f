// Standalone reproduction (node, @openai/agents and openai, a few lines of node:http; no harness
// code): an agent on OpenAIChatCompletionsModel, run streamed (`run(agent, prompt, { stream: true
// })`), returns a chat stream that ended before its stop reason as a complete answer: the body ends
// cleanly after a text delta, without the `finish_reason` chunk and `data: [DONE]` (a proxy or
// gateway closing it leaves it so: the `network` tier). The SDK ends such a stream quietly, and the
// Agents SDK finishes the turn with the text so far. docs/wire-campaigns.md, "The JavaScript
// frameworks". Exit 0: it still reproduces; 1: it no longer does.
import { createServer } from "node:http";
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";

const chunk = (delta) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-test", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
const CUT = chunk({ role: "assistant", content: "" }) + chunk({ content: "Done." }); // no finish_reason, no [DONE]

const server = createServer((request, response) => {
  request.resume().on("end", () => {
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(CUT);
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
setTracingDisabled(true);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: "k", maxRetries: 0 });
const agent = new Agent({ name: "assistant", model: new OpenAIChatCompletionsModel(client, "gpt-test") });

let outcome;
try {
  const result = await run(agent, "hi", { stream: true });
  await result.completed;
  outcome = result.error ? `raised ${result.error}` : `returned ${JSON.stringify(result.finalOutput)}`;
} catch (error) {
  outcome = `raised ${error?.name}: ${error?.message}`;
}
server.close();
const reproduced = outcome === 'returned "Done."';
console.log(`streamed run on a cut chat stream: ${outcome}${reproduced ? "" : ": NOT reproduced"}`);
process.exit(reproduced ? 0 : 1);
