// The OpenAI Agents SDK for JS (`@openai/agents`): an agent with two tools, run by `run()`.
//   node openai-agents.mjs API [stream]   API: chat (OpenAIChatCompletionsModel) | responses
// Streamed on chat it returns a cut stream's text (W5: docs/wire-campaigns.md, "The JavaScript frameworks").
// The client is `new OpenAI()`, reading OPENAI_BASE_URL and OPENAI_API_KEY from the environment,
// with a read timeout (CLIENT_OPTIONS, _contract.mjs: the Agents SDK has none of its own); tracing is off (it uploads traces to OpenAI otherwise).
import { Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, run, setTracingDisabled, tool } from "@openai/agents";
import OpenAI from "openai";
import { z } from "zod";
import { ADD, CLIENT_OPTIONS, LOOKUP, MODEL, add, lookup, main } from "./_contract.mjs";

setTracingDisabled(true);
const [api = "chat", stream] = process.argv.slice(2);

function model() {
  const client = new OpenAI(CLIENT_OPTIONS);
  if (api === "chat") return new OpenAIChatCompletionsModel(client, MODEL);
  if (api === "responses") return new OpenAIResponsesModel(client, MODEL);
  throw new Error(`unknown API ${api}: chat or responses`);
}

const tools = [
  tool({ ...ADD, parameters: z.object({ a: z.number().int(), b: z.number().int() }), execute: add }),
  tool({ ...LOOKUP, parameters: z.object({ word: z.string() }), execute: lookup }),
];

main(async (prompt) => {
  const agent = new Agent({ name: "assistant", instructions: "Use the tools.", model: model(), tools });
  if (stream !== "stream") return (await run(agent, prompt)).finalOutput;
  const result = await run(agent, prompt, { stream: true });
  await result.completed;
  if (result.error) throw result.error;
  return result.finalOutput;
});
