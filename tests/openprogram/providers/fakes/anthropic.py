"""Anthropic wire fake: SSE event encoders, whole ``Message`` bodies, error bodies, and a ``Server``
that queues responses, captures requests and gives an ``AsyncAnthropic`` client wired to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import anthropic

try:  # the anthropic SDK's HTTP layer: httpx2 in current releases, httpx before
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]

from openprogram.providers import ModelRequest
from openprogram.providers.anthropic import AnthropicProvider
from openprogram.types import (
    AssistantMessage,
    ToolSpec,
    UserMessage,
)
from tests.openprogram.providers.fakes.common import collect, final

MODEL = "claude-test-1"
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CLOCK = ToolSpec(name="get_time", parameters={"type": "object", "properties": {}})


# -- wire helpers -------------------------------------------------------------------------------


def sse(*events: dict[str, Any]) -> bytes:
    """An SSE body as Anthropic sends it: each event named after its ``type``."""
    return "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events).encode()


def message_start(input_tokens: int = 10, cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": 1,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
            },
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": payload}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_end(stop_reason: str | None, output_tokens: int = 20) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    return [
        block_start(index, {"type": "text", "text": ""}),
        *(delta(index, {"type": "text_delta", "text": piece}) for piece in pieces),
        block_stop(index),
    ]


def tool_block(index: int, id: str, name: str, *fragments: str) -> list[dict[str, Any]]:
    return [
        block_start(index, {"type": "tool_use", "id": id, "name": name, "input": {}}),
        *(delta(index, {"type": "input_json_delta", "partial_json": fragment}) for fragment in fragments),
        block_stop(index),
    ]


def streamed(*blocks: Iterable[dict[str, Any]], stop_reason: str | None = "end_turn") -> bytes:
    events = [message_start()]
    for block in blocks:
        events.extend(block)
    return sse(*events, *message_end(stop_reason))


def whole_message(content: list[dict[str, Any]], stop_reason: str | None = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 20,
            "cache_read_input_tokens": 3,
            "cache_creation_input_tokens": 4,
        },
    }


def sse_response(body: bytes | httpx.AsyncByteStream) -> httpx.Response:
    headers = {"content-type": "text/event-stream"}
    if isinstance(body, bytes):
        return httpx.Response(200, headers=headers, content=body)
    return httpx.Response(200, headers=headers, stream=body)


def json_response(status: int, payload: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json=payload, headers=headers or {})


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_1"}


class Server:
    """Answers each request with the next scripted response and keeps the JSON bodies it was sent."""

    def __init__(self, *responses: httpx.Response | Callable[[], httpx.Response]) -> None:
        self.responses = list(responses)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        response = self.responses.pop(0)
        return response() if callable(response) else response

    def client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key="test-key",
            base_url="https://api.anthropic.com",
            max_retries=0,
            http_client=httpx.AsyncClient(transport=httpx.MockTransport(self)),
        )


def ask(*messages: Any, **fields: Any) -> ModelRequest:
    return ModelRequest(model=MODEL, messages=messages or (UserMessage(content="hi"),), **fields)


def reply(
    server: Server, request: ModelRequest | None = None, *, stream: bool = True, **options: Any
) -> AssistantMessage:
    provider = AnthropicProvider(server.client(), stream=stream, **options)
    return final(collect(provider, request or ask()))


__all__ = [
    "CLOCK",
    "MODEL",
    "Server",
    "WEATHER",
    "ask",
    "block_start",
    "block_stop",
    "collect",
    "delta",
    "error_body",
    "final",
    "json_response",
    "message_end",
    "message_start",
    "reply",
    "sse",
    "sse_response",
    "streamed",
    "text_block",
    "tool_block",
    "whole_message",
]
