// Templates for the standalone reproduction of a finding on the behaviours of issue 36 (node, the
// framework and its SDK, a few lines of node:http; no harness code), to copy into
// `<framework>-<what>.mjs` here when a campaign finds one, then trim to the one reply and the
// framework's agent. run.mjs skips files starting with "_": a template asserts nothing.
//   node _template.mjs                 each reply to the plain `openai` SDK (streamed, 2 s timeout)
//   node _template.mjs serve REPLY     serve one reply on loopback, printing the root URL, to point
//                                      an agent at (OPENAI_BASE_URL=ROOT/v1, ANTHROPIC_BASE_URL=ROOT)
// The replies (each a function of the node:http response):
//   stall                   headers and one SSE event, then nothing, the socket held (network: W3).
//                           openai's and @anthropic-ai/sdk's `timeout` is cleared once the headers
//                           arrive (openai/openai-node#1825): only undici's bodyTimeout (300 s by
//                           default) or the framework's own chunk timeout ends it
//   split_utf8              a chat stream written in two writes cutting a UTF-8 character (network)
//   usage_only_final_chunk  the `choices: []` chunk of stream_options.include_usage (provider: W8)
//   unknown_event           an Anthropic Messages stream with an event type it does not document
//                           yet, which its docs say clients ignore (provider: W8; chat completions
//                           streams carry no event types: there, add an unknown field instead)
//   unauthorized            a 401 on every request, counted (provider: W7, a retry sends it again)
//   insufficient_quota      OpenAI's 429 for an account out of quota, counted (provider: W7): the
//                           SDKs retry every 429 unless told `x-should-retry: false`
// main() reads each stream as a careful loop does (`choices[0]?`), so what it prints is the SDK's
// own behaviour. A finding's file ends as the others here do: print what the framework did, exit 0 while the
// finding reproduces and 1 once a release fixed it.
import { createServer } from "node:http";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

export const chunk = (delta, finish_reason = null, fields = {}) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "gpt-test", choices: [{ index: 0, delta, finish_reason }], ...fields })}\n\n`;
export const ANSWER = [chunk({ role: "assistant", content: "" }), chunk({ content: "Done." }), chunk({}, "stop")];
export const DONE = "data: [DONE]\n\n";
const MESSAGE = { id: "msg_1", type: "message", role: "assistant", model: "claude-test", content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 0 } };
export const MESSAGES = [
  ["message_start", { message: MESSAGE }],
  ["content_block_start", { index: 0, content_block: { type: "text", text: "" } }],
  ["novel_thing", { note: "an event type added after this client was written" }],
  ["content_block_delta", { index: 0, delta: { type: "text_delta", text: "Done." } }],
  ["content_block_stop", { index: 0 }],
  ["message_delta", { delta: { stop_reason: "end_turn" }, usage: { output_tokens: 2 } }],
  ["message_stop", {}],
];
const SSE = { "content-type": "text/event-stream" };
export const requests = []; // the request bodies received: a retry is a second one

export const REPLIES = {
  stall(response) {
    response.writeHead(200, SSE);
    response.write(ANSWER[0]); // then nothing: the client's read timeout (or nothing) ends it
  },
  split_utf8(response) {
    const bytes = Buffer.from(chunk({ role: "assistant", content: "Caf\u00e9 \u2615" }) + ANSWER.slice(2).join("") + DONE);
    const cut = bytes.indexOf(Buffer.from("\u2615")) + 1; // inside the cup's three bytes
    response.writeHead(200, SSE);
    response.write(bytes.subarray(0, cut));
    setTimeout(() => response.end(bytes.subarray(cut)), 200); // so the client reads the halves apart
  },
  usage_only_final_chunk(response) {
    const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
    response.writeHead(200, SSE);
    response.end(ANSWER.join("") + chunk({}, null, { choices: [], usage }) + DONE);
  },
  unknown_event(response) {
    response.writeHead(200, SSE);
    response.end(MESSAGES.map(([type, data]) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`).join(""));
  },
  unauthorized(response) {
    response.writeHead(401, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: { message: "Incorrect API key", type: "invalid_request_error", code: null } }));
  },
  insufficient_quota(response) {
    const error = { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" };
    response.writeHead(429, { "content-type": "application/json" });
    response.end(JSON.stringify({ error }));
  },
};

/** A loopback server answering every request with `reply`; resolves to it and its root URL. */
export async function serving(reply) {
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (part) => (body += part)).on("end", () => (requests.push(body), reply(response)));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, root: `http://127.0.0.1:${server.address().port}` };
}

async function main() {
  if (process.argv[2] === "serve") {
    const reply = REPLIES[process.argv[3]];
    const started = Date.now();
    const { root } = await serving((response) => {
      console.log(`request ${requests.length} at ${((Date.now() - started) / 1000).toFixed(1)} s`);
      reply(response);
    });
    console.log(root);
    return;
  }
  for (const [name, reply] of Object.entries(REPLIES)) {
    requests.length = 0;
    const { server, root } = await serving(reply);
    const client = new OpenAI({ baseURL: `${root}/v1`, apiKey: "k", timeout: 2_000, maxRetries: 0 });
    const claude = new Anthropic({ baseURL: root, apiKey: "k", timeout: 2_000, maxRetries: 0 });
    const started = Date.now();
    let outcome;
    try {
      const deadline = new Promise((_, reject) => setTimeout(() => reject(new Error("still waiting after 10 s")), 10_000));
      const messages = [{ role: "user", content: "hi" }];
      const read = (async () => {
        if (name === "unknown_event") {
          const message = await claude.messages.stream({ model: "claude-test", max_tokens: 10, messages }).finalMessage();
          return message.content.map((block) => block.text ?? "").join("");
        }
        const stream = await client.chat.completions.create({ model: "gpt-test", messages, stream: true });
        let text = "";
        for await (const c of stream) text += c.choices[0]?.delta?.content ?? ""; // a careful loop: [0]?
        return text;
      })();
      outcome = `returned ${JSON.stringify(await Promise.race([read, deadline]))}`;
    } catch (error) {
      outcome = `raised ${error?.name}: ${error?.message}`;
    }
    console.log(`${name}: ${outcome} (${((Date.now() - started) / 1000).toFixed(1)} s, ${requests.length} request(s))`);
    server.closeAllConnections();
    server.close();
  }
  process.exit(0);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
