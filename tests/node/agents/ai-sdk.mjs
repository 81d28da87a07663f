// The Vercel AI SDK (`ai` with `@ai-sdk/openai` / `@ai-sdk/anthropic`): one conversation with two
// tools and a step limit, as its docs write it.
//   node ai-sdk.mjs PROVIDER MODE   PROVIDER: openai-chat | openai-responses | anthropic
//                                   MODE: generate (generateText) | stream (streamText)
// @ai-sdk/anthropic's base URL includes /v1 (its default is https://api.anthropic.com/v1), unlike
// the Anthropic SDK's: ANTHROPIC_BASE_URL, the root, would send it to ROOT/messages.
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";
import { ADD, CLAUDE, LOOKUP, MODEL, ROOT, add, lookup, main } from "./_contract.mjs";

const [provider = "openai-chat", mode = "generate"] = process.argv.slice(2);

function model() {
  if (provider === "anthropic") return createAnthropic({ baseURL: `${ROOT}/v1` })(CLAUDE);
  const openai = createOpenAI(); // OPENAI_BASE_URL and OPENAI_API_KEY from the environment
  if (provider === "openai-chat") return openai.chat(MODEL);
  if (provider === "openai-responses") return openai.responses(MODEL);
  throw new Error(`unknown provider ${provider}: openai-chat, openai-responses or anthropic`);
}

const tools = {
  add: tool({
    description: ADD.description,
    inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
    execute: async (input) => add(input),
  }),
  lookup: tool({
    description: LOOKUP.description,
    inputSchema: z.object({ word: z.string() }),
    execute: async (input) => lookup(input),
  }),
};

main(async (prompt) => {
  const options = { model: model(), tools, prompt, stopWhen: stepCountIs(10) };
  if (mode === "generate") return (await generateText(options)).text;
  if (mode !== "stream") throw new Error(`unknown mode ${mode}: generate or stream`);
  return await streamText(options).text;
});
