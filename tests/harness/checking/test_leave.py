"""A consumer that leaves early (``leave:``): the run is cancelled, nothing starts after it left.

DESIGN 4, Robustness: ``await stream.aclose()`` and leaving ``async with agent_loop(...) as
stream:`` cancel the run when the consumer stops early; no tool starts after the consumer has
gone. The scenario holds the run where the consumer leaves (mid-reply, in a tool, at a poll), the
runner writes down what the run did after (``Trace.left``), the reference model predicts it and
the ``consumer_left`` invariant holds it to the contract.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from harness.checking._check import check
from harness.checking._runner import run
from harness.oracle._run_invariants import InvariantViolation, consumer_left
from harness.scenarios._scenario import Leave, Scenario, ScenarioError
from harness.trace._leaving import Left
from openprogram.agent.agent_loop import agent_loop

HOWS = ("aclose", "break", "with")

BASE = """\
prompts: [add them]
tools:
  - name: add
    plan:
      - {return: 5, updates: [half way]}
turns:
  - calls: [{name: add, args: {}}, {name: add, args: {}}]
  - The answer is five, as the tool said it is, twice.
steering: {4: [thanks]}
"""


def _scenario(leave: str) -> Scenario:
    return Scenario.from_yaml(BASE + f"leave: {leave}\n")


# -- the file form ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "leave"),
    [
        ("{reply: 2, after: 3}", Leave("reply", 2, 3)),
        ("{tool: 1, how: with}", Leave("tool", 1, how="with")),
        ("{poll: 3, how: break}", Leave("poll", 3, how="break")),
    ],
)
def test_a_leave_is_read_and_written_back_the_same(text: str, leave: Leave) -> None:
    scenario = _scenario(text)
    assert scenario.leave == leave
    assert f"leave: {text}" in scenario.to_yaml()
    assert Scenario.from_yaml(scenario.to_yaml()) == scenario


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{reply: 1, tool: 2}", "leave: give exactly one of reply, tool, poll"),
        ("{}", "leave: give exactly one of reply, tool, poll"),
        ("{tool: 1, after: 2}", "after counts a reply's message_update events: give it only with reply"),
        ("{poll: 0}", "leave.poll"),
        ("{reply: 1, how: close}", "leave.how"),
        ("{reply: 1, when: 2}", "unknown key(s) when"),
    ],
)
def test_a_wrong_leave_is_named_in_the_files_words(text: str, said: str) -> None:
    with pytest.raises(ScenarioError) as raised:
        _scenario(text)
    assert said in str(raised.value)


def test_a_consumer_that_leaves_is_the_only_consumer() -> None:
    with pytest.raises(ScenarioError, match="only consumer"):
        Scenario.from_yaml(BASE + "consumers: 2\nleave: {reply: 1}\n")


def test_the_json_schema_describes_leave() -> None:
    from harness.scenarios._scenario import json_schema

    schema = json_schema()
    form = schema["$defs"]["LeaveForm"]
    assert set(form["properties"]) == {"reply", "tool", "poll", "after", "how"}
    assert schema["properties"]["leave"]


# -- the real loop obeys, wherever and however the consumer leaves -----------------------------


@pytest.mark.parametrize("how", HOWS)
def test_leaving_mid_reply_cancels_the_run_there(how: str) -> None:
    result = check(_scenario(f"{{reply: 1, after: 2, how: {how}}}"), determinism=True)
    assert result.ok, result.problems
    trace = result.trace
    assert trace.event_types[-3:] == ["message_start", "message_update", "message_update"]
    assert trace.left == Left(after=len(trace.events), outcome="cancelled")
    assert trace.ledger == [] and trace.reason is None and trace.new_messages == []
    assert len(trace.requests) == 1


@pytest.mark.parametrize("how", HOWS)
def test_leaving_during_a_tool_cancels_it_and_starts_no_other(how: str) -> None:
    result = check(_scenario(f"{{tool: 1, how: {how}}}"), determinism=True)
    assert result.ok, result.problems
    trace = result.trace
    assert trace.event_types[-2:] == ["tool_execution_start", "tool_execution_update"]
    assert trace.left is not None and trace.left.outcome == "cancelled"
    assert trace.left.tools_after == [] and trace.left.events_after == []
    # the tool that was running when the consumer left is cancelled; the batch's second call never starts
    assert [(e.outcome, e.text) for e in trace.ledger or ()] == [("raised", "CancelledError")]


@pytest.mark.parametrize("how", HOWS)
def test_leaving_while_the_loop_polls_cancels_the_run_between_events(how: str) -> None:
    # poll 1 is before the first request, 2 and 3 after each call, 4 after the turn
    result = check(_scenario(f"{{poll: 3, how: {how}}}"), determinism=True)
    assert result.ok, result.problems
    trace = result.trace
    assert trace.event_types[-2:] == ["message_start", "message_end"]  # the second tool's result
    assert [e.outcome for e in trace.ledger or ()] == ["returned", "returned"]
    assert trace.left is not None and trace.left.outcome == "cancelled"


@pytest.mark.parametrize("leave", ["{reply: 3}", "{tool: 3}", "{poll: 9}"])
def test_a_run_that_ends_before_the_leave_point_is_read_to_its_end(leave: str) -> None:
    result = check(_scenario(leave))
    assert result.ok, result.problems
    assert result.trace.left is None and result.trace.reason == "stop"


def test_a_reply_with_fewer_updates_is_left_before_it_finishes() -> None:
    result = check(_scenario("{reply: 2, after: 99}"))
    assert result.ok, result.problems
    streamed = result.trace.event_types
    reply = streamed[max(i for i, kind in enumerate(streamed) if kind == "message_start") :]
    text = "The answer is five, as the tool said it is, twice."
    # every update of the reply (text_start, one per 16-character chunk, text_end), no message_end
    assert reply == ["message_start"] + ["message_update"] * (2 + -(-len(text) // 16))


def test_a_provider_fault_or_cancelled_reply_is_not_a_leave_point() -> None:
    scenario = Scenario.from_yaml("prompts: [hi]\nturns: [{raise: down}]\nleave: {reply: 1}\n")
    result = check(scenario)
    assert result.ok, result.problems
    assert result.trace.left is None and result.trace.reason == "error"


# -- loops that break the promise are caught -------------------------------------------------


def _loop_copy(old: str, new: str) -> types.ModuleType:
    source = Path(importlib.import_module("openprogram.agent.agent_loop").__file__ or "").read_text()
    assert source.count(old) == 1, f"the loop's source changed shape: {old!r}"
    module = types.ModuleType("leave_seeded_loop")
    module.__file__ = "<seeded copy of agent_loop.py>"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    try:
        exec(compile(source.replace(old, new), module.__file__, "exec"), module.__dict__)
    finally:
        sys.modules.pop(module.__name__, None)
    return module


@pytest.mark.parametrize("how", HOWS)
def test_a_loop_that_takes_the_runs_own_cancellation_for_a_provider_failure_is_caught(how: str) -> None:
    # what mutation testing found the campaign could not show before: the CancelledError of the
    # consumer's leaving, arriving mid-reply, ends the run as an `error` instead of cancelling it
    seeded = _loop_copy("        task = asyncio.current_task()\n", "        task = None\n")
    result = check(_scenario(f"{{reply: 1, after: 1, how: {how}}}"), loop=seeded)
    names = [p.name for p in result.problems]
    assert names == ["consumer_left", "reference"], result.problems
    assert "the run was not cancelled: stream.result() ended" in result.problems[0].message
    assert "events pushed after the consumer left: expected [], got ['message_end', 'turn_end', 'agent_end']" in (
        result.problems[1].message
    )


class _Deaf:
    """A stream whose ``aclose()`` cancels nothing: the run goes on after its consumer left."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)

    def __aiter__(self) -> Any:
        return self.stream.__aiter__()

    async def __aenter__(self) -> _Deaf:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        return None

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("how", HOWS)
def test_a_stream_whose_closing_does_not_cancel_the_run_is_caught(how: str) -> None:
    def deaf_loop(*args: Any) -> _Deaf:
        return _Deaf(agent_loop(*args))

    result = check(_scenario(f"{{tool: 1, how: {how}}}"), loop=deaf_loop)
    assert result.problems and result.problems[0].name == "consumer_left", result.problems
    assert "a tool started after the consumer left (after event #" in result.problems[0].message
    left = result.trace.left
    assert left is not None and left.tools_after == ["add"] and left.outcome == "ended"


