"""Steering (messages that interrupt a run) and follow-ups (messages that extend it).

DESIGN.md section 4, "Steering polls": once before the first model call, after each executed tool
call, after each ``turn_end`` unless the batch already returned steering; follow-ups only when the
inner loop drains.
"""

from __future__ import annotations

from harness import ScriptedProvider, turn
from openprogram.agent import SKIPPED_TEXT
from openprogram.types import ToolResultMessage, UserMessage
from tests.openprogram.support import PROMPT, SHORT_TEXT, Ledger, Queue, call_reply, make_tool, run_agent, tool_run

STEER = ["message_start:user", "message_end:user"]


def test_the_skip_text_is_the_contract_text() -> None:
    assert SKIPPED_TEXT == "Skipped due to queued user message."


def test_steering_mid_batch_skips_the_rest_and_goes_before_the_next_model_call() -> None:
    ledger = Ledger()
    steering = Queue()

    def first() -> str:
        steering.push("stop, use c instead")
        return "a done"

    tools = [make_tool("a", first, ledger=ledger), make_tool("b", ledger=ledger), make_tool("c", ledger=ledger)]
    provider = ScriptedProvider(
        turn.tool_calls(turn.tool_call("a"), turn.tool_call("b", x=1), turn.tool_call("c")), "ok then"
    )
    run = run_agent(provider, tools=tools, steering=steering)

    assert ledger.names == ["a"]  # skipped tools are never executed
    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        *call_reply(1, 1, 1),
        *tool_run("call_1"),
        *tool_run("call_2"),
        *tool_run("call_3"),
        "turn_end",
        "turn_start",
        *STEER,
        *SHORT_TEXT,
        "turn_end",
        "agent_end:stop",
    ]
    results = [m for m in run.result if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.tool_name, r.text, r.is_error) for r in results] == [
        ("call_1", "a", "a done", False),
        ("call_2", "b", "Skipped due to queued user message.", True),
        ("call_3", "c", "Skipped due to queued user message.", True),
    ]
    skipped_start = [e for e in run.events if e.type == "tool_execution_start"][1]
    assert skipped_start.args == {"x": 1}
    second = provider.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "toolResult", "toolResult", "toolResult", "user"]
    assert second[-1].content == "stop, use c instead"
    turn_end = next(e for e in run.events if e.type == "turn_end")
    assert [r.tool_call_id for r in turn_end.tool_results] == ["call_1", "call_2", "call_3"]
    assert steering.polls == 3  # before the first call, after "a", after the last turn_end (not after the first)
    run.check_new_messages()


def test_steering_after_the_last_call_of_a_batch_skips_nothing() -> None:
    steering = Queue()

    def last() -> str:
        steering.push("one more thing")
        return "b done"

    provider = ScriptedProvider(turn.tool_calls(turn.tool_call("a"), turn.tool_call("b", call_id="B")), "ok")
    run = run_agent(provider, tools=[make_tool("a"), make_tool("b", last)], steering=steering)
    assert [m.text for m in run.result if isinstance(m, ToolResultMessage)] == ["a ok", "b done"]
    assert [m.role for m in provider.requests[1].messages][-1] == "user"
    assert provider.requests[1].messages[-1].content == "one more thing"


def test_several_steering_messages_enter_the_history_in_order() -> None:
    steering = Queue([], ["first", UserMessage(content="second")])
    provider = ScriptedProvider(turn.tool_calls(turn.tool_call("a"), turn.tool_call("b")), "ok")
    run = run_agent(provider, tools=[make_tool("a"), make_tool("b")], steering=steering)
    assert [m.content for m in provider.requests[1].messages if m.role == "user"] == ["hi", "first", "second"]
    assert run.result[-3].content == "first" and run.result[-2].content == "second"


