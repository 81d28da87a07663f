"""Soak: many runs, concurrent and sequential, plain and nested, with memory before and after.

Run: ``python benchmarks/soak.py [--concurrent N] [--sequential N]`` (defaults 1,000 and 10,000).

Not a timed test: it prints figures. Each run is one tool round then a text reply on the scripted
backend; a nested run's tool is a sync ``@agentic_function`` whose body calls ``runtime.exec``
(so each nested run also exercises the tool thread and the hop back onto the outer loop). Memory
is measured after a warm-up run and again after the batch, both after ``gc.collect()``: traced
Python allocations (tracemalloc) and the process's resident set (``VmRSS``). A leak shows as
growth that scales with the number of runs; every run must also end ``stop``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import ScriptedProvider, turn
from openprogram import agentic_function, function, runtime


@function(register=False)
def lookup(key: int) -> str:
    """Return the value stored under a key."""
    return "value"


@agentic_function(register=False)
def researcher(topic: str) -> str:
    """Ask a nested model run about a topic."""
    return runtime.exec(f"research {topic}")


def _clock() -> int:
    return 0


async def plain_run() -> str:
    provider = ScriptedProvider(turn.tool_call("lookup", key=1), "done")
    return await runtime.aexec("go", tools=[lookup], provider=provider, clock=_clock)


async def nested_run() -> str:
    provider = ScriptedProvider(
        turn.tool_call("researcher", topic="t"), turn.tool_call("lookup", key=1), "inner", "done"
    )
    return await runtime.aexec("go", tools=[lookup, researcher], provider=provider, clock=_clock)


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def snapshot() -> tuple[int, int]:
    gc.collect()
    return tracemalloc.get_traced_memory()[0], rss_kib()


async def concurrent(run: Callable[[], Awaitable[str]], count: int) -> list[str]:
    return list(await asyncio.gather(*(run() for _ in range(count))))


async def sequential(run: Callable[[], Awaitable[str]], count: int) -> list[str]:
    return [await run() for _ in range(count)]


def measure(label: str, run: Callable[[], Awaitable[str]], mode: str, count: int) -> None:
    async def main() -> tuple[float, list[str], tuple[int, int], tuple[int, int]]:
        await run()  # warm-up: caches, validators, the first thread
        before = snapshot()
        started = time.perf_counter()
        batch = concurrent if mode == "concurrent" else sequential
        texts = await batch(run, count)
        elapsed = time.perf_counter() - started
        await asyncio.sleep(0.05)  # let finished tool threads hand back their last callbacks
        return elapsed, texts, before, snapshot()

    elapsed, texts, (traced0, rss0), (traced1, rss1) = asyncio.run(main())
    ok = sum(text == "done" for text in texts)
    print(
        f"{label:>7} {mode:>10} x{count:<6} {elapsed:7.2f} s ({elapsed / count * 1e3:6.2f} ms/run)  "
        f"ok {ok}/{count}  traced {traced0 / 1024:8.1f} -> {traced1 / 1024:8.1f} KiB "
        f"({(traced1 - traced0) / count:+7.1f} B/run)  RSS {rss0 / 1024:6.1f} -> {rss1 / 1024:6.1f} MiB"
    )
    if ok != count:
        raise SystemExit(f"{count - ok} runs did not end with the final text")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=1_000)
    parser.add_argument("--sequential", type=int, default=10_000)
    args = parser.parse_args()
    tracemalloc.start()
    print(f"soak on ScriptedProvider (Python {sys.version.split()[0]})")
    for label, run in (("plain", plain_run), ("nested", nested_run)):
        measure(label, run, "concurrent", args.concurrent)
        measure(label, run, "sequential", args.sequential)


if __name__ == "__main__":
    main()
