// A tool-call loop over the `openai` SDK (chat completions, streamed), with the defects the wire
// campaign must find planted on demand: `node openai_loop.mjs [DEFECT...]`.
//   unanswered       (W1) of several calls in one reply, only the first gets its result
//   rewrite_history  (W2) an assistant message with calls is stored without its text
//   endless          (W3) after an unknown tool the loop never accepts an answer again
//   cut_text         (W5) a stream cut before its finish reason is returned as the answer
//   retry_now        (W6) rate limits are retried at once, ignoring Retry-After
import { require, serve, TOOLS, execute, withRetries, CLIENT_OPTIONS } from "./serve.mjs";

const { OpenAI } = require("openai");
const defects = new Set(process.argv.slice(2));
const tools = TOOLS.map((tool) => ({ type: "function", function: tool }));

async function complete(client, messages) {
  const stream = await withRetries(
    () => client.chat.completions.create({ model: "gpt-test", messages, tools, stream: true }),
    !defects.has("retry_now"),
  );
  let text = "";
  let finish = null;
  const calls = [];
  for await (const chunk of stream) {
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    text += choice.delta?.content ?? choice.delta?.refusal ?? ""; // a refusal's message is its answer
    for (const delta of choice.delta?.tool_calls ?? []) {
      const slot = (calls[delta.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
      slot.id = delta.id || slot.id;
      slot.function.name += delta.function?.name ?? "";
      slot.function.arguments += delta.function?.arguments ?? "";
    }
    finish = choice.finish_reason ?? finish;
  }
  if (finish === "content_filter") throw new Error(`the provider's content filter withheld the reply after ${JSON.stringify(text)}`);
  return { text, calls: calls.filter(Boolean), finish };
}

async function converse(prompt, env) {
  const client = new OpenAI({ baseURL: env.OPENAI_BASE_URL, apiKey: env.OPENAI_API_KEY, ...CLIENT_OPTIONS });
  const messages = [{ role: "user", content: prompt }];
  let insist = false;
  for (let round = 0; round < 20; round++) {
    const { text, calls, finish } = await complete(client, messages);
    if (finish === null && !defects.has("cut_text")) throw new Error(`the stream ended without a finish reason after ${JSON.stringify(text)}`);
    if (calls.length === 0) {
      if (insist) {
        messages.push({ role: "assistant", content: text }, { role: "user", content: "Use a tool." });
        continue;
      }
      return text;
    }
    messages.push({ role: "assistant", content: defects.has("rewrite_history") ? null : text || null, tool_calls: calls });
    for (const [position, call] of calls.entries()) {
      if (position > 0 && defects.has("unanswered")) break;
      const { name, arguments: text } = call.function;
      if (!["add", "lookup"].includes(name) && defects.has("endless")) insist = true;
      messages.push({ role: "tool", tool_call_id: call.id, content: execute(name, text) });
    }
  }
  throw new Error("no answer after 20 rounds");
}

await serve(converse);
