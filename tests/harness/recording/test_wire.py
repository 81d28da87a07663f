"""``recording._vcr`` and ``recording._recorded`` without pytest: chunking, the file form, matching, writing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx2
import pytest
from vcr import VCR
from vcr.request import Request as VcrRequest

from harness.recording import _cassette as cassettes
from harness.recording._recorded import CassetteMismatchError, CassetteTransport, open_recording
from harness.recording._scrub import CredentialLeakError
from harness.recording._vcr import (
    MATCH_ON,
    READABLE_YAML,
    AtomicPersister,
    CassetteCorruptError,
    configure_vcr,
    event_chunks,
    json_body,
    stream_replaying_httpx_response,
)
from harness.wire import write_atomic

SSE = b'data: {"a": 1}\n\ndata: {"b": 2}\n\ndata: [DONE]\n\n'


def _message(payload: bytes) -> bytes:
    total = 16 + len(payload)
    return total.to_bytes(4, "big") + (0).to_bytes(4, "big") + b"\0" * 4 + payload + b"\0" * 4


def test_sse_is_split_after_each_event() -> None:
    assert event_chunks(SSE, "text/event-stream; charset=utf-8") == [
        b'data: {"a": 1}\n\n',
        b'data: {"b": 2}\n\n',
        b"data: [DONE]\n\n",
    ]
    assert event_chunks(b"data: 1\r\n\r\ndata: 2", "text/event-stream") == [b"data: 1\r\n\r\n", b"data: 2"]


def test_aws_event_stream_is_split_per_message() -> None:
    one, two = _message(b"first"), _message(b"second message")
    assert event_chunks(one + two, "application/vnd.amazon.eventstream") == [one, two]


def test_other_bodies_stay_whole() -> None:
    assert event_chunks(b'{"x": "\n\n"}', "application/json") == [b'{"x": "\n\n"}']
    assert event_chunks(b"", "application/json") == []


def _cassette(path: Path, body: str, content_type: str = "text/event-stream", request_body: str = "{}") -> Path:
    data = {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "body": request_body,
                    "headers": {},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": [content_type]},
                    "body": {"string": body},
                },
            }
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(READABLE_YAML.serialize(data), encoding="utf-8")
    return path


async def _raw_chunks(transport: httpx2.AsyncBaseTransport, body: bytes = b"{}") -> list[bytes]:
    async with httpx2.AsyncClient(transport=transport) as client:
        async with client.stream("POST", "https://api.openai.com/v1/chat/completions", content=body) as response:
            return [chunk async for chunk in response.aiter_raw()]


def test_a_recorded_stream_replays_event_by_event(tmp_path: Path) -> None:
    recording = open_recording(_cassette(tmp_path / "c.yaml", SSE.decode()), "none")
    chunks = asyncio.run(_raw_chunks(CassetteTransport(recording)))
    assert chunks == event_chunks(SSE, "text/event-stream")
    assert recording.unused() == []


def test_the_patched_vcrpy_stub_streams_event_by_event_too() -> None:
    vcr = VCR()
    configure_vcr(vcr)
    response = stream_replaying_httpx_response(
        {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["text/event-stream"]},
            "body": {"string": SSE},
        },
        httpx2,
    )
    assert list(response.stream) == event_chunks(SSE, "text/event-stream")
    assert tuple(vcr.match_on) == MATCH_ON


def test_the_file_form_is_readable_and_read_back_by_vcrpy_and_the_harness(tmp_path: Path) -> None:
    path = _cassette(tmp_path / "c.yaml", json.dumps({"id": "x", "choices": []}), "application/json", '{"b":1,"a":2}')
    text = path.read_text(encoding="utf-8")
    assert 'body: |\n      {\n        "b": 1,\n        "a": 2\n      }' in text  # key order kept: the SDK parses it
    loaded = cassettes.load(path)
    assert loaded.interactions[0].request.body.json == {"b": 1, "a": 2}
    assert loaded.interactions[0].response.body.json == {"id": "x", "choices": []}
    sse = cassettes.load(_cassette(tmp_path / "s.yaml", SSE.decode()))
    assert sse.interactions[0].response.body.data == SSE
    assert "string: |" in (tmp_path / "s.yaml").read_text(encoding="utf-8")


def test_json_bodies_match_as_data_and_a_change_names_the_first_differing_field() -> None:
    recorded = VcrRequest("POST", "https://h/p", b'{"a": 1, "messages": ["hi"], "created": 5}', {})
    reordered = VcrRequest("POST", "https://h/p", b'{"messages": ["hi"], "created": 9, "a": 1}', {})
    assert json_body(reordered, recorded) is None
    changed = VcrRequest("POST", "https://h/p", b'{"a": 1, "messages": ["bye"]}', {})
    with pytest.raises(AssertionError) as caught:
        json_body(changed, recorded)
    assert str(caught.value) == 'body differs at messages[0]: sent "bye", recorded "hi"'
    shorter = VcrRequest("POST", "https://h/p", b'{"messages": ["hi"]}', {})
    with pytest.raises(AssertionError, match=r"^body differs at a: missing from the sent body$"):
        json_body(shorter, recorded)


def test_a_mismatch_names_the_cassette_the_request_and_the_closest_interaction(tmp_path: Path) -> None:
    path = _cassette(tmp_path / "c.yaml", "{}", "application/json", '{"messages": ["hi"]}')
    recording = open_recording(path, "none")
    with pytest.raises(CassetteMismatchError) as caught:
        asyncio.run(_raw_chunks(CassetteTransport(recording), b'{"messages": ["bye"]}'))
    text = str(caught.value)
    assert text.startswith(f"{path}: request 1 (POST https://api.openai.com/v1/chat/completions)")
    assert "closest is interaction 0" in text and '+    "bye"' in text


@pytest.mark.parametrize(
    "content", ["interactions: [unclosed", "just text", "version: 1\ninteractions:\n- request: {}\n"]
)
def test_a_corrupt_cassette_fails_with_its_path_and_reason(tmp_path: Path, content: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CassetteCorruptError) as caught:
        open_recording(path, "once")
    assert str(caught.value).startswith(f"{path}: ")
    assert path.read_text(encoding="utf-8") == content


def test_a_credential_stops_the_write_and_names_the_field(tmp_path: Path) -> None:
    persister = AtomicPersister(environ={"OPENAI_API_KEY": "sk-sentinel-123456789"})
    request = VcrRequest(
        "POST", "https://api.openai.com/v1/x", b"{}", {"Authorization": "Bearer sk-sentinel-123456789"}
    )
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": {"x-echo": ["sk-sentinel-123456789"]},
        "body": {"string": b"{}"},
    }
    path = tmp_path / "c.yaml"
    with pytest.raises(CredentialLeakError) as caught:
        persister.save_cassette(path, {"requests": [request], "responses": [response]}, READABLE_YAML)
    assert "interactions[0].response.headers.x-echo" in str(caught.value)  # Authorization was scrubbed first
    assert not path.exists()


def test_an_interrupted_write_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("old", encoding="utf-8")

    def fail(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("harness.wire._atomic.os.replace", fail)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, "new")
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["c.yaml"]


def test_importing_the_plugin_loads_no_recording_machinery() -> None:
    import subprocess
    import sys

    code = (
        "import sys, harness.pytest_plugin\n"
        "heavy = ('vcr', 'harness.recording._recorded', 'harness.recording._vcr', 'httpx2', 'openprogram')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def _results(kind: str, order: str, value: str = "ok") -> dict:
    """A request body of ``kind`` whose tool results for calls a and b come in ``order``."""
    if kind == "openai-chat":
        results = {n: {"role": "tool", "tool_call_id": n, "content": f"{value} {n}"} for n in "ab"}
        return {"messages": [{"role": "user", "content": "q"}, *[results[n] for n in order]]}
    if kind == "openai-responses":
        results = {n: {"type": "function_call_output", "call_id": n, "output": f"{value} {n}"} for n in "ab"}
        return {"input": [{"role": "user", "content": "q"}, *[results[n] for n in order]]}
    if kind == "anthropic":
        results = {n: {"type": "tool_result", "tool_use_id": n, "content": f"{value} {n}"} for n in "ab"}
        return {"messages": [{"role": "user", "content": [results[n] for n in order]}]}
    if kind == "gemini":
        results = {n: {"functionResponse": {"name": n, "response": {"v": f"{value} {n}"}}} for n in "ab"}
        return {"contents": [{"role": "user", "parts": [results[n] for n in order]}]}
    results = {n: {"toolResult": {"toolUseId": n, "content": [{"text": f"{value} {n}"}]}} for n in "ab"}
    return {"messages": [{"role": "user", "content": [results[n] for n in order]}]}


@pytest.mark.parametrize("kind", ["openai-chat", "openai-responses", "anthropic", "gemini", "bedrock"])
def test_consecutive_tool_results_match_in_any_order_and_only_with_the_same_content(kind: str) -> None:
    def request(body: dict) -> VcrRequest:
        return VcrRequest("POST", "https://api.example.com/v1/x", json.dumps(body).encode(), {})

    json_body(request(_results(kind, "ba")), request(_results(kind, "ab")))  # no AssertionError: a match
    with pytest.raises(AssertionError):
        json_body(request(_results(kind, "ba", "changed")), request(_results(kind, "ab")))


def test_the_order_of_anything_but_consecutive_tool_results_is_still_compared() -> None:
    def request(messages: list) -> VcrRequest:
        return VcrRequest("POST", "https://api.openai.com/v1/x", json.dumps({"messages": messages}).encode(), {})

    a = {"role": "tool", "tool_call_id": "a", "content": "1"}
    b = {"role": "tool", "tool_call_id": "b", "content": "2"}
    between = {"role": "user", "content": "and now?"}
    with pytest.raises(AssertionError):  # results of two turns are not one set
        json_body(request([a, between, b]), request([b, between, a]))
    with pytest.raises(AssertionError):  # plain messages keep their order
        json_body(
            request([between, {"role": "user", "content": "x"}]), request([{"role": "user", "content": "x"}, between])
        )
