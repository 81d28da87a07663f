"""The Gemini and Bedrock renderers of ``harness.emulator``, read by the official SDKs and our backends.

No server: each SDK's own seam carries the renderer's bytes (an ``httpx2`` transport for
google-genai, a botocore ``before-send`` hook for boto3), so what is tested is what the SDK
makes of the wire, then what our backend makes of the SDK. Fidelity is checked three ways:
every Gemini and Bedrock recording's expected message, scripted, comes back the same; the
rendered stream follows the recorded one's event grammar; and for any generated turn the backend
gives the message ``ScriptedProvider`` gives (ids, signatures and usage aside).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.emulator import _bedrock as bedrock
from harness.emulator import _exchange as wire
from harness.emulator import _gemini as gemini
from harness.recording import _cassette as cassettes
from harness.recording import _clients as backends
from harness.recording._conformance import default_cassette_dir
from harness.script import ScriptedCall, ScriptedProvider, Turn, turn
from harness.wire import _eventstream
from openprogram.providers import ModelRequest
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
)
from tests.harness.emulator.wirecheck import CLAUDE, NOVA
from tests.harness.emulator.wiring import (
    Emulated,
    Session,
    ask,
    bedrock_emulated,
    compile_path,
    final_message,
    gemini_emulated,
    match,
    run_backend,
)
from tests.harness.recording.test_conformance_cassettes import expected_stop_reason

CASSETTES = default_cassette_dir()
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
GEMINI_3 = "gemini-3-pro-preview"
GEMINI_2 = "gemini-2.0-flash"
GEMINI_ENDPOINTS = ("generateContent", "streamGenerateContent")
BEDROCK_ENDPOINTS = ("converse", "converse-stream")


def request_for(
    route: wire.Route, path: str, body: Any = None, query: dict[str, str] | None = None
) -> wire.WireRequest:
    _, params = match((route,), route.method, path)
    return wire.WireRequest("POST", path, query or {}, {}, body or {}, route, params)


def gemini_request(endpoint: str, model: str = GEMINI_3) -> wire.WireRequest:
    route = next(r for r in gemini.ROUTES if r.endpoint == endpoint)
    query = {"alt": "sse"} if endpoint == "streamGenerateContent" else {}
    return request_for(route, f"/v1beta/models/{model}:{endpoint}", {"contents": []}, query)


def bedrock_request(endpoint: str, model: str = CLAUDE) -> wire.WireRequest:
    route = next(r for r in bedrock.ROUTES if r.endpoint == endpoint)
    return request_for(route, f"/model/{model}/{endpoint}", {"messages": []})


def frames(reply: wire.WireReply) -> list[Any]:
    """The reply's event-stream messages, parsed (and CRC-checked) by botocore's own decoder."""
    buffer = EventStreamBuffer()
    for chunk in reply.chunks or []:
        buffer.add_data(chunk)
    return list(buffer)


def sse_events(data: bytes) -> list[dict[str, Any]]:
    events = [block for block in data.decode("utf-8").replace("\r\n", "\n").split("\n\n") if block.strip()]
    assert all(block.startswith("data: ") for block in events)
    return [json.loads(block[len("data: ") :]) for block in events]


# -- routes --------------------------------------------------------------------------------------


def test_routes_are_the_paths_the_sdks_send_in_starlette_syntax() -> None:
    assert [(r.endpoint, r.path) for r in gemini.ROUTES] == [
        ("generateContent", "/{version}/models/{model}:generateContent"),
        ("streamGenerateContent", "/{version}/models/{model}:streamGenerateContent"),
        (
            "generateContent",
            "/{version}/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent",
        ),
        (
            "streamGenerateContent",
            "/{version}/projects/{project}/locations/{location}/publishers/google/models/{model}:streamGenerateContent",
        ),
        ("generateContent", "/{version}/publishers/google/models/{model}:generateContent"),
        ("streamGenerateContent", "/{version}/publishers/google/models/{model}:streamGenerateContent"),
    ]
    assert [(r.endpoint, r.path) for r in bedrock.ROUTES] == [
        ("converse", "/model/{modelId:path}/converse"),
        ("converse-stream", "/model/{modelId:path}/converse-stream"),
        ("invoke", "/model/{modelId:path}/invoke"),
        ("invoke-with-response-stream", "/model/{modelId:path}/invoke-with-response-stream"),
    ]
    assert {r.method for r in (*gemini.ROUTES, *bedrock.ROUTES)} == {"POST"}


def test_the_model_action_segment_splits_at_the_colon_and_arns_keep_their_slashes() -> None:
    route, params = match(gemini.ROUTES, "POST", "/v1beta/models/gemini-2.0-flash:streamGenerateContent")
    assert (route.endpoint, params) == ("streamGenerateContent", {"version": "v1beta", "model": "gemini-2.0-flash"})
    route, params = match(
        gemini.ROUTES,
        "POST",
        "/v1/projects/p-1/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent",
    )
    assert route.endpoint == "generateContent"
    assert params == {"version": "v1", "project": "p-1", "location": "us-central1", "model": "gemini-2.5-pro"}
    assert gemini.split_model_action("gemini-2.0-flash:generateContent") == ("gemini-2.0-flash", "generateContent")
    assert not compile_path(gemini.ROUTES[0].path).match("/v1beta/models/gemini-2.0-flash:countTokens")
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-v1:0"
    route, params = match(bedrock.ROUTES, "POST", f"/model/{arn}/converse-stream")
    assert (route.endpoint, params) == ("converse-stream", {"modelId": arn})
    route, _ = match(bedrock.ROUTES, "POST", f"/model/{NOVA}/converse")
    assert route.endpoint == "converse"


@pytest.mark.parametrize(
    "connection, path",
    [
        (backends.Connection.test(), f"/v1beta/models/{GEMINI_3}:generateContent"),
        (
            backends.Connection.test(vertex=True, project="proj", region="europe-west4"),
            f"/v1/projects/proj/locations/europe-west4/publishers/google/models/{GEMINI_3}:generateContent",
        ),
        (backends.Connection.test(vertex=True), f"/v1/publishers/google/models/{GEMINI_3}:generateContent"),
    ],
    ids=["developer-api", "vertex-project", "vertex-express"],
)
def test_gemini_answers_the_developer_api_and_both_vertex_paths(connection: backends.Connection, path: str) -> None:
    emulated = gemini_emulated(turn.text("Sunny."))
    message = run_backend("gemini", "generateContent", emulated, ask(GEMINI_3), connection=connection)
    assert (message.stop_reason, message.text) == ("stop", "Sunny.")
    assert emulated.requests[0].path == path
    assert emulated.requests[0].path_params["model"] == GEMINI_3
    assert "x-goog-api-key" not in emulated.requests[0].headers and "authorization" not in emulated.requests[0].headers


# -- Gemini rendering ----------------------------------------------------------------------------


def test_gemini_whole_reply_has_the_recorded_shape() -> None:
    reply = gemini.render(
        turn.tool_calls(turn.tool_call("get_weather", city="Paris"), turn.tool_call("get_weather", city="Rome")),
        gemini_request("generateContent"),
        wire.IdSource(),
    )
    body = json.loads(reply.body or b"")
    assert reply.headers["content-type"] == "application/json; charset=UTF-8"
    assert set(body) == {"candidates", "usageMetadata", "modelVersion", "responseId"}
    candidate = body["candidates"][0]
    assert candidate["finishReason"] == "STOP" and candidate["index"] == 0
    assert candidate["finishMessage"] == "Model generated function call(s)."
    first, second = candidate["content"]["parts"]
    assert first["functionCall"] == {"name": "get_weather", "args": {"city": "Paris"}}
    assert base64.b64decode(first["thoughtSignature"], validate=True)  # only the first call is signed
    assert second == {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}}
    assert body["modelVersion"] == GEMINI_3 and len(body["responseId"]) == 23


def test_gemini_stream_is_sse_with_whole_calls_signed_thoughts_and_a_closing_finish() -> None:
    scripted = Turn(
        blocks=(
            ("thinking", "Paris first, then the weather there."),
            ScriptedCall("get_weather", {"city": "Paris"}, "c1"),
        ),
        usage=Usage(input=10, output=5, total_tokens=15),
    )
    reply = gemini.render(scripted, gemini_request("streamGenerateContent"), wire.IdSource())
    assert reply.headers["content-type"] == "text/event-stream"
    assert all(chunk.startswith(b"data: ") and chunk.endswith(b"\r\n\r\n") for chunk in reply.chunks or [])
    events = sse_events(b"".join(reply.chunks or []))
    parts = [part for event in events for part in event["candidates"][0]["content"]["parts"]]
    thoughts = [part for part in parts if part.get("thought")]
    assert len(thoughts) > 1 and "".join(p["text"] for p in thoughts) == "Paris first, then the weather there."
    assert ["thoughtSignature" in p for p in thoughts] == [False] * (len(thoughts) - 1) + [True]
    assert [p["functionCall"] for p in parts if "functionCall" in p] == [
        {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}
    ]
    assert parts[-1] == {"text": ""} and events[-1]["candidates"][0]["finishReason"] == "STOP"
    assert all("finishReason" not in event["candidates"][0] for event in events[:-1])
    assert len({event["responseId"] for event in events}) == 1
    assert events[-1]["usageMetadata"]["promptTokenCount"] == 10


@pytest.mark.parametrize("endpoint", GEMINI_ENDPOINTS)
def test_gemini_signatures_reach_the_message_where_they_are_sent_back(endpoint: str) -> None:
    emulated = gemini_emulated(
        Turn(blocks=(("thinking", "Let me look it up."), ScriptedCall("get_weather", {"city": "Paris"}))),
    )
    message = run_backend("gemini", endpoint, emulated, ask(GEMINI_3, tools=(WEATHER,)))
    thinking, call = message.content
    assert isinstance(thinking, ThinkingContent) and isinstance(call, ToolCall)
    assert thinking.thinking == "Let me look it up." and base64.b64decode(thinking.signature or "", validate=True)
    assert call.thought_signature and call.thought_signature != thinking.signature
    assert message.stop_reason == "toolUse"


@pytest.mark.parametrize("endpoint", GEMINI_ENDPOINTS)
def test_gemini_signed_parts_go_back_signed_in_the_next_request(endpoint: str) -> None:
    emulated = gemini_emulated(
        Turn(blocks=(("thinking", "Need Paris."), ScriptedCall("get_weather", {"city": "Paris"}))),
        turn.text("Sunny."),
    )
    session = Session("gemini", emulated)
    try:
        first = session.run(endpoint, ask(GEMINI_3, tools=(WEATHER,)))
        call = first.tool_calls[0]
        result = ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=(TextContent(text="sunny"),))
        follow_up = ModelRequest(model=GEMINI_3, messages=(*ask(GEMINI_3).messages, first, result), tools=(WEATHER,))
        assert session.run(endpoint, follow_up).text == "Sunny."
    finally:
        session.close()
    sent = {
        p.get("functionCall", {}).get("name") or ("thought" if p.get("thought") else "?"): p
        for p in emulated.requests[1].body["contents"][1]["parts"]
    }
    assert sent["thought"]["thoughtSignature"] == first.content[0].signature
    assert sent["get_weather"]["thoughtSignature"] == call.thought_signature


@pytest.mark.parametrize("endpoint", GEMINI_ENDPOINTS)
def test_gemini_stop_reasons(endpoint: str) -> None:
    emulated = gemini_emulated(
        turn.text("cut off", stop_reason="length"),
        Turn(blocks=(turn.raw_tool_call("get_weather", "{not json"),)),
        turn.error("the model is overloaded"),
        turn.empty(),
    )
    request = ask(GEMINI_2, tools=(WEATHER,))
    length, malformed, error, empty = (run_backend("gemini", endpoint, emulated, request) for _ in range(4))
    assert (length.stop_reason, length.text) == ("length", "cut off")
    assert malformed.stop_reason == "error" and "MALFORMED_FUNCTION_CALL" in (malformed.error_message or "")
    assert error.stop_reason == "error" and error.error_message == "HTTP 500 INTERNAL: the model is overloaded"
    assert (empty.stop_reason, empty.content) == ("stop", ())
    finishes = [reply.body or b"".join(reply.chunks or []) for reply in emulated.replies]
    assert b"MAX_TOKENS" in finishes[0] and b"MALFORMED_FUNCTION_CALL" in finishes[1]


def test_gemini_stream_error_is_an_in_band_error_event() -> None:
    reply = gemini.render(turn.error("backend failed"), gemini_request("streamGenerateContent"), wire.IdSource())
    assert reply.status == 200
    assert sse_events(b"".join(reply.chunks or [])) == [
        {"error": {"code": 500, "message": "backend failed", "status": "INTERNAL"}}
    ]


def test_gemini_stream_without_sse_is_one_json_array() -> None:
    request = gemini_request("streamGenerateContent")
    request = wire.WireRequest(request.method, request.path, {}, {}, request.body, request.route, request.path_params)
    reply = gemini.render(turn.text("Hello."), request, wire.IdSource())
    chunks = json.loads(reply.body or b"")
    assert isinstance(chunks, list) and chunks[-1]["candidates"][0]["finishReason"] == "STOP"


@pytest.mark.parametrize(
    "status, name",
    [
        (400, "INVALID_ARGUMENT"),
        (401, "UNAUTHENTICATED"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND"),
        (429, "RESOURCE_EXHAUSTED"),
        (500, "INTERNAL"),
        (503, "UNAVAILABLE"),
    ],
)
@pytest.mark.parametrize("endpoint", GEMINI_ENDPOINTS)
def test_gemini_error_replies_carry_the_rpc_status_name(status: int, name: str, endpoint: str) -> None:
    emulated = gemini_emulated(lambda request: gemini.error_reply(status, "no such luck", request))
    message = run_backend("gemini", endpoint, emulated, ask(GEMINI_3))
    body = json.loads(emulated.replies[0].body or b"")
    assert body["error"]["code"] == status and body["error"]["status"] == name
    assert emulated.replies[0].status == status
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith(f"HTTP {status} {name}: no such luck")
    if status == 429:
        assert "1s" in (message.error_message or "")  # the RetryInfo delay the body carries


# -- Bedrock rendering ---------------------------------------------------------------------------


def test_bedrock_converse_has_the_recorded_shape() -> None:
    scripted = Turn(blocks=(("thinking", "hmm"), ("text", "Checking."), ScriptedCall("get_weather", {"city": "Oslo"})))
    reply = bedrock.render(scripted, bedrock_request("converse"), wire.IdSource())
    body = json.loads(reply.body or b"")
    assert reply.headers["Content-Type"] == "application/json" and reply.headers["x-amzn-RequestId"].count("-") == 4
    assert list(body) == ["metrics", "output", "stopReason", "usage"]
    assert body["stopReason"] == "tool_use"
    reasoning, text, tool = body["output"]["message"]["content"]
    assert reasoning["reasoningContent"]["reasoningText"]["text"] == "hmm"
    assert reasoning["reasoningContent"]["reasoningText"]["signature"]
    assert text == {"text": "Checking."}
    assert tool["toolUse"]["input"] == {"city": "Oslo"} and tool["toolUse"]["name"] == "get_weather"
    assert tool["toolUse"]["toolUseId"].startswith("tooluse_") and len(tool["toolUse"]["toolUseId"]) == 30


def test_bedrock_stream_frames_follow_the_converse_stream_grammar() -> None:
    scripted = Turn(
        blocks=(
            ("thinking", "first the city"),
            ("text", "Let me check that for you."),
            ScriptedCall("get_weather", {"city": "Barcelona"}),
        )
    )
    reply = bedrock.render(scripted, bedrock_request("converse-stream"), wire.IdSource())
    assert reply.headers["Content-Type"] == "application/vnd.amazon.eventstream"
    messages = frames(reply)
    assert all(
        m.headers[":message-type"] == "event" and m.headers[":content-type"] == "application/json" for m in messages
    )
    kinds = [m.headers[":event-type"] for m in messages]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    payloads = [json.loads(m.payload) for m in messages]
    assert all("p" in payload for payload in payloads)
    tool_inputs = [p["delta"]["toolUse"]["input"] for p in payloads if "toolUse" in p.get("delta", {})]
    assert len(tool_inputs) > 2 and tool_inputs[0] == ""  # Anthropic models open with an empty fragment
    assert json.loads("".join(tool_inputs)) == {"city": "Barcelona"}
    reasoning = [p["delta"]["reasoningContent"] for p in payloads if "reasoningContent" in p.get("delta", {})]
    assert "".join(r.get("text", "") for r in reasoning) == "first the city" and "signature" in reasoning[-1]
    starts = [p for p, k in zip(payloads, kinds, strict=True) if k == "contentBlockStart"]
    assert [s["contentBlockIndex"] for s in starts] == [2]
    assert payloads[-2]["stopReason"] == "tool_use" and set(payloads[-1]) == {"metrics", "usage", "p"}


def test_event_stream_frames_have_valid_crcs_and_a_damaged_frame_is_caught() -> None:
    reply = bedrock.render(turn.text("Hello there."), bedrock_request("converse-stream"), wire.IdSource())
    assert len(frames(reply)) >= 4  # botocore checks both CRCs of every frame as it parses
    frame = _eventstream.event_frame("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"x"}}')
    damaged = frame[:-6] + bytes([frame[-6] ^ 1]) + frame[-5:]
    buffer = EventStreamBuffer()
    buffer.add_data(damaged)
    with pytest.raises(ChecksumMismatch):
        list(buffer)


@pytest.mark.parametrize("endpoint", BEDROCK_ENDPOINTS)
def test_bedrock_reasoning_and_stop_reasons_reach_the_message(endpoint: str) -> None:
    emulated = bedrock_emulated(
        Turn(blocks=(("thinking", "Ponder."), ("text", "Done."))),
        turn.text("cut off", stop_reason="length"),
        turn.error("model failed"),
    )
    reasoned, length, error = (run_backend("bedrock", endpoint, emulated, ask(CLAUDE)) for _ in range(3))
    thinking, text = reasoned.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Ponder." and thinking.signature
    assert isinstance(text, TextContent) and text.text == "Done." and reasoned.stop_reason == "stop"
    assert (length.stop_reason, length.text) == ("length", "cut off")
    assert error.stop_reason == "error" and "model failed" in (error.error_message or "")
    assert b"max_tokens" in (emulated.replies[1].body or b"".join(emulated.replies[1].chunks or []))


def test_bedrock_streams_raw_arguments_verbatim_in_several_deltas() -> None:
    raw = '{"city": "Par'
    emulated = bedrock_emulated(Turn(blocks=(turn.raw_tool_call("get_weather", raw, call_id="tooluse_x"),)))
    message = run_backend("bedrock", "converse-stream", emulated, ask(NOVA, tools=(WEATHER,)))
    (call,) = message.tool_calls
    assert (call.id, call.name, call.raw_arguments, call.arguments) == ("tooluse_x", "get_weather", raw, {})
    inputs = [
        json.loads(m.payload)["delta"]["toolUse"]["input"]
        for m in frames(emulated.replies[0])
        if b"toolUse" in m.payload and m.headers[":event-type"] == "contentBlockDelta"
    ]
    assert len(inputs) == 2 and "".join(inputs) == raw  # Nova sends no empty first fragment


@pytest.mark.parametrize(
    "status, error_type",
    [
        (400, "ValidationException"),
        (403, "AccessDeniedException"),
        (404, "ResourceNotFoundException"),
        (429, "ThrottlingException"),
        (500, "InternalServerException"),
        (503, "ServiceUnavailableException"),
    ],
)
@pytest.mark.parametrize("endpoint", BEDROCK_ENDPOINTS)
def test_bedrock_error_replies_name_the_error_type(status: int, error_type: str, endpoint: str) -> None:
    emulated = bedrock_emulated(lambda request: bedrock.error_reply(status, "not today", request))
    message = run_backend("bedrock", endpoint, emulated, ask(CLAUDE))
    reply = emulated.replies[0]
    assert reply.status == status and json.loads(reply.body or b"") == {"message": "not today"}
    assert reply.headers["x-amzn-ErrorType"].split(":")[0] == error_type
    assert message.stop_reason == "error"
    assert message.error_message == f"HTTP {status} {error_type}: not today"


def test_bedrock_in_band_exception_frame_is_read_as_a_stream_error() -> None:
    emulated = bedrock_emulated(lambda request: bedrock.stream_error_reply(429, "slow down", request))
    message = run_backend("bedrock", "converse-stream", emulated, ask(CLAUDE))
    last = frames(emulated.replies[0])[-1]
    assert last.headers[":message-type"] == "exception" and last.headers[":exception-type"] == "throttlingException"
    assert message.stop_reason == "error"
    assert message.error_message == "Bedrock stream error throttlingException: slow down"


REDACTED = b"\x00encrypted-thinking\xff"


def _redacted_reply(endpoint: str) -> wire.WireReply:
    """Claude's redacted thinking as Converse sends it: a ``redactedContent`` blob (base64 in JSON)."""
    blob = base64.b64encode(REDACTED).decode()
    if endpoint == "converse":
        body = {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [{"reasoningContent": {"redactedContent": blob}}, {"text": "Hi."}],
                }
            },
            "stopReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            "metrics": {"latencyMs": 1},
        }
        return wire.WireReply(200, {"Content-Type": "application/json"}, body=json.dumps(body).encode())
    events = [
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": blob}}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Hi."}}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        ("messageStop", {"stopReason": "end_turn"}),
        ("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}),
    ]
    chunks = [_eventstream.event_frame(kind, json.dumps(payload).encode()) for kind, payload in events]
    return wire.WireReply(200, {"Content-Type": "application/vnd.amazon.eventstream"}, chunks=chunks)


