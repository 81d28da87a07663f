"""Where a wire campaign's time goes (issue 21 point 6), beside a bare run of the same agent.

Run: ``python benchmarks/wire_campaign.py [--conversations N] [--repeat R] [--seed S]``.

For each agent, in one process and interleaved (so drift in the machine's speed hits all alike):

- **bare**: the agent runs N conversations against a plain ``Emulator`` serving a fixed script
  (a call of ``add``, then the answer), the script reset between conversations: the agent and the
  wire, no harness at all;
- **campaign**: ``run_agent_campaign(agent, N)`` (``harness fuzz --agent``), its replies drawn by
  Hypothesis as requests arrive and each run judged by W1-W6.

The campaign's wall time is split three ways by meters on the emulator (a subclass put in place of
the campaign's ``WireEmulator``; nothing in the campaign changes):

- **the agent**: the framework and the SDK, i.e. each conversation's wall time less the time its
  requests spent in the emulator. It includes the ``Retry-After`` waits the replies ask for (an
  error status is drawn in about one reply in 24, with a wait of 0.05 or 0.1 s, which a correct
  agent honours): printed apart as "asked to wait";
- **the wire**: the emulator serving, i.e. the time requests spent in it (in process: its
  ``answer``; on loopback: its ASGI app, from the request's arrival to the last byte written) less
  the time they waited for their reply to be chosen;
- **the harness**: everything else: choosing the replies (Hypothesis drawing, and the hand-over to
  the drawing thread and back), judging, Hypothesis itself, starting and stopping the emulator.
  A clean agent is never shrunk, so shrinking costs nothing here.

Rows: the planted loop over the ``openai`` SDK without defects (``tests/harness/agents/planted.py``)
in process and on loopback, pydantic-ai (OpenAI chat) in process where it is importable (the
``agents`` extra; skipped, saying why, where not), and the node loop over the ``openai`` SDK
(``tests/harness/agents/node/openai_loop.mjs``, ``harness fuzz --agent-cmd``) with a process per
conversation and with one long-lived process (``--agent-cmd-mode lines``), where node and
tests/node/node_modules are there. Its bare runs are the same command's, in the same mode: node's
start-up is the agent's time in both. And a **seeded** campaign (``harness fuzz --from-cassette``,
``run_seeded_campaign``) of the planted loop in process, seeded by a recording the benchmark makes
of the same agent first (vcrpy, the emulator serving five calls of ``add``, one at a time, then the
answer): example 0 the recording unchanged, then mutations of it (a fault before a recorded reply,
a reply replaced, a call's arguments), replies drawn fresh once the agent leaves it; its bare run
serves the recorded six-reply script. Medians of ``--repeat`` repetitions, same seed
each time (the same conversations). The target: the harness's share at most a quarter. Beside the
wall-time split, the CPU time of the campaign's own thread (where Hypothesis draws, replies are
chosen and runs judged) against the whole process's: what the harness costs, whatever the load.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Emulator, turn
from harness.agents import _conversation as campaign_module
from harness.agents import run_agent_campaign, run_seeded_campaign
from harness.emulator import Fault

PROMPT = "What is 2 + 3? Use your tools."
API_KEY = "sk-emulated"
TARGET = 0.25


@dataclass
class Meter:
    """What the emulator saw, per conversation: its wall time, the time its requests spent inside
    the emulator, and the part of that they waited for their reply to be chosen. A campaign's
    conversation counts once the campaign took it (``on_example``); one Hypothesis threw away (a
    draw past its buffer, say) is the harness's cost, whole."""

    serving: float = 0.0
    choosing: float = 0.0
    conversations: float = 0.0
    requests: int = 0
    taken: int = 0
    discarded: int = 0
    discarded_seconds: float = 0.0
    asked_to_wait: float = 0.0
    loopback: bool = False
    current: dict[str, float] = field(default_factory=dict)
    pending: dict[str, float] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self.current[name] = self.current.get(name, 0.0) + seconds

    def begin(self) -> None:
        self.drop_pending()
        with self._lock:
            self.current = {"started": time.perf_counter()}

    def end(self) -> None:
        with self._lock:
            self.current["wall"] = time.perf_counter() - self.current.get("started", time.perf_counter())
            self.pending, self.current = self.current, {}

    def take(self) -> None:
        """The campaign counted the conversation that just ended."""
        if self.pending is None:
            return
        done, self.pending = self.pending, None
        self.taken += 1
        self.conversations += done["wall"]
        self.serving += done.get("serving", 0.0)
        self.choosing += done.get("choosing", 0.0)
        self.requests += int(done.get("requests", 0))
        self.asked_to_wait += done.get("asked_to_wait", 0.0)

    def drop_pending(self) -> None:
        if self.pending is not None:
            self.discarded += 1
            self.discarded_seconds += self.pending["wall"]
            self.pending = None

    def totals(self) -> None:
        """A bare run has no conversations to take: everything it saw counts."""
        self.serving += self.current.get("serving", 0.0)
        self.choosing += self.current.get("choosing", 0.0)
        self.requests += int(self.current.get("requests", 0))
        self.current = {}


