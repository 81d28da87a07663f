// LangChain.js: `createAgent` (from `langchain`) over ChatOpenAI or ChatAnthropic with two tools.
//   node langchain.mjs PROVIDER [stream]   PROVIDER: openai (chat completions) | anthropic
// ChatOpenAI takes the base URL as `configuration.baseURL` (BASE/v1), ChatAnthropic as
// `anthropicApiUrl` (the root, as the Anthropic SDK). "stream" streams the agent's messages
// (`agent.stream(..., { streamMode: "messages" })`, LangChain.js's way to stream an agent): a chat
// model made with `streaming: true` and invoked estimates the tokens it used with a tokenizer it
// fetches from tiktoken.pages.dev, which offline stalls every run. Two retries, not LangChain.js's
// default six: with its back-off (from 1 s, doubling) a service that keeps failing holds a run
// about 100 s before it raises, past the campaign's 20 s time bound (W3; docs/wire-campaigns.md).
// A read timeout (CLIENT_OPTIONS, _contract.mjs): `timeout` as the models take it, and undici's
// dispatcher through the SDK client's options (`configuration`, `clientOptions`).
import { ChatAnthropic } from "@langchain/anthropic";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent } from "langchain";
import { z } from "zod";
import { ADD, CLAUDE, CLIENT_OPTIONS, LOOKUP, MODEL, add, lookup, main } from "./_contract.mjs";

const [provider = "openai", stream] = process.argv.slice(2);

function model() {
  if (provider === "openai") {
    const configuration = { baseURL: process.env.OPENAI_BASE_URL, fetchOptions: CLIENT_OPTIONS.fetchOptions };
    return new ChatOpenAI({ model: MODEL, maxRetries: 2, timeout: CLIENT_OPTIONS.timeout, configuration });
  }
  if (provider === "anthropic") {
    const anthropicApiUrl = process.env.ANTHROPIC_BASE_URL;
    return new ChatAnthropic({ model: CLAUDE, maxRetries: 2, anthropicApiUrl, clientOptions: CLIENT_OPTIONS });
  }
  throw new Error(`unknown provider ${provider}: openai or anthropic`);
}

const tools = [
  tool(add, { ...ADD, schema: z.object({ a: z.number().int(), b: z.number().int() }) }),
  tool(lookup, { ...LOOKUP, schema: z.object({ word: z.string() }) }),
];

function text(content) {
  if (typeof content === "string") return content;
  return content.map((part) => (typeof part === "string" ? part : (part.text ?? ""))).join("");
}

main(async (prompt) => {
  const agent = createAgent({ model: model(), tools });
  const input = { messages: [{ role: "user", content: prompt }] };
  if (stream !== "stream") return text((await agent.invoke(input)).messages.at(-1).content);
  let state;
  for await (const [mode, chunk] of await agent.stream(input, { streamMode: ["messages", "values"] })) {
    if (mode === "values") state = chunk;
  }
  return text(state.messages.at(-1).content);
});