@pytest.mark.parametrize("endpoint", BEDROCK_ENDPOINTS)
def test_bedrock_redacted_reasoning_is_kept_and_sent_back_as_it_came(endpoint: str) -> None:
    emulated = bedrock_emulated(_redacted_reply(endpoint), turn.text("Again."))
    session = Session("bedrock", emulated)
    try:
        first = session.run(endpoint, ask(CLAUDE))
        thinking, text = first.content
        assert isinstance(thinking, ThinkingContent) and thinking.redacted and thinking.thinking == ""
        assert base64.b64decode(thinking.signature or "") == REDACTED
        assert isinstance(text, TextContent) and text.text == "Hi." and first.stop_reason == "stop"
        follow_up = ModelRequest(model=CLAUDE, messages=(*ask(CLAUDE).messages, first, *ask(CLAUDE, "And?").messages))
        assert session.run(endpoint, follow_up).text == "Again."
    finally:
        session.close()
    sent = emulated.requests[1].body["messages"][1]
    assert sent == {
        "role": "assistant",
        "content": [{"reasoningContent": {"redactedContent": base64.b64encode(REDACTED).decode()}}, {"text": "Hi."}],
    }


# -- fidelity against the recordings -------------------------------------------------------------


def _entries(provider: str) -> list[Any]:
    index = CASSETTES / "index.json"
    if not index.is_file():
        reason = f"provider cassettes not found: {CASSETTES} (set HARNESS_PROVIDER_CASSETTES to the folder)"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-provider-cassettes")]
    entries = [e for e in json.loads(index.read_text(encoding="utf-8")) if e["provider"] == provider]
    return [pytest.param(entry, id=Path(entry["file"]).stem) for entry in entries]


