"""The loop of DESIGN.md section 1 and the details of section 4, observed through events and requests."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from harness import ScriptedProvider, turn
from openprogram.agent import (
    AgentContext,
    AgentLoopConfig,
    agent_loop,
    agent_loop_continue,
)
from openprogram.providers.builder import MessageBuilder
from openprogram.tools import AgentTool, AgentToolResult, as_agent_tool
from openprogram.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from tests.openprogram.support import (
    PROMPT,
    SHORT_TEXT,
    Clock,
    FnProvider,
    Ledger,
    Queue,
    call_reply,
    collect,
    describe,
    make_tool,
    run_agent,
    tool_run,
)

INT_AB = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


def add_tool(ledger: Ledger | None = None) -> AgentTool:
    return make_tool("add", lambda a, b: str(a + b), ledger=ledger, parameters=INT_AB)


def result_messages(messages: list[Any]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


# --------------------------------------------------------------------------------------------
# Normal finishes
# --------------------------------------------------------------------------------------------


def test_a_text_reply_ends_the_run_with_this_exact_event_sequence() -> None:
    run = run_agent(ScriptedProvider(turn.text("hello")))

    assert run.tags == ["agent_start", "turn_start", *PROMPT, *SHORT_TEXT, "turn_end", "agent_end:stop"]
    assert [m.role for m in run.result] == ["user", "assistant"]
    assert run.result[0].content == "hi"
    assert run.result[1].text == "hello"
    assert run.result[1].stop_reason == "stop"
    run.check_new_messages()
    assert len(run.requests) == 1
    assert run.requests[0].messages == (run.result[0],)


def test_a_tool_round_trip_feeds_the_result_back_before_the_next_request() -> None:
    ledger = Ledger()
    provider = ScriptedProvider(turn.tool_call("add", a=2, b=3), turn.text("five"))
    run = run_agent(provider, tools=[add_tool(ledger)])

    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        *call_reply(1),
        *tool_run("call_1"),
        "turn_end",
        "turn_start",
        *SHORT_TEXT,
        "turn_end",
        "agent_end:stop",
    ]
    assert ledger.calls == [("add", {"a": 2, "b": 3})]
    user, call_message, result, answer = run.result
    assert call_message.stop_reason == "toolUse"
    assert call_message.content == (ToolCall(id="call_1", name="add", arguments={"a": 2, "b": 3}),)
    assert (result.tool_call_id, result.tool_name, result.text, result.is_error) == ("call_1", "add", "5", False)
    assert answer.text == "five"
    assert run.requests[1].messages == (user, call_message, result)
    run.check_new_messages()
    provider.assert_complete()


def test_turn_end_carries_the_assistant_message_and_its_tool_results() -> None:
    run = run_agent(
        ScriptedProvider(turn.tool_calls(turn.tool_call("add", a=1, b=1), turn.tool_call("add", a=2, b=2)), "done"),
        tools=[add_tool()],
    )
    first_turn_end = next(e for e in run.events if e.type == "turn_end")
    assert first_turn_end.message == run.result[1]
    assert list(first_turn_end.tool_results) == run.result[2:4]
    last_turn_end = [e for e in run.events if e.type == "turn_end"][-1]
    assert last_turn_end.message.text == "done"
    assert last_turn_end.tool_results == ()


def test_tool_execution_events_carry_ids_names_args_and_results() -> None:
    run = run_agent(ScriptedProvider(turn.tool_call("add", a=2, b=3, call_id="c-7"), "ok"), tools=[add_tool()])
    start = next(e for e in run.events if e.type == "tool_execution_start")
    end = next(e for e in run.events if e.type == "tool_execution_end")
    assert (start.tool_call_id, start.tool_name, start.args) == ("c-7", "add", {"a": 2, "b": 3})
    assert (end.tool_call_id, end.tool_name, end.is_error) == ("c-7", "add", False)
    assert end.result == AgentToolResult(content="5")


def test_message_update_events_carry_the_partial_message_and_the_provider_event() -> None:
    run = run_agent(ScriptedProvider(turn.text("a" * 20)))
    updates = [e for e in run.events if e.type == "message_update"]
    assert [u.assistant_message_event.type for u in updates] == ["text_start", "text_delta", "text_delta", "text_end"]
    assert [u.message.text for u in updates] == ["", "a" * 16, "a" * 20, "a" * 20]
    assert [u.assistant_message_event.delta for u in updates[1:3]] == ["a" * 16, "a" * 4]
    assert all(u.message == u.assistant_message_event.partial for u in updates)


# --------------------------------------------------------------------------------------------
# Per-call failures become is_error results and never break the loop
# --------------------------------------------------------------------------------------------


def test_an_unknown_tool_gets_the_not_found_text_and_the_loop_goes_on() -> None:
    ledger = Ledger()
    tools = [add_tool(ledger), make_tool("echo", ledger=ledger)]
    run = run_agent(ScriptedProvider(turn.tool_call("nope", x=1), "sorry"), tools=tools)

    (result,) = result_messages(run.result)
    assert result.text == 'Tool "nope" not found. Available tools: add, echo'
    assert result.is_error is True
    assert ledger.calls == []
    assert run.end.reason == "stop"
    assert run.result[-1].text == "sorry"
    end = next(e for e in run.events if e.type == "tool_execution_end")
    assert end.is_error is True and end.result.text == result.text


def test_an_unknown_tool_with_an_empty_menu_says_there_are_none() -> None:
    run = run_agent(ScriptedProvider(turn.tool_call("nope"), "ok"))
    assert result_messages(run.result)[0].text == 'Tool "nope" not found. Available tools: (none)'


def test_invalid_arguments_get_the_validation_text_with_root_and_received_arguments() -> None:
    ledger = Ledger()
    run = run_agent(ScriptedProvider(turn.tool_call("add", a="x"), "ok"), tools=[add_tool(ledger)])

    (result,) = result_messages(run.result)
    assert result.is_error is True
    assert result.text == (
        'Validation failed for tool "add":\n'
        "  - root: 'b' is a required property\n"
        "  - a: 'x' is not of type 'integer'\n"
        "\n"
        "Received arguments:\n"
        '{\n  "a": "x"\n}'
    )
    assert ledger.calls == []


def test_arguments_are_coerced_before_the_executor_sees_them() -> None:
    ledger = Ledger()
    run = run_agent(ScriptedProvider(turn.tool_call("add", a=" 5 ", b="-2"), "ok"), tools=[add_tool(ledger)])
    assert ledger.calls == [("add", {"a": 5, "b": -2})]
    assert result_messages(run.result)[0].text == "3"
    start = next(e for e in run.events if e.type == "tool_execution_start")
    assert start.args == {"a": " 5 ", "b": "-2"}  # the event shows what the model sent


def test_invalid_json_arguments_are_answered_without_executing() -> None:
    ledger = Ledger()
    provider = ScriptedProvider(turn.raw_tool_call("add", '{"a": 1,'), "ok")
    run = run_agent(provider, tools=[add_tool(ledger)])

    (result,) = result_messages(run.result)
    assert result.is_error is True
    assert result.text == (
        'Invalid JSON arguments for tool "add": Expecting property name enclosed in double quotes: '
        "line 1 column 9 (char 8)\n\nReceived arguments:\n"
        '{"a": 1,'
    )
    assert ledger.calls == []
    call = run.result[1].content[0]
    assert (call.arguments, call.raw_arguments) == ({}, '{"a": 1,')
    start = next(e for e in run.events if e.type == "tool_execution_start")
    assert start.args == {}


def test_json_that_is_not_an_object_is_invalid_arguments_too() -> None:
    run = run_agent(ScriptedProvider(turn.raw_tool_call("add", "[1, 2]"), "ok"), tools=[add_tool()])
    assert result_messages(run.result)[0].text == (
        'Invalid JSON arguments for tool "add": expected a JSON object, got list\n\nReceived arguments:\n[1, 2]'
    )


def test_a_raising_tool_feeds_back_the_exception_text() -> None:
    def boom() -> str:
        raise RuntimeError("disk full")

    run = run_agent(ScriptedProvider(turn.tool_call("boom"), "ok"), tools=[make_tool("boom", boom)])
    (result,) = result_messages(run.result)
    assert (result.text, result.is_error) == ("disk full", True)
    assert run.end.reason == "stop"


def test_a_raising_tool_without_a_message_feeds_back_the_exception_type_name() -> None:
    class QuotaExceeded(Exception):
        pass

    def boom() -> str:
        raise QuotaExceeded()

    run = run_agent(ScriptedProvider(turn.tool_call("boom"), "ok"), tools=[make_tool("boom", boom)])
    assert result_messages(run.result)[0].text == "QuotaExceeded"


def test_an_is_error_result_returned_by_a_tool_is_kept_with_its_details() -> None:
    def check() -> AgentToolResult:
        return AgentToolResult(content="nope", details={"code": 7}, is_error=True)

    run = run_agent(ScriptedProvider(turn.tool_call("check"), "ok"), tools=[make_tool("check", check)])
    (result,) = result_messages(run.result)
    assert (result.text, result.is_error, result.details) == ("nope", True, {"code": 7})
    end = next(e for e in run.events if e.type == "tool_execution_end")
    assert end.is_error is True
    assert end.result == AgentToolResult(content="nope", details={"code": 7}, is_error=True)


def test_parallel_calls_run_in_order_and_their_results_precede_the_next_request() -> None:
    ledger = Ledger()
    tools = [make_tool(name, ledger=ledger) for name in ("a", "b", "c")]
    provider = ScriptedProvider(
        turn.tool_calls(turn.tool_call("b", n=1), turn.tool_call("a", n=2), turn.tool_call("c", n=3)), "done"
    )
    run = run_agent(provider, tools=tools)

    assert ledger.calls == [("b", {"n": 1}), ("a", {"n": 2}), ("c", {"n": 3})]
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
        *SHORT_TEXT,
        "turn_end",
        "agent_end:stop",
    ]
    second = run.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "toolResult", "toolResult", "toolResult"]
    assert [(m.tool_call_id, m.tool_name, m.text) for m in second[2:]] == [
        ("call_1", "b", "b ok"),
        ("call_2", "a", "a ok"),
        ("call_3", "c", "c ok"),
    ]


def test_every_failure_kind_in_one_batch_gets_exactly_one_result_in_call_order() -> None:
    def boom() -> str:
        raise ValueError("bad")

    provider = ScriptedProvider(
        turn.tool_calls(
            turn.tool_call("missing", call_id="t1"),
            turn.raw_tool_call("add", "not json", call_id="t2"),
            turn.tool_call("add", a=1, call_id="t3"),
            turn.tool_call("boom", call_id="t4"),
            turn.tool_call("add", a=1, b=2, call_id="t5"),
        ),
        "done",
    )
    run = run_agent(provider, tools=[add_tool(), make_tool("boom", boom)])
    results = result_messages(run.result)
    assert [(r.tool_call_id, r.is_error) for r in results] == [
        ("t1", True),
        ("t2", True),
        ("t3", True),
        ("t4", True),
        ("t5", False),
    ]
    assert results[3].text == "bad" and results[4].text == "3"
    assert run.end.reason == "stop"


# --------------------------------------------------------------------------------------------
# Error and aborted finishes
# --------------------------------------------------------------------------------------------


def _provider_of(*events_for: Any) -> FnProvider:
    """A provider that yields a tool call and then finishes with ``finish(builder)``."""

    async def stream(request: Any) -> Any:
        builder = MessageBuilder(model="m", provider="fn")
        yield builder.start()
        index, start = builder.toolcall_start("x1", "add")
        yield start
        yield builder.toolcall_delta(index, '{"a": 1, "b": 2}')
        yield builder.toolcall_end(index)
        for finish in events_for:
            yield finish(builder)

    return FnProvider(stream)


@pytest.mark.parametrize("reason", ["error", "aborted"])
def test_an_error_or_aborted_turn_ends_the_run_at_once_without_running_its_calls(reason: str) -> None:
    ledger = Ledger()
    provider = _provider_of(lambda b: b.error(reason, "it broke"))
    steering = Queue()
    run = run_agent(provider, tools=[add_tool(ledger)], steering=steering)

    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        *call_reply(1),
        "turn_end",
        f"agent_end:{reason}",
    ]
    assert ledger.calls == []
    last = run.result[-1]
    assert (last.stop_reason, last.error_message) == (reason, "it broke")
    assert last.tool_calls[0].name == "add"  # kept, but never answered
    assert len(provider.requests) == 1
    assert steering.polls == 1  # only the poll before the first call: the run ended at once
    run.check_new_messages()


def test_scripted_error_and_aborted_turns_end_the_run() -> None:
    for script, reason, text in [
        (turn.error("rate limited"), "error", "rate limited"),
        (turn.aborted(), "aborted", "Request was aborted"),
    ]:
        provider = ScriptedProvider(turn.tool_call("add", a=1, b=1), script, "never")
        run = run_agent(provider, tools=[add_tool()])
        assert run.tags[-4:] == ["message_start:assistant", "message_end:assistant", "turn_end", f"agent_end:{reason}"]
        assert (run.result[-1].stop_reason, run.result[-1].error_message) == (reason, text)
        assert len(provider.requests) == 2


def test_a_provider_that_raises_mid_stream_takes_the_error_path() -> None:
    async def stream(request: Any) -> Any:
        builder = MessageBuilder(model="m", provider="fn")
        yield builder.start()
        index, start = builder.text_start()
        yield start
        yield builder.text_delta(index, "partial")
        raise ConnectionError("socket closed")

    run = run_agent(FnProvider(stream))
    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        "message_start:assistant",
        "message_update:text_start",
        "message_update:text_delta",
        "message_end:assistant",
        "turn_end",
        "agent_end:error",
    ]
    last = run.result[-1]
    assert last.stop_reason == "error"
    assert last.error_message == "ConnectionError: socket closed"
    assert last.text == "partial"  # what streamed before the failure is kept
    run.check_new_messages()


def test_a_provider_that_raises_before_any_event_takes_the_error_path() -> None:
    async def stream(request: Any) -> Any:
        raise TimeoutError("read timed out")
        yield  # pragma: no cover

    run = run_agent(FnProvider(stream))
    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        "message_start:assistant",
        "message_end:assistant",
        "turn_end",
        "agent_end:error",
    ]
    assert run.result[-1].error_message == "TimeoutError: read timed out"
    assert run.result[-1].content == ()


def test_a_provider_whose_stream_call_itself_raises_takes_the_error_path() -> None:
    class Eager:
        def stream(self, request: Any, cancel_event: Any = None) -> Any:
            raise PermissionError("no API key")

    run = run_agent(Eager())
    assert run.end.reason == "error"
    assert run.result[-1].error_message == "PermissionError: no API key"
    assert run.tags[-4:] == ["message_start:assistant", "message_end:assistant", "turn_end", "agent_end:error"]


def test_a_provider_raising_an_exception_without_text_still_names_it() -> None:
    async def stream(request: Any) -> Any:
        raise ValueError()
        yield  # pragma: no cover

    run = run_agent(FnProvider(stream))
    assert run.result[-1].error_message == "ValueError: "


def test_a_stream_that_ends_without_done_or_error_is_an_error() -> None:
    async def stream(request: Any) -> Any:
        builder = MessageBuilder()
        yield builder.start()
        index, start = builder.text_start()
        yield start
        yield builder.text_delta(index, "cut")

    run = run_agent(FnProvider(stream))
    last = run.result[-1]
    assert (last.stop_reason, last.text) == ("error", "cut")
    assert last.error_message == "provider stream ended without a done or error event"
    assert run.end.reason == "error"


def test_a_cancel_event_set_before_the_model_call_aborts_without_calling_the_provider() -> None:
    provider = ScriptedProvider("never", strict=True)

    def cancelled() -> asyncio.Event:
        event = asyncio.Event()
        event.set()
        return event

    run = run_agent(provider, cancel_event_factory=cancelled)
    assert provider.requests == ()
    assert run.tags == [
        "agent_start",
        "turn_start",
        *PROMPT,
        "message_start:assistant",
        "message_end:assistant",
        "turn_end",
        "agent_end:aborted",
    ]
    aborted = run.result[-1]
    assert isinstance(aborted, AssistantMessage)
    assert (aborted.stop_reason, aborted.content) == ("aborted", ())
    run.check_new_messages()


def test_a_tool_that_sets_the_cancel_event_stops_the_next_model_call() -> None:
    async def main() -> tuple[list[Any], list[Any]]:
        cancel = asyncio.Event()

        def stop() -> str:
            cancel.set()
            return "stopping"

        provider = ScriptedProvider(turn.tool_call("stop"), "never")
        config = AgentLoopConfig(provider=provider, clock=Clock())
        stream = agent_loop(["go"], AgentContext(tools=[make_tool("stop", stop)]), config, cancel)
        events, result, _ = await collect(stream)
        assert len(provider.requests) == 1
        return events, result or []

    events, result = asyncio.run(main())
    assert [m.role for m in result] == ["user", "assistant", "toolResult", "assistant"]
    assert result[-1].stop_reason == "aborted"
    assert events[-1].reason == "aborted"


# --------------------------------------------------------------------------------------------
# new_messages, the clock, determinism
# --------------------------------------------------------------------------------------------


def test_the_clock_stamps_every_committed_message_in_order() -> None:
    queue_calls = [["steer"]]

    async def steering() -> list[Any]:
        return queue_calls.pop() if queue_calls else []

    clock = Clock(start=5000)
    run = run_agent(
        ScriptedProvider(turn.tool_call("add", a=1, b=2), "three"),
        prompts=["hi", UserMessage(content="there")],
        tools=[add_tool()],
        steering=steering,
        clock=clock,
    )
    stamps = [m.timestamp for m in run.result]
    assert [m.role for m in run.result] == ["user", "user", "user", "assistant", "toolResult", "assistant"]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert all(5000 < s <= clock.now for s in stamps)
    ends = [e.message for e in run.events if e.type == "message_end"]
    assert ends == run.result  # the events carry the stamped messages


def test_a_message_that_already_has_a_timestamp_keeps_it() -> None:
    run = run_agent(ScriptedProvider("ok"), prompts=[UserMessage(content="hi", timestamp=42)])
    assert run.result[0].timestamp == 42
    assert run.result[1].timestamp == 1001


def test_new_messages_equal_agent_end_messages_and_the_stream_result() -> None:
    async def main() -> None:
        provider = ScriptedProvider(turn.tool_call("add", a=1, b=2), "three")
        stream = agent_loop(["hi"], AgentContext(tools=[add_tool()]), AgentLoopConfig(provider, clock=Clock()))
        events = [e async for e in stream]
        result = await stream.result()
        assert list(events[-1].messages) == result
        assert [m.role for m in result] == ["user", "assistant", "toolResult", "assistant"]

    asyncio.run(main())


def _scenario_dump() -> list[str]:
    queue = [[], ["and also"]]

    async def steering() -> list[Any]:
        return queue.pop(0) if queue else []

    provider = ScriptedProvider(
        turn.tool_calls(turn.tool_call("add", a=1, b=2), turn.tool_call("missing")),
        turn.text("three", thinking="let me think about this for a while"),
        "fine",
    )
    run = run_agent(provider, tools=[add_tool()], steering=steering)
    return [e.model_dump_json() for e in run.events] + [r.model_dump_json() for r in provider.requests]


def test_two_runs_of_the_same_script_produce_identical_event_dumps() -> None:
    first, second = _scenario_dump(), _scenario_dump()
    assert first == second
    assert any('"and also"' in line for line in first)


def test_the_callers_context_is_not_mutated() -> None:
    history = [UserMessage(content="earlier", timestamp=1)]
    context = AgentContext(messages=history)

    async def main() -> None:
        stream = agent_loop(["hi"], context, AgentLoopConfig(ScriptedProvider("ok"), clock=Clock()))
        await stream.result()

    asyncio.run(main())
    assert context.messages == [UserMessage(content="earlier", timestamp=1)]


def test_system_prompt_history_and_config_reach_the_request() -> None:
    provider = ScriptedProvider("ok")
    earlier = UserMessage(content="earlier", timestamp=1)
    run_agent(
        provider,
        tools=[add_tool()],
        system_prompt="be brief",
        history=[earlier],
        model="m-1",
        tool_choice="required",
        parallel_tool_calls=False,
    )
    request = provider.requests[0]
    assert request.system_prompt == "be brief"
    assert request.model == "m-1"
    assert request.tool_choice == "required"
    assert request.parallel_tool_calls is False
    assert request.messages[0] == earlier
    assert [t.name for t in request.tools] == ["add"]
    assert request.tools[0].parameters == INT_AB


# --------------------------------------------------------------------------------------------
# Starting: agent_loop_continue and the running-loop requirement
# --------------------------------------------------------------------------------------------


def test_agent_loop_continue_refuses_an_empty_context() -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match="needs a context with messages"):
            agent_loop_continue(AgentContext(), AgentLoopConfig(ScriptedProvider()))

    asyncio.run(main())


def test_agent_loop_continue_refuses_a_context_ending_with_an_assistant_message() -> None:
    context = AgentContext(messages=[UserMessage(content="q"), AssistantMessage(content=(TextContent(text="a"),))])

    async def main() -> None:
        with pytest.raises(ValueError, match="cannot continue from an assistant message"):
            agent_loop_continue(context, AgentLoopConfig(ScriptedProvider()))

    asyncio.run(main())


def test_agent_loop_continue_resumes_after_a_tool_result() -> None:
    history = [
        UserMessage(content="add 1 and 2", timestamp=1),
        AssistantMessage(
            content=(ToolCall(id="x", name="add", arguments={"a": 1, "b": 2}),), stop_reason="toolUse", timestamp=2
        ),
        ToolResultMessage(tool_call_id="x", tool_name="add", content="3", timestamp=3),
    ]
    provider = ScriptedProvider("it is 3")
    run = run_agent(provider, history=history, tools=[add_tool()], resume=True)

    assert run.tags == ["agent_start", "turn_start", *SHORT_TEXT, "turn_end", "agent_end:stop"]
    assert provider.requests[0].messages == tuple(history)
    assert [m.text for m in run.result] == ["it is 3"]
    run.check_new_messages()


def test_agent_loop_outside_a_running_event_loop_raises_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match=r"inside a running event loop .* use runtime\.exec"):
        agent_loop(["hi"], AgentContext(), AgentLoopConfig(ScriptedProvider("ok")))
    with pytest.raises(RuntimeError, match="inside a running event loop"):
        agent_loop_continue(AgentContext(messages=[UserMessage(content="q")]), AgentLoopConfig(ScriptedProvider()))


def test_agent_loop_returns_at_once_before_anything_runs() -> None:
    async def main() -> None:
        provider = ScriptedProvider("ok")
        stream = agent_loop(["hi"], AgentContext(), AgentLoopConfig(provider, clock=Clock()))
        assert provider.requests == ()
        await stream.result()
        assert len(provider.requests) == 1

    asyncio.run(main())


def test_prompts_must_be_messages_or_strings() -> None:
    async def main() -> None:
        with pytest.raises(TypeError, match="expected a message or a str, got int"):
            agent_loop([3], AgentContext(), AgentLoopConfig(ScriptedProvider()))  # type: ignore[list-item]

    asyncio.run(main())


# --------------------------------------------------------------------------------------------
# Executors: what they receive, where they run, what they may return
# --------------------------------------------------------------------------------------------


def test_on_update_becomes_tool_execution_update_events() -> None:
    def work(on_update: Any) -> str:
        on_update("25%")
        on_update({"progress": 1.0})
        return "done"

    tool = as_agent_tool({"spec": {"name": "work"}, "execute": work})
    run = run_agent(ScriptedProvider(turn.tool_call("work"), "ok"), tools=[tool])
    assert run.tags[9:15] == [
        "tool_execution_start:call_1",
        "tool_execution_update:call_1",
        "tool_execution_update:call_1",
        "tool_execution_end:call_1",
        "message_start:toolResult",
        "message_end:toolResult",
    ]
    updates = [e for e in run.events if e.type == "tool_execution_update"]
    assert [(u.tool_call_id, u.tool_name, u.partial_result) for u in updates] == [
        ("call_1", "work", "25%"),
        ("call_1", "work", {"progress": 1.0}),
    ]


def test_cancel_event_and_on_update_reach_executors() -> None:
    seen: dict[str, Any] = {}

    async def main() -> None:
        cancel = asyncio.Event()

        async def raw_execute(tool_call_id: str, args: dict[str, Any], cancel_event: Any, on_update: Any) -> Any:
            seen["raw"] = (tool_call_id, args, cancel_event is cancel, callable(on_update))
            return AgentToolResult(content="raw")

        def kw_tool(x: int, cancel_event: Any, on_update: Any) -> str:
            seen["kw"] = (x, cancel_event is cancel, callable(on_update))
            return "kw"

        tools = [
            AgentTool(name="raw", description="", parameters={"type": "object"}, execute=raw_execute),
            as_agent_tool({"spec": {"name": "kw", "parameters": {"type": "object"}}, "execute": kw_tool}),
        ]
        provider = ScriptedProvider(turn.tool_calls(turn.tool_call("raw", q=1), turn.tool_call("kw", x=4)), "ok")
        await agent_loop(["hi"], AgentContext(tools=tools), AgentLoopConfig(provider), cancel).result()

    asyncio.run(main())
    assert seen == {"raw": ("call_1", {"q": 1}, True, True), "kw": (4, True, True)}


def test_sync_executors_run_on_the_loop_thread_and_thread_true_on_a_worker() -> None:
    threads: dict[str, int] = {}

    def inline() -> str:
        threads["inline"] = threading.get_ident()
        return "inline"

    def worker() -> str:
        threads["worker"] = threading.get_ident()
        return "worker"

    async def coro() -> str:
        threads["async"] = threading.get_ident()
        await asyncio.sleep(0)
        return "async"

    async def main() -> list[Any]:
        threads["loop"] = threading.get_ident()
        tools = [make_tool("inline", inline), make_tool("worker", worker, thread=True), make_tool("coro", coro)]
        provider = ScriptedProvider(
            turn.tool_calls(turn.tool_call("inline"), turn.tool_call("worker"), turn.tool_call("coro")), "ok"
        )
        return await agent_loop(["hi"], AgentContext(tools=tools), AgentLoopConfig(provider)).result()

    result = asyncio.run(main())
    assert [m.text for m in result_messages(result)] == ["inline", "worker", "async"]
    assert threads["inline"] == threads["loop"] == threads["async"]
    assert threads["worker"] != threads["loop"]


class Point(BaseModel):
    x: int
    y: int


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain", "plain"),
        (None, ""),
        (Point(x=1, y=2), '{"x": 1, "y": 2}'),
        ({"a": [1, "é"]}, '{"a": [1, "é"]}'),
        ([1, 2], "[1, 2]"),
        (3.5, "3.5"),
        (True, "true"),
        ([Point(x=0, y=0)], '[{"x": 0, "y": 0}]'),
    ],
)
def test_return_values_become_result_text(value: Any, text: str) -> None:
    run = run_agent(ScriptedProvider(turn.tool_call("t"), "ok"), tools=[make_tool("t", lambda: value)])
    (result,) = result_messages(run.result)
    assert (result.text, result.is_error) == (text, False)


def test_an_agent_tool_result_return_value_is_kept_as_is() -> None:
    returned = AgentToolResult(content=(TextContent(text="a"), TextContent(text="b")), details=[1])
    run = run_agent(ScriptedProvider(turn.tool_call("t"), "ok"), tools=[make_tool("t", lambda: returned)])
    (result,) = result_messages(run.result)
    assert result.content == returned.content
    assert result.details == [1]


def test_a_non_serializable_return_value_is_an_error_result_that_says_why() -> None:
    run = run_agent(ScriptedProvider(turn.tool_call("t"), "ok"), tools=[make_tool("t", lambda: {1, 2})])
    (result,) = result_messages(run.result)
    assert result.is_error is True
    assert result.text.startswith("tool returned a set, which is not JSON-serializable")
    assert "return a str, a JSON-able value, a pydantic model or an AgentToolResult" in result.text
    assert run.end.reason == "stop"


# --------------------------------------------------------------------------------------------
# The stream always ends
# --------------------------------------------------------------------------------------------


class Fatal(BaseException):
    """Not an Exception: the loop must not turn it into a tool result, but the stream must still end."""


def test_a_tool_raising_a_base_exception_ends_the_stream_by_raising_to_the_consumer() -> None:
    def fatal() -> str:
        raise Fatal("stop everything")

    async def main() -> tuple[list[Any], BaseException | None, BaseException | None]:
        provider = ScriptedProvider(turn.tool_call("fatal"), "never")
        stream = agent_loop(["hi"], AgentContext(tools=[make_tool("fatal", fatal)]), AgentLoopConfig(provider))
        events, _, error = await asyncio.wait_for(collect(stream), timeout=5)
        try:
            await asyncio.wait_for(stream.result(), timeout=5)
        except BaseException as exc:
            result_error = exc
        else:
            result_error = None
        return events, error, result_error

    events, error, result_error = asyncio.run(main())
    assert isinstance(error, Fatal) and str(error) == "stop everything"
    assert result_error is error
    assert events[-1].type == "tool_execution_start"


def test_a_provider_raising_a_base_exception_ends_the_stream_too() -> None:
    async def stream(request: Any) -> Any:
        raise Fatal("provider died")
        yield  # pragma: no cover

    async def main() -> BaseException | None:
        stream_ = agent_loop(["hi"], AgentContext(), AgentLoopConfig(FnProvider(stream)))
        _, _, error = await asyncio.wait_for(collect(stream_), timeout=5)
        return error

    assert isinstance(asyncio.run(main()), Fatal)


def test_a_consumer_that_stops_early_does_not_stop_the_run() -> None:
    async def main() -> tuple[list[Any], list[Any]]:
        provider = ScriptedProvider(turn.tool_call("add", a=1, b=2), "three")
        stream = agent_loop(["hi"], AgentContext(tools=[add_tool()]), AgentLoopConfig(provider, clock=Clock()))
        seen = []
        async for event in stream:
            seen.append(event)
            break
        return seen, await asyncio.wait_for(stream.result(), timeout=5)

    seen, result = asyncio.run(main())
    assert [e.type for e in seen] == ["agent_start"]
    assert [m.role for m in result] == ["user", "assistant", "toolResult", "assistant"]


def test_a_failing_steering_source_ends_the_stream_by_raising() -> None:
    async def steering() -> list[Any]:
        raise LookupError("queue gone")

    run = run_agent(ScriptedProvider("ok"), steering=steering)
    assert isinstance(run.error, LookupError)
    assert run.tags == ["agent_start", "turn_start", *PROMPT]


def test_steering_messages_of_a_wrong_type_end_the_stream_with_a_type_error() -> None:
    async def steering() -> list[Any]:
        return [42]

    run = run_agent(ScriptedProvider("ok"), steering=steering)
    assert isinstance(run.error, TypeError)
    assert "get_steering_messages returned 42" in str(run.error)


def test_result_messages_have_json_dumpable_events() -> None:
    run = run_agent(ScriptedProvider(turn.tool_call("add", a=1, b=2), "three"), tools=[add_tool()])
    for event in run.events:
        json.loads(event.model_dump_json())


def test_context_tools_may_be_any_menu_entry() -> None:
    from openprogram import function

    @function(register=False)
    def double(x: int) -> int:
        return 2 * x

    entries: list[Any] = [double, {"spec": {"name": "echo"}, "execute": lambda: "e"}]
    provider = ScriptedProvider(turn.tool_calls(turn.tool_call("double", x=4), turn.tool_call("echo")), "ok")
    run = run_agent(provider, tools=entries)
    assert [m.text for m in result_messages(run.result)] == ["8", "e"]
    assert [t.name for t in provider.requests[0].tools] == ["double", "echo"]


def test_updates_from_a_worker_thread_tool_are_delivered_on_the_loop_thread_in_order() -> None:
    def slow(on_update: Any) -> str:
        for step in range(3):
            on_update(step)
        return "done"

    tool = as_agent_tool({"spec": {"name": "slow"}, "execute": slow, "thread": True})
    pushed_from: set[int] = set()

    async def main() -> list[Any]:
        provider = ScriptedProvider(turn.tool_call("slow"), "ok")
        stream = agent_loop(["hi"], AgentContext(tools=[tool]), AgentLoopConfig(provider, clock=Clock()))
        stream.subscribe(lambda _event: pushed_from.add(threading.get_ident()))
        events, _, _ = await collect(stream)
        return events

    events = asyncio.run(main())
    assert pushed_from == {threading.get_ident()}  # asyncio.run's loop runs on this thread
    tags = [describe(e) for e in events]
    start = tags.index("tool_execution_start:call_1")
    assert tags[start : start + 5] == [
        "tool_execution_start:call_1",
        "tool_execution_update:call_1",
        "tool_execution_update:call_1",
        "tool_execution_update:call_1",
        "tool_execution_end:call_1",
    ]
    assert [e.partial_result for e in events if e.type == "tool_execution_update"] == [0, 1, 2]


@pytest.mark.parametrize("exc_type", [KeyboardInterrupt, SystemExit])
def test_a_keyboard_interrupt_or_exit_in_a_tool_propagates_without_hanging(exc_type: type[BaseException]) -> None:
    def interrupted() -> str:
        raise exc_type()

    async def main() -> None:
        provider = ScriptedProvider(turn.tool_call("t"), "never")
        stream = agent_loop(["hi"], AgentContext(tools=[make_tool("t", interrupted)]), AgentLoopConfig(provider))
        await asyncio.wait_for(collect(stream), timeout=5)

    with pytest.raises(exc_type):
        asyncio.run(main())
