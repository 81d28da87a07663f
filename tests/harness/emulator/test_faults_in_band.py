"""The faults a client can notice, on every wire, against the official SDKs over loopback: the
provider's own in-band error event (``fault.error_event``), a chunk whose JSON is broken
(``fault.malformed_chunk``) and a stream cut inside an event (``fault.cut_mid_event``). Each test
records what the SDK really does with it: which raise, and which hand back a partial reply without
a stop reason (a client must check for one itself), as the wire campaign's W5 relies on."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import boto3
import openai
import pytest
from botocore.config import Config
from botocore.eventstream import ChecksumMismatch
from botocore.exceptions import EventStreamError
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from harness.emulator import Emulator, fault, script_of
from harness.scenarios._scenario import Scenario
from harness.scenarios._scenario_parts import ScenarioError
from harness.script import turn

TEXT = "The answer is five."


def _chat(base: str) -> tuple[str, str | None]:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0)
    text, finish = "", None
    for chunk in client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True
    ):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    return text, finish


def _responses_events(base: str) -> list[Any]:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0)
    return list(client.responses.create(model="gpt-4o", input="hi", stream=True))


def _responses_helper(base: str) -> Any:
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0)
    with client.responses.stream(model="gpt-4o", input="hi") as stream:
        for _ in stream:
            pass
        return stream.get_final_response()


def _anthropic(base: str) -> Any:
    client = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
    messages = [{"role": "user", "content": "hi"}]
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=100, messages=messages) as stream:  # type: ignore[arg-type]
        for _ in stream:
            pass
        return stream.get_final_message()


def _gemini(base: str) -> tuple[str, Any]:
    options = genai_types.HttpOptions(base_url=base, retry_options=genai_types.HttpRetryOptions(attempts=1))
    client = genai.Client(api_key="k", http_options=options)
    text, finish = "", None
    for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"):
        text += chunk.text or ""
        if chunk.candidates and chunk.candidates[0].finish_reason:
            finish = chunk.candidates[0].finish_reason
    return text, finish


def _bedrock_events(base: str) -> list[dict[str, Any]]:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=base,
        aws_access_key_id="a",
        aws_secret_access_key="b",
        config=Config(retries={"max_attempts": 1}),
    )
    messages = [{"role": "user", "content": [{"text": "hi"}]}]
    return list(client.converse_stream(modelId="us.amazon.nova-micro-v1:0", messages=messages)["stream"])


def _served(spec: Any, client: Callable[[str], Any]) -> Any:
    with Emulator(spec) as emu:
        return client(emu.base_url)


# -- the provider's own in-band error event ------------------------------------------------------


@pytest.mark.parametrize("status", [500, 529, 429])
def test_openai_chat_raises_api_error_on_the_in_band_error_event(status: int) -> None:
    with pytest.raises(openai.APIError) as raised:
        _served(fault.error_event(status, inner=turn.text(TEXT)), _chat)
    assert not isinstance(raised.value, openai.APIStatusError)  # the stream had answered 200
    assert raised.value.body["type"] == ("rate_limit_exceeded" if status == 429 else "server_error")  # type: ignore[index]


def test_openai_responses_hands_over_response_failed_and_its_stream_helper_raises() -> None:
    events = _served(fault.error_event(500, inner=turn.text(TEXT)), _responses_events)
    assert events[-1].type == "response.failed"
    assert events[-1].response.status == "failed" and events[-1].response.error.code == "server_error"
    assert events[-1].sequence_number == len(events) - 1
    with pytest.raises(RuntimeError, match=r"response\.completed"):
        _served(fault.error_event(500, inner=turn.text(TEXT)), _responses_helper)


@pytest.mark.parametrize(("status", "kind"), [(529, "overloaded_error"), (500, "api_error"), (429, "rate_limit_error")])
def test_anthropic_raises_on_its_error_event_with_the_error_type(status: int, kind: str) -> None:
    with pytest.raises(anthropic.APIStatusError) as raised:
        _served(fault.error_event(status, inner=turn.text(TEXT)), _anthropic)
    assert raised.value.body["error"]["type"] == kind  # type: ignore[index]


@pytest.mark.parametrize(("status", "error"), [(500, genai_errors.ServerError), (429, genai_errors.ClientError)])
def test_google_genai_raises_on_the_error_object_in_the_stream(status: int, error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        _served(fault.error_event(status, inner=turn.text(TEXT)), _gemini)
    assert raised.value.code == status  # type: ignore[attr-defined]


@pytest.mark.parametrize(("status", "member"), [(500, "internalServerException"), (429, "throttlingException")])
def test_boto3_raises_event_stream_error_on_the_exception_frame(status: int, member: str) -> None:
    with pytest.raises(EventStreamError) as raised:
        _served(fault.error_event(status, inner=turn.text(TEXT)), _bedrock_events)
    assert raised.value.response["Error"]["Code"] == member


def test_a_request_that_is_not_streamed_gets_the_in_band_error_as_its_http_status() -> None:
    with Emulator(fault.error_event(529, inner=turn.text(TEXT))) as emu:
        client = openai.OpenAI(base_url=f"{emu.base_url}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 529


def test_an_error_event_takes_an_error_status() -> None:
    with pytest.raises(ValueError, match="400-599"):
        fault.error_event(200)


# -- a chunk whose JSON is broken ----------------------------------------------------------------


@pytest.mark.parametrize("client", [_chat, _responses_events, _anthropic], ids=["chat", "responses", "anthropic"])
def test_the_openai_and_anthropic_sdks_raise_json_errors_on_a_malformed_chunk(client: Callable[[str], Any]) -> None:
    with pytest.raises(json.JSONDecodeError):
        _served(fault.malformed_chunk(turn.text(TEXT)), client)


def test_google_genai_raises_on_a_malformed_chunk() -> None:
    with pytest.raises(genai_errors.UnknownApiResponseError, match="Failed to parse response as JSON"):
        _served(fault.malformed_chunk(turn.text(TEXT)), _gemini)


def test_boto3_hands_over_a_malformed_frame_as_an_empty_event() -> None:
    """botocore does not raise on a payload that is not JSON: the event arrives without its fields,
    and the text it carried is gone. A client sees the loss only as a missing key."""
    events = _served(fault.malformed_chunk(turn.text(TEXT)), _bedrock_events)
    deltas = [e["contentBlockDelta"] for e in events if "contentBlockDelta" in e]
    assert {} in deltas


# -- a stream cut inside an event ----------------------------------------------------------------


def test_openai_chat_ends_quietly_with_the_text_before_the_cut_and_no_finish_reason() -> None:
    text, finish = _served(fault.cut_mid_event(turn.text(TEXT)), _chat)
    assert finish is None and TEXT.startswith(text) and text != TEXT


def test_openai_responses_ends_without_completed_and_its_stream_helper_raises() -> None:
    events = _served(fault.cut_mid_event(turn.text(TEXT)), _responses_events)
    assert "response.completed" not in {e.type for e in events}
    with pytest.raises(RuntimeError, match=r"response\.completed"):
        _served(fault.cut_mid_event(turn.text(TEXT)), _responses_helper)


def test_anthropic_ends_quietly_without_a_stop_reason() -> None:
    message = _served(fault.cut_mid_event(turn.text(TEXT)), _anthropic)
    assert message.stop_reason is None


def test_google_genai_raises_on_the_half_event() -> None:
    with pytest.raises(genai_errors.UnknownApiResponseError):
        _served(fault.cut_mid_event(turn.text(TEXT)), _gemini)


def test_boto3_ends_quietly_on_half_a_frame_without_message_stop() -> None:
    events = _served(fault.cut_mid_event(turn.text(TEXT)), _bedrock_events)
    assert events and not any("messageStop" in e for e in events)


def test_a_cut_inside_an_event_leaves_the_last_event_unterminated() -> None:
    delivery = Emulator(fault.cut_mid_event(turn.text(TEXT))).answer(
        "POST", "/v1/chat/completions", "", [], json.dumps({"model": "m", "messages": [], "stream": True}).encode()
    )
    last = delivery.parts[-1]
    assert last.startswith(b"data: {") and not last.endswith(b"\n\n")
    assert b"[DONE]" not in b"".join(delivery.parts)


# -- the scenario file says them ----------------------------------------------------------------

SCENARIO = """
name: in-band faults
prompts: [hi]
turns:
  - {wire: {error_event: 529}, turn: Done.}
  - {wire: error_event, turn: Done.}
  - {wire: malformed_chunk, turn: Done.}
  - {wire: cut_mid_event, turn: Done.}
  - {wire: bad_checksum, turn: Done.}
