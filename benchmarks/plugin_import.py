"""What the harness pytest plugin costs a session that never uses it.

Run: ``python benchmarks/plugin_import.py [--repeat N]``.

The plugin arrives through the ``pytest11`` entry point in every pytest session of every project
that has the package installed, so its import is paid even by a project that never asks for
``scripted`` or ``trace``. Measured, each in fresh interpreters, as medians over ``--repeat`` runs:

- ``import``: the cumulative time ``python -X importtime`` gives ``harness.pytest_plugin``, and the
  same minus ``pytest`` (which a pytest session imports anyway): the plugin's own share;
- ``heavy modules``: which of the loop package, Hypothesis, vcrpy, the SDKs, YAML, jsonschema and
  pydantic the import pulls in (the ones a session that uses no fixture should not pay for);
- ``session``: the CPU time (user + system) of a trivial pytest session (one empty test) with
  every plugin (the default), without the harness's (``-p no:harness``) and without Hypothesis's
  own (``-p no:hypothesispytest``: Hypothesis registers a ``pytest11`` entry point of its own,
  which imports Hypothesis in every session; installing the harness brings it) and without
  pytest-recording's (``-p no:recording``), interleaved so drift in the machine's speed hits all
  alike; the differences are what each plugin adds. CPU time rather than wall time, so other
  processes competing for the machine do not count. The harness's share must stay within
  ``BUDGET_MS``.

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
VARIANTS = {
    "all plugins": (),
    "no:harness": ("-p", "no:harness"),
    "no:hypothesispytest": ("-p", "no:hypothesispytest"),
    "no:recording": ("-p", "no:recording"),
}


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


def session_times(repeat: int) -> dict[str, float]:
    """Median CPU time (ms) of a trivial pytest session in each of :data:`VARIANTS`."""
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        (root / "test_trivial.py").write_text("def test_nothing():\n    pass\n")
        (root / "pytest.ini").write_text("[pytest]\n")
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "test_trivial.py")]
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(repeat):
            for name, extra in VARIANTS.items():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run([*base, *extra], cwd=root, capture_output=True, check=True, env=clean_env())
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                times[name].append(((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per measurement (default 7)")
    repeat = parser.parse_args().repeat

    total, own = import_times(repeat)
    print(f"import harness.pytest_plugin: {total:7.1f} ms cumulative, {own:7.1f} ms beyond pytest (median of {repeat})")
    heavy = heavy_modules()
    print(f"heavy modules it imports:     {', '.join(heavy) or 'none'}")
    times = session_times(repeat)
    for name, cpu in times.items():
        print(f"trivial session, {name + ':':21} {cpu:7.1f} ms CPU (median of {repeat})")
    harness = times["all plugins"] - times["no:harness"]
    verdict = "within" if harness <= BUDGET_MS else "OVER"
    print(f"the harness plugin adds:      {harness:7.1f} ms ({verdict} its {BUDGET_MS:.0f} ms budget)")
    print(f"Hypothesis's plugin adds:     {times['all plugins'] - times['no:hypothesispytest']:7.1f} ms")
    print(f"pytest-recording's adds:      {times['all plugins'] - times['no:recording']:7.1f} ms")


if __name__ == "__main__":
    main()
