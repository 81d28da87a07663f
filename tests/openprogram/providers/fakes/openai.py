"""OpenAI wire fake: queued httpx2 responses (JSON bodies, Chat and Responses SSE, error statuses
with OpenAI error bodies), the captured requests, and an ``AsyncOpenAI`` client wired to them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
from openai import AsyncOpenAI

from openprogram.providers import ModelRequest
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tests.openprogram.providers.fakes.common import collect, final

BASE_URL = "https://api.openai.com/v1"
MODEL = "gpt-test"

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


# ---------------------------------------------------------------------------------------------
# A fake OpenAI: queued replies, recorded requests
# ---------------------------------------------------------------------------------------------

Reply = httpx2.Response | Callable[[httpx2.Request], httpx2.Response]


class FakeOpenAI:
    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        reply = self.replies.pop(0)
        return reply(request) if callable(reply) else reply

    def client(self) -> AsyncOpenAI:
        transport = httpx2.MockTransport(self.handler)
        return AsyncOpenAI(
            api_key="test-key", base_url=BASE_URL, max_retries=0, http_client=httpx2.AsyncClient(transport=transport)
        )

    def body(self, n: int = 0) -> dict[str, Any]:
        return json.loads(self.requests[n].content)


def chat_sse(*chunks: dict[str, Any], done: bool = True) -> httpx2.Response:
    text = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
    if done:
        text += "data: [DONE]\n\n"
    return httpx2.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": choices,
        **extra,
    }


def call_delta(index: int, id: str | None = None, name: str | None = None, arguments: str = "") -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    entry: dict[str, Any] = {"index": index, "function": function}
    if id is not None:
        entry.update(id=id, type="function")
    return {"tool_calls": [entry]}


def completion(message: dict[str, Any], finish: str, usage: dict[str, Any] | None = None) -> httpx2.Response:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return httpx2.Response(200, json=body)


def response_obj(output: list[dict[str, Any]], status: str = "completed", **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": MODEL,
        "status": status,
        "output": output,
        "usage": {
            "input_tokens": 30,
            "input_tokens_details": {"cached_tokens": 10},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 37,
        },
        "error": None,
        "incomplete_details": None,
        **extra,
    }


def responses_sse(*events: dict[str, Any]) -> httpx2.Response:
    text = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)
    return httpx2.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})


def ev(kind: str, **fields: Any) -> dict[str, Any]:
    """One Responses stream event; the SDK does not need the sequence numbers, so they are all 0."""
    return {"type": kind, "sequence_number": 0, **fields}


def function_call_item(call_id: str, name: str, arguments: str, item_id: str = "fc_1") -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def message_item(text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def ask(text: str = "Weather in Paris?", **kwargs: Any) -> ModelRequest:
    return ModelRequest(model=MODEL, messages=(UserMessage(content=text),), **kwargs)


# A finished tool round: text, two parallel calls (the second with arguments that were not JSON),
# one result that failed and one that worked.
TOOL_ROUND = (
    UserMessage(content="Weather in Paris and Rome?"),
    AssistantMessage(
        content=(
            TextContent(text="Checking both."),
            ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
            ToolCall(id="call_b", name="get_weather", arguments={}, raw_arguments="{city: Rome"),
        ),
        stop_reason="toolUse",
    ),
    ToolResultMessage(tool_call_id="call_a", tool_name="get_weather", content="sunny"),
    ToolResultMessage(tool_call_id="call_b", tool_name="get_weather", content="Invalid JSON arguments", is_error=True),
)


__all__ = [
    "BASE_URL",
    "FakeOpenAI",
    "MODEL",
    "Reply",
    "TOOL_ROUND",
    "WEATHER",
    "ask",
    "call_delta",
    "chat_sse",
    "chunk",
    "collect",
    "completion",
    "ev",
    "final",
    "function_call_item",
    "message_item",
    "response_obj",
    "responses_sse",
]