"""


def test_a_scenario_file_says_each_fault_and_round_trips(tmp_path: Any) -> None:
    scenario = Scenario.from_yaml(SCENARIO)
    faults = [dict(t.wire) for t in scenario.turns]
    assert faults == [
        {"error_event": 529},
        {"error_event": 500},
        {"malformed_chunk": True},
        {"cut_mid_event": True},
        {"bad_checksum": True},
    ]
    assert Scenario.from_yaml(scenario.to_yaml()).turns == scenario.turns
    served = script_of(scenario.turns)
    assert [(f.error_event, f.malformed, f.cut_mid_event, f.bad_checksum) for f in served] == [
        (529, False, False, False),
        (500, False, False, False),
        (None, True, False, False),
        (None, False, True, False),
        (None, False, False, True),
    ]


@pytest.mark.parametrize("bad", ["{error_event: 200}", "{error_event: 99.5}", "{error_event: x}"])
def test_an_error_event_in_a_scenario_takes_an_http_error_status(bad: str) -> None:
    with pytest.raises(ScenarioError, match="error_event takes the HTTP error status"):
        Scenario.from_yaml(f"name: x\nprompts: [hi]\nturns: [{{wire: {bad}, turn: Done.}}]\n")


# -- a frame with a wrong checksum ---------------------------------------------------------------


def test_boto3_raises_checksum_mismatch_on_a_frame_with_a_wrong_crc() -> None:
    with pytest.raises(ChecksumMismatch):
        _served(fault.bad_checksum(turn.text(TEXT)), _bedrock_events)


def test_on_an_sse_wire_a_bad_checksum_is_broken_json() -> None:
    with pytest.raises(json.JSONDecodeError):
        _served(fault.bad_checksum(turn.text(TEXT)), _chat)
