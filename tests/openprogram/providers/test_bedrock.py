"""The Bedrock backend against wire traffic written here: what it sends, and what it makes of replies.

Every test runs a real boto3 ``bedrock-runtime`` client; only the HTTP send is replaced (through
botocore's ``before-send`` hook), so requests are the JSON boto3 would put on the network and
replies, including binary AWS event streams encoded here, go through botocore's own parsers.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
import threading
from typing import Any

import boto3
import pytest
from urllib3.exceptions import ProtocolError

from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop
from openprogram.providers import ModelRequest
from openprogram.providers.bedrock import BedrockProvider
from openprogram.tools import as_agent_tool
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.openprogram.providers.fakes.bedrock import (
    CLOCK,
    MESSAGE_START,
    MODEL,
    WEATHER,
    FakeBedrock,
    ask,
    block_stop,
    converse,
    final,
    frame,
    message_stop,
    metadata,
    run,
    text_delta,
    tool_delta,
    tool_start,
)

# -- what we send -------------------------------------------------------------------------------


def test_system_prompt_tools_tool_choice_and_limits_reach_the_wire() -> None:
    fake = FakeBedrock().json(converse({"text": "ok"}))
    provider = BedrockProvider(fake.client(), stream=False, max_tokens=300)
    request = ask(system_prompt="Be brief.", tools=(WEATHER, CLOCK), tool_choice="required", temperature=0.5)

    run(provider, request)

    operation, body = fake.requests[0]
    assert operation == "converse"
    assert body["system"] == [{"text": "Be brief."}]
    assert body["messages"] == [{"role": "user", "content": [{"text": "Weather in Paris?"}]}]
    assert body["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "inputSchema": {"json": WEATHER.parameters},
                }
            },
            {"toolSpec": {"name": "get_time", "inputSchema": {"json": {"type": "object", "properties": {}}}}},
        ],
        "toolChoice": {"any": {}},
    }
    assert body["inferenceConfig"] == {"maxTokens": 300, "temperature": 0.5}


def test_request_model_overrides_the_constructor_model_and_streaming_uses_converse_stream() -> None:
    fake = FakeBedrock()
    fake.stream(MESSAGE_START, text_delta(0, "ok"), block_stop(0), message_stop("end_turn"))
    run(BedrockProvider(fake.client(), model="amazon.other-v1:0"), ask())
    assert fake.paths == [f"/model/{MODEL}/converse-stream"]


def test_history_with_parallel_calls_and_grouped_results_is_sent_as_converse_expects() -> None:
    first = AssistantMessage(
        content=(
            ThinkingContent(thinking="Two cities.", signature="sig-1"),
            TextContent(text="Checking both."),
            ToolCall(id="tooluse_a", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(id="tooluse_b", name="get_weather", arguments={}, raw_arguments='{"city": '),
        ),
        stop_reason="toolUse",
        provider="bedrock",
    )
    history = (
        UserMessage(content="Weather in Paris and Oslo?"),
        first,
        ToolResultMessage(tool_call_id="tooluse_a", tool_name="get_weather", content="18C sunny"),
        ToolResultMessage(tool_call_id="tooluse_b", tool_name="get_weather", content="bad JSON", is_error=True),
        UserMessage(content="Use Celsius."),
    )
    fake = FakeBedrock().json(converse({"text": "Paris is 18C."}))

    run(BedrockProvider(fake.client(), stream=False), ModelRequest(model=MODEL, messages=history, tools=(WEATHER,)))

    messages = fake.body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "Two cities.", "signature": "sig-1"}}},
        {"text": "Checking both."},
        {"toolUse": {"toolUseId": "tooluse_a", "name": "get_weather", "input": {"city": "Paris"}}},
        {"toolUse": {"toolUseId": "tooluse_b", "name": "get_weather", "input": {}}},
    ]
    assert messages[2]["content"] == [
        {"toolResult": {"toolUseId": "tooluse_a", "content": [{"text": "18C sunny"}], "status": "success"}},
        {"toolResult": {"toolUseId": "tooluse_b", "content": [{"text": "bad JSON"}], "status": "error"}},
        {"text": "Use Celsius."},
    ]


TOOL_HISTORY = (
    UserMessage(content="Weather in Paris?"),
    AssistantMessage(
        content=(ToolCall(id="tooluse_a", name="get_weather", arguments={"city": "Paris"}),),
        stop_reason="toolUse",
        provider="bedrock",
    ),
    ToolResultMessage(tool_call_id="tooluse_a", tool_name="get_weather", content="18C"),
    ToolResultMessage(tool_call_id="tooluse_x", tool_name="get_time", content="", is_error=True),
)


@pytest.mark.parametrize(
    "fields", [{}, {"tools": (WEATHER,), "tool_choice": "none"}], ids=["no tools", "tool_choice none"]
)
def test_without_tool_config_tool_history_is_sent_as_text(fields: dict[str, Any]) -> None:
    fake = FakeBedrock().json(converse({"text": "It is 18C."}))

    run(BedrockProvider(fake.client(), stream=False), ModelRequest(model=MODEL, messages=TOOL_HISTORY, **fields))

    body = fake.body
    assert "toolConfig" not in body  # Converse would reject toolUse/toolResult blocks without one
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "Weather in Paris?"}]},
        {"role": "assistant", "content": [{"text": '[called get_weather with {"city": "Paris"}]'}]},
        {
            "role": "user",
            "content": [{"text": "[result of get_weather: 18C]"}, {"text": "[error from get_time: (no output)]"}],
        },
    ]


def test_failed_turns_empty_text_and_foreign_thinking_are_not_sent() -> None:
    history = (
        UserMessage(content="hi"),
        AssistantMessage(content=(ToolCall(id="x", name="get_weather"),), stop_reason="aborted", provider="bedrock"),
        AssistantMessage(
            content=(
                ThinkingContent(thinking="hmm", signature="gemini-sig"),
                TextContent(text=""),
                TextContent(text="Hello"),
            ),
            provider="gemini",
        ),
        UserMessage(content="again"),
    )
    fake = FakeBedrock().json(converse({"text": "ok"}))

    run(BedrockProvider(fake.client(), stream=False), ModelRequest(model=MODEL, messages=history))

    assert fake.body["messages"] == [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [{"text": "Hello"}]},
        {"role": "user", "content": [{"text": "again"}]},
    ]


def test_a_loop_turn_with_parallel_calls_sends_their_results_back_grouped() -> None:
    fake = FakeBedrock()
    fake.stream(
        MESSAGE_START,
        tool_start(0, "tooluse_p", "get_weather"),
        tool_delta(0, '{"city": "Paris"}'),
        block_stop(0),
        tool_start(1, "tooluse_o", "get_weather"),
        tool_delta(1, '{"city": "Oslo"}'),
        block_stop(1),
        message_stop("tool_use"),
    )
    fake.stream(MESSAGE_START, text_delta(0, "Paris 18C, Oslo 5C."), block_stop(0), message_stop("end_turn"))
    temperatures = {"Paris": "18C", "Oslo": "5C"}
    tool = as_agent_tool({"spec": WEATHER.model_dump(), "execute": lambda city: temperatures[city]})

    async def scenario() -> list[Any]:
        config = AgentLoopConfig(BedrockProvider(fake.client()), model=MODEL)
        stream = agent_loop(["Weather in Paris and Oslo?"], AgentContext(tools=[tool]), config)
        async for _ in stream:
            pass
        return await stream.result()

    messages = asyncio.run(asyncio.wait_for(scenario(), timeout=20))

    assert messages[-1].text == "Paris 18C, Oslo 5C."
    second = fake.requests[1][1]
    assert "toolConfig" in second
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    assert second["messages"][2]["content"] == [
        {"toolResult": {"toolUseId": "tooluse_p", "content": [{"text": "18C"}], "status": "success"}},
        {"toolResult": {"toolUseId": "tooluse_o", "content": [{"text": "5C"}], "status": "success"}},
    ]


# -- what we make of replies --------------------------------------------------------------------


def test_streamed_text_reasoning_and_tool_arguments_in_fragments() -> None:
    fake = FakeBedrock()
    fake.stream(
        MESSAGE_START,
        frame(
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Need the "}}}, event="contentBlockDelta"
        ),
        frame({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "weather."}}}, event="contentBlockDelta"),
        frame(
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig-xyz"}}}, event="contentBlockDelta"
        ),
        block_stop(0),
        text_delta(1, "Let me "),
        text_delta(1, "check."),
        block_stop(1),
        tool_start(2, "tooluse_1", "get_weather"),
        tool_delta(2, '{"ci'),
        tool_delta(2, 'ty": "Par'),
        tool_delta(2, 'is"}'),
        block_stop(2),
        tool_start(3, "tooluse_2", "get_time"),
        block_stop(3),
        message_stop("tool_use"),
        metadata(40, 12, cacheReadInputTokens=100, cacheWriteInputTokens=7),
    )

    events = run(BedrockProvider(fake.client()), ask(tools=(WEATHER, CLOCK)))

    assert [e.delta for e in events if e.type == "toolcall_delta"] == ['{"ci', 'ty": "Par', 'is"}']
    message = final(events)
    assert message.content == (
        ThinkingContent(thinking="Need the weather.", signature="sig-xyz"),
        TextContent(text="Let me check."),
        ToolCall(id="tooluse_1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="tooluse_2", name="get_time", arguments={}),
    )
    assert message.stop_reason == "toolUse"
    assert (message.usage.input, message.usage.output, message.usage.cache_read, message.usage.cache_write) == (
        40,
        12,
        100,
        7,
    )
    assert message.usage.total_tokens == 159


def test_streamed_arguments_that_are_not_json_are_kept_raw() -> None:
    fake = FakeBedrock()
    fake.stream(
        MESSAGE_START,
        tool_start(0, "tooluse_1", "get_weather"),
        tool_delta(0, '{"city": '),
        block_stop(0),
        message_stop("tool_use"),
    )
    (call,) = final(run(BedrockProvider(fake.client()), ask(tools=(WEATHER,)))).tool_calls
    assert (call.arguments, call.raw_arguments) == ({}, '{"city": ')


def test_non_streaming_reply_gives_the_same_message_as_streaming() -> None:
    streamed, whole = FakeBedrock(), FakeBedrock()
    streamed.stream(
        MESSAGE_START,
        text_delta(0, "Checking."),
        block_stop(0),
        tool_start(1, "tooluse_1", "get_weather"),
        tool_delta(1, '{"city": "Paris"}'),
        block_stop(1),
        message_stop("tool_use"),
        metadata(3, 2),
    )
    whole.json(
        converse(
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Paris"}}},
            stop="tool_use",
        )
    )

    stream_events = run(BedrockProvider(streamed.client()), ask())
    plain_events = run(BedrockProvider(whole.client(), stream=False), ask())

    assert [e.type for e in plain_events] == [e.type for e in stream_events]
    assert final(plain_events) == final(stream_events)
    assert final(plain_events).stop_reason == "toolUse"
    assert final(plain_events).usage.total_tokens == 5


@pytest.mark.parametrize(
    ("stop", "stop_reason", "error_fragment"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "length", None),
        ("guardrail_intervened", "error", "guardrail_intervened"),
        ("content_filtered", "error", "content_filtered"),
    ],
)
def test_stop_reasons_map_to_ours(stop: str, stop_reason: str, error_fragment: str | None) -> None:
    fake = FakeBedrock().json(converse({"text": "partial"}, stop=stop))
    message = final(run(BedrockProvider(fake.client(), stream=False), ask()))
    assert message.stop_reason == stop_reason
    if error_fragment is not None:
        assert error_fragment in (message.error_message or "")


def test_a_truncated_tool_call_stays_length() -> None:
    fake = FakeBedrock().json(
        converse({"toolUse": {"toolUseId": "t", "name": "get_weather", "input": {}}}, stop="max_tokens")
    )
    assert final(run(BedrockProvider(fake.client(), stream=False), ask())).stop_reason == "length"


# -- failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "message"),
    [
        (400, "ValidationException", "The provided model identifier is invalid."),
        (403, "AccessDeniedException", "You don't have access to the model with the specified model ID."),
        (404, "ResourceNotFoundException", "Model not found."),
        (500, "InternalServerException", "Internal server error."),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
def test_http_errors_become_error_events(status: int, error_type: str, message: str, stream: bool) -> None:
    fake = FakeBedrock().error(status, error_type, message)
    events = run(BedrockProvider(fake.client(), stream=stream), ask())
    assert [e.type for e in events] == ["start", "error"]
    assert events[-1].reason == "error"
    assert final(events).error_message == f"HTTP {status} {error_type}: {message}"


def test_an_error_without_its_type_header_still_names_status_and_message() -> None:
    fake = FakeBedrock().error(400, None, "The provided model identifier is invalid.")
    message = final(run(BedrockProvider(fake.client()), ask()))
    assert message.error_message == "HTTP 400: The provided model identifier is invalid."


def test_throttling_says_when_to_retry() -> None:
    fake = FakeBedrock().error(429, "ThrottlingException", "Too many requests.", **{"Retry-After": "7"})
    message = final(run(BedrockProvider(fake.client(), stream=False), ask()))
    assert message.error_message == "HTTP 429 ThrottlingException: Too many requests. (retry after 7s)"


def test_an_exception_frame_inside_the_stream_is_an_error() -> None:
    fake = FakeBedrock()
    fake.stream(
        MESSAGE_START,
        text_delta(0, "Hel"),
        frame({"message": "Model is getting throttled."}, exception="throttlingException"),
    )
    message = final(run(BedrockProvider(fake.client()), ask()))
    assert message.stop_reason == "error"
    assert message.error_message == "Bedrock stream error throttlingException: Model is getting throttled."
    assert message.text == "Hel"


def test_a_stream_cut_mid_way_is_an_error() -> None:
    fake = FakeBedrock()
    fake.stream(
        MESSAGE_START,
        tool_start(0, "tooluse_1", "get_weather"),
        tool_delta(0, '{"city": "Pa'),
        then=ProtocolError("Connection broken: IncompleteRead(12 bytes read)"),
    )
    message = final(run(BedrockProvider(fake.client()), ask()))
    assert message.stop_reason == "error"
    assert "IncompleteRead" in (message.error_message or "")


def test_a_stream_that_stops_between_frames_is_an_error() -> None:
    fake = FakeBedrock()
    fake.stream(MESSAGE_START, text_delta(0, "Hel"))
    message = final(run(BedrockProvider(fake.client()), ask()))
    assert message.stop_reason == "error"
    assert "stream cut" in (message.error_message or "")


def test_missing_model_is_an_error_that_says_how_to_set_one() -> None:
    events = run(BedrockProvider(FakeBedrock().client()), ModelRequest(messages=(UserMessage(content="hi"),)))
    assert events[-1].type == "error"
    assert "model" in (final(events).error_message or "")


# -- the event loop stays free, and cancel works -------------------------------------------------


def test_a_slow_call_does_not_block_the_event_loop() -> None:
    fake = FakeBedrock().json(converse({"text": "late"}))
    fake.gate = threading.Event()
    provider = BedrockProvider(fake.client(), stream=False)

    async def scenario() -> list[Any]:
        consumer = asyncio.ensure_future(_collect(provider, ask()))
        for _ in range(200):  # the loop keeps turning while boto3 waits in its thread
            await asyncio.sleep(0.005)
            if fake.requests:
                break
        assert not consumer.done()
        fake.gate.set()
        return await consumer

    events = asyncio.run(asyncio.wait_for(scenario(), timeout=20))
    assert final(events).text == "late"


async def _collect(provider: BedrockProvider, request: ModelRequest, cancel: asyncio.Event | None = None) -> list[Any]:
    return [event async for event in provider.stream(request, cancel)]


def test_cancel_before_the_call_sends_nothing() -> None:
    fake = FakeBedrock()

    async def scenario() -> list[Any]:
        cancel = asyncio.Event()
        cancel.set()
        return await _collect(BedrockProvider(fake.client()), ask(), cancel)

    events = asyncio.run(scenario())
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert final(events).error_message == "Request was aborted"
    assert fake.requests == []


def test_cancel_during_the_stream_aborts_at_once_and_closes_it() -> None:
    fake = FakeBedrock()
    raw = fake.stream(MESSAGE_START, text_delta(0, "Hello"), stall=True)

    async def scenario() -> list[Any]:
        cancel = asyncio.Event()
        events = []
        async for event in BedrockProvider(fake.client()).stream(ask(), cancel):
            events.append(event)
            if event.type == "text_delta":
                cancel.set()
        return events

    events = asyncio.run(asyncio.wait_for(scenario(), timeout=10))
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert final(events).text == "Hello"
    assert raw.closed.is_set()


def test_a_consumer_that_stops_early_closes_the_http_stream() -> None:
    fake = FakeBedrock()
    raw = fake.stream(MESSAGE_START, text_delta(0, "Hello"), text_delta(0, " there"), message_stop("end_turn"))

    async def scenario() -> bool:
        events = BedrockProvider(fake.client()).stream(ask())
        async for event in events:
            if event.type == "text_delta":
                break
        await events.aclose()  # type: ignore[attr-defined]
        return raw.closed.is_set()

    assert asyncio.run(asyncio.wait_for(scenario(), timeout=10))


def test_cancel_while_waiting_for_the_response_closes_the_late_stream() -> None:
    fake = FakeBedrock()
    raw = fake.stream(MESSAGE_START, text_delta(0, "late"), message_stop("end_turn"))
    fake.gate = threading.Event()

    async def scenario() -> list[Any]:
        cancel = asyncio.Event()
        consumer = asyncio.ensure_future(_collect(BedrockProvider(fake.client()), ask(), cancel))
        while not fake.requests:
            await asyncio.sleep(0.005)
        cancel.set()
        events = await consumer  # returns without waiting for the response
        fake.gate.set()
        return events

    events = asyncio.run(asyncio.wait_for(scenario(), timeout=10))
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert raw.closed.wait(10)  # the response that arrived after the abort is closed, not leaked


def test_cancelling_the_consuming_task_also_closes_the_late_stream() -> None:
    fake = FakeBedrock()
    raw = fake.stream(MESSAGE_START, text_delta(0, "late"), message_stop("end_turn"))
    fake.gate = threading.Event()

    async def scenario() -> None:
        consumer = asyncio.ensure_future(_collect(BedrockProvider(fake.client()), ask()))
        while not fake.requests:
            await asyncio.sleep(0.005)
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        fake.gate.set()

    asyncio.run(asyncio.wait_for(scenario(), timeout=10))
    assert raw.closed.wait(10)


# -- clients and the optional extra -------------------------------------------------------------


def test_a_client_is_built_lazily_from_the_keyword_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeBedrock().json(converse({"text": "ok"}))
    fake_client = fake.client()
    built: list[tuple[str, dict[str, Any]]] = []

    def client(service: str, **kwargs: Any) -> Any:
        built.append((service, kwargs))
        return fake_client

    monkeypatch.setattr(boto3, "client", client)
    provider = BedrockProvider(model=MODEL, stream=False, region_name="eu-west-1")
    assert built == []  # nothing is built before the first request
    assert final(run(provider, ask())).text == "ok"
    assert built == [("bedrock-runtime", {"region_name": "eu-west-1"})]


def test_importing_without_boto3_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    monkeypatch.delitem(sys.modules, "openprogram.providers.bedrock")
    with pytest.raises(ImportError, match=r'pip install -e "\.\[bedrock\]" in the openprogram checkout'):
        importlib.import_module("openprogram.providers.bedrock")