def scripted_turn(expected: dict[str, Any]) -> Turn:
    """The recorded reply as a script: its text, then its calls (with the ids the provider gave)."""
    blocks: list[tuple[str, str] | ScriptedCall] = [("text", expected["text"])] if expected["text"] else []
    blocks += [ScriptedCall(c["name"], c["arguments"], c["id"]) for c in expected["tool_calls"]]
    length = expected["stop_reason"] in ("MAX_TOKENS", "max_tokens")
    return Turn(blocks=tuple(blocks), stop_reason="length" if length else "stop")


def _scripted_for(provider: str, expected: dict[str, Any]) -> Any:
    if expected["error"] is None:
        return scripted_turn(expected)
    module = gemini if provider == "gemini" else bedrock
    error = expected["error"]
    return lambda request: module.error_reply(error["status"], error["message"], request)


@functools.cache
def _replay(provider: str, file: str) -> tuple[list[cassettes.Interaction], Emulated, list[AssistantMessage]]:
    """Every interaction of the recording, scripted from its expected message, through SDK and backend."""
    entry = next(e for e in json.loads((CASSETTES / "index.json").read_text(encoding="utf-8")) if e["file"] == file)
    cassette = cassettes.load(CASSETTES / file)
    recorded = {item["index"]: item for item in entry["interactions"]}
    module = gemini if provider == "gemini" else bedrock
    scripted = [_scripted_for(provider, recorded[i.index]["expected"]) for i in cassette]
    emulated = Emulated(module.ROUTES, module.render, scripted)
    first = cassette.interactions[0].request.route
    connection = backends.Connection.test(
        region=first.region, vertex=first.vertex, project=first.project, api_version=first.api_version
    )
    session = Session(provider, emulated, connection)
    messages = []
    try:
        for interaction in cassette:
            request = interaction.request
            asked = ModelRequest(model=request.model or "", messages=ask("").messages, tools=request.tools)
            messages.append(session.run(request.route.endpoint, asked, stream=request.stream))
    finally:
        session.close()
    return list(cassette), emulated, messages


