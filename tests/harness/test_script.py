"""``ScriptedProvider`` and the ``turn`` builders: what each turn streams and how the script is enforced."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from harness import ScriptedProvider, turn
from harness.script import ScriptedCall, Turn
from openprogram import runtime
from openprogram.providers import ModelRequest, Provider
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    UserMessage,
)
from tests.openprogram.support import make_tool, run_agent


def stream_all(provider: ScriptedProvider, request: ModelRequest | None = None, cancel: Any = None) -> list[Any]:
    async def main() -> list[Any]:
        return [e async for e in provider.stream(request or ModelRequest(), cancel)]

    return asyncio.run(main())


def kinds(events: list[Any]) -> list[str]:
    return [e.type for e in events]


def final(events: list[Any]) -> AssistantMessage:
    last = events[-1]
    return last.message if last.type == "done" else last.error


def test_it_is_a_provider() -> None:
    assert isinstance(ScriptedProvider(), Provider)


# --------------------------------------------------------------------------------------------
# Builders and what they stream
# --------------------------------------------------------------------------------------------


def test_text_streams_in_chunks_of_16_characters() -> None:
    events = stream_all(ScriptedProvider(turn.text("hello world, this is longer")))
    assert kinds(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [e.delta for e in events[2:4]] == ["hello world, thi", "s is longer"]
    full = "hello world, this is longer"
    assert [e.partial.text for e in events[1:5]] == ["", "hello world, thi", full, full]
    assert events[4].content == "hello world, this is longer"
    assert events[-1].reason == "stop"
    message = final(events)
    assert message.content == (TextContent(text="hello world, this is longer"),)
    assert (message.stop_reason, message.provider, message.model) == ("stop", "scripted", "scripted")


def test_a_plain_string_is_a_text_turn_and_chunk_size_is_configurable() -> None:
    events = stream_all(ScriptedProvider("abcdef", chunk_size=4))
    assert [e.delta for e in events if e.type == "text_delta"] == ["abcd", "ef"]
    with pytest.raises(ValueError, match="chunk_size must be at least 1"):
        ScriptedProvider(chunk_size=0)


def test_text_with_thinking_streams_the_thinking_block_first() -> None:
    events = stream_all(ScriptedProvider(turn.text("answer", thinking="hmm")))
    assert kinds(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    message = final(events)
    assert message.content == (ThinkingContent(thinking="hmm"), TextContent(text="answer"))
    assert message.text == "answer"


def test_thinking_alone_is_a_turn_without_visible_text() -> None:
    events = stream_all(ScriptedProvider(turn.thinking("just pondering")))
    assert kinds(events) == ["start", "thinking_start", "thinking_delta", "thinking_end", "done"]
    assert final(events).content == (ThinkingContent(thinking="just pondering"),)
    with_text = final(stream_all(ScriptedProvider(turn.thinking("p", text="t"))))
    assert with_text.content == (ThinkingContent(thinking="p"), TextContent(text="t"))


def test_a_text_turn_may_end_by_length() -> None:
    events = stream_all(ScriptedProvider(turn.text("cut off", stop_reason="length")))
    assert events[-1].reason == "length" and final(events).stop_reason == "length"


def test_tool_call_with_keyword_arguments_is_a_turn_of_one_call() -> None:
    events = stream_all(ScriptedProvider(turn.tool_call("search", query="weather in paris", limit=3)))
    assert kinds(events) == [
        "start",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert "".join(e.delta for e in events if e.type == "toolcall_delta") == '{"query": "weather in paris", "limit": 3}'
    call = events[5].tool_call
    assert call == ToolCall(id="call_1", name="search", arguments={"query": "weather in paris", "limit": 3})
    assert events[-1].reason == "toolUse"
    assert final(events).stop_reason == "toolUse"


def test_tool_call_args_and_id_parameters() -> None:
    call = turn.tool_call("f", {"name": "clash", "id": "also"}, call_id="fixed", extra=1)
    assert call == ScriptedCall(name="f", args={"name": "clash", "id": "also", "extra": 1}, id="fixed")
    events = stream_all(ScriptedProvider(call))
    assert final(events).tool_calls == [
        ToolCall(id="fixed", name="f", arguments={"name": "clash", "id": "also", "extra": 1})
    ]


def test_tool_calls_makes_one_turn_of_several_calls_after_optional_text() -> None:
    scripted = turn.tool_calls(turn.tool_call("a", x=1), turn.tool_call("b", call_id="B"), text="let me check")
    events = stream_all(ScriptedProvider(scripted))
    message = final(events)
    assert message.content == (
        TextContent(text="let me check"),
        ToolCall(id="call_1", name="a", arguments={"x": 1}),
        ToolCall(id="B", name="b", arguments={}),
    )
    assert [e.content_index for e in events if e.type.endswith("_start") and e.type != "start"] == [0, 1, 2]
    with pytest.raises(TypeError, match=r"turn.tool_calls takes turn.tool_call\(...\) values"):
        turn.tool_calls("a")  # type: ignore[arg-type]


def test_raw_tool_call_sends_text_that_need_not_be_json() -> None:
    events = stream_all(ScriptedProvider(turn.raw_tool_call("f", '{"x": ', call_id="r")))
    assert [e.delta for e in events if e.type == "toolcall_delta"] == ['{"x": ']
    assert final(events).tool_calls == [ToolCall(id="r", name="f", arguments={}, raw_arguments='{"x": ')]
    good_raw = final(stream_all(ScriptedProvider(turn.raw_tool_call("f", '{"x": 1}'))))
    assert good_raw.tool_calls == [ToolCall(id="call_1", name="f", arguments={"x": 1})]


def test_duplicate_ids_are_sent_as_scripted() -> None:
    scripted = turn.tool_calls(turn.tool_call("a", call_id="same"), turn.tool_call("b", call_id="same"))
    run = run_agent(ScriptedProvider(scripted, "ok"), tools=[make_tool("a"), make_tool("b")])
    assert [(m.tool_call_id, m.text) for m in run.result if m.role == "toolResult"] == [
        ("same", "a ok"),
        ("same", "b ok"),
    ]


def test_error_and_aborted_stream_a_start_then_the_error() -> None:
    error = stream_all(ScriptedProvider(turn.error("rate limited")))
    assert kinds(error) == ["start", "error"]
    assert error[-1].reason == "error"
    assert (final(error).stop_reason, final(error).error_message) == ("error", "rate limited")
    aborted = stream_all(ScriptedProvider(turn.aborted()))
    assert aborted[-1].reason == "aborted"
    assert (final(aborted).stop_reason, final(aborted).error_message) == ("aborted", "Request was aborted")
    assert final(stream_all(ScriptedProvider(turn.aborted("user hit stop")))).error_message == "user hit stop"


def test_empty_is_a_reply_with_no_content() -> None:
    events = stream_all(ScriptedProvider(turn.empty()))
    assert kinds(events) == ["start", "done"]
    assert final(events).content == ()
    run = run_agent(ScriptedProvider(turn.empty()))
    assert run.end.reason == "stop" and run.result[-1].text == ""


def test_usage_is_reported_on_the_message() -> None:
    usage = Usage(input=10, output=5, total_tokens=15)
    assert final(stream_all(ScriptedProvider(turn.text("x", usage=usage)))).usage == usage


def test_respond_decides_from_the_request() -> None:
    def echo_last(request: ModelRequest) -> Any:
        last = request.messages[-1]
        if isinstance(last, UserMessage):
            return turn.tool_call("lookup", q=last.content)
        return f"tool said {last.text}"

    provider = ScriptedProvider(turn.respond(echo_last), turn.respond(echo_last))
    run = run_agent(provider, prompts=["tides"], tools=[make_tool("lookup", lambda q: q.upper())])
    assert run.result[1].tool_calls == [ToolCall(id="call_1", name="lookup", arguments={"q": "tides"})]
    assert run.result[-1].text == "tool said TIDES"
    provider.assert_complete()


def test_respond_needs_a_function_and_a_turn_back() -> None:
    with pytest.raises(TypeError, match=r"turn\.respond takes a function of the request"):
        turn.respond("x")  # type: ignore[arg-type]
    run = run_agent(ScriptedProvider(turn.respond(lambda r: 42)))
    assert run.end.reason == "error"
    assert run.result[-1].error_message == (
        "TypeError: turn 1 (respond): expected a turn (turn.text(...), turn.tool_call(...), ...) or a str, got 42"
    )


def test_a_bad_turn_is_refused_when_the_script_is_built() -> None:
    with pytest.raises(TypeError, match=r"turn 2: expected a turn .* got 3"):
        ScriptedProvider("ok", 3)  # type: ignore[arg-type]


def test_a_list_of_turns_is_accepted_and_add_extends_the_script() -> None:
    provider = ScriptedProvider(["one", turn.text("two")])
    provider.add("three")
    assert [t.describe() for t in provider.turns] == ["text 'one'", "text 'two'", "text 'three'"]


def test_a_set_cancel_event_aborts_the_stream() -> None:
    async def main() -> list[Any]:
        cancel = asyncio.Event()
        cancel.set()
        provider = ScriptedProvider(turn.text("never"))
        return [e async for e in provider.stream(ModelRequest(), cancel)]

    events = asyncio.run(main())
    assert kinds(events) == ["start", "error"]
    assert (events[-1].reason, final(events).error_message) == ("aborted", "Request was aborted")


# --------------------------------------------------------------------------------------------
# Ids, captured requests, enforcement
# --------------------------------------------------------------------------------------------


def test_generated_ids_count_per_provider_instance_and_restart_for_each() -> None:
    def script() -> ScriptedProvider:
        return ScriptedProvider(
            turn.tool_calls(turn.tool_call("a"), turn.tool_call("a", call_id="mine"), turn.tool_call("a")),
            turn.tool_call("a"),
            "done",
        )

    for _ in range(2):
        run = run_agent(script(), tools=[make_tool("a")])
        assert [m.tool_call_id for m in run.result if m.role == "toolResult"] == ["call_1", "mine", "call_2", "call_3"]


def test_requests_are_frozen_snapshots() -> None:
    provider = ScriptedProvider(turn.tool_call("a"), "done")
    run_agent(provider, tools=[make_tool("a")], system_prompt="sys")
    requests = provider.requests
    assert isinstance(requests, tuple) and len(requests) == 2
    assert [len(r.messages) for r in requests] == [1, 3]  # the first request did not grow with the history
    with pytest.raises(ValidationError):
        requests[0].system_prompt = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        requests[0].messages[0].content = "changed"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        requests[0].messages.append(UserMessage(content="x"))  # type: ignore[attr-defined]


def test_a_request_beyond_the_script_is_an_error_naming_its_number() -> None:
    provider = ScriptedProvider(turn.tool_call("a"))
    run = run_agent(provider, tools=[make_tool("a")])
    assert run.end.reason == "error"
    assert run.result[-1].error_message == (
        "ScriptedProvider: request 2 is beyond the script (1 turn(s) scripted); "
        "add a turn or check why the agent asked again"
    )
    with pytest.raises(AssertionError) as excinfo:
        provider.assert_complete()
    assert str(excinfo.value) == (
        "ScriptedProvider script not followed: ScriptedProvider: request 2 is beyond the script "
        "(1 turn(s) scripted); add a turn or check why the agent asked again"
    )


def test_assert_complete_lists_the_unconsumed_turns() -> None:
    provider = ScriptedProvider(
        "a", turn.tool_call("f", x=1, call_id="k"), turn.error("e"), turn.respond(lambda r: "x")
    )
    run_agent(provider)
    with pytest.raises(AssertionError) as excinfo:
        provider.assert_complete()
    assert str(excinfo.value) == (
        "ScriptedProvider script not followed: 3 scripted turn(s) never requested "
        "(turn 2: call f({\"x\": 1}) id=k; turn 3: error('e'); turn 4: respond(<lambda>))"
    )


def test_assert_complete_passes_when_the_script_was_followed() -> None:
    provider = ScriptedProvider("only")
    run_agent(provider)
    provider.assert_complete()
    assert provider.remaining == []


def test_strict_false_answers_an_exhausted_script_with_an_error_turn_and_records_nothing() -> None:
    provider = ScriptedProvider("one", strict=False)
    with runtime.use(provider):
        assert runtime.exec("q", tools=[]) == "one"
        with pytest.raises(runtime.ExecError, match="request 2 is beyond the script"):
            runtime.exec("q", tools=[])
    assert provider.violations == []
    provider.assert_complete()


def test_turn_descriptions_are_readable() -> None:
    assert turn.text("x" * 50, thinking="t").describe() == f"thinking 't', text {'x' * 40!r}"
    assert turn.tool_calls(turn.raw_tool_call("f", "{bad")).describe() == "call f({bad)"
    assert turn.empty().describe() == "empty"
    assert turn.text("x", stop_reason="length").describe() == "text 'x' [length]"
    assert isinstance(turn.aborted(), Turn) and turn.aborted().describe() == "aborted('Request was aborted')"


def test_id_name_and_args_keywords_are_arguments_and_call_id_is_the_call_id() -> None:
    call = turn.tool_call("get_user", id="u1", name="Ada", args=[1], call_id="c9")
    assert call == ScriptedCall(name="get_user", args={"id": "u1", "name": "Ada", "args": [1]}, id="c9")
    events = stream_all(ScriptedProvider(turn.tool_call("get_user", id="u1")))
    assert final(events).tool_calls == [ToolCall(id="call_1", name="get_user", arguments={"id": "u1"})]


@pytest.mark.parametrize(
    ("build", "match"),
    [
        pytest.param(lambda: turn.tool_call("f", when=object()), "cannot be sent as JSON", id="not-json-able"),
        pytest.param(lambda: turn.tool_call("f", x=float("nan")), "cannot be sent as JSON", id="nan"),
        pytest.param(lambda: turn.tool_call("f", {1: "a"} | {(1, 2): "b"}), "cannot be sent as JSON", id="tuple-key"),
        pytest.param(lambda: turn.tool_call("f", "x=1"), "raw_tool_call", id="text-args"),
        pytest.param(lambda: turn.tool_call("", x=1), "non-empty str", id="no-name"),
        pytest.param(lambda: turn.tool_call("f", call_id=7), "call_id is a str", id="int-call-id"),
        pytest.param(lambda: turn.raw_tool_call("f", {"x": 1}), "turn.tool_call", id="raw-dict"),
        pytest.param(lambda: turn.text(42), "a turn's text is a str, got int", id="text-not-str"),
        pytest.param(lambda: turn.thinking(None), "a turn's thinking is a str", id="thinking-none"),
        pytest.param(lambda: turn.error(ValueError("x")), "turn's message is a str", id="error-not-str"),
        pytest.param(lambda: turn.text("x", usage={"input": 1}), "usage is an openprogram.types.Usage", id="usage"),
    ],
)
def test_a_turn_that_cannot_be_sent_is_refused_when_it_is_built(build: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        build()


def test_a_stop_reason_that_does_not_exist_is_refused_when_the_turn_is_built() -> None:
    with pytest.raises(ValueError, match="stop_reason 'done' is not one of stop, length, toolUse, error, aborted"):
        turn.text("x", stop_reason="done")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# usage: as scripted, else a deterministic estimate
# --------------------------------------------------------------------------------------------


def _usage_of(provider: ScriptedProvider, request: ModelRequest) -> Usage:
    async def final() -> Any:
        events = [event async for event in provider.stream(request)]
        return events[-1]

    event = asyncio.run(final())
    message = event.message if event.type == "done" else event.error
    return message.usage


def test_a_turn_without_usage_gets_an_estimate_from_the_request_and_the_reply() -> None:
    from harness.script import estimate_usage

    request = ModelRequest(model="m", system_prompt="be brief", messages=(UserMessage(content="hi there"),))
    reply = turn.tool_calls(turn.tool_call("lookup", q="owls"), text="Let me look.")
    usage = _usage_of(ScriptedProvider(reply), request)
    assert usage.input == len(request.model_dump_json(exclude={"extra"})) // 4 > 0
    assert usage.output == -(-(len("Let me look.") + len("lookup") + len('{"q": "owls"}')) // 4)
    assert usage.total_tokens == usage.input + usage.output
    assert usage == _usage_of(ScriptedProvider(reply), request) == estimate_usage(request, reply)  # stable
    longer = ModelRequest(model="m", system_prompt="be brief " * 40, messages=request.messages)
    assert _usage_of(ScriptedProvider(reply), longer).input > usage.input


def test_scripted_usage_is_kept_and_an_error_turn_estimates_no_output() -> None:
    request = ModelRequest(messages=(UserMessage(content="hi"),))
    given = Usage(input=7, output=1, total_tokens=8)
    assert _usage_of(ScriptedProvider(turn.text("ok", usage=given)), request) == given
    failed = _usage_of(ScriptedProvider(turn.error("boom")), request)
    assert failed.output == 0 and failed.input > 0
