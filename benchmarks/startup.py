"""What a fresh process pays before the first answer: imports, the first run, ``harness fuzz``'s wall time.

Run: ``python benchmarks/startup.py [--repeat N] [--against DIR]``.

Every test session that imports an agent pays ``import openprogram``; every ``harness fuzz`` pays
its imports before the first scenario, and the rate the command prints (scenarios over the
campaign's own seconds) leaves them out. Measured, each in a fresh interpreter, as medians over
``--repeat`` runs:

- ``import openprogram`` and ``import harness.campaigns._loop_campaign``: the cumulative time ``python -X importtime``
  gives the module;
- ``first answer``: wall time from the first import to the answer of a one-tool scripted run
  (``@function``, ``ScriptedProvider``, ``runtime.exec``), what a user's first test costs beyond
  pytest;
- ``harness fuzz``: the command's wall time, and the campaign time it reports; the difference is
  start-up and shutdown.

``--against DIR`` runs every measurement also with ``DIR`` (a checkout of another revision, e.g.
``git worktree add /tmp/before <commit>``) first on ``PYTHONPATH``, interleaved run by run, so
drift in the machine's speed hits both alike. Bytecode caching is switched on for these runs
(``PYTHONDONTWRITEBYTECODE`` removed), as on a user's machine, and ``CI`` is removed.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from plugin_import import clean_env, cumulative_us  # this folder is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]

FIRST_ANSWER = '''
import time
started = time.perf_counter()
from openprogram import function, runtime
from harness import ScriptedProvider, turn

@function
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

provider = ScriptedProvider(turn.tool_call("add", a=2, b=3), turn.text("5"))
assert runtime.exec("2+3?", tools=[add], provider=provider) == "5"
print((time.perf_counter() - started) * 1000)
'''


def _env(tree: Path) -> dict[str, str]:
    env = clean_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = str(tree)
    return env


def _python(tree: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True, env=_env(tree), cwd=cwd)


def import_ms(tree: Path, module: str) -> float:
    return cumulative_us(_python(tree, "-X", "importtime", "-c", f"import {module}").stderr, module) / 1000


def first_answer_ms(tree: Path) -> float:
    return float(_python(tree, "-c", FIRST_ANSWER).stdout.strip())


def fuzz_s(tree: Path, workdir: Path) -> tuple[float, float]:
    """The command's wall time and the campaign time it reports, in seconds."""
    started = time.perf_counter()
    done = _python(tree, "-m", "harness.cli", "fuzz", cwd=workdir)
    wall = time.perf_counter() - started
    found = re.search(r"model rounds, ([\d.]+)s \(", done.stdout)
    if found is None:
        raise SystemExit(f"harness fuzz printed no summary line:\n{done.stdout}\n{done.stderr}")
    return wall, float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="fresh processes per measurement (default 7)")
    parser.add_argument("--against", type=Path, help="another checkout to measure side by side")
    args = parser.parse_args()
    trees = {"this tree": ROOT}
    if args.against is not None:
        if not (args.against / "openprogram" / "__init__.py").is_file():
            raise SystemExit(f"--against {args.against}: no openprogram package there (give a checkout's root)")
        trees = {"against": args.against.resolve(), "this tree": ROOT}
    samples: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as directory:
        workdir = Path(directory)
        for tree in trees.values():  # a first run of each writes its bytecode caches
            _python(tree, "-c", "import harness.campaigns._loop_campaign, harness.cli")
        for _ in range(args.repeat):
            for name, tree in trees.items():
                wall, campaign = fuzz_s(tree, workdir)
                for what, value in (
                    ("import openprogram (ms)", import_ms(tree, "openprogram")),
                    (
                        "import harness.campaigns._loop_campaign (ms)",
                        import_ms(tree, "harness.campaigns._loop_campaign"),
                    ),
                    ("first answer (ms)", first_answer_ms(tree)),
                    ("harness fuzz, wall (s)", wall),
                    ("harness fuzz, campaign it reports (s)", campaign),
                    ("harness fuzz, start-up and shutdown (s)", wall - campaign),
                ):
                    samples.setdefault((what, name), []).append(value)
    print(f"medians of {args.repeat} fresh processes (Python {sys.version.split()[0]})")
    print(f"  {'':42s}" + "".join(f"{name:>12s}" for name in trees))
    for what in dict.fromkeys(what for what, _ in samples):
        cells = "".join(f"{statistics.median(samples[(what, name)]):12.2f}" for name in trees)
        print(f"  {what:42s}{cells}")


if __name__ == "__main__":
    main()