def _check_message(where: str, expected: dict[str, Any], message: AssistantMessage) -> None:
    assert message.stop_reason == expected_stop_reason(expected), where
    assert message.text == expected["text"], where
    calls = [(c.name, c.raw_arguments if c.raw_arguments is not None else c.arguments) for c in message.tool_calls]
    assert calls == [(c["name"], c["arguments"]) for c in expected["tool_calls"]], where
    for want, call in zip(expected["tool_calls"], message.tool_calls, strict=True):
        assert call.id and (want["id"] is None or call.id == want["id"]), where
    if expected["error"] is not None:
        text = message.error_message or ""
        assert expected["error"]["message"] in text and str(expected["error"]["status"]) in text, where


@pytest.mark.cassettes
@pytest.mark.parametrize("provider", ["gemini", "bedrock"])
def test_every_recording_scripted_comes_back_as_the_recorded_message(provider: str) -> None:
    entries = [p.values[0] for p in _entries(provider)]
    if entries == [None]:
        pytest.skip(f"provider cassettes not found: {CASSETTES}")
    matched = total = 0
    for entry in entries:
        interactions, emulated, messages = _replay(provider, entry["file"])
        recorded = {item["index"]: item for item in entry["interactions"]}
        for interaction, request, message in zip(interactions, emulated.requests, messages, strict=True):
            where = f"{entry['file']} interaction {interaction.index}"
            assert request.route.endpoint == interaction.request.route.endpoint, where
            _check_message(where, recorded[interaction.index]["expected"], message)
            matched += 1
        total += len(entry["interactions"])
    assert matched == total and total == sum(len(e["interactions"]) for e in entries)


