"""The iteration cap: ``min(50, max_iterations)`` floored at 1, counted over the whole run, losing nothing."""

from __future__ import annotations

import pytest

from harness import ScriptedProvider, turn
from openprogram import runtime
from openprogram.agent import MAX_INNER_ITERATIONS, effective_max_iterations
from openprogram.types import ToolResultMessage
from tests.openprogram.support import PROMPT, SHORT_TEXT, Ledger, Queue, call_reply, make_tool, run_agent, tool_run

CLAMPS = [(None, 50), (0, 1), (-3, 1), (1, 1), (7, 7), (50, 50), (51, 50), (10**6, 50)]


def endless(count: int = 60) -> ScriptedProvider:
    """A model that never stops picking (``count`` turns, each one call of ``a``)."""
    return ScriptedProvider(*[turn.tool_call("a", n=i) for i in range(count)])


def test_the_hard_cap_is_50() -> None:
    assert MAX_INNER_ITERATIONS == 50


@pytest.mark.parametrize(("given", "effective"), CLAMPS)
def test_effective_max_iterations_clamps(given: int | None, effective: int) -> None:
    assert effective_max_iterations(given) == effective


@pytest.mark.parametrize(("given", "effective"), CLAMPS)
def test_agent_loop_config_max_iterations_is_clamped(given: int | None, effective: int) -> None:
    ledger = Ledger()
    provider = endless()
    run = run_agent(provider, tools=[make_tool("a", ledger=ledger)], max_iterations=given)

    assert len(provider.requests) == effective
    assert len(ledger.calls) == effective  # every committed call was answered before the run ended
    assert run.end.reason == "max_iterations"
    assert isinstance(run.result[-1], ToolResultMessage)
    assert [m.role for m in run.result].count("toolResult") == effective
    run.check_new_messages()


@pytest.mark.parametrize(("given", "effective"), CLAMPS)
def test_exec_max_iterations_is_clamped(given: int | None, effective: int) -> None:
    provider = endless()
    with runtime.use(provider):
        text = runtime.exec("go", tools=[make_tool("a")], max_iterations=given)
    assert text == ""  # the last assistant message holds only a tool call
    assert len(provider.requests) == effective


def test_the_cap_ends_the_run_with_this_exact_event_sequence() -> None:
    run = run_agent(endless(), tools=[make_tool("a")], max_iterations=2)
    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        *call_reply(1),
        *tool_run("call_1"),
        "turn_end",
        "turn_start",
        *call_reply(1),
        *tool_run("call_2"),
        "turn_end",
        "agent_end:max_iterations",
    ]


def test_exec_after_the_cap_returns_the_text_of_the_last_assistant_message() -> None:
    provider = ScriptedProvider(turn.tool_calls(turn.tool_call("a"), text="still working"), "never")
    with runtime.use(provider):
        assert runtime.exec("go", tools=[make_tool("a")], max_iterations=1) == "still working"


def test_steering_taken_mid_batch_at_the_cap_is_kept_with_its_events() -> None:
    steering = Queue()
    follow_ups = Queue(["never taken"])

    def interrupt() -> str:
        steering.push("change of plan")
        return "a ok"

    provider = ScriptedProvider(
        turn.tool_call("a", call_id="r1"),
        turn.tool_calls(turn.tool_call("b", call_id="r2a"), turn.tool_call("a", call_id="r2b")),
        "never",
    )
    run = run_agent(
        provider,
        tools=[make_tool("a"), make_tool("b", interrupt)],
        steering=steering,
        follow_ups=follow_ups,
        max_iterations=2,
    )
    assert len(provider.requests) == 2
    assert run.tags[-12:] == [
        *tool_run("r2a"),
        *tool_run("r2b"),
        "turn_end",
        "message_start:user",
        "message_end:user",
        "agent_end:max_iterations",
    ]
    assert [m.content for m in run.result if m.role == "user"] == ["hi", "change of plan"]
    assert run.result[-2].text == "Skipped due to queued user message."
    assert follow_ups.polls == 0
    run.check_new_messages()


def test_steering_polled_after_the_last_allowed_reply_is_kept_exactly_once() -> None:
    steering = Queue([], ["too late"])
    provider = ScriptedProvider("done", "never")
    run = run_agent(provider, steering=steering, max_iterations=1)
    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        *SHORT_TEXT,
        "turn_end",
        "message_start:user",
        "message_end:user",
        "agent_end:max_iterations",
    ]
    assert [m.content for m in run.result if m.role == "user"] == ["hi", "too late"]
    assert len(provider.requests) == 1
    assert list(run.end.messages) == run.result


def test_the_cap_counts_requests_across_follow_up_rounds() -> None:
    follow_ups = Queue(["more"])
    provider = ScriptedProvider("one", turn.tool_call("a"), turn.tool_call("a"), "never")
    run = run_agent(provider, tools=[make_tool("a")], follow_ups=follow_ups, max_iterations=3)
    assert len(provider.requests) == 3
    assert run.end.reason == "max_iterations"
    assert follow_ups.polls == 1


def test_a_text_reply_on_the_last_allowed_request_is_a_normal_finish_and_follow_ups_stay_queued() -> None:
    follow_ups = Queue(["for a later run"])
    provider = ScriptedProvider(turn.tool_call("a"), "done")
    run = run_agent(provider, tools=[make_tool("a")], follow_ups=follow_ups, max_iterations=2)
    assert run.end.reason == "stop"
    assert follow_ups.polls == 0  # no budget to serve one, so none is taken from its queue
    assert follow_ups.batches == [["for a later run"]]
    provider.assert_complete()


def test_the_default_cap_is_50_requests() -> None:
    provider = endless(80)
    run = run_agent(provider, tools=[make_tool("a")])
    assert len(provider.requests) == 50
    assert run.end.reason == "max_iterations"