def test_steering_keeps_the_loop_alive_after_a_text_reply() -> None:
    steering = Queue([], ["actually, also do y"])  # poll 1: before the first call; poll 2: after turn_end
    provider = ScriptedProvider("did x", "did y")
    run = run_agent(provider, steering=steering, follow_ups=Queue())

    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        *SHORT_TEXT,
        "turn_end",
        "turn_start",
        *STEER,
        *SHORT_TEXT,
        "turn_end",
        "agent_end:stop",
    ]
    assert [m.role for m in provider.requests[1].messages] == ["user", "assistant", "user"]
    assert run.result[-1].text == "did y"
    provider.assert_complete()


def test_steering_is_polled_before_the_first_model_call() -> None:
    steering = Queue(["early note"])
    provider = ScriptedProvider("ok")
    run = run_agent(provider, steering=steering)

    assert run.tags == ["agent_start", "turn_start", *PROMPT, *STEER, *SHORT_TEXT, "turn_end", "agent_end:stop"]
    assert [m.content for m in provider.requests[0].messages] == ["hi", "early note"]
    assert [m.role for m in run.result] == ["user", "user", "assistant"]


def test_steering_poll_count_without_any_steering() -> None:
    steering = Queue()
    provider = ScriptedProvider(turn.tool_calls(turn.tool_call("a"), turn.tool_call("b")), "ok")
    run_agent(provider, tools=[make_tool("a"), make_tool("b")], steering=steering)
    assert steering.polls == 1 + 2 + 1 + 1  # before the first call, after each tool, after each turn_end


def test_follow_ups_are_polled_only_when_the_inner_loop_drains() -> None:
    follow_ups = Queue()
    steering = Queue()
    provider = ScriptedProvider(turn.tool_call("a"), turn.tool_call("a"), "done")
    run = run_agent(provider, tools=[make_tool("a")], steering=steering, follow_ups=follow_ups)
    assert follow_ups.polls == 1
    assert run.end.reason == "stop"


def test_follow_ups_extend_the_run_for_several_rounds() -> None:
    follow_ups = Queue(["next question"], ["and another", "and a third"], [])
    provider = ScriptedProvider("answer 1", turn.tool_call("a"), "answer 2", "answer 3")
    run = run_agent(provider, tools=[make_tool("a")], follow_ups=follow_ups)

    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        *SHORT_TEXT,
        "turn_end",
        "turn_start",
        *STEER,
        *call_reply(1),
        *tool_run("call_1"),
        "turn_end",
        "turn_start",
        *SHORT_TEXT,
        "turn_end",
        "turn_start",
        *STEER,
        *STEER,
        *SHORT_TEXT,
        "turn_end",
        "agent_end:stop",
    ]
    assert follow_ups.polls == 3
    assert [m.content for m in provider.requests[3].messages if m.role == "user"] == [
        "hi",
        "next question",
        "and another",
        "and a third",
    ]
    assert run.result[-1].text == "answer 3"
    provider.assert_complete()
    run.check_new_messages()


def test_steering_within_a_follow_up_round_is_served_before_the_next_follow_up() -> None:
    steering = Queue([], [], ["steer"], [])  # before call 1, after turn 1, after turn 2 (the follow-up round)
    follow_ups = Queue(["follow"], [])
    provider = ScriptedProvider("one", "two", "three")
    run = run_agent(provider, steering=steering, follow_ups=follow_ups)
    assert [m.content for m in run.result if m.role == "user"] == ["hi", "follow", "steer"]
    assert follow_ups.polls == 2
    assert len(provider.requests) == 3


def test_steering_messages_given_as_strings_become_user_messages() -> None:
    run = run_agent(ScriptedProvider("ok"), steering=Queue(["plain"]))
    assert isinstance(run.result[1], UserMessage) and run.result[1].content == "plain"


def test_a_plain_sync_getter_works_too() -> None:
    batches = [["sync steer"], []]

    def steering() -> list[str]:
        return batches.pop(0) if batches else []

    provider = ScriptedProvider("ok")
    run_agent(provider, steering=steering, follow_ups=lambda: None)
    assert [m.content for m in provider.requests[0].messages] == ["hi", "sync steer"]
