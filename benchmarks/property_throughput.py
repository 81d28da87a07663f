"""How fast the property campaign is, side by side with Hypothesis alone (issue 11, goal 3).

Measured in one run, each figure the median of ``--repeats`` runs:

* ``harness fuzz`` end to end: ``run_campaign()`` as the command runs it (default budget, default
  seed, generation + run + reference model + invariants + the boundary table's bookkeeping);
* Hypothesis alone, values of the same shape: a ``Scenario`` built only from Hypothesis' own
  strategies (``st.builds``/``st.lists``/``st.text``/...) with the same parts and sizes (up to
  three tools with schemas and plans, up to ten turns of up to three calls with arguments,
  steering and follow-up schedules, a config), drawn under the same settings and nothing run;
  twice: with every text any printable text (``st.text``), and with every text from a small
  ``sampled_from`` vocabulary, as ours draw most texts; the ratio is judged against the faster;
* our strategies alone (``scenarios()`` drawn, nothing run) and the checks alone (run +
  reference + invariants on pre-drawn scenarios), which say where the campaign's time goes.

The campaign's depth is printed with it: model rounds per scenario and how the runs ended.
Targets: end to end >= 200/s, and >= 3/4 of Hypothesis alone (the faster comparator).

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

from harness.campaigns._boundaries import BOUNDARIES
from harness.campaigns._loop_campaign import DEFAULT_EXAMPLES, DEFAULT_SEED, run_campaign
from harness.checking._check import problems_of
from harness.checking._runner import run
from harness.scenarios._scenario import Config, ModelTurn, Scenario, ToolDef
from harness.scenarios._scenario_parts import Behaviour, Call
from harness.strategies import scenarios

TARGET = 200.0
RATIO = 0.75


def same_shape(text: st.SearchStrategy[str]) -> st.SearchStrategy[Scenario]:
    """A scenario-shaped value from Hypothesis' own strategies only (``st.builds``/``st.lists``/
    ``st.dictionaries``/...), its texts drawn from ``text``: the generation floor."""
    _text = text
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
    return st.builds(
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


SAME_SHAPE = same_shape(st.text(max_size=24))
"""Every text any printable text, as Hypothesis draws it."""
SAME_SHAPE_WORDS = same_shape(st.sampled_from(("ok", "done", "wait", "stop", "the answer is 42", "hmm", "", "héllo")))
"""The same, every text from a small vocabulary, as ``harness.strategies`` draws most texts: the
stricter comparator (one choice a text, as ours), so the ratio is judged against it."""


def _draw_all(strategy: st.SearchStrategy[Any], count: int, seed: int) -> list[Any]:
    """Draw ``count`` values the way a campaign does (same settings as ``run_campaign``)."""
    found: list[Any] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        found.append(value)

    collect()
    return found


def hypothesis_alone(count: int, seed: int, shape: st.SearchStrategy[Any] = SAME_SHAPE) -> float:
    started = time.perf_counter()
    drawn = _draw_all(shape, count, seed)
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


def campaign(count: int, seed: int) -> tuple[float, float, Counter[str], list[str]]:
    result = run_campaign(count, seed, save_dir="/tmp/property-throughput-found")
    if not result.ok:
        raise AssertionError(f"the campaign found a violation: {result.failure}")
    stats = result.stats
    return stats.scenarios / stats.seconds, stats.rounds / stats.scenarios, stats.reasons, stats.unreached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--examples", type=int, default=DEFAULT_EXAMPLES)
    args = parser.parse_args()
    n = args.examples

    campaign(20, 1)  # warm caches (schema validators, strategies, imports)
    hypothesis_alone(20, 1)
    rows: dict[str, list[float]] = {"fuzz": [], "alone": [], "words": [], "ours": [], "checks": []}
    depth: list[float] = []
    reasons: Counter[str] = Counter()
    unreached: list[str] = []
    for _ in range(args.repeats):  # interleaved, so a change in the machine's load hits all alike
        rate, rounds, ended, unreached = campaign(n, DEFAULT_SEED)
        rows["fuzz"].append(rate)
        depth.append(rounds)
        reasons = ended
        rows["alone"].append(hypothesis_alone(n, DEFAULT_SEED))
        rows["words"].append(hypothesis_alone(n, DEFAULT_SEED, SAME_SHAPE_WORDS))
        ours, batch = strategies_alone(n, DEFAULT_SEED)
        rows["ours"].append(ours)
        rows["checks"].append(checks_alone(batch))
    median = {key: statistics.median(values) for key, values in rows.items()}
    floor = max(median["alone"], median["words"])  # the faster comparator is the stricter one
    ratio = median["fuzz"] / floor

    def show(key: str, label: str) -> None:
        print(f"{label:<58} median {median[key]:6.0f}/s  {[round(x) for x in rows[key]]}")

    print(f"{n} scenarios per run, seed {DEFAULT_SEED}, {args.repeats} runs each, interleaved")
    show("fuzz", "harness fuzz end to end (run_campaign)")
    show("alone", "Hypothesis alone, values of the same shape")
    show("words", "Hypothesis alone, same shape, texts from a vocabulary")
    show("ours", "our strategies alone (scenarios(), nothing run)")
    show("checks", "checks alone (run + reference + invariants)")
    print(f"ratio fuzz / Hypothesis alone with any texts: {median['fuzz'] / median['alone']:.2f}")
    met = "met" if ratio >= RATIO else "NOT met"
    print(f"ratio fuzz / Hypothesis alone (the faster of the two): {ratio:.2f} (target >= {RATIO}: {met})")
    print(f"fuzz >= {TARGET:.0f}/s: {'met' if median['fuzz'] >= TARGET else 'NOT met'}")
    print(f"model rounds per scenario: {statistics.median(depth):.2f}; ended: {dict(sorted(reasons.items()))}")
    print(f"boundaries reached: {len(BOUNDARIES) - len(unreached)}/{len(BOUNDARIES)} (unreached: {unreached})")


if __name__ == "__main__":
    main()
