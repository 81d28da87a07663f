// Standalone reproduction (node, the AI SDK and @ai-sdk/anthropic, a few lines of node:http; no
// harness code): `streamText` on Anthropic reports an SSE event of a type it does not know as an
// error (`AI_TypeValidationError` to `onError`, an `error` part in `fullStream`), though Anthropic's
// streaming docs say new event types may be added and clients should handle unknown ones
// gracefully (the `provider` tier). The answer still resolves ("Done.", `finishReason` "stop"), so
// an agent that ignores `onError` is not hurt; one that refuses a stream whose `onError` fired (the
// workaround for a malformed chunk, `ai-sdk-streamtext-malformed-chunk.mjs`) raises on a whole,
// well-formed reply: W8. `@ai-sdk/anthropic` validates each event against a discriminated union
// of the types it knows (`anthropicMessagesChunkSchema`) and enqueues a failed parse as an error.
// docs/wire-findings.md, "The JavaScript frameworks". Exit 0: it still reproduces; 1: it no longer does.
import { createServer } from "node:http";
import { createAnthropic } from "@ai-sdk/anthropic";
import { streamText } from "ai";

const event = (data) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
const BODY = [
  event({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude-test", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } }),
  event({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
  event({ type: "novel_thing", note: "an event type added after this client was written" }),
  event({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Done." } }),
  event({ type: "content_block_stop", index: 0 }),
  event({ type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 1 } }),
  event({ type: "message_stop" }),
].join("");

const server = createServer((request, response) => {
  request.resume().on("end", () => {
    response.writeHead(200, { "content-type": "text/event-stream" });
    response.end(BODY);
  });
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const model = createAnthropic({ baseURL: `http://127.0.0.1:${server.address().port}/v1`, apiKey: "k" })("claude-test");
globalThis.AI_SDK_LOG_WARNINGS = false;
const errors = [];
const result = streamText({ model, prompt: "hi", maxOutputTokens: 16, onError: ({ error }) => errors.push(error) });
const [text, finishReason] = [await result.text, await result.finishReason];
server.close();
const seen = text === "Done." && errors.length === 1 && errors[0].name === "AI_TypeValidationError";
const told = errors.map((e) => e.name).join(", ") || "not called";
console.log(`Anthropic: an unknown event type in a whole stream: returned ${JSON.stringify(text)} (finishReason ${finishReason}), onError: ${told}${seen ? "" : ": NOT reproduced"}`);
process.exit(seen ? 0 : 1);