# Fields whose presence depends on what a script does not say: the account's service tier (and
# the recording's date), hidden thinking the model billed, Bedrock's cache and server-tool counters,
# Claude 4.5's extra ``type`` on a toolUse block.
_GEMINI_OPTIONAL = {"serviceTier", "thoughtsTokenCount", "candidatesTokenCount", "candidatesTokensDetails"}
_BEDROCK_OPTIONAL = {
    "serverToolUsage",
    "cacheReadInputTokens",
    "cacheWriteInputTokens",
    "cacheReadInputTokenCount",
    "cacheWriteInputTokenCount",
    "type",
}


def _part_kind(part: dict[str, Any]) -> str:
    kind = (
        "call"
        if "functionCall" in part
        else "thought"
        if part.get("thought")
        else "text"
        if part.get("text")
        else "end"
    )
    return kind + ("+signed" if "thoughtSignature" in part else "")


def gemini_grammar(chunks: list[dict[str, Any]]) -> list[Any]:
    """Per chunk: its fields, its candidate's fields and its part kinds; runs of equal chunks count once."""
    grammar: list[Any] = []
    for chunk in chunks:
        candidate = chunk["candidates"][0]
        entry = (
            tuple(sorted(chunk)),
            tuple(sorted(set(chunk.get("usageMetadata", {})) - _GEMINI_OPTIONAL)),
            tuple(sorted(candidate)),
            tuple(_part_kind(part) for part in candidate["content"]["parts"]),
            tuple(sorted({key for part in candidate["content"]["parts"] for key in part.get("functionCall", {})})),
        )
        if not grammar or grammar[-1] != entry:
            grammar.append(entry)
    return grammar


