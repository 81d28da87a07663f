"""``harness.recording._clients``: every provider endpoint gives a working openprogram backend over a real SDK client.

A loopback server stands in for each provider (the emulator's use of ``Connection.at``), so the
tests see what the SDK really sends: the path, the test credentials, and exactly one request
even when the server fails (no retries).
"""

from __future__ import annotations

import asyncio
import binascii
import json
import struct
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from harness import wire
from harness.recording import _clients as backends
from harness.recording._clients import TEST_KEY, BackendError, Connection, MissingExtraError
from openprogram import providers
from openprogram.providers import ModelRequest, Provider
from openprogram.types import AssistantMessage, UserMessage


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Server:
    """A loopback HTTP server that answers every request with one canned reply and records them."""

    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    status: int = 200
    content_type: str = "application/json"
    reply: bytes = b"{}"


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            state.seen.append(
                Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
            )
            self.send_response(state.status)
            self.send_header("content-type", state.content_type)
            self.send_header("content-length", str(len(state.reply)))
            self.end_headers()
            self.wfile.write(state.reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    undeclare = providers.register_fake_base_url(state.url)  # a fake: the guard lets no loopback URL through as such
    try:
        yield state
    finally:
        undeclare()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _event_frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One ``application/vnd.amazon.eventstream`` frame, the way Bedrock streams."""
    headers = b""
    for name, value in ((":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")):
        headers += bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + headers + body
    return message + struct.pack(">I", binascii.crc32(message))


def _sse(*events: dict[str, Any], named: bool = False) -> bytes:
    lines = [(f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events]
    return "".join(lines).encode()


GEMINI_REPLY = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [],
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}

# (provider, endpoint, stream, model, connection options, path the SDK must hit, content type, reply)
CASES = [
    pytest.param(
        "openai",
        "chat.completions",
        False,
        "gpt-x",
        {},
        "/v1/chat/completions",
        "application/json",
        json.dumps(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-x",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            }
        ).encode(),
        id="openai-chat",
    ),
    pytest.param(
        "openai",
        "chat.completions",
        True,
        "gpt-x",
        {},
        "/v1/chat/completions",
        "text/event-stream",
        _sse(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "gpt-x",
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}, "finish_reason": None}],
            },
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "gpt-x",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            },
        )
        + b"data: [DONE]\n\n",
        id="openai-chat-streamed",
    ),
    pytest.param(
        "openai",
        "responses",
        False,
        "gpt-x",
        {},
        "/v1/responses",
        "application/json",
        json.dumps(
            {
                "id": "resp_1",
                "object": "response",
                "created_at": 0,
                "status": "completed",
                "model": "gpt-x",
                "output": [
                    {
                        "type": "message",
                        "id": "msg_1",
                        "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
                    }
                ],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
            }
        ).encode(),
        id="openai-responses",
    ),
    pytest.param(
        "anthropic",
        "messages",
        False,
        "claude-x",
        {},
        "/v1/messages",
        "application/json",
        json.dumps(
            {**ANTHROPIC_MESSAGE, "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}
        ).encode(),
        id="anthropic",
    ),
    pytest.param(
        "anthropic",
        "messages",
        True,
        "claude-x",
        {},
        "/v1/messages",
        "text/event-stream",
        _sse(
            {"type": "message_start", "message": ANTHROPIC_MESSAGE},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
            {"type": "message_stop"},
            named=True,
        ),
        id="anthropic-streamed",
    ),
    pytest.param(
        "gemini",
        "generateContent",
        None,
        "gemini-x",
        {},
        "/v1beta/models/gemini-x:generateContent",
        "application/json",
        json.dumps(GEMINI_REPLY).encode(),
        id="gemini-developer",
    ),
    pytest.param(
        "gemini",
        "streamGenerateContent",
        None,
        "gemini-x",
        {},
        "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
        "text/event-stream",
        f"data: {json.dumps(GEMINI_REPLY)}\r\n\r\n".encode(),
        id="gemini-developer-streamed",
    ),
    pytest.param(
        "gemini",
        "generateContent",
        None,
        "gemini-x",
        {"vertex": True, "project": "proj", "region": "europe-west4"},
        "/v1/projects/proj/locations/europe-west4/publishers/google/models/gemini-x:generateContent",
        "application/json",
        json.dumps(GEMINI_REPLY).encode(),
        id="gemini-vertex",
    ),
    pytest.param(
        "gemini",
        "streamGenerateContent",
        None,
        "gemini-x",
        {"vertex": True},
        "/v1/publishers/google/models/gemini-x:streamGenerateContent?alt=sse",
        "text/event-stream",
        f"data: {json.dumps(GEMINI_REPLY)}\r\n\r\n".encode(),
        id="gemini-vertex-express-streamed",
    ),
    pytest.param(
        "bedrock",
        "converse",
        None,
        "amazon.nova-micro-v1:0",
        {},
        "/model/amazon.nova-micro-v1%3A0/converse",
        "application/json",
        json.dumps(
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                "metrics": {"latencyMs": 1},
            }
        ).encode(),
        id="bedrock-converse",
    ),
    pytest.param(
        "bedrock",
        "converse-stream",
        None,
        "amazon.nova-micro-v1:0",
        {"region": "eu-west-1"},
        "/model/amazon.nova-micro-v1%3A0/converse-stream",
        "application/vnd.amazon.eventstream",
        _event_frame("messageStart", {"role": "assistant"})
        + _event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi"}})
        + _event_frame("contentBlockStop", {"contentBlockIndex": 0})
        + _event_frame("messageStop", {"stopReason": "end_turn"}),
        id="bedrock-converse-stream",
    ),
]


def _run(backend: Provider, model: str) -> AssistantMessage:
    async def go() -> AssistantMessage:
        async for event in backend.stream(ModelRequest(model=model, messages=(UserMessage(content="hello"),))):
            if event.type == "done":
                return event.message
            if event.type == "error":
                return event.error
        raise AssertionError("the stream ended without done or error")

    return asyncio.run(go())


def _run_over_own_client(
    provider: str, endpoint: str, stream: bool | None, model: str, connection: Connection
) -> AssistantMessage:
    async def go() -> AssistantMessage:
        client = backends.sdk_client(provider, connection)
        try:
            backend = backends.backend(provider, endpoint, model=model, stream=stream, client=client)
            async for event in backend.stream(ModelRequest(model=model, messages=(UserMessage(content="hello"),))):
                if event.type in ("done", "error"):
                    return event.message if event.type == "done" else event.error
            raise AssertionError("the stream ended without done or error")
        finally:
            await client.aclose()

    return asyncio.run(go())


def _sent_test_credentials(seen: Seen) -> bool:
    return any(TEST_KEY in value for value in seen.headers.values())


@pytest.mark.parametrize(("provider", "endpoint", "stream", "model", "options", "path", "content_type", "reply"), CASES)
def test_each_endpoint_gives_a_working_backend_pointed_at_the_base_url(
    server: Server,
    provider: str,
    endpoint: str,
    stream: bool | None,
    model: str,
    options: dict[str, Any],
    path: str,
    content_type: str,
    reply: bytes,
) -> None:
    server.content_type, server.reply = content_type, reply
    connection = Connection.at(server.url, **options)

    message = _run_over_own_client(provider, endpoint, stream, model, connection)

    assert (message.stop_reason, message.text, message.error_message) == ("stop", "hi", None)
    (seen,) = server.seen
    assert seen.path == path  # the same path the provider's own host gets
    assert _sent_test_credentials(seen)
    # what the SDK sent routes back to the endpoint asked for, as a recording of it would
    real = wire.route("POST", "https://" + _real_host(provider, options) + path)
    url_model = model if provider in ("gemini", "bedrock") else None  # OpenAI and Anthropic name it in the body
    assert (real.provider, real.endpoint, real.model) == (provider, endpoint, url_model)
    if url_model is None:
        assert json.loads(seen.body)["model"] == model


def _real_host(provider: str, options: dict[str, Any]) -> str:
    if provider == "gemini":
        return (
            "europe-west4-aiplatform.googleapis.com" if options.get("vertex") else "generativelanguage.googleapis.com"
        )
    return {
        "openai": "api.openai.com",
        "anthropic": "api.anthropic.com",
        "bedrock": "bedrock-runtime.us-east-1.amazonaws.com",
    }[provider]


@pytest.mark.parametrize(
    ("provider", "endpoint", "model"),
    [
        ("openai", "chat.completions", "gpt-x"),
        ("openai", "responses", "gpt-x"),
        ("anthropic", "messages", "claude-x"),
        ("gemini", "generateContent", "gemini-x"),
        ("bedrock", "converse", "m"),
    ],
)
def test_a_failing_server_gets_exactly_one_request_no_retries(
    server: Server, provider: str, endpoint: str, model: str
) -> None:
    server.status, server.reply = (
        503,
        json.dumps({"error": {"message": "overloaded", "code": 503}, "message": "overloaded"}).encode(),
    )

    message = _run_over_own_client(provider, endpoint, None, model, Connection.at(server.url))

    assert message.stop_reason == "error"
    assert "503" in (message.error_message or "")
    assert len(server.seen) == 1


def test_without_a_client_the_backend_builds_its_own_from_the_connection(server: Server) -> None:
    server.reply = json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "own"}, "finish_reason": "stop"}],
        }
    ).encode()
    backend = backends.backend(
        "openai", "chat.completions", model="m", stream=False, connection=Connection.at(server.url)
    )

    assert _run(backend, "m").text == "own"
    assert [seen.path for seen in server.seen] == ["/v1/chat/completions"]


def test_test_clients_have_fake_keys_no_retries_and_a_fixed_timeout() -> None:
    kwargs = backends.client_kwargs("openai")
    assert (kwargs["api_key"], kwargs["max_retries"], kwargs["timeout"]) == (TEST_KEY, 0, backends.TIMEOUT_SECONDS)
    assert kwargs["base_url"] == "https://api.openai.com/v1"
    assert backends.client_kwargs("anthropic")["base_url"] == "https://api.anthropic.com"
    gemini = backends.client_kwargs("gemini")["http_options"]
    assert (gemini["retry_options"], gemini["api_version"]) == ({"attempts": 1}, "v1beta")
    bedrock = backends.client_kwargs("bedrock")
    assert (bedrock["region_name"], bedrock["aws_access_key_id"]) == ("us-east-1", TEST_KEY)
    assert bedrock["config"].retries["total_max_attempts"] == 1


def test_a_live_connection_takes_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")

    async def key() -> str:
        client = backends.sdk_client("openai", Connection.from_env())
        await client.aclose()
        return client.client.api_key

    assert asyncio.run(key()) == "sk-from-env"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    assert "api_key" not in backends.client_kwargs("anthropic", Connection.from_env())  # the SDK reads it itself


@pytest.mark.parametrize(
    ("provider", "variables"),
    [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY"), ("gemini", "GEMINI_API_KEY or GOOGLE_API_KEY")],
)
def test_a_live_connection_without_the_key_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, provider: str, variables: str
) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(BackendError, match=f"a live {provider} connection needs {variables} in the environment"):
        backends.client_kwargs(provider, Connection.from_env())


@pytest.mark.parametrize(("provider", "sdk"), [("gemini", "google.genai"), ("bedrock", "boto3")])
def test_a_missing_optional_extra_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, provider: str, sdk: str
) -> None:
    monkeypatch.setitem(sys.modules, sdk, None)  # what an environment without the extra imports
    endpoint = next(iter(backends.PROVIDERS[provider].backends))
    expected = f'the {provider} backend needs the optional extra "{provider}"'
    for build in (
        lambda: backends.sdk_client(provider),
        lambda: backends.backend(provider, endpoint, model="m"),
        lambda: backends.client_kwargs(provider),
    ):
        with pytest.raises(MissingExtraError) as caught:
            build()
        assert str(caught.value).startswith(expected)
        assert f'pip install -e ".[{provider}]" in the openprogram checkout' in str(caught.value)
        assert isinstance(caught.value, ImportError)


def test_every_routable_endpoint_has_a_backend_and_nothing_else_does() -> None:
    table = {(provider, endpoint) for provider, needs in backends.PROVIDERS.items() for endpoint in needs.backends}
    assert table == wire.ENDPOINTS
    with pytest.raises(BackendError, match=r"no backend for the provider 'mistral' \(known: anthropic, bedrock"):
        backends.backend("mistral", "chat", model="m")
    with pytest.raises(
        BackendError, match=r"no openai backend for the endpoint 'embeddings' \(known: chat.completions"
    ):
        backends.backend("openai", "embeddings", model="m")
    with pytest.raises(BackendError, match="the bedrock endpoint converse-stream always streams"):
        backends.backend("bedrock", "converse-stream", model="m", stream=False)


def test_a_client_of_another_provider_is_refused() -> None:
    async def go() -> None:
        client = backends.sdk_client("anthropic")
        try:
            with pytest.raises(BackendError, match="a client for anthropic cannot serve the openai backend"):
                backends.backend("openai", "responses", model="m", client=client)
        finally:
            await client.aclose()

    asyncio.run(go())