def metered(base: type[Emulator], meter: Meter) -> type[Emulator]:
    """``base`` with meters on ``answer`` (in process), its ASGI app (loopback), ``entry`` (the wait
    for a reply's choice) and, for a campaign's emulator, ``open`` and ``close`` (a conversation's
    bounds)."""

    class Metered(base):  # type: ignore[misc, valid-type]
        def answer(self, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return super().answer(*args, **kwargs)
            finally:
                if not meter.loopback:
                    meter.add("serving", time.perf_counter() - started)
                meter.add("requests", 1)

        def entry(self, number: int, request: Any) -> Any:
            started = time.perf_counter()
            chosen = super().entry(number, request)
            meter.add("choosing", time.perf_counter() - started)
            if isinstance(chosen, Fault) and chosen.status in (429, 500, 503) and chosen.retry_after:
                meter.add("asked_to_wait", float(chosen.retry_after))  # type: ignore[arg-type]
            return chosen

        def app(self) -> Any:
            inner = super().app()

            async def timed(scope: Any, receive: Any, send: Any) -> None:
                if scope["type"] != "http":
                    await inner(scope, receive, send)
                    return
                started = time.perf_counter()
                try:
                    await inner(scope, receive, send)
                finally:
                    meter.add("serving", time.perf_counter() - started)

            return timed

        def open(self, inbox: Any) -> Any:  # a campaign's emulator: a conversation begins
            meter.begin()
            return super().open(inbox)

        def close(self, live: Any, **how: Any) -> None:  # ... and ends (abandoned or not)
            if "started" in meter.current:
                meter.end()
            super().close(live, **how)

    return Metered


# -- the agents ------------------------------------------------------------------------------------


@dataclass
class Contender:
    label: str
    agent: Callable[..., Any]
    in_process: bool
    is_async: bool
    seeded: Path | None = None
    """A cassette: the campaign is ``harness fuzz --from-cassette`` (the bare run serves what it recorded)."""


DEEP = 5
"""Tool rounds in the recording a seeded row starts from: past the fourth, where seeding earns its keep."""


def deep_script() -> list[Any]:
    """What the recording's emulator served: ``DEEP`` calls of ``add``, one at a time, then the answer."""
    return [*(turn.tool_call("add", a=n, b=1) for n in range(1, DEEP + 1)), turn.text("The answer is 5.")]


def recording(agent: Callable[..., Any]) -> Path:
    """A cassette of ``agent``'s own conversation with the emulator serving :func:`deep_script`,
    recorded as the ``recorded`` fixture records (vcrpy, the emulator on loopback)."""
    import tempfile

    import vcr

    path = Path(tempfile.mkdtemp(prefix="seeded-benchmark-")) / "deep.yaml"
    emulator = Emulator(*deep_script())
    base_url = emulator.start()
    try:
        with vcr.use_cassette(str(path), record_mode="all", filter_headers=["authorization"]):
            agent(PROMPT, base_url=base_url, api_key=API_KEY)
    finally:
        emulator.stop()
    return path


def contenders() -> tuple[list[Contender], list[str]]:
    from tests.harness.agents import planted

    rows = [
        Contender("planted loop (openai SDK, sync, streamed), in process", planted.agent, True, False),
        Contender("planted loop (openai SDK, sync, streamed), on loopback", planted.loopback_agent, False, False),
        Contender(
            f"planted loop, in process, seeded by its own recording ({DEEP} tool rounds)",
            planted.agent,
            True,
            False,
            recording(planted.agent),
        ),
    ]
    skipped = []
    try:  # the agent CI fuzzes (tests/harness/agents/frameworks.py), which imports every framework
        from tests.harness.agents.frameworks import pydantic_ai_chat
    except ImportError as exc:
        skipped.append(f"pydantic-ai (OpenAI chat), in process: {exc.name} is not installed (the agents extra)")
    else:
        rows.append(Contender("pydantic-ai (OpenAI chat), in process", pydantic_ai_chat, True, True))
    rows += node_contenders(skipped)
    return rows, skipped


def node_contenders(skipped: list[str]) -> list[Contender]:
    """The node loop over the ``openai`` SDK (``tests/harness/agents/node/openai_loop.mjs``) run as a
    command: a process per conversation (``--agent-cmd``), and one long-lived process
    (``--agent-cmd-mode lines``)."""
    import shutil

    from harness.agents import ProcessAgent

    root = Path(__file__).resolve().parents[1]
    if shutil.which("node") is None:
        skipped.append("node loop (openai SDK), as a command: node is not installed")
        return []
    if not (root / "tests" / "node" / "node_modules" / "openai").is_dir():
        skipped.append("node loop (openai SDK), as a command: tests/node/node_modules is missing (npm ci there)")
        return []
    command = f"node {root / 'tests' / 'harness' / 'agents' / 'node' / 'openai_loop.mjs'}"
    return [
        Contender("node loop (openai SDK), a process per conversation", ProcessAgent(command), False, False),
        Contender(
            "node loop (openai SDK), one long-lived process (lines)", ProcessAgent(command, mode="lines"), False, False
        ),
    ]


# -- one measurement ---------------------------------------------------------------------------------


@dataclass
class Bare:
    seconds: float
    serving: float
    requests: int


@dataclass
class Campaign:
    seconds: float
    conversations: int
    requests: int
    agent: float
    wire: float
    harness: float
    asked_to_wait: float
    discarded: int
    discarded_seconds: float
    stats_agent: float
    stats_harness: float
    harness_cpu: float = 0.0
    """CPU time of the campaign's own thread (Hypothesis, drawing, choosing, judging): the harness's
    part, measured by the CPU it used rather than the wall time, which a loaded machine inflates."""
    process_cpu: float = 0.0
    """CPU time of the whole process over the campaign (the agent's threads and the wire's too)."""


def bare(contender: Contender, conversations: int) -> Bare:
    """N conversations against a fixed script: a call of ``add``, then the answer."""
    meter = Meter(loopback=not contender.in_process)
    script = deep_script() if contender.seeded else [turn.tool_call("add", a=2, b=3), turn.text("The answer is 5.")]
    emulator = metered(Emulator, meter)(*script)
    base_url = "http://emulator.invalid" if contender.in_process else emulator.start()
    loop = asyncio.new_event_loop() if contender.is_async else None
    try:
        started = time.perf_counter()
        for _ in range(conversations):
            emulator.reset_script()
            kwargs: dict[str, Any] = {"base_url": base_url, "api_key": API_KEY}
            if loop is not None:
                if contender.in_process:
                    kwargs["http_client"] = emulator.http_client()
                text = loop.run_until_complete(contender.agent(PROMPT, **kwargs))
            else:
                if contender.in_process:
                    kwargs["http_client"] = emulator.sync_http_client()
                text = contender.agent(PROMPT, **kwargs)
            if "5" not in str(text):
                raise RuntimeError(f"{contender.label}: the bare run answered {text!r}")
        seconds = time.perf_counter() - started
    finally:
        emulator.stop()
        if loop is not None:
            loop.close()
        close = getattr(contender.agent, "wire_close", None)  # a long-lived process: the bare runs' own
        if callable(close):
            close()
    meter.totals()
    return Bare(seconds, meter.serving - meter.choosing, meter.requests)


def run(contender: Contender, conversations: int, seed: int, on_example: Callable[[Any], None]) -> Any:
    """The campaign from scratch, or seeded: example 0 the recording, then its mutations."""
    if contender.seeded is None:
        return run_agent_campaign(contender.agent, conversations, seed, save=False, on_example=on_example)
    (seeded,) = run_seeded_campaign(
        contender.agent, contender.seeded, examples=conversations, seed=seed, save=False, on_example=on_example
    )
    return seeded.result


def campaign(contender: Contender, conversations: int, seed: int) -> Campaign:
    meter = Meter(loopback=not contender.in_process)  # an agent in process is given the loopback root too
    original = campaign_module.WireEmulator
    campaign_module.WireEmulator = metered(original, meter)  # type: ignore[misc]
    try:
        started, own, whole = time.perf_counter(), time.thread_time(), time.process_time()
        result = run(contender, conversations, seed, lambda _stats: meter.take())
        seconds = time.perf_counter() - started
        own, whole = time.thread_time() - own, time.process_time() - whole
    finally:
        campaign_module.WireEmulator = original  # type: ignore[misc]
    meter.drop_pending()
    if not result.ok:
        found = result.failure.violation if result.failure else f"no request ({result.stats.first_error})"
        raise RuntimeError(f"{contender.label}: the campaign did not pass: {found}")
    if meter.taken != result.stats.conversations or meter.requests != result.stats.requests:
        raise RuntimeError(
            f"{contender.label}: the meters saw {meter.taken} conversations and {meter.requests} requests, the "
            f"campaign counted {result.stats.conversations} and {result.stats.requests}: the campaign "
            "no longer makes its emulator as this benchmark expects (harness/agents/_conversation.py: WireEmulator)"
        )
    agent = meter.conversations - meter.serving
    wire = meter.serving - meter.choosing
    return Campaign(
        seconds=seconds,
        conversations=result.stats.conversations,
        requests=result.stats.requests,
        agent=agent,
        wire=wire,
        harness=seconds - agent - wire,
        asked_to_wait=meter.asked_to_wait,
        discarded=meter.discarded,
        discarded_seconds=meter.discarded_seconds,
        stats_agent=result.stats.agent_seconds,
        stats_harness=result.stats.harness_seconds,
        harness_cpu=own,
        process_cpu=whole,
    )


# -- the table -----------------------------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values)


def measure(conversations: int, repeat: int, seed: int, out: Callable[[str], None] = print) -> list[dict[str, Any]]:
    rows, skipped = contenders()
    for row in rows:  # warm up: imports, first connections, compiled strategies
        bare(row, 2)
        campaign(row, 2, seed)
    bares: dict[str, list[Bare]] = {r.label: [] for r in rows}
    campaigns: dict[str, list[Campaign]] = {r.label: [] for r in rows}
    for _ in range(repeat):
        for row in rows:
            bares[row.label].append(bare(row, conversations))
            campaigns[row.label].append(campaign(row, conversations, seed))
    out(
        f"{conversations} conversations a run, median of {repeat}, seed {seed}; "
        f"bare: a fixed two-reply script (seeded: the recorded six); campaign: harness fuzz --agent "
        "(seeded: --from-cassette)\n"
    )
    out(
        "| agent | bare run | campaign | the agent (asked to wait) | the wire | the harness | "
        "campaign / bare, a request |"
    )
    out("|---|---|---|---|---|---|---|")
    results = []
    for row in rows:
        b, c = bares[row.label], campaigns[row.label]
        bare_s = median([x.seconds for x in b])
        bare_requests = b[0].requests
        bare_wire = median([x.serving for x in b])
        total = median([x.seconds for x in c])
        agent = median([x.agent for x in c])
        wire = median([x.wire for x in c])
        harness = median([x.harness for x in c])
        waits = median([x.asked_to_wait for x in c])
        requests = c[0].requests
        share = harness / total if total else 0.0
        per_bare = bare_s / bare_requests if bare_requests else 0.0
        per_campaign = total / requests if requests else 0.0
        results.append(
            {
                "agent": row.label,
                "bare_seconds": bare_s,
                "bare_requests": bare_requests,
                "campaign_seconds": total,
                "campaign_requests": requests,
                "agent_seconds": agent,
                "wire_seconds": wire,
                "harness_seconds": harness,
                "harness_share": share,
                "asked_to_wait": waits,
            }
        )
        out(
            f"| {row.label} | {bare_s:.2f} s, {bare_requests} requests ({per_bare * 1000:.1f} ms a request; "
            f"wire {bare_wire / bare_requests * 1000:.2f} ms) "
            f"| {total:.2f} s, {requests} requests ({per_campaign * 1000:.1f} ms a request) "
            f"| {agent:.2f} s ({agent / total:.0%}; {waits:.2f} s) "
            f"| {wire:.2f} s ({wire / total:.0%}) "
            f"| {harness:.2f} s ({share:.1%}) {'ok' if share <= TARGET else 'OVER 1/4'} "
            f"| {per_campaign / per_bare if per_bare else 0:.1f}x |"
        )
    for reason in skipped:
        out(f"| skipped: {reason} | | | | | | |")
    stats = {
        r.label: (
            median([x.stats_agent for x in campaigns[r.label]]),
            median([x.stats_harness for x in campaigns[r.label]]),
        )
        for r in rows
    }
    out("\nCPU time: the campaign's own thread (the harness: Hypothesis, drawing, choosing, judging) of the")
    out("whole process's (an agent run as a command spends its CPU in its own processes, not counted here):")
    for row in rows:
        own = median([x.harness_cpu for x in campaigns[row.label]])
        whole = median([x.process_cpu for x in campaigns[row.label]])
        out(f"  {row.label}: {own:.2f} s of {whole:.2f} s ({own / whole if whole else 0:.1%})")
    out("\nruns Hypothesis threw away (counted whole as the harness's), and the campaign's own counters")
    out("(AgentStats.agent_seconds / harness_seconds, which leave out those runs' agent time and shrinking):")
    for label, (agent_s, harness_s) in stats.items():
        thrown = campaigns[label][0]
        lost = median([x.discarded_seconds for x in campaigns[label]])
        out(
            f"  {label}: {thrown.discarded} run(s) thrown away, {lost:.2f} s;"
            f" AgentStats: the agent {agent_s:.2f} s, the harness {harness_s:.2f} s"
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--conversations", "-n", type=int, default=100)
    parser.add_argument("--repeat", "-r", type=int, default=3)
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    measure(args.conversations, args.repeat, args.seed)


if __name__ == "__main__":
    main()
