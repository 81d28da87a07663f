"""How long the README's test command takes, and where the time goes.

Run: ``python benchmarks/suite_time.py [PATH ...] [--separately] [--against DIR] [--top N] [-- PYTEST_ARGS]``.

The README promises ``pip install -e ".[dev]" && python -m pytest`` as the way to run the suite,
and CI runs exactly that with ``CI=true`` (``.ci/run``), so the suite's speed is part of what a
contributor is promised: issue 28 asks for at most five minutes on a 2-core machine. This script
runs that command (``python -m pytest`` from the checkout's root, ``CI=true``, nothing else added
but a small probe plugin) over the whole suite or the given paths and prints:

- the run's wall time and CPU time (user + system of pytest and every process it started, so
  xdist workers and the suite's own subprocesses count). CPU time barely moves when other
  processes compete for the machine; wall time is what a user waits for;
- per test directory: the number of tests, their summed durations (setup + call + teardown, as
  pytest's ``--durations`` counts them) and, with ``--separately``, the wall and CPU time of a run
  of that directory alone (its collection and start-up included);
- the slowest ``--top`` tests (20 by default), by name: once by the CPU seconds each test spent
  (its setup, call and teardown, in the process that ran it and the subprocesses it waited for,
  measured there and carried to the controller on the test's report, so xdist runs count too),
  once by wall time. The per-directory table sums both; the CPU column is the one to compare
  on a busy machine.

``--against DIR`` measures another checkout too (e.g. ``git worktree add /tmp/before <commit>``), with
``DIR`` first on ``PYTHONPATH`` and as the working directory, interleaved run by run with this tree,
so the machine's load hits both alike; both are printed side by side. The load average at the
start and end is printed with the numbers: on a shared machine absolute times are inflated, the
comparison in one run is what counts.

Arguments after ``--`` go to pytest unchanged (``-- -n 0`` runs serially, ``-- -x`` stops early).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE_MODULE = "_suite_time_probe"
PROBE_OUTPUT = "SUITE_TIME_PROBE_OUTPUT"


# --- the probe: loaded into the measured pytest run with ``-p _suite_time_probe`` -----------------

_durations: dict[str, float] = defaultdict(float)
_cpu: dict[str, float] = defaultdict(float)
_outcomes: dict[str, str] = {}
_CPU_PROPERTY = "suite_time_cpu_seconds"
_started: list[float] = [0.0]


def process_cpu() -> float:
    """User + system time of this process and of every child it has waited for (a test's
    subprocesses, a pytester subprocess run): on a shared machine it barely moves with the load."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _started[0] = process_cpu()


@pytest.hookimpl(tryfirst=True)  # before pytest's own, which makes the report from the item's properties
def pytest_runtest_makereport(item: object, call: object) -> None:
    """Where the test runs (an xdist worker or this process), put the CPU seconds its setup, call
    and teardown took on its teardown report: the report carries them to the controller."""
    if call.when == "teardown":  # type: ignore[attr-defined]
        spent = process_cpu() - _started[0]
        item.user_properties.append((_CPU_PROPERTY, spent))  # type: ignore[attr-defined]


def pytest_runtest_logreport(report: object) -> None:
    """Sum each test's phases; under xdist the controller hears every worker's reports here."""
    nodeid: str = report.nodeid  # type: ignore[attr-defined]  # a pytest TestReport, not imported here
    _durations[nodeid] += report.duration  # type: ignore[attr-defined]
    for name, value in getattr(report, "user_properties", ()):
        if name == _CPU_PROPERTY and report.when == "teardown":  # type: ignore[attr-defined]
            _cpu[nodeid] = float(value)
    outcome: str = report.outcome  # type: ignore[attr-defined]
    if report.when == "call" or outcome != "passed":  # type: ignore[attr-defined]
        _outcomes[nodeid] = outcome if _outcomes.get(nodeid, "passed") == "passed" else _outcomes[nodeid]


def pytest_sessionfinish(session: object) -> None:
    config = session.config  # type: ignore[attr-defined]
    output = os.environ.get(PROBE_OUTPUT)
    if output and not hasattr(config, "workerinput"):  # the controller (or a serial run) writes
        Path(output).write_text(json.dumps({"durations": _durations, "cpu": _cpu, "outcomes": _outcomes}))


# --- the script -----------------------------------------------------------------------------------


@dataclass
class Run:
    """One measured pytest run."""

    wall: float
    cpu: float
    status: int
    durations: dict[str, float] = field(default_factory=dict)
    test_cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds per test, where it ran
    outcomes: dict[str, str] = field(default_factory=dict)


def directory_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return str(Path(path).parent)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_pytest(tree: Path, probe_dir: Path, paths: list[str], pytest_args: list[str], quiet: bool) -> Run:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env["CI"] = "true"
    python_path = [str(probe_dir)]
    if tree != ROOT:
        python_path.insert(0, str(tree))
    env["PYTHONPATH"] = os.pathsep.join(python_path + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        output = Path(handle.name)
    env[PROBE_OUTPUT] = str(output)
    command = [sys.executable, "-m", "pytest", "-p", PROBE_MODULE, *pytest_args, *paths]
    cpu_before, started = children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=quiet, text=True)
    wall, cpu = time.perf_counter() - started, children_cpu() - cpu_before
    try:
        data = json.loads(output.read_text() or "{}")
    except (OSError, json.JSONDecodeError):
        data = {}
    finally:
        output.unlink(missing_ok=True)
    tail = (done.stdout or "").strip().splitlines()[-1:] if quiet else []
    print(
        f"  {tree.name}: {' '.join(paths) or 'the whole suite'}: {wall:.1f} s wall, {cpu:.1f} s CPU, "
        f"exit {done.returncode}{'  (' + tail[0] + ')' if tail else ''}",
        flush=True,
    )
    return Run(wall, cpu, done.returncode, data.get("durations", {}), data.get("cpu", {}), data.get("outcomes", {}))


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def per_directory(run: Run) -> dict[str, tuple[int, float, float]]:
    """Per test directory: its tests, their summed durations and their summed CPU seconds."""
    table: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for nodeid, seconds in run.durations.items():
        table[directory_of(nodeid)].append((seconds, run.test_cpu.get(nodeid, 0.0)))
    return {folder: (len(times), sum(t for t, _ in times), sum(c for _, c in times)) for folder, times in table.items()}


