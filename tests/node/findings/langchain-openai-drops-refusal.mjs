// Standalone reproduction (node, @langchain/openai and its `openai` SDK, a few lines of node:http; no
// harness code): `ChatOpenAI` on OpenAI chat completions drops a refusal. OpenAI sends it as
// `message.refusal` with `content: null` (the model declining: the `provider` tier), for the user
// to read; `@langchain/openai`'s `convertCompletionsMessageToBaseMessage`
// (`converters/completions.js:158-190`) builds the AIMessage from `message.content || ""` and keeps
// neither `refusal` in `additional_kwargs` nor the finish reason in `response_metadata`, so the
// message is `""` with nothing saying why, and an agent (`createAgent`) returns an empty answer: W4,
// the refusal rule. Its Responses converter keeps it (`additional_kwargs.refusal`,
// `converters/responses.js:250`), as the Python `langchain-openai` does on both.
// docs/wire-findings.md, "The JavaScript frameworks". Exit 0: it still reproduces; 1: it no longer does.
import { createServer } from "node:http";
import { ChatOpenAI } from "@langchain/openai";

const REFUSAL = "I can't help with that.";
const REPLY = {
  id: "c1", object: "chat.completion", created: 1, model: "gpt-test",
  choices: [{ index: 0, message: { role: "assistant", content: null, refusal: REFUSAL }, finish_reason: "stop", logprobs: null }],
  usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 },
};
const server = createServer((request, response) => {
  request.resume().on("end", () => {
    response.writeHead(200, { "content-type": "application/json" });
    response.end(JSON.stringify(REPLY));
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const baseURL = `http://127.0.0.1:${server.address().port}/v1`;
const model = new ChatOpenAI({ model: "gpt-test", apiKey: "k", maxRetries: 0, configuration: { baseURL } });
const message = await model.invoke("hi");
server.close();
const kept = JSON.stringify({ additional_kwargs: message.additional_kwargs, response_metadata: message.response_metadata }).includes(REFUSAL);
const seen = message.content === "" && !kept;
console.log(`OpenAI chat: a refusal (${JSON.stringify(REFUSAL)}, content null): message.content ${JSON.stringify(message.content)}, the refusal ${kept ? "kept" : "kept nowhere"}${seen ? "" : ": NOT reproduced"}`);
process.exit(seen ? 0 : 1);
