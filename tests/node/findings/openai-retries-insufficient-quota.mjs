// Standalone reproduction (node and the `openai` SDK, a few lines of node:http; no harness code): with
// its default `maxRetries: 2` one call sends a request OpenAI refused with its 429
// `insufficient_quota` (the account out of credit, no `Retry-After`: not retryable; the `provider`
// tier) three times, unchanged, then throws `RateLimitError`: W7. `openai`'s `shouldRetry`
// (`client.mjs`) retries every 408, 409, 429 and 5xx unless the server says `x-should-retry: false`;
// the error's `code` is read only to build the exception. The OpenAI Agents SDK for JS (and every
// framework over this client with its retries on) inherits it; the Python SDK does the same
// (`tests/harness/agents/findings/test_openai_insufficient_quota_retried.py`).
// docs/wire-findings.md, "The JavaScript frameworks". Exit 0: it still reproduces; 1: it no longer does.
import { createServer } from "node:http";
import OpenAI from "openai";

const QUOTA = { error: { message: "You exceeded your current quota", type: "insufficient_quota", param: null, code: "insufficient_quota" } };
const arrived = [];
const server = createServer((request, response) => {
  let body = "";
  request.on("data", (part) => (body += part)).on("end", () => {
    arrived.push(body);
    response.writeHead(429, { "content-type": "application/json" });
    response.end(JSON.stringify(QUOTA));
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const client = new OpenAI({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: "k" });
let raised = "nothing";
try {
  await client.chat.completions.create({ model: "gpt-test", messages: [{ role: "user", content: "hi" }] });
} catch (error) {
  raised = `${error.constructor.name} (code ${error.code})`;
}
server.close();
const seen = arrived.length === 3 && new Set(arrived).size === 1 && raised.startsWith("RateLimitError");
console.log(`OpenAI chat: a 429 insufficient_quota: ${arrived.length} identical request(s), then raised ${raised}${seen ? "" : ": NOT reproduced"}`);
process.exit(seen ? 0 : 1);
