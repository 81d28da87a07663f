"""What the harness pytest plugin costs a session that never uses it.

Run: ``python benchmarks/plugin_import.py [--repeat N]``.

The plugin arrives through the ``pytest11`` entry point in every pytest session of every project
that has the package installed, so its import is paid even by a project that never asks for
``scripted`` or ``trace``. Measured, each in fresh interpreters, as medians over ``--repeat`` runs:

- ``import``: the cumulative time ``python -X importtime`` gives ``harness.pytest_plugin``, and the
  same minus ``pytest`` (which a pytest session imports anyway): the plugin's own share;
- ``heavy modules``: which of the loop package, Hypothesis, vcrpy, the SDKs, YAML, jsonschema and
  pydantic the import pulls in (the ones a session that uses no fixture should not pay for);
- ``session``: what each plugin adds to the CPU time (user + system) of a trivial pytest session
  (one empty test): the harness's (``-p no:harness``), pytest-recording's (``-p no:recording``)
  and Hypothesis's own (``-p no:hypothesispytest``: Hypothesis registers a ``pytest11`` entry
  point of its own, which imports Hypothesis in every session; installing the harness brings
  it). Each run with the plugin is paired with one without it just before, and the median of the
  differences reported, so drift in the machine's speed hits both sides of each pair alike. CPU
  time rather than wall time, so other processes competing for the machine count less. The
  harness's share must stay within ``BUDGET_MS``.

``CI`` is removed from the environment of every run, so the numbers do not depend on where they
are taken.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HEAVY = (
    "openprogram",
    "hypothesis",
    "vcr",
    "yaml",
    "httpx",
    "openai",
    "anthropic",
    "botocore",
    "jsonschema",
    "pydantic",
)
BUDGET_MS = 50.0
"""What the harness plugin may add to a session of a project that uses none of it."""
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")
SHARES = {  # plugin -> (the session with it, the same session without it)
    "the harness plugin": (NO_HYPOTHESIS, (*NO_HYPOTHESIS, "-p", "no:harness")),
    "pytest-recording's plugin": (NO_HYPOTHESIS, (*NO_HYPOTHESIS, "-p", "no:recording")),
    "Hypothesis's plugin": ((), NO_HYPOTHESIS),
}
"""Each plugin's share, measured against sessions without Hypothesis's plugin where it is not the
one measured: its second of CPU would otherwise drown a few milliseconds in its noise."""


def clean_env() -> dict[str, str]:
    """The environment of every measured run: CI and PYTEST_ADDOPTS removed."""
    env = dict(os.environ)
    env.pop("CI", None)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def cumulative_us(stderr: str, module: str) -> int:
    """The cumulative microseconds ``python -X importtime`` gives ``module`` (0: not imported)."""
    pattern = re.compile(rf"^import time:\s+\d+ \|\s+(\d+) \|\s*{re.escape(module)}$", re.MULTILINE)
    found = pattern.findall(stderr)
    return int(found[-1]) if found else 0


def import_times(repeat: int) -> tuple[float, float]:
    """Median cumulative import time of the plugin, and of the plugin minus pytest (ms)."""
    totals, own = [], []
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import harness.pytest_plugin"],
            capture_output=True,
            text=True,
            check=True,
            env=clean_env(),
        )
        total = cumulative_us(done.stderr, "harness.pytest_plugin")
        totals.append(total / 1000)
        own.append((total - cumulative_us(done.stderr, "pytest")) / 1000)
    return statistics.median(totals), statistics.median(own)


def heavy_modules() -> list[str]:
    code = f"import sys, harness.pytest_plugin; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=clean_env())
    return done.stdout.split()


def session_times(repeat: int) -> dict[str, tuple[float, float]]:
    """Each plugin of :data:`SHARES`: the median CPU time (ms) of a trivial session without it, and
    the median of what it added, each run with it paired with the run without it just before."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "test_trivial.py").write_text("def test_nothing():\n    pass\n")
        (root / "pytest.ini").write_text("[pytest]\n")
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "test_trivial.py")]

        def cpu_ms(extra: tuple[str, ...]) -> float:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([*base, *extra], cwd=root, capture_output=True, check=True, env=clean_env())
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000

        without: dict[str, list[float]] = {name: [] for name in SHARES}
        added: dict[str, list[float]] = {name: [] for name in SHARES}
        for _ in range(repeat):
            for name, (plugged, unplugged) in SHARES.items():
                alone = cpu_ms(unplugged)
                without[name].append(alone)
                added[name].append(cpu_ms(plugged) - alone)
    return {name: (statistics.median(without[name]), statistics.median(added[name])) for name in SHARES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per measurement (default 7)")
    repeat = parser.parse_args().repeat

    total, own = import_times(repeat)
    print(f"import harness.pytest_plugin: {total:7.1f} ms cumulative, {own:7.1f} ms beyond pytest (median of {repeat})")
    heavy = heavy_modules()
    print(f"heavy modules it imports:     {', '.join(heavy) or 'none'}")
    for name, (alone, added) in session_times(repeat).items():
        verdict = (
            f" ({'within' if added <= BUDGET_MS else 'OVER'} its {BUDGET_MS:.0f} ms budget)"
            if "harness" in name
            else ""
        )
        print(f"{name} adds {added:7.1f} ms CPU to a {alone:7.1f} ms trivial session (medians of {repeat}){verdict}")


if __name__ == "__main__":
    main()
