// A tool-call loop over `@anthropic-ai/sdk` (messages, streamed): the Anthropic wire, where a cut
// stream loses its stop reason. `node anthropic_loop.mjs`.
import { require, serve, TOOLS, execute, withRetries, CLIENT_OPTIONS } from "./serve.mjs";

const { Anthropic } = require("@anthropic-ai/sdk");
const tools = TOOLS.map(({ name, description, parameters }) => ({ name, description, input_schema: parameters }));

async function converse(prompt, env) {
  const client = new Anthropic({ baseURL: env.ANTHROPIC_BASE_URL, apiKey: env.ANTHROPIC_API_KEY, ...CLIENT_OPTIONS });
  const messages = [{ role: "user", content: prompt }];
  for (let round = 0; round < 20; round++) {
    const message = await withRetries(() =>
      client.messages.stream({ model: "claude-test", max_tokens: 100, messages, tools }).finalMessage(),
    );
    if (!message.stop_reason) throw new Error("the stream ended without a stop reason");
    const uses = message.content.filter((block) => block.type === "tool_use");
    if (uses.length === 0) return message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
    messages.push({ role: "assistant", content: message.content });
    messages.push({
      role: "user",
      content: uses.map((block) => ({
        type: "tool_result",
        tool_use_id: block.id,
        content: execute(block.name, JSON.stringify(block.input)),
      })),
    });
  }
  throw new Error("no answer after 20 rounds");
}

await serve(converse);
