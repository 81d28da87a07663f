// Standalone reproduction (node, the AI SDK and its provider packages, a few lines of node:http; no
// harness code): `streamText` returns a stream that ended before its stop reason as a complete
// answer. The body ends cleanly after the text (a proxy or gateway closing it leaves it so: the
// `network` tier): OpenAI chat without its finish_reason chunk and `data: [DONE]`, Anthropic
// after `content_block_stop` without `message_delta` and `message_stop`, Responses without
// `response.completed`. `await result.text` resolves to the text so far, `finishReason` is
// "other", and `onError` is not called. docs/wire-campaigns.md, "The JavaScript frameworks".
// Exit 0: it still reproduces; exit 1: it no longer does (the finding should go).
import { createServer } from "node:http";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { streamText } from "ai";

const sse = (events) => events.map(([event, data]) => `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`).join("");
const CUT = {
  "/v1/chat/completions": sse([
    [null, { id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-test", choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] }],
    [null, { id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-test", choices: [{ index: 0, delta: { content: "Done." }, finish_reason: null }] }],
  ]),
  "/v1/messages": sse([
    ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude-test", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } }],
    ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Done." } }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
  ]),
  "/v1/responses": sse([
    ["response.created", { type: "response.created", sequence_number: 0, response: { id: "resp_1", object: "response", created_at: 1, status: "in_progress", model: "gpt-test", output: [] } }],
    ["response.output_item.added", { type: "response.output_item.added", sequence_number: 1, output_index: 0, item: { id: "msg_1", type: "message", status: "in_progress", role: "assistant", content: [] } }],
    ["response.output_text.delta", { type: "response.output_text.delta", sequence_number: 2, output_index: 0, content_index: 0, item_id: "msg_1", delta: "Done." }],
    ["response.output_item.done", { type: "response.output_item.done", sequence_number: 3, output_index: 0, item: { id: "msg_1", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Done.", annotations: [] }] } }],
  ]),
};

const server = createServer((request, response) => {
  request.resume().on("end", () => {
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(CUT[request.url]); // a clean end of the body, before the stop reason
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${server.address().port}/v1`;

const models = {
  "OpenAI chat": createOpenAI({ baseURL: base, apiKey: "k" }).chat("gpt-test"),
  Anthropic: createAnthropic({ baseURL: base, apiKey: "k" })("claude-test"),
  "OpenAI Responses": createOpenAI({ baseURL: base, apiKey: "k" }).responses("gpt-test"),
};
globalThis.AI_SDK_LOG_WARNINGS = false;
let reproduced = 0;
for (const [wire, model] of Object.entries(models)) {
  const errors = [];
  const result = streamText({ model, prompt: "hi", maxOutputTokens: 16, onError: ({ error }) => errors.push(error) });
  const [text, finishReason] = [await result.text, await result.finishReason];
  const seen = text === "Done." && errors.length === 0;
  reproduced += seen;
  console.log(`${wire}: a cut stream returned ${JSON.stringify(text)} (finishReason ${finishReason}, onError ${errors.length ? "called" : "not called"})${seen ? "" : ": NOT reproduced"}`);
}
server.close();
process.exit(reproduced === Object.keys(models).length ? 0 : 1);
