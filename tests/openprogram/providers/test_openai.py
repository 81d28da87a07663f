"""The OpenAI backends against wire traffic written here: what we send, what we make of the reply.

Every test drives the real ``openai`` SDK through an ``httpx2.MockTransport``, so request bodies
are the bytes the SDK would put on the network and replies go through the SDK's own parsing. The
recorded real traffic is covered by the shared cassette test
(``tests/harness/recording/test_conformance_cassettes.py``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest
from openai import AsyncOpenAI

from openprogram.providers import ModelRequest
from openprogram.providers.openai import OpenAIChatProvider, OpenAIResponsesProvider
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from tests.openprogram.providers.fakes.openai import (
    BASE_URL,
    MODEL,
    TOOL_ROUND,
    WEATHER,
    FakeOpenAI,
    ask,
    call_delta,
    chat_sse,
    chunk,
    collect,
    completion,
    ev,
    final,
    function_call_item,
    message_item,
    response_obj,
    responses_sse,
)

# ---------------------------------------------------------------------------------------------
# Chat Completions: what we send
# ---------------------------------------------------------------------------------------------


def test_chat_request_carries_system_prompt_user_text_tools_and_choice() -> None:
    fake = FakeOpenAI(completion({"content": "hi"}, "stop"))
    provider = OpenAIChatProvider(fake.client(), stream=False, max_tokens=256)
    request = ModelRequest(
        model=MODEL,
        system_prompt="Be brief.",
        messages=(UserMessage(content="Hello"),),
        tools=(WEATHER,),
        tool_choice={"type": "function", "name": "get_weather"},
        parallel_tool_calls=False,
        temperature=0.2,
    )
    collect(provider, request)
    body = fake.body()
    assert fake.requests[0].url.path == "/v1/chat/completions"
    assert body["model"] == MODEL
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather for a city.", "parameters": WEATHER.parameters},
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["parallel_tool_calls"] is False
    assert body["max_completion_tokens"] == 256
    assert body["temperature"] == 0.2
    assert "stream" not in body


def test_chat_request_without_tools_sends_no_tool_choice() -> None:
    fake = FakeOpenAI(completion({"content": "hi"}, "stop"))
    collect(OpenAIChatProvider(fake.client(), stream=False), ask(tool_choice="required", parallel_tool_calls=False))
    body = fake.body()
    assert "tools" not in body and "tool_choice" not in body and "parallel_tool_calls" not in body


def test_chat_streaming_request_asks_for_usage() -> None:
    fake = FakeOpenAI(chat_sse(chunk({"content": "hi"}, "stop")))
    collect(OpenAIChatProvider(fake.client()), ask())
    body = fake.body()
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_chat_request_replays_a_parallel_tool_round_with_error_and_raw_arguments() -> None:
    fake = FakeOpenAI(completion({"content": "Paris is sunny."}, "stop"))
    collect(OpenAIChatProvider(fake.client(), stream=False), ModelRequest(model=MODEL, messages=TOOL_ROUND))
    assert fake.body()["messages"] == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{city: Rome"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: Invalid JSON arguments"},
    ]


def test_chat_request_sends_text_parts_and_skips_failed_assistant_turns() -> None:
    fake = FakeOpenAI(completion({"content": "ok"}, "stop"))
    messages = (
        UserMessage(content=(TextContent(text="part one"), TextContent(text="part two"))),
        AssistantMessage(
            content=(ToolCall(id="call_x", name="get_weather", arguments={}),),
            stop_reason="error",
            error_message="HTTP 500",
        ),
        UserMessage(content="again"),
        AssistantMessage(content=(ThinkingContent(thinking="hmm"), TextContent(text="Hello."))),
    )
    collect(OpenAIChatProvider(fake.client(), stream=False), ModelRequest(model=MODEL, messages=messages))
    assert fake.body()["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "text", "text": "part two"}]},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "Hello."},
    ]


def test_extra_reaches_the_json_body() -> None:
    fake = FakeOpenAI(completion({"content": "ok"}, "stop"))
    collect(OpenAIChatProvider(fake.client(), stream=False), ask(extra={"reasoning_effort": "low", "seed": 7}))
    body = fake.body()
    assert body["reasoning_effort"] == "low" and body["seed"] == 7


def test_request_model_overrides_constructor_model_and_missing_model_is_an_error_event() -> None:
    fake = FakeOpenAI(completion({"content": "ok"}, "stop"))
    provider = OpenAIChatProvider(fake.client(), model="ctor-model", stream=False)
    collect(provider, ModelRequest(model="request-model", messages=(UserMessage(content="x"),)))
    assert fake.body()["model"] == "request-model"

    events = collect(OpenAIChatProvider(fake.client()), ModelRequest(messages=(UserMessage(content="x"),)))
    message = final(events)
    assert events[-1].type == "error" and message.stop_reason == "error"
    assert "model=" in (message.error_message or "") and "ModelRequest.model" in (message.error_message or "")
    assert len(fake.requests) == 1  # the model-less request never reached the network


# ---------------------------------------------------------------------------------------------
# Chat Completions: what we make of the reply
# ---------------------------------------------------------------------------------------------


def test_chat_stream_builds_text_and_a_fragmented_tool_call() -> None:
    fake = FakeOpenAI(
        chat_sse(
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Let me "}),
            chunk({"content": "check."}),
            chunk(call_delta(0, id="call_1", name="get_weather")),
            chunk(call_delta(0, arguments='{"ci')),
            chunk(call_delta(0, arguments='ty": "Par')),
            chunk(call_delta(0, arguments='is"}')),
            chunk({}, "tool_calls"),
            chunk(
                usage={
                    "prompt_tokens": 100,
                    "completion_tokens": 20,
                    "total_tokens": 120,
                    "prompt_tokens_details": {"cached_tokens": 40},
                }
            ),
        )
    )
    events = collect(OpenAIChatProvider(fake.client()), ask(tools=(WEATHER,)))
    assert [e.type for e in events] == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "text_end",
        "toolcall_end",
        "done",
    ]
    assert [e.delta for e in events if e.type == "toolcall_delta"] == ['{"ci', 'ty": "Par', 'is"}']
    message = final(events)
    assert message.stop_reason == "toolUse"
    assert message.content == (
        TextContent(text="Let me check."),
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
    )
    assert message.usage == Usage(input=60, output=20, cache_read=40, cache_write=0, total_tokens=120)
    assert message.provider == "openai" and message.model == MODEL


def test_chat_stream_keeps_parallel_calls_apart_by_index() -> None:
    fake = FakeOpenAI(
        chat_sse(
            chunk(call_delta(0, id="call_p", name="get_weather", arguments='{"city":')),
            chunk(call_delta(1, id="call_r", name="get_weather", arguments='{"city": "Ro')),
            chunk(call_delta(0, arguments=' "Paris"}')),
            chunk(call_delta(1, arguments='me"}')),
            chunk({}, "tool_calls"),
        )
    )
    message = final(collect(OpenAIChatProvider(fake.client()), ask(tools=(WEATHER,))))
    assert message.tool_calls == [
        ToolCall(id="call_p", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_r", name="get_weather", arguments={"city": "Rome"}),
    ]


def test_chat_stream_keeps_first_id_and_name_when_a_proxy_repeats_them() -> None:
    # OpenRouter-style: id and name in every delta, and no finish_reason at all.
    fake = FakeOpenAI(
        chat_sse(
            chunk(call_delta(0, id="0", name="llm_version", arguments="")),
            chunk(call_delta(0, id="0", name="llm_version", arguments="{}")),
            chunk({"content": ""}),
        )
    )
    events = collect(OpenAIChatProvider(fake.client()), ask())
    message = final(events)
    assert message.tool_calls == [ToolCall(id="0", name="llm_version", arguments={})]
    assert events[-1].type == "done" and message.stop_reason == "toolUse"
    assert not any(e.type == "text_start" for e in events)  # empty content deltas open no block


def test_chat_stream_keeps_invalid_argument_text_raw() -> None:
    fake = FakeOpenAI(
        chat_sse(chunk(call_delta(0, id="c1", name="get_weather", arguments="{city: Paris")), chunk({}, "tool_calls"))
    )
    (call,) = final(collect(OpenAIChatProvider(fake.client()), ask())).tool_calls
    assert call.arguments == {} and call.raw_arguments == "{city: Paris"


def test_chat_non_streaming_emits_the_same_events_as_streaming() -> None:
    streamed = FakeOpenAI(
        chat_sse(
            chunk({"content": "On it."}),
            chunk(call_delta(0, id="call_1", name="get_weather", arguments='{"city": "Paris"}')),
            chunk(call_delta(1, id="call_2", name="get_weather", arguments='{"city": "Rome"}')),
            chunk({}, "tool_calls"),
            chunk(usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}),
        )
    )
    whole = FakeOpenAI(
        completion(
            {
                "content": "On it.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                    },
                ],
            },
            "tool_calls",
        )
    )
    a = collect(OpenAIChatProvider(streamed.client()), ask(tools=(WEATHER,)))
    b = collect(OpenAIChatProvider(whole.client(), stream=False), ask(tools=(WEATHER,)))
    assert [e.type for e in a] == [e.type for e in b]
    assert final(a) == final(b)
    assert final(b).usage == Usage(input=10, output=5, total_tokens=15)


@pytest.mark.parametrize(
    ("finish", "with_call", "kind", "stop_reason"),
    [
        ("stop", False, "done", "stop"),
        ("length", False, "done", "length"),
        ("length", True, "done", "length"),  # truncated: the call may be cut off, so not toolUse
        ("tool_calls", True, "done", "toolUse"),
        ("stop", True, "done", "toolUse"),
        ("content_filter", False, "error", "error"),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
def test_chat_finish_reasons(finish: str, with_call: bool, kind: str, stop_reason: str, stream: bool) -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]
    if stream:
        deltas = [chunk({"content": "text"})]
        if with_call:
            deltas.append(chunk(call_delta(0, id="c1", name="get_weather", arguments="{}")))
        reply = chat_sse(*deltas, chunk({}, finish))
    else:
        reply = completion({"content": "text", **({"tool_calls": calls} if with_call else {})}, finish)
    events = collect(OpenAIChatProvider(FakeOpenAI(reply).client(), stream=stream), ask())
    message = final(events)
    assert (events[-1].type, message.stop_reason) == (kind, stop_reason)
    if kind == "error":
        assert "content_filter" in (message.error_message or "")
        assert message.text == "text"  # what arrived before the filter is kept for the record


def test_chat_refusal_is_an_error_with_the_refusal_text() -> None:
    fake = FakeOpenAI(completion({"content": None, "refusal": "I can't help with that."}, "stop"))
    message = final(collect(OpenAIChatProvider(fake.client(), stream=False), ask()))
    assert message.stop_reason == "error"
    assert "I can't help with that." in (message.error_message or "")


# ---------------------------------------------------------------------------------------------
# Responses: what we send
# ---------------------------------------------------------------------------------------------


def test_responses_request_maps_system_prompt_tools_choice_and_tool_round() -> None:
    fake = FakeOpenAI(httpx2.Response(200, json=response_obj([message_item("done")])))
    provider = OpenAIResponsesProvider(fake.client(), stream=False, max_tokens=99)
    request = ModelRequest(
        model=MODEL,
        system_prompt="Be brief.",
        messages=TOOL_ROUND,
        tools=(WEATHER,),
        tool_choice="required",
        parallel_tool_calls=True,
    )
    collect(provider, request)
    body = fake.body()
    assert fake.requests[0].url.path == "/v1/responses"
    assert body["instructions"] == "Be brief."
    assert body["input"] == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": "Checking both."},
        {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call", "call_id": "call_b", "name": "get_weather", "arguments": "{city: Rome"},
        {"type": "function_call_output", "call_id": "call_a", "output": "sunny"},
        {"type": "function_call_output", "call_id": "call_b", "output": "Error: Invalid JSON arguments"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": WEATHER.parameters,
            "strict": False,
        }
    ]
    assert body["tool_choice"] == "required" and body["parallel_tool_calls"] is True
    assert body["max_output_tokens"] == 99
    assert "stream" not in body


def test_responses_reasoning_round_trips_in_front_of_its_tool_call() -> None:
    reasoning = {
        "id": "rs_1",
        "type": "reasoning",
        "encrypted_content": "ENCRYPTED",
        "summary": [{"type": "summary_text", "text": "Need the weather."}],
    }
    fake = FakeOpenAI(
        httpx2.Response(
            200, json=response_obj([reasoning, function_call_item("call_9", "get_weather", '{"city":"Oslo"}')])
        ),
        httpx2.Response(200, json=response_obj([message_item("Cold.")])),
    )
    provider = OpenAIResponsesProvider(fake.client(), stream=False)
    first = final(collect(provider, ask(tools=(WEATHER,))))
    assert first.stop_reason == "toolUse"
    thinking = first.content[0]
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Need the weather."

    result = ToolResultMessage(tool_call_id="call_9", tool_name="get_weather", content="-5C")
    follow_up = ModelRequest(model=MODEL, messages=(UserMessage(content="Oslo?"), first, result), tools=(WEATHER,))
    collect(provider, follow_up)
    assert fake.body(1)["input"] == [
        {"role": "user", "content": "Oslo?"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "encrypted_content": "ENCRYPTED",
            "summary": [{"type": "summary_text", "text": "Need the weather."}],
        },
        {"type": "function_call", "call_id": "call_9", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": "-5C"},
    ]


def test_responses_drops_thinking_it_cannot_send_back() -> None:
    fake = FakeOpenAI(httpx2.Response(200, json=response_obj([message_item("ok")])))
    messages = (
        UserMessage(content="q"),
        AssistantMessage(
            content=(
                ThinkingContent(thinking="anthropic thought", signature="c2lnbmF0dXJl"),
                ToolCall(id="call_1", name="get_weather", arguments={"city": "Oslo"}),
            ),
            stop_reason="toolUse",
        ),
        ToolResultMessage(tool_call_id="call_1", tool_name="get_weather", content="cold"),
    )
    collect(OpenAIResponsesProvider(fake.client(), stream=False), ModelRequest(model=MODEL, messages=messages))
    assert [item.get("type", "message") for item in fake.body()["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]


# ---------------------------------------------------------------------------------------------
# Responses: what we make of the reply
# ---------------------------------------------------------------------------------------------


def _streamed_tool_round() -> list[dict[str, Any]]:
    """Reasoning, text, then a call whose arguments stream in two fragments (everything but the end)."""
    reasoning = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "ENC"}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    call = function_call_item("call_abc", "get_weather", "", item_id="fc_xyz")
    summary = {"output_index": 0, "item_id": "rs_1", "summary_index": 0}
    text = {"output_index": 1, "content_index": 0, "item_id": "msg_1"}
    arguments = {"output_index": 2, "item_id": "fc_xyz"}
    return [
        ev("response.created", response=response_obj([], status="in_progress")),
        ev("response.output_item.added", output_index=0, item=reasoning),
        ev("response.reasoning_summary_text.delta", delta="Thinking", **summary),
        ev("response.reasoning_summary_text.delta", delta=" hard.", **summary),
        ev("response.output_item.done", output_index=0, item=_round_output()[0]),
        ev("response.output_item.added", output_index=1, item=message),
        ev("response.output_text.delta", delta="Checking", **text),
        ev("response.output_text.delta", delta=" now.", **text),
        ev("response.output_item.done", output_index=1, item=message_item("Checking now.")),
        ev("response.output_item.added", output_index=2, item=call),
        ev("response.function_call_arguments.delta", delta='{"city": ', **arguments),
        ev("response.function_call_arguments.delta", delta='"Paris"}', **arguments),
        ev("response.output_item.done", output_index=2, item={**call, "arguments": '{"city": "Paris"}'}),
    ]


def _round_output() -> list[dict[str, Any]]:
    reasoning = {
        "id": "rs_1",
        "type": "reasoning",
        "encrypted_content": "ENC",
        "summary": [{"type": "summary_text", "text": "Thinking hard."}],
    }
    call = function_call_item("call_abc", "get_weather", '{"city": "Paris"}', item_id="fc_xyz")
    return [reasoning, message_item("Checking now."), call]


def test_responses_stream_builds_thinking_text_and_a_call_keyed_by_call_id() -> None:
    events_in = [
        *_streamed_tool_round(),
        ev("response.completed", response=response_obj(_round_output())),
    ]
    events = collect(OpenAIResponsesProvider(FakeOpenAI(responses_sse(*events_in)).client()), ask(tools=(WEATHER,)))
    assert [e.type for e in events] == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    message = final(events)
    assert message.stop_reason == "toolUse"
    thinking, text, call = message.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Thinking hard."
    assert text == TextContent(text="Checking now.")
    assert call == ToolCall(id="call_abc", name="get_weather", arguments={"city": "Paris"})
    assert message.usage == Usage(input=20, output=7, cache_read=10, cache_write=0, total_tokens=37)


def test_responses_non_streaming_matches_streaming() -> None:
    completed = ev("response.completed", response=response_obj(_round_output()))
    a = collect(OpenAIResponsesProvider(FakeOpenAI(responses_sse(*_streamed_tool_round(), completed)).client()), ask())
    whole = FakeOpenAI(httpx2.Response(200, json=response_obj(_round_output())))
    b = collect(OpenAIResponsesProvider(whole.client(), stream=False), ask())
    assert final(a) == final(b)
    # Deltas differ in number (one per fragment vs one per block); the block structure does not.
    assert [e.type for e in b if not e.type.endswith("_delta")] == [e.type for e in a if not e.type.endswith("_delta")]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("status", "extra", "kind", "stop_reason", "message_part"),
    [
        ("completed", {}, "done", "stop", None),
        ("incomplete", {"incomplete_details": {"reason": "max_output_tokens"}}, "done", "length", None),
        ("incomplete", {"incomplete_details": {"reason": "content_filter"}}, "error", "error", "content_filter"),
        (
            "failed",
            {"error": {"code": "server_error", "message": "The model crashed."}},
            "error",
            "error",
            "server_error: The model crashed.",
        ),
    ],
)
def test_responses_status_maps_to_stop_reason(
    status: str, extra: dict[str, Any], kind: str, stop_reason: str, message_part: str | None, stream: bool
) -> None:
    body = response_obj([message_item("partial")], status=status, **extra)
    if stream:
        event_type = {"completed": "response.completed", "incomplete": "response.incomplete"}.get(
            status, "response.failed"
        )
        reply = responses_sse(ev(event_type, response=body))
    else:
        reply = httpx2.Response(200, json=body)
    events = collect(OpenAIResponsesProvider(FakeOpenAI(reply).client(), stream=stream), ask())
    message = final(events)
    assert (events[-1].type, message.stop_reason) == (kind, stop_reason)
    assert message.text == "partial"
    if message_part:
        assert message_part in (message.error_message or "")


def test_responses_in_band_error_event_ends_the_stream_with_its_message() -> None:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    reply = responses_sse(
        ev("response.output_item.added", output_index=0, item=message),
        ev("response.output_text.delta", output_index=0, content_index=0, item_id="msg_1", delta="Hel"),
        ev("error", code="rate_limit_exceeded", message="Slow down.", param=None),
    )
    events = collect(OpenAIResponsesProvider(FakeOpenAI(reply).client()), ask())
    result = final(events)
    assert events[-1].type == "error" and result.stop_reason == "error"
    assert result.error_message == "stream error rate_limit_exceeded: Slow down."
    assert result.text == "Hel"
    assert [e.type for e in events].count("text_end") == 1  # the open block was closed, not left dangling


def test_responses_stream_without_a_final_event_is_an_error() -> None:
    events = collect(OpenAIResponsesProvider(FakeOpenAI(responses_sse(*_streamed_tool_round())).client()), ask())
    message = final(events)
    assert events[-1].type == "error"
    assert "response.completed" in (message.error_message or "")


# ---------------------------------------------------------------------------------------------
# HTTP and transport failures: an error event naming the status and OpenAI's own message
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "text", "headers", "expected_tail"),
    [
        (400, "invalid_request_error", "Invalid 'temperature'.", {}, ""),
        (401, "invalid_request_error", "Incorrect API key provided.", {}, ""),
        (404, "invalid_request_error", "The model `nope` does not exist.", {}, ""),
        (429, "requests", "Rate limit reached for gpt-test.", {"retry-after": "20"}, " (retry after 20s)"),
        (500, "server_error", "The server had an error.", {}, ""),
    ],
)
@pytest.mark.parametrize("provider_class", [OpenAIChatProvider, OpenAIResponsesProvider])
@pytest.mark.parametrize("stream", [True, False])
def test_http_errors_become_error_events(
    status: int,
    error_type: str,
    text: str,
    headers: dict[str, str],
    expected_tail: str,
    provider_class: type,
    stream: bool,
) -> None:
    body = {"error": {"message": text, "type": error_type, "param": None, "code": None}}
    fake = FakeOpenAI(httpx2.Response(status, json=body, headers=headers))
    events = collect(provider_class(fake.client(), stream=stream), ask())
    message = final(events)
    assert events[-1].type == "error" and message.stop_reason == "error"
    assert message.error_message == f"HTTP {status} {error_type}: {text}{expected_tail}"
    assert len(fake.requests) == 1


def test_error_type_falls_back_to_code_and_non_json_body_is_quoted() -> None:
    body = {"error": {"message": "Quota exceeded.", "type": None, "code": "insufficient_quota"}}
    fake = FakeOpenAI(httpx2.Response(429, json=body), httpx2.Response(502, text="<html>Bad gateway</html>"))
    provider = OpenAIChatProvider(fake.client(), stream=False)
    assert final(collect(provider, ask())).error_message == "HTTP 429 insufficient_quota: Quota exceeded."
    assert final(collect(provider, ask())).error_message == "HTTP 502: <html>Bad gateway</html>"


def test_connection_error_is_an_error_event() -> None:
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    events = collect(OpenAIChatProvider(FakeOpenAI(refuse).client()), ask())
    message = final(events)
    assert events[-1].type == "error"
    assert message.error_message == "connection error: ConnectError: connection refused"


def _cut_stream(first: bytes) -> Callable[[httpx2.Request], httpx2.Response]:
    async def body() -> AsyncIterator[bytes]:
        yield first
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    return lambda request: httpx2.Response(200, content=body(), headers={"content-type": "text/event-stream"})


def test_chat_stream_cut_mid_way_keeps_what_arrived() -> None:
    first = f"data: {json.dumps(chunk({'content': 'Half a sen'}))}\n\n".encode()
    events = collect(OpenAIChatProvider(FakeOpenAI(_cut_stream(first)).client()), ask())
    message = final(events)
    assert events[-1].type == "error" and message.stop_reason == "error"
    assert message.error_message == (
        "stream cut mid-way: RemoteProtocolError: peer closed connection without sending complete message body"
    )
    assert message.text == "Half a sen"


def test_responses_stream_cut_mid_way_is_an_error_event() -> None:
    event = ev("response.created", response=response_obj([], status="in_progress"))
    first = f"event: response.created\ndata: {json.dumps(event)}\n\n".encode()
    message = final(collect(OpenAIResponsesProvider(FakeOpenAI(_cut_stream(first)).client()), ask()))
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("stream cut mid-way: RemoteProtocolError")


# ---------------------------------------------------------------------------------------------
# Cancellation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider_class", [OpenAIChatProvider, OpenAIResponsesProvider])
def test_cancel_before_the_call_aborts_without_a_request(provider_class: type) -> None:
    fake = FakeOpenAI()
    event = asyncio.Event()
    event.set()
    events = collect(provider_class(fake.client()), ask(), cancel_event=event)
    message = final(events)
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert message.stop_reason == "aborted" and message.error_message == "Request was aborted"
    assert fake.requests == []


def test_cancel_during_a_stalled_stream_aborts_and_closes_the_response() -> None:
    closed = []

    async def stalled_body() -> AsyncIterator[bytes]:
        try:
            yield f"data: {json.dumps(chunk({'content': 'Hello'}))}\n\n".encode()
            await asyncio.sleep(3600)  # the server goes quiet
            yield b""
        finally:
            closed.append(True)

    fake = FakeOpenAI(lambda request: httpx2.Response(200, content=stalled_body()))
    provider = OpenAIChatProvider(fake.client())

    async def run() -> list[Any]:
        cancel = asyncio.Event()
        events = []
        async for event in provider.stream(ask(), cancel):
            events.append(event)
            if event.type == "text_delta":
                cancel.set()
        return events

    events = asyncio.run(asyncio.wait_for(run(), timeout=10))
    message = final(events)
    assert events[-1].type == "error" and message.stop_reason == "aborted"
    assert message.error_message == "Request was aborted"
    assert message.text == "Hello"
    assert closed == [True]


def test_cancel_while_waiting_for_the_response_headers() -> None:
    async def scenario() -> list[Any]:
        cancel = asyncio.Event()

        async def slow(request: httpx2.Request) -> httpx2.Response:
            cancel.set()
            await asyncio.sleep(3600)
            return httpx2.Response(200)

        client = AsyncOpenAI(
            api_key="k",
            base_url=BASE_URL,
            max_retries=0,
            http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(slow)),
        )
        return [e async for e in OpenAIResponsesProvider(client).stream(ask(), cancel)]

    events = asyncio.run(asyncio.wait_for(scenario(), timeout=10))
    assert events[-1].type == "error" and events[-1].reason == "aborted"


# ---------------------------------------------------------------------------------------------
# Lazily built clients and event loops
# ---------------------------------------------------------------------------------------------


def test_lazy_client_is_built_once_per_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A nested sync ``runtime.exec`` runs a second loop on a helper thread; a client from the
    first loop must not be reused there, and within one loop the client must be reused."""
    built: list[tuple[asyncio.AbstractEventLoop, dict[str, Any]]] = []
    fake = FakeOpenAI(*(completion({"content": f"reply {n}"}, "stop") for n in range(4)))

    def factory(**kwargs: Any) -> AsyncOpenAI:
        built.append((asyncio.get_running_loop(), kwargs))
        return fake.client()

    monkeypatch.setattr(OpenAIChatProvider, "client_factory", factory)
    provider = OpenAIChatProvider(model=MODEL, stream=False, api_key="from-kwargs", organization="org-1")

    async def twice() -> list[str]:
        return [final([e async for e in provider.stream(ask())]).text for _ in range(2)]

    assert asyncio.run(twice()) == ["reply 0", "reply 1"]
    assert asyncio.run(twice()) == ["reply 2", "reply 3"]
    assert len(built) == 2
    assert built[0][0] is not built[1][0]
    assert built[0][1] == {"api_key": "from-kwargs", "organization": "org-1"}


def test_lazy_client_from_kwargs_works_from_two_event_loops() -> None:
    fake = FakeOpenAI(completion({"content": "one"}, "stop"), completion({"content": "two"}, "stop"))
    provider = OpenAIChatProvider(
        model=MODEL,
        stream=False,
        api_key="k",
        base_url=BASE_URL,
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(fake.handler)),
    )
    assert final(collect(provider, ask())).text == "one"
    assert final(collect(provider, ask())).text == "two"
    assert fake.requests[0].headers["authorization"] == "Bearer k"


def test_provider_names_itself_openai() -> None:
    assert OpenAIChatProvider.name == "openai" and OpenAIResponsesProvider.name == "openai"
