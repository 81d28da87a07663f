// Standalone reproduction (node, the AI SDK and @ai-sdk/openai, a few lines of node:http; no harness
// code): `generateText` on OpenAI chat and Responses sends a request that OpenAI refused with its
// 429 `insufficient_quota` (the account out of credit: not retryable, `provider` tier) two more
// times, unchanged, with its default `maxRetries: 2` (2 s then 4 s of back-off), then raises
// `AI_RetryError`: W7. `@ai-sdk/openai`'s HTTP error handler (`openaiFailedResponseHandler`) sets
// no `isRetryable`, so `APICallError` counts every 429 retryable (`@ai-sdk/provider`), though the
// same package already reads `insufficient_quota` as not retryable in a stream's error frame
// (`isRetryableStreamError`). Not the `openai` SDK's retry (the AI SDK does not use it).
// docs/wire-findings.md, "The JavaScript frameworks". Exit 0: it still reproduces; 1: it no longer does.
import { createServer } from "node:http";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText } from "ai";

const QUOTA = { error: { message: "You exceeded your current quota", type: "insufficient_quota", param: null, code: "insufficient_quota" } };
const arrived = {};
const server = createServer((request, response) => {
  let body = "";
  request.on("data", (part) => (body += part)).on("end", () => {
    (arrived[request.url] ??= []).push(body);
    response.writeHead(429, { "content-type": "application/json" });
    response.end(JSON.stringify(QUOTA));
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const openai = createOpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: "k" });
const models = { "OpenAI chat": ["/v1/chat/completions", openai.chat("gpt-test")], "OpenAI Responses": ["/v1/responses", openai.responses("gpt-test")] };
globalThis.AI_SDK_LOG_WARNINGS = false;

const outcomes = await Promise.all(
  Object.entries(models).map(async ([wire, [path, model]]) => {
    let raised = "nothing";
    try {
      await generateText({ model, prompt: "hi" });
    } catch (error) {
      raised = error.name;
    }
    const sent = arrived[path] ?? [];
    const seen = sent.length === 3 && new Set(sent).size === 1 && raised === "AI_RetryError";
    console.log(`${wire}: a 429 insufficient_quota: ${sent.length} identical request(s), then raised ${raised}${seen ? "" : ": NOT reproduced"}`);
    return seen;
  }),
);
server.close();
process.exit(outcomes.every(Boolean) ? 0 : 1);
