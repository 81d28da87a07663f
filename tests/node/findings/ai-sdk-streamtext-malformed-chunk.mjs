// Standalone reproduction (node, the AI SDK and its provider packages, a few lines of node:http; no
// harness code): `streamText` skips a chunk whose JSON is broken (a proxy or a broken connection
// mangles it: the `network` tier), reports it to `onError` only, and `await result.text` resolves
// to the text without it, `finishReason` "stop": the stream's answer, with its only text lost, is
// returned as complete ("" here). On OpenAI chat (the text delta cut in half, then the finish chunk
// and `[DONE]`), Anthropic (the `content_block_delta` cut in half, then the stop events) and
// Responses (the `response.output_text.delta` cut in half, then the item whole and
// `response.completed`).
// docs/wire-campaigns.md, "The JavaScript frameworks". Exit 0: it still reproduces; 1: it no longer does.
import { createServer } from "node:http";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { streamText } from "ai";

const chunk = (delta, finish_reason = null) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-test", choices: [{ index: 0, delta, finish_reason }] })}\n\n`;
const event = (data) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
const broken = (text) => text.slice(0, text.indexOf("Done.") + 2) + "\n\n"; // the event cut after "Do"
const DONE_ITEM = { id: "msg_1", type: "message", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Done.", annotations: [] }] };
const BODIES = {
  "/v1/chat/completions": broken(chunk({ role: "assistant", content: "Done." })) + chunk({}, "stop") + "data: [DONE]\n\n",
  "/v1/messages": [
    event({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude-test", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } }),
    event({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    broken(event({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Done." } })),
    event({ type: "content_block_stop", index: 0 }),
    event({ type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 1 } }),
    event({ type: "message_stop" }),
  ].join(""),
  "/v1/responses": [
    event({ type: "response.created", sequence_number: 0, response: { id: "resp_1", object: "response", created_at: 1, status: "in_progress", model: "gpt-test", output: [] } }),
    event({ type: "response.output_item.added", sequence_number: 1, output_index: 0, item: { id: "msg_1", type: "message", status: "in_progress", role: "assistant", content: [] } }),
    broken(event({ type: "response.output_text.delta", sequence_number: 2, output_index: 0, content_index: 0, item_id: "msg_1", delta: "Done." })),
    event({ type: "response.output_item.done", sequence_number: 3, output_index: 0, item: DONE_ITEM }),
    event({ type: "response.completed", sequence_number: 4, response: { id: "resp_1", object: "response", created_at: 1, status: "completed", model: "gpt-test", output: [DONE_ITEM], usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } } }),
  ].join(""),
};

const server = createServer((request, response) => {
  request.resume().on("end", () => {
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(BODIES[request.url]);
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
  const seen = text === "" && errors.length === 1 && errors[0].name === "AI_JSONParseError";
  reproduced += seen;
  const told = errors.map((e) => e.name).join(", ") || "not called";
  console.log(`${wire}: a broken chunk, then the stop: returned ${JSON.stringify(text)} (finishReason ${finishReason}, onError: ${told})${seen ? "" : ": NOT reproduced"}`);
}
server.close();
process.exit(reproduced === Object.keys(models).length ? 0 : 1);
