"""``harness.checking.check``: one verdict from the reference model, the invariants and ``meta.expect``."""

from __future__ import annotations

import types

from harness.checking import CheckResult, Problem, check
from harness.scenarios import Scenario

TOOL_ROUND = """
prompts: [Add 2 and 3]
tools:
  - name: add
    parameters: {type: object, properties: {a: {type: integer}, b: {type: integer}}}
    plan:
      - return: 5
turns:
  - calls:
      - {name: add, args: {a: 2, b: 3}}
  - The answer is 5.
"""


def test_a_correct_run_has_no_problem() -> None:
    result = check(Scenario.from_yaml(TOOL_ROUND), determinism=True)
    assert isinstance(result, CheckResult) and result.ok and result.problems == []
    assert result.trace.reason == "stop"
    assert [m.role for m in result.trace.new_messages] == ["user", "assistant", "toolResult", "assistant"]


def test_a_failed_expectation_is_a_problem_named_expectation() -> None:
    text = TOOL_ROUND + "meta:\n  expect:\n    reason: max_iterations\n"
    result = check(Scenario.from_yaml(text))
    assert not result.ok
    assert [p.name for p in result.problems] == ["expectation"]
    assert "max_iterations" in str(result.problems[0])


def test_a_loop_that_departs_from_the_contract_is_caught_by_the_oracle() -> None:
    """A loop that loses the user's prompt: the run no longer matches the reference model's prediction."""
    from openprogram.agent import agent_loop, agent_loop_continue

    def forgetful_loop(prompts, context, config, cancel_event=None):  # type: ignore[no-untyped-def]
        return agent_loop([], context, config, cancel_event)

    module = types.SimpleNamespace(agent_loop=forgetful_loop, agent_loop_continue=agent_loop_continue)
    result = check(Scenario.from_yaml(TOOL_ROUND), module)
    assert not result.ok
    assert "reference" in [p.name for p in result.problems], [str(p) for p in result.problems]


def test_a_problem_reads_as_its_name_and_message() -> None:
    assert str(Problem("tool_calls_answered", "call_1 has no result")) == "[tool_calls_answered] call_1 has no result"
