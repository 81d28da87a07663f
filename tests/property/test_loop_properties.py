"""The loop, over generated scenarios: the reference model, every invariant, determinism.

Each property runs the real loop. A failure is shrunk by Hypothesis to a minimal scenario, saved
under ``cassettes/scenarios/`` (or ``$HARNESS_SCENARIO_DIR``) and replayed by
``tests/harness/checking/test_regressions.py`` from then on. The example budget comes from the Hypothesis profile:
``--harness-profile harness-ci`` in CI, ``--harness-profile harness-deep`` for a long campaign.
"""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.checking._regressions import assert_scenario
from harness.checking._runner import run
from harness.scenarios._scenario import Config, ModelTurn, Scenario, json_schema
from harness.scenarios._scenario_parts import Behaviour
from harness.strategies import follow_up_schedules, scenarios, steering_schedules, tool_calls, tools
from harness.trace._trace import diff

# Scenarios are big values; generating them is legitimately slower than Hypothesis' default limits.
relaxed = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], deadline=None)


@relaxed
@given(scenarios())
def test_every_run_agrees_with_the_reference_model_and_the_invariants(scenario: Scenario) -> None:
    assert_scenario(scenario, found_by="tests/property/test_loop_properties.py")


# The default distribution touches everything; these lean on one area each, so that a bounded CI
# budget still reaches every branch: tools that press stop, queues that are rarely empty, tight caps.
# Follow-ups are only polled when the model answers in text, so those runs get chattier models.
CHATTY = {"calls": 5, "text": 5, "empty": 1, "error": 1, "aborted": 1, "raise": 1, "hang_up": 1}


@relaxed
@given(scenarios(cancel_one_in=2))
def test_runs_whose_tools_set_the_cancel_event(scenario: Scenario) -> None:
    assert_scenario(scenario, found_by="tests/property/test_loop_properties.py (cancel)")


@relaxed
@given(
    scenarios(
        steering=steering_schedules(max_poll=6, max_entries=4),
        follow_ups=follow_up_schedules(max_poll=3, max_entries=3),
        nesting=False,
        turn_weights=CHATTY,
    )
)
def test_runs_with_busy_steering_and_follow_up_queues(scenario: Scenario) -> None:
    assert_scenario(scenario, found_by="tests/property/test_loop_properties.py (queues)")


@relaxed
@given(
    scenarios(
        config=st.builds(Config, max_iterations=st.integers(-2, 4)),
        steering=steering_schedules(max_poll=8, max_entries=4, one_in=2),  # often queued when the cap hits
        follow_ups=follow_up_schedules(max_poll=3, max_entries=3),
        nesting=False,
        turn_weights=CHATTY,
    )
)
def test_runs_under_a_tight_iteration_cap(scenario: Scenario) -> None:
    assert_scenario(scenario, found_by="tests/property/test_loop_properties.py (tight cap)")


@relaxed
@given(scenarios(resume_one_in=1, turn_weights=CHATTY, cancel_one_in=3))
def test_resumed_runs(scenario: Scenario) -> None:
    assert_scenario(scenario, found_by="tests/property/test_loop_properties.py (resume)")


def _first_tool_is_killed(scenario: Scenario) -> Scenario:
    """The first tool's first execution raises a BaseException; the other tools keep their plans."""
    if not scenario.tools:
        return scenario
    first, *rest = scenario.tools
    killed = dataclasses.replace(first, plan=(Behaviour("raise", "killed", base=True), *first.plan))
    return dataclasses.replace(scenario, tools=(killed, *rest))


@relaxed
@given(scenarios(base_one_in=1, cancel_one_in=0).map(_first_tool_is_killed))
def test_runs_whose_tools_raise_base_exceptions(scenario: Scenario) -> None:
    assert_scenario(scenario, found_by="tests/property/test_loop_properties.py (BaseException)")


@relaxed
@given(scenarios(max_turns=6))
def test_the_same_scenario_gives_a_byte_identical_trace(scenario: Scenario) -> None:
    first, second = run(scenario), run(scenario)
    assert first.to_json() == second.to_json(), diff(first, second)


@st.composite
def long_scenarios(draw: st.DrawFn) -> Scenario:
    """Models that keep picking tools for 45 to 60 turns: only the hard cap of 50 stops them."""
    menu = draw(tools(min_size=1, max_size=2, nesting=False))
    picks = st.lists(tool_calls(menu), min_size=1, max_size=2).map(lambda calls: ModelTurn(calls=tuple(calls)))
    turns = draw(st.lists(picks, min_size=45, max_size=60))
    cap = draw(st.sampled_from([None, 50, 51, 1000, 49]))
    return Scenario(
        prompts=("keep going",),
        tools=tuple(menu),
        turns=tuple(turns),
        steering=draw(steering_schedules(max_poll=120)),
        config=Config(max_iterations=cap),
    )


@settings(relaxed, max_examples=max(3, settings.default.max_examples // 10))
@given(long_scenarios())
def test_a_model_that_never_stops_is_stopped_by_the_cap(scenario: Scenario) -> None:
    trace = assert_scenario(scenario, found_by="tests/property/test_loop_properties.py (long runs)")
    assert len(trace.requests) <= 50


SCHEMA = jsonschema.Draft202012Validator(json_schema())


@relaxed
@given(scenarios())
def test_scenarios_survive_a_yaml_round_trip(scenario: Scenario) -> None:
    text = scenario.to_yaml()
    again = Scenario.from_yaml(text)
    assert again == scenario
    assert again.to_yaml() == text
    # what is written is what the published schema describes (as an editor sees it: string keys)
    errors = [e.message for e in SCHEMA.iter_errors(json.loads(json.dumps(yaml.safe_load(text))))]
    assert errors == [], text
