// What every agent here shares: the `harness fuzz --agent-cmd` contract (DESIGN section 6, "Any
// agent, any language") read from the environment, the two tools of the Python agents
// (tests/harness/agents/frameworks.py), and the exit protocol: the answer on stdout and exit 0, or
// the error on stderr and a non-zero exit. With HARNESS_AGENT_MODE=lines (`--agent-cmd-mode
// lines`), one process serves the whole campaign: a JSON line per conversation on stdin
// (`{"conversation", "prompt", "env"}`), its environment set before the run builds its clients,
// and a JSON line back (`{"conversation", "answer"}` or `{"conversation", "error"}`).
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { Agent } from "undici";

// stdout carries the answer alone: what frameworks print with console.log or console.info (the AI
// SDK's notice at its first warning is a console.info) goes to stderr, kept for the report.
console.log = console.info = console.error;

export const MODEL = "gpt-test";
export const CLAUDE = "claude-test";

/** The conversation's root on the emulator; OPENAI_BASE_URL is it + "/v1", ANTHROPIC_BASE_URL is it. */
export function root() {
  return process.env.HARNESS_BASE_URL;
}

/** A read timeout, as the SDKs over fetch take one: their own `timeout` (openai, @anthropic-ai/sdk)
 * is cleared once the response's headers arrive (openai/openai-node#1825), so a body that stops
 * sending without closing waits for undici's defaults (`headersTimeout` and `bodyTimeout`, 300 s
 * each), past the campaign's 20 s time bound (W3). An undici `Agent` with both at 2 s, given to the
 * SDK as its `fetchOptions.dispatcher` (the SDKs' documented way to configure fetch), ends a
 * stalled attempt; the SDK's own `timeout` still bounds the wait for the headers. */
export const READ_TIMEOUT_MS = 2_000;
export const dispatcher = new Agent({ headersTimeout: READ_TIMEOUT_MS, bodyTimeout: READ_TIMEOUT_MS });
export const CLIENT_OPTIONS = { timeout: READ_TIMEOUT_MS, fetchOptions: { dispatcher } };

export const ADD = { name: "add", description: "Add two integers." };
export const LOOKUP = { name: "lookup", description: "Look a word up." };

export function add({ a, b }) {
  return String(a + b);
}

export function lookup({ word }) {
  return `${word}: a word`;
}

/** Runs one conversation and ends the process: some clients keep sockets alive that would keep
 * node running after the answer, and the campaign waits for the process's exit. `run(prompt)`
 * builds its clients from process.env when it is called, so that the lines mode can set each
 * conversation's environment first. */
export async function main(run) {
  if (process.env.HARNESS_AGENT_MODE === "lines") return serveLines(run);
  let text;
  try {
    text = await run(process.env.HARNESS_PROMPT ?? readFileSync(0, "utf8"));
  } catch (error) {
    process.stderr.write(`${error?.stack ?? error}\n`, () => process.exit(1));
    return;
  }
  process.stdout.write(String(text ?? ""), () => process.exit(0));
}

async function serveLines(run) {
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const { conversation, prompt, env } = JSON.parse(line);
    Object.assign(process.env, env);
    let said;
    try {
      said = { conversation, answer: String((await run(prompt)) ?? "") };
    } catch (error) {
      console.error(error?.stack ?? String(error));
      said = { conversation, error: String(error?.message ?? error) };
    }
    process.stdout.write(`${JSON.stringify(said)}\n`);
  }
  process.exit(0);
}
