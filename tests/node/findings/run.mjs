// Runs every standalone reproduction in this folder (node and the frameworks only, no harness code),
// each in its own process with a time limit, and says for each whether it still reproduces its
// finding (docs/wire-campaigns.md, "The JavaScript frameworks"). Exit 0 when every one does; 1
// when one no longer does (a framework release fixed it: the finding and its row should go) or
// failed to run. .ci/run runs it after `npm ci` in tests/node.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const files = readdirSync(here).filter((name) => name.endsWith(".mjs") && name !== "run.mjs" && !name.startsWith("_")).sort();
let failed = 0;
for (const name of files) {
  const done = spawnSync(process.execPath, [join(here, name)], { encoding: "utf8", timeout: 60_000 });
  const verdict = done.status === 0 ? "reproduces" : done.status === 1 ? "NO LONGER REPRODUCES" : `FAILED (${done.error?.code ?? `exit ${done.status ?? done.signal}`})`;
  failed += done.status !== 0;
  console.log(`${name}: ${verdict}`);
  for (const line of `${done.stdout}${done.status === 0 ? "" : done.stderr}`.trim().split("\n")) if (line) console.log(`  ${line}`);
}
console.log(`${files.length - failed} of ${files.length} findings reproduce`);
process.exit(failed ? 1 : 0);
