// How a node agent meets `harness fuzz --agent-cmd` (docs/wire-campaigns.md, "Any language"):
// one conversation per process (the prompt on stdin, each provider's base URL in the environment,
// the answer on stdout, a non-zero exit for a run that raised), or, when HARNESS_AGENT_MODE is
// "lines" (--agent-cmd-mode lines), one JSON line per conversation on stdin and one answer line on
// stdout, so node starts once per campaign.
import { createRequire } from "node:module";
import { createInterface } from "node:readline";

// The SDKs pinned in tests/node (npm ci there): resolved from that folder, wherever node runs.
export const require = createRequire(new URL("../../../node/package.json", import.meta.url));

async function readStdin() {
  let text = "";
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

export async function serve(converse) {
  if (process.env.HARNESS_AGENT_MODE !== "lines") {
    const prompt = process.env.HARNESS_PROMPT ?? (await readStdin());
    try {
      process.stdout.write(await converse(prompt, process.env));
    } catch (error) {
      console.error(error?.stack ?? String(error));
      process.exitCode = 1;
    }
    return;
  }
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const { conversation, prompt, env } = JSON.parse(line);
    let said;
    try {
      said = { conversation, answer: await converse(prompt, { ...process.env, ...env }) };
    } catch (error) {
      console.error(error?.stack ?? String(error));
      said = { conversation, error: String(error?.message ?? error) };
    }
    process.stdout.write(JSON.stringify(said) + "\n");
  }
}

export const TOOLS = [
  {
    name: "add",
    description: "Add two integers.",
    parameters: {
      type: "object",
      properties: { a: { type: "integer" }, b: { type: "integer" } },
      required: ["a", "b"],
      additionalProperties: false,
    },
  },
  {
    name: "lookup",
    description: "Look a word up.",
    parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
  },
];

// The tools' results: an argument text that is not what the tool takes is an error result, never a throw.
export function execute(name, text) {
  let args;
  try {
    args = JSON.parse(text || "{}");
  } catch {
    return "error: the arguments are not JSON";
  }
  if (args === null || typeof args !== "object" || Array.isArray(args)) return "error: the arguments are not an object";
  if (name === "add") {
    const keys = Object.keys(args).sort().join(",");
    if (keys !== "a,b" || !Number.isInteger(args.a) || !Number.isInteger(args.b)) return "error: add takes integers a and b";
    return String(args.a + args.b);
  }
  if (name === "lookup") {
    if (typeof args.word !== "string") return "error: lookup takes a word";
    return `${args.word}: a word`;
  }
  return `error: no tool named ${name}`;
}

export const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

// 429, 500 and 503 are retried here, after their Retry-After (the SDK's own retries are off: its
// back-off would make a campaign slow without testing the loop); `waits` false is the planted defect.
export async function withRetries(send, waits = true) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      const status = error?.status;
      // a 429 insufficient_quota is an account out of credit: no retry gets past it (W7)
      if (![429, 500, 503].includes(status) || error?.code === "insufficient_quota" || attempt === 2) throw error;
      if (waits) {
        const asked = error.headers?.get?.("retry-after") ?? error.headers?.["retry-after"];
        await sleep(Number(asked ?? 1));
      }
    }
  }
}
