// The official JS clients asking one streamed question each, through whatever base URLs the
// environment names (OPENAI_BASE_URL, ANTHROPIC_BASE_URL): harness proxy's tests run this against
// the proxy while it records and again while it replays. Prints one JSON line: per client, the
// answer and how many stream events carried it.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

const openai = new OpenAI({ maxRetries: 0 });
const chat = await openai.chat.completions.create({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "Weather in Paris?" }],
  stream: true,
});
let openaiText = "";
let openaiEvents = 0;
for await (const chunk of chat) {
  openaiEvents += 1;
  openaiText += chunk.choices[0]?.delta?.content ?? "";
}

const anthropic = new Anthropic({ maxRetries: 0 });
const stream = await anthropic.messages.create({
  model: "claude-3-5-haiku-latest",
  max_tokens: 64,
  messages: [{ role: "user", content: "Weather in Oslo?" }],
  stream: true,
});
let anthropicText = "";
let anthropicEvents = 0;
for await (const event of stream) {
  anthropicEvents += 1;
  if (event.type === "content_block_delta" && event.delta.type === "text_delta") anthropicText += event.delta.text;
}

console.log(
  JSON.stringify({
    openai: { text: openaiText, events: openaiEvents },
    anthropic: { text: anthropicText, events: anthropicEvents },
  }),
);