def test_the_invariant_names_a_provider_stream_left_open() -> None:
    trace = run(_scenario("{reply: 1}"))
    assert trace.left is not None
    consumer_left(trace)  # the real run: nothing to say
    with pytest.raises(InvariantViolation, match="the provider's stream was left open"):
        consumer_left(trace.model_copy(update={"left": trace.left.model_copy(update={"provider_open": True})}))


def test_the_invariant_allows_a_run_that_had_ended_before_the_consumer_left() -> None:
    trace = run(_scenario("{reply: 9}"))  # read to its end
    ended = trace.model_copy(update={"left": Left(after=len(trace.events), outcome="ended")})
    consumer_left(ended)


def test_the_documented_leave_example_holds() -> None:
    doc = (Path(__file__).resolve().parents[3] / "docs" / "scenarios.md").read_text(encoding="utf-8")
    example = next(block.split("```", 1)[0] for block in doc.split("```yaml\n") if "leave: {tool" in block)
    result = check(Scenario.from_yaml(example))
    assert result.ok, result.problems
    assert result.trace.left is not None and result.trace.left.outcome == "cancelled"


_SKIPPED_THEN_RUN_UNDER_THE_SAME_ID = """
prompts: ['']
tools:
  - name: fetch
    parameters: {type: object, properties: {limit: {anyOf: [{type: string}, {type: 'null'}]}}}
turns:
  - calls: [{name: fetch, args: {limit: null}}]
  - calls: [{name: WRITE}, {name: fetch, args: {limit: null}, id: dup}]
  - calls: [{name: fetch, args: {limit: x}, id: dup}, {name: fetch, id: dup}]
  - done
steering: {4: ['wait, use search']}
leave: {tool: 2, how: break}
"""


def test_a_call_cut_short_by_the_consumer_leaving_is_not_taken_for_an_earlier_skipped_call(tmp_path: Path) -> None:
    # Found by the merged default campaign (seed 2): a call skipped by steering, then a later call
    # with the same id and name that was running when the consumer left. Its ledger entry has no
    # result, so skip_semantics took it for the skipped call having run; error_feedback already
    # counted such unanswered calls.
    source = tmp_path / "scenario.yaml"
    source.write_text(_SKIPPED_THEN_RUN_UNDER_THE_SAME_ID)
    scenario = Scenario.from_yaml(source)
    trace = run(scenario)
    assert trace.left is not None and trace.left.outcome == "cancelled"
    assert [(e.tool_call_id, e.tool_name) for e in trace.ledger or ()].count(("dup", "fetch")) == 1
    result = check(scenario)
    assert result.ok, [str(p) for p in result.problems]
