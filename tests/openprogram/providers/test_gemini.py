"""The Gemini backend against wire traffic written here: what it sends, and what it makes of replies.

Every test runs the real ``google.genai.Client`` over an in-memory httpx transport, so request
bodies are what the SDK would put on the network and replies go through the SDK's own SSE
parsing and error handling.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import sys
import threading
from typing import Any

import pytest

try:  # google-genai talks through httpx2 when installed, httpx otherwise
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]

from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop
from openprogram.providers import ModelRequest
from openprogram.providers.gemini import GeminiProvider
from openprogram.tools import as_agent_tool
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.openprogram.providers.fakes.gemini import (
    MODEL,
    SIGNATURE,
    SIGNATURE_B64,
    WEATHER,
    FakeGemini,
    ask,
    call,
    error_body,
    final,
    reply,
    run,
)

# -- what we send -------------------------------------------------------------------------------


def test_system_prompt_tools_and_tool_choice_reach_the_wire() -> None:
    fake = FakeGemini().json(reply({"text": "ok"}))
    provider = GeminiProvider(fake.client(), stream=False)
    request = ask(system_prompt="Be brief.", tools=(WEATHER,), tool_choice={"type": "function", "name": "get_weather"})

    run(provider, request)

    path, body = fake.requests[0]
    assert path == f"/v1beta/models/{MODEL}:generateContent"
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]
    declaration = body["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "get_weather"
    assert declaration["description"] == "Current weather for a city"
    assert declaration["parameters_json_schema"] == WEATHER.parameters  # our JSON Schema, unchanged
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}


def test_no_tools_means_no_tool_config_and_limits_go_to_generation_config() -> None:
    fake = FakeGemini().json(reply({"text": "ok"}))
    provider = GeminiProvider(fake.client(), stream=False, max_tokens=256)

    run(provider, ask(tool_choice="required", temperature=0.25))

    body = fake.body
    assert "tools" not in body and "toolConfig" not in body
    assert body["generationConfig"] == {"maxOutputTokens": 256, "temperature": 0.25}


def test_request_model_overrides_the_constructor_model() -> None:
    fake = FakeGemini().json(reply({"text": "ok"}))
    run(GeminiProvider(fake.client(), model="gemini-default", stream=False), ask())
    assert fake.requests[0][0] == f"/v1beta/models/{MODEL}:generateContent"


def test_history_with_parallel_calls_and_grouped_results_is_sent_as_gemini_expects() -> None:
    first = AssistantMessage(
        content=(
            TextContent(text="Checking both."),
            ThinkingContent(thinking="", signature=SIGNATURE_B64),
            ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(id="call_b", name="get_weather", arguments={"city": "Oslo"}),
        ),
        stop_reason="toolUse",
        provider="gemini",
    )
    history = (
        UserMessage(content="Weather in Paris and Oslo?"),
        first,
        ToolResultMessage(tool_call_id="call_a", tool_name="get_weather", content="18C sunny"),
        ToolResultMessage(tool_call_id="call_b", tool_name="get_weather", content="city not found", is_error=True),
        UserMessage(content="Use Celsius."),
    )
    fake = FakeGemini().json(reply({"text": "Paris is 18C."}))

    run(GeminiProvider(fake.client(), stream=False), ModelRequest(model=MODEL, messages=history, tools=(WEATHER,)))

    contents = fake.body["contents"]
    assert [content["role"] for content in contents] == ["user", "model", "user"]
    model_parts = contents[1]["parts"]
    assert model_parts[0] == {"text": "Checking both."}
    assert model_parts[1]["functionCall"] == {"id": "call_a", "name": "get_weather", "args": {"city": "Paris"}}
    assert base64.b64decode(model_parts[1]["thoughtSignature"].replace("-", "+").replace("_", "/")) == SIGNATURE
    assert model_parts[2] == {"functionCall": {"id": "call_b", "name": "get_weather", "args": {"city": "Oslo"}}}
    assert contents[2]["parts"] == [
        {"functionResponse": {"id": "call_a", "name": "get_weather", "response": {"result": "18C sunny"}}},
        {"functionResponse": {"id": "call_b", "name": "get_weather", "response": {"error": "city not found"}}},
        {"text": "Use Celsius."},
    ]


def test_failed_turns_and_foreign_thinking_are_not_sent_back() -> None:
    history = (
        UserMessage(content="hi"),
        AssistantMessage(
            content=(ToolCall(id="x", name="get_weather", arguments={}),), stop_reason="error", provider="gemini"
        ),
        AssistantMessage(
            content=(ThinkingContent(thinking="hmm", signature="anthropic-sig"), TextContent(text="Hello")),
            provider="anthropic",
        ),
        UserMessage(content="again"),
    )
    fake = FakeGemini().json(reply({"text": "ok"}))

    run(GeminiProvider(fake.client(), stream=False), ModelRequest(model=MODEL, messages=history))

    assert fake.body["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "Hello"}]},
        {"role": "user", "parts": [{"text": "again"}]},
    ]


def test_a_loop_turn_with_parallel_calls_sends_their_results_back_grouped() -> None:
    fake = FakeGemini()
    fake.stream(reply(call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Oslo"})))
    fake.stream(reply({"text": "Paris 18C, Oslo 5C."}))
    temperatures = {"Paris": "18C", "Oslo": "5C"}
    tool = as_agent_tool({"spec": WEATHER.model_dump(), "execute": lambda city: temperatures[city]})

    async def scenario() -> list[Any]:
        config = AgentLoopConfig(GeminiProvider(fake.client()), model=MODEL)
        stream = agent_loop(["Weather in Paris and Oslo?"], AgentContext(tools=[tool]), config)
        async for _ in stream:
            pass
        return await stream.result()

    messages = asyncio.run(scenario())

    assert messages[-1].text == "Paris 18C, Oslo 5C."
    calls = fake.requests[1][1]["contents"][1]["parts"]
    results = fake.requests[1][1]["contents"][2]
    assert [part["functionCall"]["args"] for part in calls] == [{"city": "Paris"}, {"city": "Oslo"}]
    assert results["role"] == "user"
    assert [part["functionResponse"] for part in results["parts"]] == [
        {"id": calls[0]["functionCall"]["id"], "name": "get_weather", "response": {"result": "18C"}},
        {"id": calls[1]["functionCall"]["id"], "name": "get_weather", "response": {"result": "5C"}},
    ]


# -- what we make of replies --------------------------------------------------------------------


def test_streamed_text_arrives_as_deltas_with_usage() -> None:
    fake = FakeGemini()
    fake.stream(
        reply({"text": "Hello"}, finish=None),
        reply({"text": ", world"}, finish=None),
        reply(
            {"text": ""},
            usage={
                "promptTokenCount": 20,
                "cachedContentTokenCount": 5,
                "candidatesTokenCount": 7,
                "thoughtsTokenCount": 3,
                "totalTokenCount": 30,
            },
        ),
    )

    events = run(GeminiProvider(fake.client()), ask())

    assert fake.requests[0][0] == f"/v1beta/models/{MODEL}:streamGenerateContent"
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hello", ", world"]
    message = final(events)
    assert message.content == (TextContent(text="Hello, world"),)
    assert message.stop_reason == "stop"
    assert (message.usage.input, message.usage.output, message.usage.cache_read, message.usage.total_tokens) == (
        15,
        10,
        5,
        30,
    )
    assert (message.provider, message.model) == ("gemini", MODEL)


def test_parallel_calls_without_ids_get_deterministic_unique_ids() -> None:
    chunk = reply(call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Oslo"}))

    def ids_for(request: ModelRequest) -> list[str]:
        fake = FakeGemini()
        fake.stream(chunk)
        message = final(run(GeminiProvider(fake.client()), request))
        assert message.stop_reason == "toolUse"
        assert [c.arguments for c in message.tool_calls] == [{"city": "Paris"}, {"city": "Oslo"}]
        return [c.id for c in message.tool_calls]

    first = ids_for(ask())
    assert len(set(first)) == 2
    assert ids_for(ask()) == first  # a replay of the same request gives the same ids
    assert set(ids_for(ask("Weather in Rome?"))).isdisjoint(first)  # another turn gives new ones


def test_ids_that_gemini_sends_are_kept() -> None:
    fake = FakeGemini()
    fake.stream(reply(call("get_weather", {"city": "Paris"}, call={"id": "dv8szvqe"})))
    assert [c.id for c in final(run(GeminiProvider(fake.client()), ask())).tool_calls] == ["dv8szvqe"]


def test_thoughts_and_signatures_survive_a_round_trip() -> None:
    fake = FakeGemini()
    fake.stream(
        reply({"text": "Let me think", "thought": True}, finish=None),
        reply({"text": " about Paris.", "thought": True, "thoughtSignature": "dGhvdWdodA=="}, finish=None),
        reply(call("get_weather", {"city": "Paris"}, thoughtSignature=SIGNATURE_B64)),
    )
    provider = GeminiProvider(fake.client())

    message = final(run(provider, ask(tools=(WEATHER,))))

    thinking, tool_call = message.content
    assert thinking == ThinkingContent(thinking="Let me think about Paris.", signature="dGhvdWdodA==")
    assert isinstance(tool_call, ToolCall) and tool_call.arguments == {"city": "Paris"}
    assert tool_call.thought_signature == SIGNATURE_B64  # on the call itself, no carrier block
    assert message.text == ""

    result = ToolResultMessage(tool_call_id=tool_call.id, tool_name="get_weather", content="18C")
    fake.stream(reply({"text": "18C in Paris."}))
    run(provider, ModelRequest(model=MODEL, messages=(UserMessage(content="Weather?"), message, result)))

    sent = fake.body["contents"][1]["parts"]
    assert sent[0]["thought"] is True and sent[0]["text"] == "Let me think about Paris."
    assert sent[1]["functionCall"]["name"] == "get_weather"
    signature = sent[1]["thoughtSignature"]
    assert base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)) == SIGNATURE


def test_non_streaming_gives_the_same_events_as_streaming() -> None:
    parts = ({"text": "Checking."}, call("get_weather", {"city": "Paris"}))
    streamed, whole = FakeGemini(), FakeGemini()
    streamed.stream(reply(*parts))
    whole.json(reply(*parts))

    stream_events = run(GeminiProvider(streamed.client()), ask())
    plain_events = run(GeminiProvider(whole.client(), stream=False), ask())

    assert [e.type for e in plain_events] == [e.type for e in stream_events]
    assert [e.type for e in plain_events] == [
        "start",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert final(plain_events).content == final(stream_events).content
    assert final(plain_events).stop_reason == "toolUse"


@pytest.mark.parametrize(
    ("finish", "parts", "stop_reason", "error_fragment"),
    [
        ("MAX_TOKENS", ({"text": "cut"},), "length", None),
        ("MAX_TOKENS", (call("get_weather", {"city": "Pa"}),), "length", None),
        ("SAFETY", ({"text": "no"},), "error", "SAFETY"),
        ("MALFORMED_FUNCTION_CALL", (), "error", "MALFORMED_FUNCTION_CALL"),
        ("RECITATION", (), "error", "RECITATION"),
    ],
)
def test_finish_reasons_map_to_stop_reasons(
    finish: str, parts: tuple[dict[str, Any], ...], stop_reason: str, error_fragment: str | None
) -> None:
    fake = FakeGemini().json(reply(*parts, finish=finish))
    message = final(run(GeminiProvider(fake.client(), stream=False), ask()))
    assert message.stop_reason == stop_reason
    if error_fragment is not None:
        assert error_fragment in (message.error_message or "")


def test_a_blocked_prompt_is_an_error() -> None:
    body = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "modelVersion": MODEL}
    message = final(run(GeminiProvider(FakeGemini().json(body).client(), stream=False), ask()))
    assert message.stop_reason == "error"
    assert "PROHIBITED_CONTENT" in (message.error_message or "")


# -- failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "code", "message"),
    [
        (400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
        (403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."),
        (404, "NOT_FOUND", "models/gemini-test is not found for API version v1beta."),
        (500, "INTERNAL", "An internal error has occurred."),
        (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
def test_http_errors_become_error_events(status: int, code: str, message: str, stream: bool) -> None:
    fake = FakeGemini().json(error_body(status, code, message), status=status)
    events = run(GeminiProvider(fake.client(), stream=stream), ask())
    assert [e.type for e in events] == ["start", "error"]
    assert events[-1].reason == "error"
    assert final(events).error_message == f"HTTP {status} {code}: {message}"


def test_rate_limit_error_says_when_to_retry() -> None:
    details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]
    fake = FakeGemini().json(error_body(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", details), status=429)
    message = final(run(GeminiProvider(fake.client()), ask()))
    assert message.error_message == "HTTP 429 RESOURCE_EXHAUSTED: Quota exceeded. (retry after 37s)"


def test_rate_limit_retry_after_header_is_reported() -> None:
    fake = FakeGemini().json(
        error_body(429, "RESOURCE_EXHAUSTED", "Slow down."), status=429, headers={"retry-after": "12"}
    )
    assert final(run(GeminiProvider(fake.client()), ask())).error_message == (
        "HTTP 429 RESOURCE_EXHAUSTED: Slow down. (retry after 12s)"
    )


def test_a_stream_cut_mid_way_is_an_error_that_keeps_the_partial_text() -> None:
    fake = FakeGemini()
    fake.stream(reply({"text": "Par"}, finish=None), then=httpx.RemoteProtocolError("peer closed connection"))

    events = run(GeminiProvider(fake.client()), ask())

    message = final(events)
    assert message.stop_reason == "error"
    assert "peer closed connection" in (message.error_message or "")
    assert message.text == "Par"


def test_an_error_inside_the_stream_is_reported() -> None:
    fake = FakeGemini()
    fake.stream(reply({"text": "Hi"}, finish=None), error_body(500, "INTERNAL", "Stream broke on our side."))
    message = final(run(GeminiProvider(fake.client()), ask()))
    assert message.stop_reason == "error"
    assert "INTERNAL" in (message.error_message or "") and "Stream broke on our side." in (message.error_message or "")


def test_a_stream_that_ends_without_a_finish_reason_is_an_error() -> None:
    fake = FakeGemini()
    fake.stream(reply({"text": "Hel"}, finish=None))
    message = final(run(GeminiProvider(fake.client()), ask()))
    assert message.stop_reason == "error"
    assert "without a finish reason" in (message.error_message or "")


def test_missing_model_is_an_error_that_says_how_to_set_one() -> None:
    events = run(GeminiProvider(FakeGemini().client()), ModelRequest(messages=(UserMessage(content="hi"),)))
    assert events[-1].type == "error"
    assert "model" in (final(events).error_message or "")


# -- cancellation -------------------------------------------------------------------------------


def test_cancel_before_the_call_sends_nothing() -> None:
    fake = FakeGemini()

    async def scenario() -> list[Any]:
        cancel = asyncio.Event()
        cancel.set()
        return [e async for e in GeminiProvider(fake.client()).stream(ask(), cancel)]

    events = asyncio.run(scenario())
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert final(events).error_message == "Request was aborted"
    assert fake.requests == []


def test_cancel_during_the_stream_aborts_and_closes_it() -> None:
    fake = FakeGemini()
    body = fake.stream(reply({"text": "Hello"}, finish=None), stall=True)

    async def scenario() -> list[Any]:
        cancel = asyncio.Event()
        events = []
        async for event in GeminiProvider(fake.client()).stream(ask(), cancel):
            events.append(event)
            if event.type == "text_delta":
                cancel.set()
        return events

    events = asyncio.run(asyncio.wait_for(scenario(), timeout=10))
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert final(events).text == "Hello"
    assert body.closed


def test_a_consumer_that_stops_early_closes_the_http_stream() -> None:
    fake = FakeGemini()
    body = fake.stream(reply({"text": "Hello"}, finish=None), stall=True)

    async def scenario() -> bool:
        events = GeminiProvider(fake.client()).stream(ask())
        async for event in events:
            if event.type == "text_delta":
                break
        await events.aclose()  # type: ignore[attr-defined]
        return body.closed

    assert asyncio.run(asyncio.wait_for(scenario(), timeout=10))


# -- clients and the optional extra -------------------------------------------------------------


def test_a_lazily_built_client_is_kept_per_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[dict[str, Any]] = []

    class RecordingClient:
        def __init__(self, **kwargs: Any) -> None:
            built.append(kwargs)

    monkeypatch.setattr(GeminiProvider, "client_factory", RecordingClient)
    provider = GeminiProvider(api_key="from-kwargs")

    async def twice() -> tuple[Any, Any]:
        return provider._client_for_running_loop(), provider._client_for_running_loop()

    first, again = asyncio.run(twice())
    assert first is again
    result: list[tuple[Any, Any]] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(twice())))
    thread.start()
    thread.join()
    assert result[0][0] is not first  # the helper thread's loop gets its own client
    assert built == [{"api_key": "from-kwargs"}, {"api_key": "from-kwargs"}]


def test_a_given_client_is_used_as_is() -> None:
    client = FakeGemini().client()

    async def pick() -> Any:
        return GeminiProvider(client)._client_for_running_loop()

    assert asyncio.run(pick()) is client


def test_importing_without_google_genai_says_which_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.genai", None)
    monkeypatch.delitem(sys.modules, "openprogram.providers.gemini")
    with pytest.raises(ImportError, match=r'pip install -e "\.\[gemini\]" in the openprogram checkout'):
        importlib.import_module("openprogram.providers.gemini")
