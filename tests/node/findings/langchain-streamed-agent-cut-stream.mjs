// Standalone reproduction (node, langchain's createAgent over @langchain/openai's ChatOpenAI and
// @langchain/anthropic's ChatAnthropic, a few lines of node:http; no harness code): an agent
// streamed as LangChain.js streams one (`agent.stream(input, { streamMode: ["messages", "values"]
// })`) returns the text of a stream that ended before its stop reason as its answer (a proxy or
// gateway closing the body leaves it so: the `network` tier): OpenAI chat ending cleanly after a
// text delta, or inside one, without the `finish_reason` chunk and `data: [DONE]`; Anthropic after
// `content_block_stop`, without `message_delta` and `message_stop`. The last message carries no
// finish reason, whole or cut. docs/wire-campaigns.md, "The JavaScript frameworks".
// Exit 0: it still reproduces; 1: it no longer does.
import { createServer } from "node:http";
import { ChatAnthropic } from "@langchain/anthropic";
import { ChatOpenAI } from "@langchain/openai";
import { createAgent } from "langchain";

const chunk = (delta) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-test", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;
const START = chunk({ role: "assistant", content: "" });
const event = (data) => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
const BODIES = {
  "OpenAI chat, after a text delta": START + chunk({ content: "Done." }),
  "OpenAI chat, inside a text delta": START + chunk({ content: "The answer is 5." }).replace("er is 5.", ""),
  "Anthropic, after content_block_stop": [
    event({ type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", model: "claude-test", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 1, output_tokens: 1 } } }),
    event({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
    event({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Done." } }),
    event({ type: "content_block_stop", index: 0 }),
  ].join(""),
};

async function streamedAnswer(where, body) {
  const server = createServer((request, response) => {
    request.resume().on("end", () => {
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const root = `http://127.0.0.1:${server.address().port}`;
  const model = where.startsWith("Anthropic")
    ? new ChatAnthropic({ model: "claude-test", apiKey: "k", maxRetries: 0, anthropicApiUrl: root })
    : new ChatOpenAI({ model: "gpt-test", apiKey: "k", maxRetries: 0, configuration: { baseURL: `${root}/v1` } });
  const agent = createAgent({ model, tools: [] });
  let state;
  try {
    const input = { messages: [{ role: "user", content: "hi" }] };
    for await (const [mode, chunk] of await agent.stream(input, { streamMode: ["messages", "values"] })) {
      if (mode === "values") state = chunk;
    }
  } finally {
    server.close();
  }
  const last = state.messages.at(-1);
  const text = typeof last.content === "string" ? last.content : last.content.map((part) => part.text ?? "").join("");
  return { text, finish: last.response_metadata?.finish_reason ?? last.response_metadata?.stop_reason };
}

let reproduced = 0;
for (const [where, body] of Object.entries(BODIES)) {
  let outcome;
  try {
    const { text, finish } = await streamedAnswer(where, body);
    outcome = `returned ${JSON.stringify(text)} (finish_reason ${finish ?? "absent"})`;
    reproduced += typeof text === "string" && text.length > 0 && !finish;
  } catch (error) {
    outcome = `raised ${error?.name}: ${error?.message}`;
  }
  console.log(`${where}, the body ended cleanly: ${outcome}`);
}
process.exit(reproduced === Object.keys(BODIES).length ? 0 : 1);
