"""Re-run every framework campaign the project keeps, as ``docs/wire-findings.md`` ran them, and
say per campaign what it found, so a release of the harness (new reply kinds, new invariants) or
of a framework is checked against the documented verdicts in one command:

    python -m tests.harness.agents.campaigns_rerun [--jobs N] [--examples 100] [--seed 21]
        [--only TEXT ...] [--out DIR] [--time-bound 20] [--hostile] [--list]

Run it from the checkout with the ``agents`` extra installed (the Python frameworks) and ``npm ci``
done in ``tests/node`` (the JavaScript ones). The campaigns: each agent of ``frameworks.AGENTS``
(the docs' table of the Python frameworks; ``harness fuzz --agent``), each of
``test_node_frameworks.CAMPAIGNS`` and the two plain loops of ``agents/node`` (``harness fuzz
--agent-cmd "node ..." --agent-cmd-mode lines``). Each runs in its own process
(``run_agent_campaign``, what both commands run), ``--jobs`` at a time (default 1: a campaign's
time bound and W6's clock are judged on a machine that is not busy with its neighbours).

Written to ``--out``: ``campaigns.jsonl``, one JSON line per campaign as it ends (agent, verdict
with invariant, tier, message and saved scenario, the kinds served, the runs' endings and what
they raised, wall seconds), ``summary.md`` (a table, with the verdict the docs have and whether it
changed, and the kinds served over all campaigns), and ``saved/`` (each violation's scenario).
Not a test: it takes about an hour at the default budget.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from threading import Lock
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
LOOPS = ("openai_loop", "anthropic_loop")
"""The plain node loops of ``agents/node`` (held in the docs' table of the JavaScript campaigns)."""

PYTHON_DOCUMENTED = {
    "pydantic-ai, OpenAI chat (streamed)": ("W5", "network"),
    "LangChain, OpenAI chat (streamed)": ("W5", "network"),
    "LiteLLM, Anthropic": ("W6", "provider"),
    "LiteLLM, Gemini": ("W6", "provider"),
}
"""The Python campaigns that docs/wire-findings.md ("The campaigns") has as a finding; every other
agent of ``frameworks.AGENTS`` held there."""


@dataclass(frozen=True)
class Campaign:
    """One campaign: how the summary names it, what runs (``module:callable`` or a command), the
    verdict the docs have for it (``None``: held)."""

    name: str
    target: str
    command: bool
    documented: tuple[str, str] | None


def campaigns() -> list[Campaign]:
    """Every campaign the project keeps (importing the frameworks: the ``agents`` extra)."""
    from tests.harness.agents import frameworks
    from tests.harness.agents.test_node_frameworks import AGENTS, CAMPAIGNS

    found = [
        Campaign(name, f"{frameworks.__name__}:{agent.__name__}", False, PYTHON_DOCUMENTED.get(name))
        for name, agent in frameworks.AGENTS.items()
    ]
    for name, verdict in sorted(CAMPAIGNS.items()):
        file, *arguments = name.split()
        command = " ".join(["node", str(AGENTS / f"{file}.mjs"), *arguments])
        documented = None if verdict.invariant is None else (verdict.invariant, str(verdict.tier))
        found.append(Campaign(f"node {name}", command, True, documented))
    for loop in LOOPS:
        command = f"node {ROOT / 'tests' / 'harness' / 'agents' / 'node' / f'{loop}.mjs'}"
        found.append(Campaign(f"node {loop}", command, True, None))
    return found


# -- one campaign, in its own process ---------------------------------------------------------


def run_one(
    campaign: Campaign, examples: int, seed: int, time_bound: float, saved: Path, hostile: bool = False
) -> dict[str, Any]:
    """The campaign's line: run in this process (the worker), as ``harness fuzz`` runs it."""
    from harness.agents import ProcessAgent, UnsteadyAgentError, run_agent_campaign
    from harness.scenarios._scenario_parts import import_user_object

    agent = ProcessAgent(campaign.target, mode="lines") if campaign.command else import_user_object(campaign.target)
    line: dict[str, Any] = {"agent": campaign.name, "target": campaign.target, "examples": examples, "seed": seed}
    line["hostile"] = hostile
    try:
        result = run_agent_campaign(
            agent, examples, seed, time_bound=time_bound, save_dir=saved, name=campaign.target, hostile=hostile
        )
    except UnsteadyAgentError as exc:
        return line | {"verdict": "inconclusive", "message": f"unsteady agent: {exc}"}
    stats = result.stats
    raised: Counter[str] = Counter()
    for each in stats.raised.values():
        raised[each.name] += each.count
    line |= {
        "conversations": stats.conversations,
        "requests": stats.requests,
        "served": dict(sorted(stats.kinds.items())),
        "endings": dict(sorted(stats.endings.items())),
        "raised": dict(raised),
        "campaign_seconds": round(stats.wall_seconds, 1),
    }
    if result.failure is not None:
        violation = result.failure.violation
        also = [f"{v.invariant} ({v.tier})" for v in violation.also]
        saved_at = str(result.failure.path) if result.failure.path else None
        verdict = {"invariant": violation.invariant, "tier": violation.tier, "also": also, "saved": saved_at}
        return line | {"verdict": "violation", "message": violation.message, **verdict}
    if result.inconclusive:
        return line | {"verdict": "inconclusive", "message": " ".join(result.inconclusive)}
    return line | {"verdict": "held"}


def _worker(arguments: argparse.Namespace) -> None:
    """The worker is told the campaign, not left to find it: a node campaign's worker then never
    imports the Python frameworks (seconds of start-up on a busy machine)."""
    chosen = Campaign(arguments.worker, arguments.target, arguments.command, None)
    saved = Path(arguments.saved)
    line = run_one(chosen, arguments.examples, arguments.seed, arguments.time_bound, saved, arguments.hostile)
    print("CAMPAIGN " + json.dumps(line, ensure_ascii=False), flush=True)


# -- the re-run ---------------------------------------------------------------------------------


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def launch(campaign: Campaign, arguments: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Runs ``campaign`` in a worker process and returns its line (an ``error`` verdict when the
    worker died or overran ``--campaign-timeout``: its log is kept beside the lines)."""
    saved = out / "saved" / slug(campaign.name)
    log = out / "logs" / f"{slug(campaign.name)}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    worker = [sys.executable, "-m", "tests.harness.agents.campaigns_rerun", "--worker", campaign.name]
    worker += ["--examples", str(arguments.examples), "--seed", str(arguments.seed)]
    worker += ["--time-bound", str(arguments.time_bound), "--saved", str(saved), "--target", campaign.target]
    worker += ["--command"] if campaign.command else []
    worker += ["--hostile"] if arguments.hostile else []
    began = time.monotonic()
    line: dict[str, Any] = {"agent": campaign.name, "target": campaign.target}
    try:
        done = subprocess.run(
            worker, cwd=ROOT, capture_output=True, text=True, timeout=arguments.campaign_timeout, check=False
        )
        log.write_text(done.stdout + done.stderr, encoding="utf-8")
        said = [x for x in done.stdout.splitlines() if x.startswith("CAMPAIGN ")]
        if said:
            line = json.loads(said[-1].removeprefix("CAMPAIGN "))
        else:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            line |= {"verdict": "error", "message": f"the worker exited {done.returncode}: {tail}"}
    except subprocess.TimeoutExpired:
        line |= {"verdict": "error", "message": f"no verdict after {arguments.campaign_timeout:.0f} s"}
    line["wall_seconds"] = round(time.monotonic() - began, 1)
    line["documented"] = documented_text(campaign.documented)
    # the docs' verdicts are at their budget: a smaller campaign may stop before a documented finding
    at_docs_budget = (arguments.examples, arguments.seed, arguments.hostile) == (100, 21, False)
    line["changed"] = at_docs_budget and verdict_text(line) != line["documented"]
    return line


def documented_text(documented: tuple[str, str] | None) -> str:
    return "held" if documented is None else f"{documented[0]} ({documented[1]})"


def verdict_text(line: dict[str, Any]) -> str:
    if line.get("verdict") == "violation":
        return f"{line['invariant']} ({line['tier']})"
    return str(line.get("verdict"))


def summary(lines: list[dict[str, Any]], arguments: argparse.Namespace) -> str:
    """The markdown summary: one row per campaign, then the kinds served over all of them."""
    rows = [
        f"# Framework campaigns: {arguments.examples} conversations each, seed {arguments.seed}"
        + (", hostile" if arguments.hostile else ""),
        "",
        "`documented` is the verdict docs/wire-findings.md has (100 conversations, seed 21); `changed` is"
        " said only at that budget.",
        "",
        "| agent | verdict | documented | changed | conversations | requests | raised | wall s | message |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for line in lines:
        raised = ", ".join(f"{count} `{name}`" for name, count in sorted(line.get("raised", {}).items()))
        message = str(line.get("message", "")).replace("|", "\\|").replace("\n", " ")[:200]
        if line.get("saved"):
            message += f" (saved: `{Path(line['saved']).name}`)"
        rows.append(
            f"| {line['agent']} | {verdict_text(line)} | {line['documented']} | {'**yes**' if line['changed'] else ''} "
            f"| {line.get('conversations', '')} | {line.get('requests', '')} | {raised} | {line['wall_seconds']} "
            f"| {message} |"
        )
    served: Counter[str] = Counter()
    for line in lines:
        served.update(line.get("served", {}))
    rows += ["", "Kinds served over all campaigns:", "", "| kind | replies |", "|---|---|"]
    rows += [f"| {kind} | {count} |" for kind, count in sorted(served.items())]
    return "\n".join(rows) + "\n"


def rerun(arguments: argparse.Namespace) -> int:
    chosen = [c for c in campaigns() if not arguments.only or any(o.lower() in c.name.lower() for o in arguments.only)]
    if arguments.list or not chosen:
        print("\n".join(f"{c.name}\t{c.target}" for c in chosen) or f"no campaign matches {arguments.only}")
        return 0 if chosen else 2
    out = Path(arguments.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    jsonl = out / "campaigns.jsonl"
    jsonl.write_text("", encoding="utf-8")
    lines: list[dict[str, Any]] = []
    lock = Lock()

    def one(campaign: Campaign) -> None:
        line = launch(campaign, arguments, out)
        with lock:
            lines.append(line)
            with jsonl.open("a", encoding="utf-8") as file:
                file.write(json.dumps(line, ensure_ascii=False) + "\n")
            print(f"{line['agent']}: {verdict_text(line)} ({line['wall_seconds']} s)", flush=True)

    with ThreadPoolExecutor(max_workers=arguments.jobs) as pool:
        list(pool.map(one, chosen))
    order = {c.name: i for i, c in enumerate(chosen)}
    lines.sort(key=lambda line: order[line["agent"]])
    (out / "summary.md").write_text(summary(lines, arguments), encoding="utf-8")
    print(f"{len(lines)} campaigns: {jsonl} and {out / 'summary.md'}")
    return 0


def parser() -> argparse.ArgumentParser:
    parsing = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], prog="campaigns_rerun")
    parsing.add_argument("--jobs", type=int, default=1, help="campaigns at a time (default 1)")
    parsing.add_argument("--examples", type=int, default=100, help="conversations per campaign (default 100)")
    parsing.add_argument("--seed", type=int, default=21, help="the docs' seed (default 21)")
    parsing.add_argument("--time-bound", type=float, default=20.0, help="seconds a run may take (W3; default 20)")
    parsing.add_argument("--campaign-timeout", type=float, default=1800.0, help="seconds before a campaign is given up")
    parsing.add_argument("--only", nargs="*", default=[], help="campaigns whose name contains one of these")
    parsing.add_argument("--out", default="campaigns-rerun", help="where the lines, summary and scenarios go")
    parsing.add_argument("--hostile", action="store_true", help="also draw the invalid tier (findings/hostile)")
    parsing.add_argument("--list", action="store_true", help="list the campaigns and stop")
    parsing.add_argument("--worker", help=argparse.SUPPRESS)
    parsing.add_argument("--saved", help=argparse.SUPPRESS)
    parsing.add_argument("--target", help=argparse.SUPPRESS)
    parsing.add_argument("--command", action="store_true", help=argparse.SUPPRESS)
    return parsing


def main() -> int:
    arguments = parser().parse_args()
    if arguments.jobs < 1 or arguments.examples < 1:
        parser().error("--jobs and --examples take a whole number from 1")
    os.environ.setdefault("COLUMNS", "200")
    if arguments.worker:
        _worker(arguments)
        return 0
    return rerun(arguments)


if __name__ == "__main__":
    sys.exit(main())
