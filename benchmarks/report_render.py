"""Size and render time of the HTML reports (issue 22): a 50-request run, a recorded conversation
of 50 requests, and a 200-scenario campaign.

Run: ``python benchmarks/report_render.py [--requests N] [--repeat R]``.

A report must stay a file a person opens at once, so what counts is its size and the time to draw
it once the data is in hand: the run (or the cassette's decoded steps, or the campaign's result)
is built first, then drawn ``--repeat`` times; the median is printed. The first draw in a fresh
process also pays for importing Jinja2 and compiling the templates, printed apart. The cassette
is recorded through the harness's recorder against the in-process emulator, so it is the format
users' cassettes have.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import Emulator, ScriptedProvider, turn
from harness.campaigns import run_campaign
from harness.clock import DeterministicClock
from harness.recording import open_recording, recorded_backend
from harness.recording._tools import read_steps
from harness.trace import RunCollector, Trace
from openprogram import function, runtime
from openprogram.agent.events import observe_runs


@function(register=False)
def lookup(page: int) -> str:
    """Look a page up."""
    return f"page {page}: " + "some words of the page " * 6


def _script(requests: int) -> list:
    calls = [turn.tool_calls(turn.tool_call("lookup", page=i), text=f"Reading page {i}.") for i in range(1, requests)]
    return [*calls, turn.text("Done: all pages read.")]


def long_run(requests: int) -> Trace:
    provider = ScriptedProvider(*_script(requests))
    collector = RunCollector()
    collector.watch(provider)
    with observe_runs(collector.on_event), runtime.use(provider):
        runtime.exec("Read every page.", tools=[lookup], max_iterations=requests, clock=DeterministicClock())
    return collector.last


def recorded_conversation(requests: int, folder: Path) -> Path:
    path = folder / "long.yaml"
    with Emulator(*_script(requests)) as emulator:
        recording = open_recording(path, "once")
        backend, _client = recorded_backend(
            "openai", recording, "chat.completions", model="gpt-4o-mini", upstream=emulator.base_url
        )
        with runtime.use(backend):
            runtime.exec("Read every page.", tools=[lookup], max_iterations=requests)
        recording.save()
    return path


def timed(draw, repeat: int) -> tuple[float, float, int]:
    """(first draw s, median of the rest s, size in bytes)."""
    start = time.perf_counter()
    page = draw()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        draw()
        times.append(time.perf_counter() - start)
    return first, statistics.median(times), len(page.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--scenarios", type=int, default=200)
    args = parser.parse_args()
    from harness.report import campaign_report, cassette_report, trace_report

    trace = long_run(args.requests)
    rows = [(f"run of {args.requests} requests, judged", timed(lambda: trace_report(trace), args.repeat))]
    with tempfile.TemporaryDirectory() as folder:
        try:
            steps = read_steps(recorded_conversation(args.requests, Path(folder)))
        except Exception as exc:  # the cassette could not be recorded here: say so, measure the rest
            print(f"recorded conversation skipped: {type(exc).__name__}: {exc}")
        else:
            rows.append(
                (
                    f"recorded conversation of {args.requests} requests",
                    timed(lambda: cassette_report(steps, source="long.yaml"), args.repeat),
                )
            )
        result = run_campaign(examples=args.scenarios, save_dir=Path(folder))
    campaign = timed(lambda: campaign_report(result, command="bench"), args.repeat)
    rows.append((f"campaign of {args.scenarios} scenarios", campaign))
    print(f"{'report':44} {'size':>9} {'first draw':>11} {'median draw':>12}")
    for name, (first, median, size) in rows:
        print(f"{name:44} {size / 1024:7.1f} KiB {first * 1000:8.1f} ms {median * 1000:9.1f} ms")


if __name__ == "__main__":
    main()