def report(trees: dict[str, Path], whole: dict[str, Run], separate: dict[str, dict[str, Run]], top: int) -> None:
    names = list(trees)
    rows: dict[str, dict[str, tuple[int, float, float, Run | None]]] = {}  # row -> tree -> (tests, s, CPU s, run)
    everything: dict[str, Run] = {}
    for name in names:
        merged = Run(0, 0, 0)
        if name in whole:
            merged = whole[name]
            for directory, (count, seconds, cpu) in per_directory(merged).items():
                rows.setdefault(directory, {})[name] = (count, seconds, cpu, None)
        for path, run in separate.get(name, {}).items():
            merged.durations.update(run.durations)
            merged.test_cpu.update(run.test_cpu)
            merged.outcomes.update(run.outcomes)
            merged.wall, merged.cpu = merged.wall + run.wall, merged.cpu + run.cpu
            merged.status = merged.status or run.status
            rows.setdefault(path, {})[name] = (
                len(run.durations),
                sum(run.durations.values()),
                sum(run.test_cpu.values()),
                run,
            )
        everything[name] = merged
    print()
    for name, run in everything.items():
        failed = sorted(nodeid for nodeid, outcome in run.outcomes.items() if outcome == "failed")
        how = "summed over the separate runs" if name in separate else "one run"
        print(
            f"{name}: {run.wall:.1f} s wall, {run.cpu:.1f} s CPU ({how}), {len(run.durations)} tests, "
            f"{len(failed)} failed{': ' + ', '.join(failed[:5]) if failed else ''}"
        )
    alone = bool(separate)
    header = f"{'directory' if not alone else 'path':<36}"
    for name in names:
        header += f" | {name + ': tests':>17} {'test s':>7} {'test CPU':>8}"
        header += f" {'wall s':>7} {'CPU s':>7}" if alone else ""
    print("\n" + header)
    print("-" * len(header))
    for row in sorted(rows):
        line = f"{row:<36}"
        for name in names:
            count, seconds, cpu, own = rows[row].get(name, (0, 0.0, 0.0, None))
            line += f" | {count:>17} {seconds:>7.1f} {cpu:>8.1f}"
            if alone:
                line += f" {own.wall:>7.1f} {own.cpu:>7.1f}" if own else f" {'':>7} {'':>7}"
        print(line)
    for name in names:
        run = everything[name]
        print(f"\nslowest {top} tests by CPU ({name}; CPU s, then wall s as --durations counts it):")
        for nodeid, cpu in sorted(run.test_cpu.items(), key=lambda item: -item[1])[:top]:
            print(f"  {cpu:7.2f} {run.durations.get(nodeid, 0.0):7.2f}  {nodeid}")
        print(f"\nslowest {top} tests by wall ({name}; wall s, then CPU s):")
        for nodeid, seconds in sorted(run.durations.items(), key=lambda item: -item[1])[:top]:
            print(f"  {seconds:7.2f} {run.test_cpu.get(nodeid, 0.0):7.2f}  {nodeid}")


def main() -> None:
    argv = sys.argv[1:]
    pytest_args: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, pytest_args = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="test files or directories (default: the whole suite)")
    parser.add_argument("--separately", action="store_true", help="one pytest run per path: wall time per directory")
    parser.add_argument("--against", type=Path, help="another checkout to measure side by side")
    parser.add_argument("--top", type=int, default=20, help="how many of the slowest tests to name")
    parser.add_argument("--verbose", action="store_true", help="show pytest's own output")
    args = parser.parse_args(argv)

    trees = {"this tree": ROOT}
    if args.against is not None:
        if not (args.against / "harness" / "__init__.py").is_file():
            raise SystemExit(f"--against {args.against}: no harness package there (give a checkout's root)")
        trees = {"against": args.against.resolve(), "this tree": ROOT}
    if args.separately and not args.paths:
        raise SystemExit("--separately needs the paths to run one by one (e.g. tests/harness/recording)")

    print(f"start: {load()}", flush=True)
    whole: dict[str, Run] = {}
    separate: dict[str, dict[str, Run]] = defaultdict(dict)
    with tempfile.TemporaryDirectory() as directory:
        probe_dir = Path(directory)
        shutil.copyfile(__file__, probe_dir / f"{PROBE_MODULE}.py")
        if args.separately:
            for path in args.paths:
                for name, tree in trees.items():
                    separate[name][path.rstrip("/")] = run_pytest(
                        tree, probe_dir, [path], pytest_args, not args.verbose
                    )
        else:
            for name, tree in trees.items():
                whole[name] = run_pytest(tree, probe_dir, args.paths, pytest_args, not args.verbose)
    print(f"end: {load()}")
    report(trees, whole, separate, args.top)


if __name__ == "__main__":
    main()
