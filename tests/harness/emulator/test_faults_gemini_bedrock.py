"""Delivery faults on the Gemini and Bedrock wires: what each fault puts on the wire (SSE for
Gemini, AWS event-stream frames with correct CRCs for Bedrock), what the official SDK makes of
it, and how our backend ends the run over real HTTP (DESIGN section 4: an ``error`` finish whose
message says what went wrong, or the reply itself when the SDK ignores what the fault added)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.eventstream import EventStreamBuffer
from google import genai

from harness.emulator import Emulator, fault
from harness.emulator._faults import Delivery
from harness.recording._clients import backend
from harness.script import turn
from openprogram import ExecError, function, registry, runtime
from tests.harness.emulator.wirecheck import CLAUDE, GEMINI, NOVA, connection

GEMINI_LEGACY = "gemini-2.0-flash"

# (provider, endpoint, model, API): the Gemini API is chosen by the connection.
STREAMS = [
    ("gemini", "streamGenerateContent", GEMINI, "developer"),
    ("gemini", "streamGenerateContent", GEMINI_LEGACY, "developer"),
    ("gemini", "streamGenerateContent", GEMINI, "vertex"),
    ("bedrock", "converse-stream", CLAUDE, "aws"),
    ("bedrock", "converse-stream", NOVA, "aws"),
]
STREAM_IDS = [f"{p}-{api}-{m}" for p, _, m, api in STREAMS]
WHOLE = [
    ("gemini", "generateContent", GEMINI, "developer"),
    ("gemini", "generateContent", GEMINI, "vertex"),
    ("bedrock", "converse", NOVA, "aws"),
]
WHOLE_IDS = [f"{p}-{api}-{e}" for p, e, _, api in WHOLE]


@pytest.fixture
def tools() -> Iterator[list[Any]]:
    with registry.isolated():

        @function
        def weather(city: str) -> str:
            """The weather in a city."""
            return f"sunny in {city}"

        yield [weather]


def _exec(emu: Emulator, provider: str, endpoint: str, model: str, api: str = "", **kwargs: Any) -> str:
    chosen = backend(provider, endpoint, model=model, connection=connection(emu.base_url, api))
    return runtime.exec("go", provider=chosen, **kwargs)


def _failure(emu: Emulator, provider: str, endpoint: str, model: str, api: str, **kwargs: Any) -> str:
    with pytest.raises(ExecError) as raised:
        _exec(emu, provider, endpoint, model, api, **kwargs)
    assert raised.value.reason == "error"
    return raised.value.message


def _delivery(spec: Any, path: str, query: str = "", headers: dict[str, str] | None = None) -> Delivery:
    """What the emulator sends for one request, without a client: the fault as bytes."""
    sent = {"accept-encoding": "gzip, deflate", **(headers or {})}
    return Emulator(spec).answer("POST", path, query, sent.items(), json.dumps({"messages": []}).encode())


def _gemini_stream(spec: Any, model: str = GEMINI) -> Delivery:
    return _delivery(spec, f"/v1beta/models/{model}:streamGenerateContent", "alt=sse")


def _bedrock_stream(spec: Any, model: str = CLAUDE) -> Delivery:
    return _delivery(spec, f"/model/{model}/converse-stream", headers={"accept-encoding": "identity"})


def _frames(delivery: Delivery) -> list[Any]:
    """The delivery's event-stream messages as botocore's decoder reads them (it checks both CRCs)."""
    buffer = EventStreamBuffer()
    for part in delivery.parts:
        buffer.add_data(part)
    return list(buffer)


def _event_types(delivery: Delivery) -> list[str]:
    return [m.headers.get(":event-type") or m.headers[":exception-type"] for m in _frames(delivery)]


# -- on the wire ---------------------------------------------------------------------------------


def test_a_truncated_bedrock_stream_loses_message_stop_and_metadata_and_keeps_valid_frames() -> None:
    whole = _event_types(_bedrock_stream(turn.text("Hello there, friend.")))
    cut = _event_types(_bedrock_stream(fault.truncate(turn.text("Hello there, friend."))))
    assert whole[-2:] == ["messageStop", "metadata"]
    assert cut == whole[:-2]
    failing = _event_types(_bedrock_stream(fault.truncate(turn.error("boom"))))
    assert failing == ["messageStart"]  # the in-band exception frame was the terminal event


def test_a_truncated_gemini_stream_loses_the_chunk_carrying_the_finish_reason() -> None:
    for model in (GEMINI, GEMINI_LEGACY):
        whole = _gemini_stream(turn.text("Hello there, my friend, hello."), model).parts
        cut = _gemini_stream(fault.truncate(turn.text("Hello there, my friend, hello.")), model).parts
        assert b"finishReason" in whole[-1] and cut == whole[:-1]
        assert not any(b"finishReason" in part for part in cut)


def test_a_malformed_bedrock_frame_has_valid_crcs_and_a_payload_that_is_not_json() -> None:
    messages = _frames(_bedrock_stream(fault.malformed_chunk(turn.text("Hello there, friend."))))
    broken = []
    for message in messages:
        try:
            json.loads(message.payload)
        except ValueError:
            broken.append(message)
    (damaged,) = broken
    assert damaged.headers[":event-type"] == "contentBlockDelta"
    assert damaged.payload.startswith(b'{"contentBlockIndex":0,')


def test_a_malformed_gemini_chunk_is_a_data_event_with_broken_json() -> None:
    parts = _gemini_stream(fault.malformed_chunk(turn.text("Hello there, my friend, hello."))).parts
    broken = [p for p in parts if not _json_ok(p.decode().removeprefix("data: ").strip())]
    assert len(broken) == 1 and broken[0].startswith(b"data: {") and broken[0].endswith(b"\r\n\r\n")


def _json_ok(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def test_an_unknown_bedrock_event_is_a_frame_of_an_unknown_event_type_that_botocore_skips() -> None:
    delivery = _bedrock_stream(fault.unknown_event(turn.text("fine")))
    assert _event_types(delivery)[:2] == ["messageStart", "emulatorUnknownEvent"]
    with Emulator(fault.unknown_event(turn.text("fine"))) as emu:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=emu.base_url,
            aws_access_key_id="k",
            aws_secret_access_key="k",
        )
        reply = client.converse_stream(modelId=NOVA, messages=[{"role": "user", "content": [{"text": "hi"}]}])
        events = list(reply["stream"])
    kinds = [next(iter(event)) for event in events]  # botocore skips an event type its model does not name
    assert kinds == ["messageStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"]


def test_an_unknown_gemini_chunk_reaches_google_genai_as_a_chunk_without_candidates() -> None:
    parts = _gemini_stream(fault.unknown_event(turn.text("fine"))).parts
    assert json.loads(parts[1].decode().removeprefix("data: "))["emulatorUnknownEvent"]
    with Emulator(fault.unknown_event(turn.text("fine"))) as emu:
        client = genai.Client(api_key="k", http_options={"base_url": emu.base_url + "/", "api_version": "v1beta"})
        chunks = list(client.models.generate_content_stream(model=GEMINI, contents="hi"))
    assert chunks[1].candidates is None and "".join(c.text or "" for c in chunks) == "fine"


def test_gzip_is_sent_to_a_client_that_accepts_it_and_never_to_botocore_which_asks_for_identity() -> None:
    gemini = _gemini_stream(fault.gzip(turn.text("zipped")))
    assert gemini.reply.headers["content-encoding"] == "gzip"
    bedrock = _bedrock_stream(fault.gzip(turn.text("zipped")))
    assert "content-encoding" not in bedrock.reply.headers and _event_types(bedrock)[0] == "messageStart"
    refused = _delivery(fault.gzip(turn.text("z")), "/v1/chat/completions", headers={"accept-encoding": "gzip;q=0"})
    assert "content-encoding" not in refused.reply.headers


# -- through the SDK and our backend, over real HTTP ------------------------------------------------


def _calls_turn() -> Any:
    return turn.tool_calls(turn.tool_call("weather", city="Paris"), turn.tool_call("weather", city="Oslo"))


@pytest.mark.parametrize(("provider", "endpoint", "model", "api"), STREAMS, ids=STREAM_IDS)
@pytest.mark.parametrize("content", ["text", "calls"])
def test_a_truncated_stream_ends_the_run_with_an_error_and_runs_no_call(
    tools: list[Any], provider: str, endpoint: str, model: str, api: str, content: str
) -> None:
    inner = turn.text("This reply is cut short by a fault.") if content == "text" else _calls_turn()
    with Emulator(fault.truncate(inner)) as emu:
        message = _failure(emu, provider, endpoint, model, api, tools=tools)
    assert "ended without a" in message and "stream cut?" in message, message
    assert len(emu.requests) == 1  # the calls of a cut reply never ran, so nothing was sent back


@pytest.mark.parametrize(("provider", "endpoint", "model", "api"), STREAMS, ids=STREAM_IDS)
def test_a_malformed_chunk_ends_the_run_with_an_error_naming_the_broken_json(
    tools: list[Any], provider: str, endpoint: str, model: str, api: str
) -> None:
    with Emulator(fault.malformed_chunk(turn.text("This reply carries a broken chunk."))) as emu:
        message = _failure(emu, provider, endpoint, model, api)
    expected = "Failed to parse response as JSON" if provider == "gemini" else "malformed JSON payload"
    assert expected in message, message


@pytest.mark.parametrize(("provider", "endpoint", "model", "api"), STREAMS, ids=STREAM_IDS)
def test_a_connection_dropped_mid_stream_ends_the_run_with_an_error_saying_so(
    tools: list[Any], provider: str, endpoint: str, model: str, api: str
) -> None:
    with Emulator(fault.drop_mid_stream(2, turn.text("This reply never gets to its end, sadly."))) as emu:
        message = _failure(emu, provider, endpoint, model, api)
    assert "peer closed connection" in message or "Response ended prematurely" in message, message


@pytest.mark.parametrize(("provider", "endpoint", "model", "api"), WHOLE, ids=WHOLE_IDS)
def test_a_connection_dropped_before_a_whole_reply_ends_the_run_with_a_connection_error(
    provider: str, endpoint: str, model: str, api: str
) -> None:
    with Emulator(fault.drop_mid_stream(0)) as emu:
        message = _failure(emu, provider, endpoint, model, api)
    assert "peer closed connection" in message or "Connection was closed" in message, message


@pytest.mark.parametrize(("provider", "endpoint", "model", "api"), [*STREAMS, *WHOLE], ids=[*STREAM_IDS, *WHOLE_IDS])
def test_an_unknown_event_is_ignored_as_the_sdk_ignores_it_and_gzip_and_slow_replies_arrive_whole(
    provider: str, endpoint: str, model: str, api: str
) -> None:
    spec = fault.gzip(fault.slow(0.01, fault.unknown_event(turn.text("slow but sure"))))
    with Emulator(spec, fault.unknown_event(turn.text("again"))) as emu:
        assert _exec(emu, provider, endpoint, model, api) == "slow but sure"
        assert _exec(emu, provider, endpoint, model, api) == "again"


def test_a_slow_stream_really_is_slow_over_http() -> None:
    with Emulator(fault.slow(0.05, turn.text("one two three four five six seven eight nine ten"))) as emu:
        started = time.monotonic()
        assert _exec(emu, "bedrock", "converse-stream", NOVA) == "one two three four five six seven eight nine ten"
        elapsed = time.monotonic() - started
    frames = len(_event_types(_bedrock_stream(turn.text("one two three four five six seven eight nine ten"), NOVA)))
    assert elapsed >= 0.05 * frames * 0.9
