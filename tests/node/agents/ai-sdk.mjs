// The Vercel AI SDK (`ai` with `@ai-sdk/openai` / `@ai-sdk/anthropic`): one conversation with two
// tools and a step limit, as its docs write it.
//   node ai-sdk.mjs PROVIDER MODE [checked]
//     PROVIDER: openai-chat | openai-responses | anthropic
//     MODE: generate (generateText) | stream (streamText)
//     checked: with the workarounds of docs/wire-campaigns.md's AI SDK findings: strict tool
//     schemas (`z.strictObject`: a plain `z.object` strips a key the model added and sends the call
//     back rewritten, W2), and a streamed answer refused when `onError` saw an error or the stream
//     ended without its stop reason (`finishReason` "other"), W5; but not for an
//     `AI_TypeValidationError`: that is an event of a type the provider package does not know, which
//     Anthropic documents clients ignore, and the stream goes on to its stop reason
//     (tests/node/findings/ai-sdk-anthropic-unknown-event.mjs), W8.
// A read timeout as the AI SDK takes one (its `timeout` call setting): `chunkMs`, the longest wait
// between a stream's chunks once content has come, and `stepMs`, a deadline for each step (one
// model call with its retries): the only bound on a reply that is not streamed, and on a stream
// that stalls before its first content, which `chunkMs` does not arm for (vercel/ai#16538; the
// `firstChunkMs` added for it is not in ai 6.0.326).
// @ai-sdk/anthropic's base URL includes /v1 (its default is https://api.anthropic.com/v1), unlike
// the Anthropic SDK's: ANTHROPIC_BASE_URL, the root, would send it to ROOT/messages.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { TypeValidationError, generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { ADD, CLAUDE, LOOKUP, MODEL, add, lookup, main, root } from "./_contract.mjs";

const [provider = "openai-chat", mode = "generate", checked] = process.argv.slice(2);
const object = checked === "checked" ? z.strictObject : z.object;

function model() {
  if (provider === "anthropic") return createAnthropic({ baseURL: `${root()}/v1` })(CLAUDE);
  const openai = createOpenAI(); // OPENAI_BASE_URL and OPENAI_API_KEY from the environment
  if (provider === "openai-chat") return openai.chat(MODEL);
  if (provider === "openai-responses") return openai.responses(MODEL);
  throw new Error(`unknown provider ${provider}: openai-chat, openai-responses or anthropic`);
}

const tools = {
  add: tool({
    description: ADD.description,
    inputSchema: object({ a: z.number().int(), b: z.number().int() }),
    execute: async (input) => add(input),
  }),
  lookup: tool({
    description: LOOKUP.description,
    inputSchema: object({ word: z.string() }),
    execute: async (input) => lookup(input),
  }),
};

// On Responses the SDK sends its earlier output back as `item_reference`s by default (the server
// keeps it, `store: true`); the campaign's judge reads each as the item it names, as OpenAI does.
// HARNESS_AI_SDK_STORE=false sends every item whole instead.
const providerOptions =
  provider === "openai-responses" && process.env.HARNESS_AI_SDK_STORE === "false"
    ? { openai: { store: false } }
    : undefined;

main(async (prompt) => {
  const timeout = { stepMs: 10_000, chunkMs: 2_000 };
  const options = { model: model(), tools, prompt, providerOptions, stopWhen: stepCountIs(10), timeout };
  if (mode === "generate") return (await generateText(options)).text;
  if (mode !== "stream") throw new Error(`unknown mode ${mode}: generate or stream`);
  if (checked !== "checked") return await streamText(options).text;
  const errors = [];
  const onError = ({ error }) => TypeValidationError.isInstance(error) || errors.push(error);
  const result = streamText({ ...options, onError });
  const [text, finishReason] = [await result.text, await result.finishReason];
  if (errors.length) throw errors[0];
  if (finishReason === "other") throw new Error("the stream ended without its stop reason");
  return text;
});
