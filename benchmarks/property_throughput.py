"""How fast the property campaign is, side by side with Hypothesis alone (issue 11, goal 3).

Measured in one run, each figure the median of ``--repeats`` runs:

* ``harness fuzz`` end to end: ``run_campaign()`` as the command runs it (default budget, default
  seed, generation + run + reference model + invariants + the boundary table's bookkeeping);
* Hypothesis alone, values of the same shape: a ``Scenario`` built only from Hypothesis' own
  strategies (``st.builds``/``st.lists``/``st.text``/...) with the same parts and sizes (up to
  three tools with schemas and plans, up to ten turns of up to three calls with arguments,
  steering and follow-up schedules, a config), drawn under the same settings and nothing run;
* our strategies alone (``scenarios()`` drawn, nothing run) and the checks alone (run +
  reference + invariants on pre-drawn scenarios), which say where the campaign's time goes.

The campaign's depth is printed with it: model rounds per scenario and how the runs ended.
Targets: end to end >= 200/s, and >= 3/4 of Hypothesis alone.

Usage: ``python benchmarks/property_throughput.py [--repeats 5] [--examples 200]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from harness.check import problems_of
from harness.fuzz import DEFAULT_EXAMPLES, DEFAULT_SEED, run_campaign
from harness.runner import run
from harness.scenario import Behaviour, Call, Config, ModelTurn, Scenario, ToolDef
from harness.strategies import scenarios

TARGET = 200.0
RATIO = 0.75

_text = st.text(max_size=24)
_schema = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(
            st.sampled_from(("a", "b", "query", "limit", "flag")),
            st.sampled_from(({"type": "integer"}, {"type": "string"}, {"type": "boolean"})),
            max_size=3,
        ),
    }
)
_plain_value = st.one_of(st.none(), st.booleans(), st.integers(), _text)
_behaviour = st.builds(
    Behaviour,
    kind=st.just("return"),
    value=_plain_value,
    updates=st.lists(_text, max_size=2),
    cancel=st.booleans(),
    mutate=st.booleans(),
    late_update=st.booleans(),
)
_tool = st.builds(
    ToolDef,
    name=st.sampled_from(("add", "search", "fetch", "write", "plan")),
    parameters=_schema,
    plan=st.lists(_behaviour, max_size=3).map(tuple),
)
_call = st.builds(
    Call,
    name=st.sampled_from(("add", "search", "fetch", "write", "plan")),
    args=st.dictionaries(st.sampled_from(("a", "b", "query")), _plain_value, max_size=3),
    id=st.sampled_from((None, "dup")),
)
_turn = st.builds(
    ModelTurn,
    text=st.one_of(st.none(), _text),
    thinking=st.one_of(st.none(), _text),
    calls=st.lists(_call, max_size=3).map(tuple),
    stop=st.sampled_from(("stop", "length")),
)
_schedule = st.dictionaries(st.integers(1, 10), st.lists(_text, min_size=1, max_size=2).map(tuple), max_size=3)
SAME_SHAPE = st.builds(
    Scenario,
    prompts=st.lists(_text, min_size=1, max_size=2).map(tuple),
    tools=st.lists(_tool, max_size=3, unique_by=lambda t: t.name).map(tuple),
    turns=st.lists(_turn, min_size=1, max_size=10).map(tuple),
    steering=_schedule,
    follow_ups=_schedule,
    config=st.builds(
        Config,
        max_iterations=st.one_of(st.none(), st.integers(-3, 60)),
        tool_choice=st.sampled_from((None, "auto", "required", "none")),
        parallel_tool_calls=st.sampled_from((None, False, True)),
    ),
)
"""A scenario-shaped value from Hypothesis' own strategies only: the generation floor."""


def _draw_all(strategy: st.SearchStrategy[Any], count: int, seed: int) -> list[Any]:
    """Draw ``count`` values the way a campaign does (same settings as ``run_campaign``)."""
    found: list[Any] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=(Phase.generate, Phase.target),
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        found.append(value)

    collect()
    return found


def hypothesis_alone(count: int, seed: int) -> float:
    started = time.perf_counter()
    drawn = _draw_all(SAME_SHAPE, count, seed)
    return len(drawn) / (time.perf_counter() - started)


def strategies_alone(count: int, seed: int) -> tuple[float, list[Scenario]]:
    started = time.perf_counter()
    drawn = _draw_all(scenarios(), count, seed)
    return len(drawn) / (time.perf_counter() - started), drawn


def checks_alone(batch: list[Scenario]) -> float:
    started = time.perf_counter()
    for scenario in batch:
        trace = run(scenario)
        if problems_of(scenario, trace):
            raise AssertionError(f"benchmark scenario failed:\n{scenario.to_yaml()}")
    return len(batch) / (time.perf_counter() - started)


def campaign(count: int, seed: int) -> tuple[float, float, Counter[str]]:
    result = run_campaign(count, seed, save_dir="/tmp/property-throughput-found")
    if not result.ok:
        raise AssertionError(f"the campaign found a violation: {result.failure}")
    stats = result.stats
    return stats.scenarios / stats.seconds, stats.rounds / stats.scenarios, stats.reasons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES)
    args = parser.parse_args()
    n = args.examples

    campaign(20, 1)  # warm caches (schema validators, strategies, imports)
    hypothesis_alone(20, 1)
    rows: dict[str, list[float]] = {"fuzz": [], "alone": [], "ours": [], "checks": []}
    depth: list[float] = []
    reasons: Counter[str] = Counter()
    for _ in range(args.repeats):  # interleaved, so a change in the machine's load hits all alike
        rate, rounds, ended = campaign(n, DEFAULT_SEED)
        rows["fuzz"].append(rate)
        depth.append(rounds)
        reasons = ended
        rows["alone"].append(hypothesis_alone(n, DEFAULT_SEED))
        ours, batch = strategies_alone(n, DEFAULT_SEED)
        rows["ours"].append(ours)
        rows["checks"].append(checks_alone(batch))
    median = {key: statistics.median(values) for key, values in rows.items()}
    ratio = median["fuzz"] / median["alone"]

    def show(key: str, label: str) -> None:
        print(f"{label:<58} median {median[key]:6.0f}/s  {[round(x) for x in rows[key]]}")

    print(f"{n} scenarios per run, seed {DEFAULT_SEED}, {args.repeats} runs each, interleaved")
    show("fuzz", "harness fuzz end to end (run_campaign)")
    show("alone", "Hypothesis alone, values of the same shape")
    show("ours", "our strategies alone (scenarios(), nothing run)")
    show("checks", "checks alone (run + reference + invariants)")
    print(
        f"ratio fuzz / Hypothesis alone: {ratio:.2f} (target >= {RATIO}: {'met' if ratio >= RATIO else 'NOT met'}); "
        f"fuzz >= {TARGET:.0f}/s: {'met' if median['fuzz'] >= TARGET else 'NOT met'}"
    )
    print(f"model rounds per scenario: {statistics.median(depth):.2f}; ended: {dict(sorted(reasons.items()))}")


if __name__ == "__main__":
    main()
