"""The Anthropic backend against wire traffic written here: what it sends, and what it makes of replies.

Every test runs the real ``AsyncAnthropic`` client over an in-memory transport, so the request
bodies asserted are the bytes the SDK would put on the network and the replies go through the
SDK's own SSE and error handling.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import pytest

try:  # the anthropic SDK's HTTP layer: httpx2 in current releases, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]

from openprogram.providers import ModelRequest
from openprogram.providers.anthropic import AnthropicProvider
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.openprogram.providers.fakes.anthropic import (
    CLOCK,
    MODEL,
    WEATHER,
    Server,
    ask,
    block_start,
    block_stop,
    collect,
    delta,
    error_body,
    final,
    json_response,
    message_end,
    message_start,
    reply,
    sse,
    sse_response,
    streamed,
    text_block,
    tool_block,
    whole_message,
)

# -- outbound: what the SDK is asked to send --------------------------------------------------------


def test_request_maps_system_prompt_user_text_tools_and_default_max_tokens() -> None:
    server = Server(sse_response(streamed(text_block(0, "ok"))))
    request = ask(
        UserMessage(content="plain"),
        UserMessage(content=(TextContent(text="one"), TextContent(text="two"))),
        system_prompt="Be brief.",
        tools=(WEATHER, CLOCK),
    )
    reply(server, request)

    body = server.bodies[0]
    assert body["model"] == MODEL
    assert body["max_tokens"] == 4096
    assert body["stream"] is True
    assert body["system"] == "Be brief."
    assert body["messages"] == [
        {"role": "user", "content": "plain"},
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]},
    ]
    assert body["tools"] == [
        {"name": "get_weather", "description": "Current weather for a city", "input_schema": WEATHER.parameters},
        {"name": "get_time", "input_schema": {"type": "object", "properties": {}}},
    ]
    assert "tool_choice" not in body


def test_max_tokens_comes_from_the_request_then_the_constructor() -> None:
    server = Server(*(sse_response(streamed(text_block(0, "ok"))) for _ in range(2)))
    provider = AnthropicProvider(server.client(), max_tokens=1000)
    collect(provider, ask())
    collect(provider, ask(max_tokens=77))
    assert [body["max_tokens"] for body in server.bodies] == [1000, 77]


def test_tool_choice_and_parallel_flag_go_through_the_shared_table_only_with_tools() -> None:
    server = Server(*(sse_response(streamed(text_block(0, "ok"))) for _ in range(2)))
    provider = AnthropicProvider(server.client())
    collect(
        provider,
        ask(tools=(WEATHER,), tool_choice={"type": "function", "name": "get_weather"}, parallel_tool_calls=False),
    )
    collect(provider, ask(tool_choice="required"))
    assert server.bodies[0]["tool_choice"] == {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}
    assert "tool_choice" not in server.bodies[1] and "tools" not in server.bodies[1]


def test_temperature_and_extra_fields_reach_the_wire_even_where_the_sdk_dropped_the_keyword() -> None:
    server = Server(sse_response(streamed(text_block(0, "ok"))))
    request = ask(temperature=0.25, extra={"top_k": 5, "stop_sequences": ["END"], "metadata": {"user_id": "u1"}})
    message = reply(server, request)
    assert message.stop_reason == "stop"
    body = server.bodies[0]
    assert body["temperature"] == 0.25
    assert body["top_k"] == 5
    assert body["stop_sequences"] == ["END"]
    assert body["metadata"] == {"user_id": "u1"}


def test_history_with_thinking_tool_calls_and_grouped_results_is_sent_in_anthropic_shape() -> None:
    history = (
        UserMessage(content="weather in Paris and Rome?"),
        AssistantMessage(
            provider="anthropic",
            stop_reason="toolUse",
            content=(
                ThinkingContent(thinking="two cities, two calls", signature="c2lnMQ=="),
                ThinkingContent(thinking="", signature="ZW5jcnlwdGVk", redacted=True),
                ThinkingContent(thinking="unsigned musing"),
                TextContent(text="Checking both."),
                TextContent(text=""),
                ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(id="toolu_2", name="get_weather", arguments={}, raw_arguments='{"city": "Ro'),
            ),
        ),
        ToolResultMessage(tool_call_id="toolu_1", tool_name="get_weather", content="sunny"),
        ToolResultMessage(
            tool_call_id="toolu_2", tool_name="get_weather", content="Invalid JSON arguments", is_error=True
        ),
        UserMessage(content="and in Celsius?"),
    )
    server = Server(sse_response(streamed(text_block(0, "ok"))))
    reply(server, ask(*history))

    assert server.bodies[0]["messages"] == [
        {"role": "user", "content": "weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "two cities, two calls", "signature": "c2lnMQ=="},
                {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "Invalid JSON arguments",
                    "is_error": True,
                },
            ],
        },
        {"role": "user", "content": "and in Celsius?"},
    ]


def test_foreign_signatures_failed_turns_and_unsafe_ids_are_made_acceptable_to_anthropic() -> None:
    history = (
        UserMessage(content="go"),
        AssistantMessage(
            provider="anthropic",
            stop_reason="error",
            content=(ToolCall(id="toolu_lost", name="get_time"),),
            error_message="HTTP 529",
        ),
        AssistantMessage(
            provider="openai",
            stop_reason="toolUse",
            content=(
                ThinkingContent(thinking="openai reasoning", signature="rs_123"),
                ToolCall(id="call_1|fc_2", name="get_time"),
            ),
        ),
        ToolResultMessage(tool_call_id="call_1|fc_2", tool_name="get_time", content=""),
    )
    server = Server(sse_response(streamed(text_block(0, "ok"))))
    reply(server, ask(*history))

    assert server.bodies[0]["messages"] == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1_fc_2", "name": "get_time", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1_fc_2"}]},
    ]


def test_a_tool_loop_with_parallel_calls_sends_the_replied_calls_back_with_their_results() -> None:
    first = streamed(
        [
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(0, {"type": "thinking_delta", "thinking": "Need both."}),
            delta(0, {"type": "signature_delta", "signature": "U0lH"}),
            block_stop(0),
        ],
        text_block(1, "Looking."),
        tool_block(2, "toolu_a", "get_weather", '{"city": "Paris"}'),
        tool_block(3, "toolu_b", "get_time", ""),
        stop_reason="tool_use",
    )
    server = Server(sse_response(first), sse_response(streamed(text_block(0, "Sunny, 9am."))))
    provider = AnthropicProvider(server.client())
    prompt = UserMessage(content="weather and time?")

    turn = final(collect(provider, ask(prompt, tools=(WEATHER, CLOCK))))
    assert turn.stop_reason == "toolUse"
    results = tuple(
        ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=f"result {n}")
        for n, call in enumerate(turn.tool_calls)
    )
    answer = final(collect(provider, ask(prompt, turn, *results, tools=(WEATHER, CLOCK))))

    assert answer.text == "Sunny, 9am."
    assert server.bodies[1]["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Need both.", "signature": "U0lH"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_b", "name": "get_time", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "result 0"},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "result 1"},
            ],
        },
    ]


# -- inbound: streamed replies --------------------------------------------------------------------


def test_streamed_text_arrives_as_deltas_with_usage_from_start_and_cumulative_delta() -> None:
    body = sse(
        message_start(input_tokens=12, cache_read=5, cache_write=7),
        *text_block(0, "Hel", "lo"),
        *message_end("end_turn", output_tokens=9),
    )
    server = Server(sse_response(body))
    events = collect(AnthropicProvider(server.client()), ask())

    assert [event.type for event in events] == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [event.delta for event in events if event.type == "text_delta"] == ["Hel", "lo"]
    message = final(events)
    assert message.text == "Hello"
    assert message.stop_reason == "stop"
    assert (message.model, message.provider) == (MODEL, "anthropic")
    assert message.usage.model_dump() == {
        "input": 12,
        "output": 9,
        "cache_read": 5,
        "cache_write": 7,
        "total_tokens": 33,
    }


def test_streamed_tool_input_fragments_are_joined_and_parsed() -> None:
    body = streamed(tool_block(0, "toolu_1", "get_weather", "", '{"ci', 'ty": "Par', 'is"}'), stop_reason="tool_use")
    server = Server(sse_response(body))
    events = collect(AnthropicProvider(server.client()), ask())

    assert [event.delta for event in events if event.type == "toolcall_delta"] == ['{"ci', 'ty": "Par', 'is"}']
    message = final(events)
    assert message.stop_reason == "toolUse"
    assert message.tool_calls == [ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"})]


@pytest.mark.parametrize("fragments", [("",), ()], ids=["one-empty-fragment", "no-fragment"])
def test_a_streamed_call_without_argument_text_has_empty_arguments(fragments: tuple[str, ...]) -> None:
    server = Server(sse_response(streamed(tool_block(0, "toolu_1", "get_time", *fragments), stop_reason="tool_use")))
    message = reply(server)
    assert message.tool_calls == [ToolCall(id="toolu_1", name="get_time", arguments={})]
    assert message.stop_reason == "toolUse"


def test_a_streamed_call_with_broken_json_keeps_the_raw_text_for_the_loop() -> None:
    body = streamed(tool_block(0, "toolu_1", "get_weather", '{"city": '), stop_reason="tool_use")
    server = Server(sse_response(body))
    [call] = reply(server).tool_calls
    assert (call.arguments, call.raw_arguments) == ({}, '{"city": ')


def test_thinking_and_redacted_thinking_are_kept_with_signatures_but_not_in_text() -> None:
    body = streamed(
        [
            block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
            delta(0, {"type": "thinking_delta", "thinking": "Let me "}),
            delta(0, {"type": "thinking_delta", "thinking": "think."}),
            delta(0, {"type": "signature_delta", "signature": "QUJD"}),
            block_stop(0),
        ],
        [block_start(1, {"type": "redacted_thinking", "data": "c2VjcmV0"}), block_stop(1)],
        text_block(2, "Answer."),
    )
    server = Server(sse_response(body))
    events = collect(AnthropicProvider(server.client()), ask())
    message = final(events)

    assert message.text == "Answer."
    assert message.content[:2] == (
        ThinkingContent(thinking="Let me think.", signature="QUJD"),
        ThinkingContent(thinking="", signature="c2VjcmV0", redacted=True),
    )
    assert [event.delta for event in events if event.type == "thinking_delta"] == ["Let me ", "think."]


def test_server_side_tools_are_not_reported_as_calls_for_the_loop() -> None:
    body = streamed(
        [
            block_start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
            delta(0, {"type": "input_json_delta", "partial_json": '{"query": "news"}'}),
            block_stop(0),
        ],
        [
            block_start(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
            block_stop(1),
        ],
        text_block(2, "Found nothing."),
    )
    message = reply(Server(sse_response(body)))
    assert message.tool_calls == []
    assert message.text == "Found nothing."
    assert message.stop_reason == "stop"


# -- non-streaming mode ---------------------------------------------------------------------------


def test_non_streaming_mode_makes_one_plain_call_and_emits_the_streamed_event_sequence() -> None:
    content = [
        {"type": "thinking", "thinking": "hmm", "signature": "U0k="},
        {"type": "text", "text": "Calling."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}},
    ]
    plain = Server(json_response(200, whole_message(content, "tool_use")))
    live = Server(
        sse_response(
            streamed(
                [
                    block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
                    delta(0, {"type": "thinking_delta", "thinking": "hmm"}),
                    delta(0, {"type": "signature_delta", "signature": "U0k="}),
                    block_stop(0),
                ],
                text_block(1, "Calling."),
                tool_block(2, "toolu_1", "get_weather", '{"city": "Oslo"}'),
                stop_reason="tool_use",
            )
        )
    )
    plain_events = collect(AnthropicProvider(plain.client(), stream=False), ask())
    live_events = collect(AnthropicProvider(live.client(), stream=True), ask())

    assert "stream" not in plain.bodies[0]
    assert [event.type for event in plain_events] == [event.type for event in live_events]
    message = final(plain_events)
    assert message.content == final(live_events).content
    assert message.stop_reason == "toolUse"
    assert message.usage.model_dump() == {
        "input": 10,
        "output": 20,
        "cache_read": 3,
        "cache_write": 4,
        "total_tokens": 37,
    }


# -- stop reasons ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(
    ("stop_reason", "with_call", "expected"),
    [
        ("end_turn", False, "stop"),
        ("stop_sequence", False, "stop"),
        ("pause_turn", False, "stop"),
        ("max_tokens", False, "length"),
        ("max_tokens", True, "length"),
        ("tool_use", True, "toolUse"),
        (None, True, "toolUse"),
        ("refusal", False, "error"),
    ],
)
def test_stop_reasons_map_to_ours(stop_reason: str | None, with_call: bool, expected: str, stream: bool) -> None:
    if stream:
        blocks = [text_block(0, "partial")]
        if with_call:
            blocks.append(tool_block(1, "toolu_1", "get_time", "{}"))
        response = sse_response(streamed(*blocks, stop_reason=stop_reason))
    else:
        content: list[dict[str, Any]] = [{"type": "text", "text": "partial"}]
        if with_call:
            content.append({"type": "tool_use", "id": "toolu_1", "name": "get_time", "input": {}})
        response = json_response(200, whole_message(content, stop_reason))
    message = reply(Server(response), stream=stream)

    assert message.stop_reason == expected
    assert message.text == "partial"
    if expected == "error":
        assert "refusal" in (message.error_message or "")


# -- failures become error events -----------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(
    ("status", "error_type", "provider_message"),
    [
        (400, "invalid_request_error", "max_tokens: Field required"),
        (401, "authentication_error", "invalid x-api-key"),
        (403, "permission_error", "Your API key does not have permission"),
        (404, "not_found_error", "model: claude-nope"),
        (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit"),
        (500, "api_error", "Internal server error"),
        (529, "overloaded_error", "Overloaded"),
    ],
)
def test_http_errors_become_error_events_naming_status_and_provider_message(
    status: int, error_type: str, provider_message: str, stream: bool
) -> None:
    headers = {"retry-after": "7"} if status == 429 else {}
    server = Server(json_response(status, error_body(error_type, provider_message), headers))
    events = collect(AnthropicProvider(server.client(), stream=stream), ask())

    assert events[-1].type == "error" and events[-1].reason == "error"
    message = final(events)
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith(f"HTTP {status} {error_type}: {provider_message}")
    assert ("retry after 7s" in message.error_message) is (status == 429)


def test_a_non_json_error_page_still_names_status_and_body() -> None:
    server = Server(httpx.Response(502, text="<html>Bad Gateway</html>", headers={"content-type": "text/html"}))
    message = reply(server)
    assert message.stop_reason == "error"
    assert message.error_message == "HTTP 502: <html>Bad Gateway</html>"


def test_a_connection_failure_becomes_an_error_event() -> None:
    def refuse() -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    message = reply(Server(refuse))
    assert message.stop_reason == "error"
    assert "connection error" in (message.error_message or "")
    assert "connection refused" in (message.error_message or "")


class BrokenStream(httpx.AsyncByteStream):
    """Sends ``head`` and then fails (or hangs until closed), like a connection dropping mid-reply."""

    def __init__(self, head: bytes, *, hang: bool = False) -> None:
        self.head = head
        self.hang = hang
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        if self.hang:
            await asyncio.Event().wait()
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    async def aclose(self) -> None:
        self.closed = True


def test_a_stream_cut_mid_way_is_an_error_that_keeps_what_arrived() -> None:
    head = sse(message_start(), *text_block(0, "Hal")[:2])
    message = reply(Server(sse_response(BrokenStream(head))))

    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert "HTTP 200" in message.error_message and "peer closed connection" in message.error_message
    assert message.text == "Hal"


def test_a_stream_that_ends_without_message_stop_is_an_error() -> None:
    body = sse(message_start(), *text_block(0, "Hal"))
    message = reply(Server(sse_response(body)))
    assert message.stop_reason == "error"
    assert "message_stop" in (message.error_message or "")


def test_an_in_band_error_event_becomes_an_error_with_its_type_and_message() -> None:
    body = sse(
        message_start(),
        *text_block(0, "Par"),
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    message = reply(Server(sse_response(body)))
    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert message.error_message.startswith("HTTP 529 overloaded_error: Overloaded")


def test_a_missing_model_is_an_error_saying_how_to_set_one() -> None:
    server = Server()
    message = final(collect(AnthropicProvider(server.client()), ModelRequest(messages=(UserMessage(content="hi"),))))
    assert message.stop_reason == "error"
    assert "model=" in (message.error_message or "")
    assert server.bodies == []


def test_the_request_model_overrides_the_constructor_model() -> None:
    server = Server(*(sse_response(streamed(text_block(0, "ok"))) for _ in range(2)))
    provider = AnthropicProvider(server.client(), model="claude-default")
    collect(provider, ModelRequest(messages=(UserMessage(content="hi"),)))
    collect(provider, ModelRequest(model="claude-override", messages=(UserMessage(content="hi"),)))
    assert [body["model"] for body in server.bodies] == ["claude-default", "claude-override"]


# -- cancellation ---------------------------------------------------------------------------------


def test_a_cancel_set_before_the_call_aborts_without_a_request() -> None:
    server = Server()
    cancel = asyncio.Event()
    cancel.set()
    events = collect(AnthropicProvider(server.client()), ask(), cancel)

    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert final(events).error_message == "Request was aborted"
    assert server.bodies == []


def test_a_cancel_during_a_hung_stream_aborts_and_closes_the_stream() -> None:
    head = sse(message_start(), *text_block(0, "Hi")[:2])
    body = BrokenStream(head, hang=True)
    provider = AnthropicProvider(Server(sse_response(body)).client())

    async def run() -> list[Any]:
        cancel = asyncio.Event()
        events = []
        async for event in provider.stream(ask(), cancel):
            events.append(event)
            if event.type == "text_delta":  # fire while the next read is already waiting
                asyncio.get_running_loop().call_later(0.05, cancel.set)
        return events

    events = asyncio.run(asyncio.wait_for(run(), timeout=5))
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert final(events).text == "Hi"
    assert body.closed


# -- clients and event loops ------------------------------------------------------------------------


def test_a_lazily_built_client_is_rebuilt_for_each_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[asyncio.AbstractEventLoop] = []
    real_client = anthropic.AsyncAnthropic

    def client_bound_to_this_loop(**kwargs: Any) -> anthropic.AsyncAnthropic:
        home = asyncio.get_running_loop()
        built.append(home)

        def answer(request: httpx.Request) -> httpx.Response:
            if asyncio.get_running_loop() is not home:
                return json_response(500, error_body("api_error", "client used from a foreign event loop"))
            return sse_response(streamed(text_block(0, "ok")))

        transport = httpx.MockTransport(answer)
        return real_client(**kwargs, http_client=httpx.AsyncClient(transport=transport))

    monkeypatch.setattr(AnthropicProvider, "client_factory", client_bound_to_this_loop)
    provider = AnthropicProvider(model=MODEL, api_key="test-key", max_retries=0)

    async def two_calls() -> list[str]:
        return [final([event async for event in provider.stream(ask())]).text for _ in range(2)]

    assert asyncio.run(two_calls()) == ["ok", "ok"]
    assert asyncio.run(two_calls()) == ["ok", "ok"]
    assert len(built) == 2 and built[0] is not built[1]
