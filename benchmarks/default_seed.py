"""Check that campaigns of the default budget reach every boundary of the table, deeply, at any seed.

``harness fuzz`` starts every campaign of the default budget with ``harness.campaigns._boundaries.EXAMPLES``
(small scenarios that between them cross every row of ``harness.campaigns._boundaries.BOUNDARIES``), so the
table is complete whatever the seed; the generated scenarios fill the rest of the budget. This
runs the default budget under a range of seeds and says, per seed, whether the campaign is clean
(no violation), complete (every row reached), deep (>= 2.5 model rounds a scenario) and not
dominated by error finishes: ``DEFAULT_SEED`` no longer has to be searched for.

Usage: ``python benchmarks/default_seed.py [FIRST] [LAST]`` (default 1 11)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.campaigns._boundaries import BOUNDARIES
from harness.campaigns._loop_campaign import run_campaign


def main() -> None:
    first, last = (int(a) for a in (sys.argv[1:3] if len(sys.argv) > 2 else ("1", "11")))
    good = 0
    for seed in range(first, last):
        result = run_campaign(seed=seed, shrink=False, save_dir="/tmp/default-seed-found")
        stats = result.stats
        depth = stats.rounds / max(1, stats.scenarios)
        ok = result.ok and not stats.unreached and depth >= 2.5 and stats.reasons["error"] < stats.scenarios / 2
        good += ok
        reached = len(BOUNDARIES) - len(stats.unreached)
        print(
            f"seed {seed}: {'OK ' if ok else '-- '} {reached}/{len(BOUNDARIES)} boundaries, rounds {depth:.2f}, "
            f"errors {stats.reasons['error']}, {stats.scenarios / stats.seconds:.0f}/s"
            + ("" if result.ok else f", VIOLATION: {result.failure or result.nondeterministic}"),
            flush=True,
        )
    print(f"{good} of {last - first} seeds OK")


if __name__ == "__main__":
    main()