def _delta_kind(payload: dict[str, Any]) -> str:
    delta = payload.get("delta", {})
    return next(iter(delta), "") + "".join(sorted(delta.get("reasoningContent", {})))


def bedrock_grammar(payloads: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Per event: its type, delta kind and payload fields; runs of equal events count once."""
    grammar: list[Any] = []
    for kind, payload in payloads:
        fields = set(payload) | {f"usage.{k}" for k in payload.get("usage", {})}
        fields |= {f"toolUse.{k}" for k in payload.get("start", {}).get("toolUse", {})}
        entry = (kind, _delta_kind(payload), tuple(sorted(fields - {f"usage.{k}" for k in _BEDROCK_OPTIONAL})))
        if not grammar or grammar[-1] != entry:
            grammar.append(entry)
    return grammar


def bedrock_whole_grammar(body: dict[str, Any]) -> list[Any]:
    content = body["output"]["message"]["content"]
    return [
        tuple(sorted(body)),
        tuple(sorted(set(body["usage"]) - _BEDROCK_OPTIONAL)),
        [(next(iter(block)), tuple(sorted(set(block.get("toolUse", {})) - _BEDROCK_OPTIONAL))) for block in content],
    ]


def _frames_of(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return [(m.headers[":event-type"], json.loads(m.payload)) for m in buffer]


@pytest.mark.cassettes
@pytest.mark.parametrize("provider", ["gemini", "bedrock"])
def test_rendered_replies_follow_the_recorded_event_grammar(provider: str) -> None:
    entries = [p.values[0] for p in _entries(provider)]
    if entries == [None]:
        pytest.skip(f"provider cassettes not found: {CASSETTES}")
    compared = 0
    for entry in entries:
        interactions, emulated, _ = _replay(provider, entry["file"])
        for interaction, reply in zip(interactions, emulated.replies, strict=True):
            where = f"{entry['file']} interaction {interaction.index}"
            recorded = interaction.response
            if not recorded.ok:
                assert reply.status == recorded.status and json.loads(reply.body or b"") == recorded.body.json, where
                compared += 1
                continue
            data = reply.body if reply.chunks is None else b"".join(reply.chunks)
            assert data is not None
            if provider == "gemini" and interaction.request.stream:
                assert gemini_grammar(sse_events(data)) == gemini_grammar(sse_events(recorded.body.data)), where
            elif provider == "gemini":
                assert gemini_grammar([json.loads(data)]) == gemini_grammar([recorded.body.json]), where
            elif interaction.request.stream:
                assert bedrock_grammar(_frames_of(data)) == bedrock_grammar(_frames_of(recorded.body.data)), where
            else:
                assert bedrock_whole_grammar(json.loads(data)) == bedrock_whole_grammar(recorded.body.json), where
            compared += 1
    assert compared == sum(len(entry["interactions"]) for entry in entries)


# -- fidelity as a property ----------------------------------------------------------------------

_words = st.text(st.characters(codec="utf-8", categories=("L", "N", "P", "Zs")), min_size=1, max_size=40)
_values = st.one_of(st.integers(-1000, 1000), st.booleans(), st.text(max_size=10), st.none())
_args = st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True), _values, max_size=3)
_calls = st.builds(
    ScriptedCall, st.sampled_from(["get_weather", "lookup", "clock"]), _args, st.one_of(st.none(), st.just("id-1"))
)
_blocks = st.lists(
    st.one_of(st.tuples(st.just("text"), _words), st.tuples(st.just("thinking"), _words), _calls), max_size=4
)


@st.composite
def turns(draw: st.DrawFn, joins_text: bool = True) -> Turn:
    """Any scripted reply; ``joins_text``: the wire merges neighbouring text blocks (Gemini does)."""
    kind = draw(st.sampled_from(["reply", "reply", "reply", "error"]))
    if kind == "error":
        return turn.error(draw(_words))
    blocks: list[tuple[str, str] | ScriptedCall] = []
    for block in draw(_blocks):
        previous = blocks[-1] if blocks else None
        if (
            isinstance(block, ScriptedCall)
            and block.id is not None
            and any(isinstance(b, ScriptedCall) and b.id for b in blocks)
        ):
            block = ScriptedCall(block.name, block.args)  # ids are unique within a reply
        elif (
            joins_text
            and isinstance(block, tuple)
            and isinstance(previous, tuple)
            and previous[0] == block[0] == "text"
        ):
            continue  # Gemini's wire joins neighbouring text parts into one block: a script cannot ask for two
        blocks.append(block)
    usage = draw(st.one_of(st.none(), st.builds(Usage, input=st.integers(0, 99), output=st.integers(0, 99))))
    return Turn(blocks=tuple(blocks), stop_reason=draw(st.sampled_from(["stop", "length"])), usage=usage)


def _comparable(message: AssistantMessage) -> tuple[Any, ...]:
    """The message with what the property sets aside: ids, signatures, usage, the error's wording."""
    content = []
    for block in message.content:
        if isinstance(block, ToolCall):
            content.append(block.model_copy(update={"id": "", "thought_signature": None}))
        elif isinstance(block, ThinkingContent):
            content.append(block.model_copy(update={"signature": None}))
        else:
            content.append(block)
    return (message.stop_reason, tuple(content))


def scripted_message(scripted: Turn, request: ModelRequest) -> AssistantMessage:
    return asyncio.run(final_message(ScriptedProvider(scripted), request))


@pytest.fixture(scope="module")
def sessions() -> Iterator[dict[str, Session]]:
    """One client per provider for every generated example: building a client costs more than a call."""
    made = {
        "gemini": Session("gemini", gemini_emulated()),
        "bedrock": Session("bedrock", bedrock_emulated()),
    }
    yield made
    for session in made.values():
        session.close()


_PROPERTY = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


def _check_property(session: Session, endpoint: str, scripted: Turn) -> None:
    model = GEMINI_3 if session.provider == "gemini" else CLAUDE
    request = ask(model, tools=(WEATHER,))
    session.emulated.turns.append(scripted)
    actual = session.run(endpoint, request)
    expected = scripted_message(scripted, request)
    assert _comparable(actual) == _comparable(expected)
    if expected.stop_reason == "error":
        assert (expected.error_message or "") in (actual.error_message or "")
    scripted_ids = [b.id for b in scripted.blocks if isinstance(b, ScriptedCall)]
    assert [c.id for c, want in zip(actual.tool_calls, scripted_ids, strict=True) if want] == [
        i for i in scripted_ids if i
    ]


@pytest.mark.parametrize("endpoint", GEMINI_ENDPOINTS)
@_PROPERTY
@given(scripted=turns(joins_text=True))
def test_any_turn_through_gemini_decodes_to_the_scripted_providers_message(
    sessions: dict[str, Session], endpoint: str, scripted: Turn
) -> None:
    _check_property(sessions["gemini"], endpoint, scripted)


@pytest.mark.parametrize("endpoint", BEDROCK_ENDPOINTS)
@_PROPERTY
@given(scripted=turns(joins_text=False))
def test_any_turn_through_bedrock_decodes_to_the_scripted_providers_message(
    sessions: dict[str, Session], endpoint: str, scripted: Turn
) -> None:
    _check_property(sessions["bedrock"], endpoint, scripted)
