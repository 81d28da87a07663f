// What every agent here shares: the `harness fuzz --agent-cmd` contract (DESIGN section 6, "Any
// agent, any language") read from the environment, the two tools of the Python agents
// (tests/harness/agents/frameworks.py), and the exit protocol: the answer on stdout and exit 0, or
// the error on stderr and a non-zero exit.
import { readFileSync } from "node:fs";

// stdout carries the answer alone: what frameworks print with console.log or console.info (the AI
// SDK's notice at its first warning is a console.info) goes to stderr, kept for the report.
console.log = console.info = console.error;

/** The conversation's root on the emulator; OPENAI_BASE_URL is it + "/v1", ANTHROPIC_BASE_URL is it. */
export const ROOT = process.env.HARNESS_BASE_URL;
export const MODEL = "gpt-test";
export const CLAUDE = "claude-test";

/** The prompt: HARNESS_PROMPT, or stdin when run by hand without it. */
export function prompt() {
  return process.env.HARNESS_PROMPT ?? readFileSync(0, "utf8");
}

export const ADD = { name: "add", description: "Add two integers." };
export const LOOKUP = { name: "lookup", description: "Look a word up." };

export function add({ a, b }) {
  return String(a + b);
}

export function lookup({ word }) {
  return `${word}: a word`;
}

/** Runs one conversation and ends the process: some clients keep sockets alive that would keep
 * node running after the answer, and the campaign waits for the process's exit. */
export async function main(run) {
  let text;
  try {
    text = await run(prompt());
  } catch (error) {
    process.stderr.write(`${error?.stack ?? error}\n`, () => process.exit(1));
    return;
  }
  process.stdout.write(String(text ?? ""), () => process.exit(0));
}
