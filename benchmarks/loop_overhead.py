"""Per-round overhead of ``agent_loop`` on the scripted backend.

Run: ``python benchmarks/loop_overhead.py [--repeat N]``.

A run of N rounds is N turns that each call one trivial tool, then a final text turn. Runs of 5
and 40 rounds are timed side by side in one process (interleaved, so drift in the machine's speed
hits both alike), each repetition with a fresh provider built outside the timed region. Time is
the process's CPU time, so other processes competing for the machine do not count. Reported, as
medians in microseconds:

- ``per round``: the run's time divided by its rounds (what a user sees);
- ``marginal``: ``(t(N) - t(0)) / N`` where ``t(0)`` is a run with only the text turn, i.e. the
  cost of one more round once the fixed cost of starting a run is paid. The ratio of the two
  marginals (40 vs 5) is what exposes work that grows with the history (quadratic copying).

Targets (issue 2): at most 50 µs per round; marginal cost at 40 rounds <= 1.3x that at 5.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import ScriptedProvider, turn
from openprogram import function
from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop

SIZES = (5, 40)


@function(register=False)
def lookup(key: int) -> str:
    """Return the value stored under a key."""
    return "value"


TOOL = lookup.to_agent_tool()


def _clock() -> int:
    return 0


def script(rounds: int) -> ScriptedProvider:
    return ScriptedProvider(*[turn.tool_call("lookup", key=i) for i in range(rounds)], turn.text("done"))


async def run_once(rounds: int) -> int:
    """Nanoseconds for one run of ``rounds`` tool rounds plus the final text turn."""
    provider = script(rounds)
    config = AgentLoopConfig(provider=provider, clock=_clock)
    context = AgentContext(system_prompt="You look things up.", tools=[TOOL])
    started = time.process_time_ns()
    messages = await agent_loop(["look up some keys"], context, config).result()
    elapsed = time.process_time_ns() - started
    assert len(messages) == 2 + 2 * rounds, len(messages)
    return elapsed


def measure(repeat: int) -> dict[int, list[int]]:
    loop = asyncio.new_event_loop()
    samples: dict[int, list[int]] = {0: [], **{n: [] for n in SIZES}}
    try:
        for _ in range(max(3, repeat // 10)):  # warm up: imports, caches, pydantic's first validations
            for n in samples:
                loop.run_until_complete(run_once(n))
        gc.collect()
        for _ in range(repeat):
            for n in samples:
                samples[n].append(loop.run_until_complete(run_once(n)))
    finally:
        loop.close()
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=300, help="repetitions per run size (default 300)")
    args = parser.parse_args(argv)

    samples = measure(args.repeat)
    base = statistics.median(samples[0]) / 1000
    print(f"agent_loop on ScriptedProvider, {args.repeat} repetitions (Python {sys.version.split()[0]})")
    print(f"  text-only run (fixed cost): median {base:7.1f} us, best {min(samples[0]) / 1000:7.1f} us")
    per_round: dict[int, float] = {}
    marginal: dict[int, float] = {}
    for n in SIZES:
        total = statistics.median(samples[n]) / 1000
        per_round[n] = total / n
        marginal[n] = statistics.median([(t / 1000 - base) / n for t in samples[n]])
        best = min(samples[n]) / 1000 / n
        print(
            f"  {n:2d} rounds: median {total:8.1f} us total, {per_round[n]:6.1f} us/round "
            f"({marginal[n]:6.1f} marginal), best {best:6.1f} us/round"
        )
    small, large = SIZES
    ratio = marginal[large] / marginal[small]
    plain = per_round[large] / per_round[small]
    print(f"  ratio {large}/{small}: {ratio:.2f} marginal per round, {plain:.2f} per round")
    ok = max(per_round.values()) <= 50 and ratio <= 1.3
    print("  targets (<= 50 us/round, ratio <= 1.3):", "met" if ok else "NOT met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
