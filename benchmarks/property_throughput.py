"""How many generated scenarios per second the property campaign checks.

Each scenario (up to 10 model rounds, from ``harness.strategies.scenarios()``) is run through the
real loop, compared with the reference model, and checked against every invariant (when
``harness.invariants`` exists). Two figures, each the median of several runs:

* checked/s: run + reference + invariants on scenarios Hypothesis generated beforehand; the cost
  of the harness and the loop, which is what the 200/s target is about;
* end to end/s: the same inside ``@given``, so Hypothesis' own generation is included (what a
  campaign or a property test actually achieves on this machine).

Generated scenarios end early as often as real models do (a text answer, an error); a third
figure checks scenarios forced to the full 10 rounds (nine turns of picks, then text), the worst
case the target speaks of.

Usage: ``python benchmarks/property_throughput.py [--scenarios 300] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from harness.check import problems_of
from harness.runner import run
from harness.scenario import ModelTurn, Scenario
from harness.strategies import model_turns, scenarios, tools

TARGET = 200.0


def _settings(count: int, seed: int) -> settings:
    return settings(
        max_examples=count,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


def generate(count: int) -> list[Scenario]:
    found: list[Scenario] = []

    @_settings(count, 0)
    @given(scenarios(max_turns=10))
    def collect(scenario: Scenario) -> None:
        found.append(scenario)

    collect()
    return found


@st.composite
def ten_round_scenarios(draw: st.DrawFn) -> Scenario:
    menu = draw(tools(min_size=1))
    picks = draw(st.lists(model_turns(menu, weights={"calls": 1}), min_size=9, max_size=9))
    return Scenario(prompts=("go",), tools=tuple(menu), turns=(*picks, ModelTurn(text="done")))


def generate_ten_rounds(count: int) -> list[Scenario]:
    found: list[Scenario] = []

    @_settings(count, 0)
    @given(ten_round_scenarios())
    def collect(scenario: Scenario) -> None:
        found.append(scenario)

    collect()
    return found


def check(scenario: Scenario) -> int:
    trace = run(scenario)
    problems = problems_of(scenario, trace)
    if problems:
        raise AssertionError(f"benchmark scenario failed: {problems[0]}\n{scenario.to_yaml()}")
    return len(trace.requests)


def checked_per_second(batch: list[Scenario]) -> tuple[float, int]:
    started = time.perf_counter()
    rounds = sum(check(s) for s in batch)
    return len(batch) / (time.perf_counter() - started), rounds


def end_to_end_per_second(count: int) -> float:
    done = [0]

    @_settings(count, 0)
    @given(scenarios(max_turns=10))
    def campaign(scenario: Scenario) -> None:
        check(scenario)
        done[0] += 1

    started = time.perf_counter()
    campaign()
    return done[0] / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    batch = generate(args.scenarios)
    checked_per_second(batch[:20])  # warm caches (schema validators, strategies)
    checked, rounds = zip(*(checked_per_second(batch) for _ in range(args.repeats)), strict=True)
    end_to_end = [end_to_end_per_second(args.scenarios) for _ in range(args.repeats)]
    long_batch = generate_ten_rounds(max(50, args.scenarios // 3))
    long_checked, long_rounds = zip(*(checked_per_second(long_batch) for _ in range(args.repeats)), strict=True)
    print(f"scenarios per run: {len(batch)} (max 10 rounds each, {rounds[0] / len(batch):.1f} model rounds on average)")
    median = statistics.median(checked)
    print(
        f"checked (run + reference + invariants): median {median:.0f} scenarios/s over {args.repeats} runs "
        f"{[round(x) for x in checked]}  target >= {TARGET:.0f}/s: {'met' if median >= TARGET else 'NOT met'}"
    )
    print(
        f"end to end (with Hypothesis generation):  median {statistics.median(end_to_end):.0f} scenarios/s "
        f"{[round(x) for x in end_to_end]}"
    )
    print(
        f"checked, full 10-round scenarios ({long_rounds[0] / len(long_batch):.1f} rounds on average): "
        f"median {statistics.median(long_checked):.0f} scenarios/s {[round(x) for x in long_checked]}"
    )


if __name__ == "__main__":
    main()
