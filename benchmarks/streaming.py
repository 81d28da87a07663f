"""Streaming a long reply: time and memory through the scripted backend and the loop.

Run: ``python benchmarks/streaming.py [--sizes 50000,200000,1000000] [--chunk 4] [--traced]``.

A reply of N characters arrives in deltas of ``--chunk`` characters (4 by default: 250,000 deltas
for 1 MB). Two consumers per size: one that only awaits ``result()``, one that iterates every
event and reads each delta (not each partial: reading every partial copies the text so far, which
is quadratic by nature). Printed: CPU time, the peak of traced allocations during the run
(tracemalloc) and what is still held after it (the returned messages, the provider's requests),
each also as a multiple of the text's size. Time should grow linearly with N (DESIGN 4: streaming
a reply costs time and memory linear in its length); the issue's target is 1 MB under 2 s here.

``--traced`` adds a third consumer: ``result()`` only, with a no-op ``sys.settrace`` hook installed,
as under coverage.py or a debugger. Such a hook allocates between deltas, which is what once made
each ``text += delta`` copy the text so far (CPython grows a string in place only while the
allocator has room after it): a reply twice as long took six times as long. Each size runs in a
fresh interpreter, since whether the allocator has room depends on what the process did before.
Memory is not measured for it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import ScriptedProvider, turn
from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop


async def run(size: int, chunk: int, iterate: bool) -> tuple[Any, int]:
    text = "abcdefghij" * (size // 10)
    provider = ScriptedProvider(turn.text(text), chunk_size=chunk)
    stream = agent_loop(["write"], AgentContext(), AgentLoopConfig(provider=provider, clock=lambda: 0))
    deltas = 0
    if iterate:
        async for event in stream:
            if event.type == "message_update":
                deltas += len(getattr(event.assistant_message_event, "delta", ""))
    messages = await stream.result()
    assert messages[-1].text == text
    return (messages, provider), deltas


def traced(size: int, chunk: int) -> float:
    """CPU time of a ``result()``-only run under a no-op trace hook, in a fresh interpreter."""
    here = str(Path(__file__).parent)
    code = f"import sys; sys.path.insert(0, {here!r}); import streaming; print(streaming._traced({size}, {chunk}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout)


def _traced(size: int, chunk: int) -> float:
    gc.collect()
    started = time.process_time()
    sys.settrace(lambda *_args: None)
    try:
        asyncio.run(run(size, chunk, False))
    finally:
        sys.settrace(None)
    return time.process_time() - started


def measure(size: int, chunk: int, iterate: bool) -> tuple[float, int, int]:
    gc.collect()
    started = time.process_time()
    asyncio.run(run(size, chunk, iterate))
    elapsed = time.process_time() - started  # timed without tracemalloc, which slows allocation down
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept, _ = asyncio.run(run(size, chunk, iterate))
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return elapsed, peak - base, held - base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50000,200000,1000000", help="reply sizes in characters")
    parser.add_argument("--chunk", type=int, default=4, help="characters per delta (default 4)")
    parser.add_argument("--traced", action="store_true", help="also time a result() consumer under a trace hook")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"one text reply in {args.chunk}-character deltas, scripted backend (Python {sys.version.split()[0]})")
    print("  (CPU time of a run without tracemalloc; memory from a second run with it)")
    for iterate in (False, True):
        label = "iterating every event" if iterate else "result() only"
        for size in sizes:
            elapsed, peak, held = measure(size, args.chunk, iterate)
            print(
                f"  {label:22s} {size / 1000:7.0f} KB: {elapsed:6.2f} s, {elapsed / size * 1e9:6.0f} ns/char, "
                f"peak {peak / 1e6:7.1f} MB ({peak / size:5.1f}x), held {held / 1e6:6.1f} MB ({held / size:4.1f}x)"
            )
    if args.traced:
        for size in sizes:
            elapsed = traced(size, args.chunk)
            label = "result(), trace hook on"
            print(f"  {label:22s} {size / 1000:7.0f} KB: {elapsed:6.2f} s, {elapsed / size * 1e9:6.0f} ns/char")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
