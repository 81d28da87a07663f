"""``harness.checking.run``: a scenario through the real loop, in a world that gives the same trace every time."""

from __future__ import annotations

import asyncio

import pytest

from harness.checking import arun, run
from harness.scenarios import Scenario

RAISING_TOOL = """
prompts: [go]
tools:
  - name: flaky
    parameters: {type: object, properties: {}}
    plan:
      - raise: disk full
turns:
  - calls:
      - {name: flaky, args: {}}
  - gave up
"""


def test_a_planned_tool_follows_its_plan_and_the_ledger_says_so() -> None:
    trace = run(Scenario.from_yaml(RAISING_TOOL))
    results = [m for m in trace.new_messages if m.role == "toolResult"]
    assert [(r.tool_name, r.is_error, r.content[0].text) for r in results] == [("flaky", True, "disk full")]
    assert [(e.tool_name, e.outcome, e.text) for e in trace.ledger] == [("flaky", "raised", "disk full")]
    assert trace.reason == "stop"


def test_each_request_the_model_received_is_kept() -> None:
    trace = run(Scenario.from_yaml(RAISING_TOOL))
    assert len(trace.requests) == 2
    assert [t.name for t in trace.requests[0].tools] == ["flaky"]
    assert trace.requests[1].messages[-1].role == "toolResult"


def test_a_request_beyond_the_turns_ends_the_run_with_an_error() -> None:
    scenario = Scenario.from_yaml(RAISING_TOOL.replace("  - gave up\n", ""))
    trace = run(scenario)
    assert trace.reason == "error"


@pytest.mark.parametrize("cap", [1, 2])
def test_the_cap_of_the_config_reaches_the_loop(cap: int) -> None:
    text = RAISING_TOOL.replace("  - gave up\n", "  - calls:\n      - {name: flaky, args: {}}\n  - gave up\n")
    trace = run(Scenario.from_yaml(text + f"config: {{max_iterations: {cap}}}\n"))
    assert len(trace.requests) == cap and trace.reason == "max_iterations"


def test_arun_gives_the_same_trace_as_run() -> None:
    scenario = Scenario.from_yaml(RAISING_TOOL)
    assert asyncio.run(arun(scenario)).to_json() == run(scenario).to_json()
