"""Bedrock wire fake: AWS event-stream frame encoders, Converse bodies, and ``FakeBedrock``, which
queues responses (frames, JSON, faults), captures requests and gives a boto3 client wired to it.
"""

from __future__ import annotations

import binascii
import json
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from urllib3.exceptions import ProtocolError

from openprogram.providers import ModelRequest
from openprogram.types import (
    ToolSpec,
    UserMessage,
)
from tests.openprogram.providers.fakes.common import collect as run
from tests.openprogram.providers.fakes.common import final

MODEL = "us.anthropic.claude-test-v1:0"
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CLOCK = ToolSpec(name="get_time")


# -- wire helpers -------------------------------------------------------------------------------


def frame(payload: dict[str, Any], *, event: str | None = None, exception: str | None = None) -> bytes:
    """One AWS event-stream message: prelude, prelude CRC, headers, JSON payload, message CRC."""
    if exception is not None:
        header_items = [
            (":exception-type", exception),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ]
    else:
        header_items = [(":event-type", event or ""), (":content-type", "application/json"), (":message-type", "event")]
    headers = b"".join(
        bytes([len(name)]) + name.encode() + b"\x07" + len(value).to_bytes(2, "big") + value.encode()
        for name, value in header_items
    )
    body = json.dumps(payload).encode()
    prelude = (12 + len(headers) + len(body) + 4).to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    message = prelude + binascii.crc32(prelude).to_bytes(4, "big") + headers + body
    return message + binascii.crc32(message).to_bytes(4, "big")


def text_delta(index: int, text: str) -> bytes:
    return frame({"contentBlockIndex": index, "delta": {"text": text}}, event="contentBlockDelta")


def tool_start(index: int, tool_id: str, name: str) -> bytes:
    return frame(
        {"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": tool_id, "name": name}}},
        event="contentBlockStart",
    )


def tool_delta(index: int, fragment: str) -> bytes:
    return frame({"contentBlockIndex": index, "delta": {"toolUse": {"input": fragment}}}, event="contentBlockDelta")


def block_stop(index: int) -> bytes:
    return frame({"contentBlockIndex": index}, event="contentBlockStop")


def message_stop(reason: str) -> bytes:
    return frame({"stopReason": reason}, event="messageStop")


def metadata(input_tokens: int, output_tokens: int, **extra: int) -> bytes:
    usage = {"inputTokens": input_tokens, "outputTokens": output_tokens, **extra}
    usage.setdefault("totalTokens", sum(usage.values()))
    return frame({"usage": usage, "metrics": {"latencyMs": 5}}, event="metadata")


MESSAGE_START = frame({"role": "assistant"}, event="messageStart")


class Raw:
    """The raw HTTP body botocore reads: yields chunks, may break or stall, remembers being closed."""

    def __init__(self, chunks: list[bytes], *, then: BaseException | None = None, stall: bool = False) -> None:
        self.chunks = chunks
        self.then = then
        self.closed = threading.Event()
        self.stall = stall

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield from self.chunks
        if self.stall:
            self.closed.wait(30)
            raise ProtocolError("Connection closed while reading")
        if self.then is not None:
            raise self.then

    def close(self) -> None:
        self.closed.set()


class FakeBedrock:
    """Queued HTTP responses out, recorded (operation, JSON body) requests in."""

    def __init__(self) -> None:
        self.responses: list[tuple[int, dict[str, str], Raw]] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.paths: list[str] = []
        self.gate: threading.Event | None = None

    def json(self, body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> FakeBedrock:
        self.responses.append(
            (status, {"content-type": "application/json", **(headers or {})}, Raw([json.dumps(body).encode()]))
        )
        return self

    def stream(self, *frames: bytes, then: BaseException | None = None, stall: bool = False) -> Raw:
        raw = Raw(list(frames), then=then, stall=stall)
        self.responses.append((200, {"content-type": "application/vnd.amazon.eventstream"}, raw))
        return raw

    def error(self, status: int, error_type: str | None, message: str, **headers: str) -> FakeBedrock:
        if error_type is not None:
            headers["x-amzn-ErrorType"] = f"{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        return self.json({"message": message}, status=status, headers=headers)

    def _send(self, request: Any, **_: Any) -> AWSResponse:
        self.paths.append(unquote(urlsplit(request.url).path))
        self.requests.append((self.paths[-1].rsplit("/", 1)[-1], json.loads(request.body)))
        if self.gate is not None:
            self.gate.wait(10)
        status, headers, raw = self.responses.pop(0)
        return AWSResponse(request.url, status, headers, raw)

    def client(self) -> Any:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            aws_access_key_id="AKIDTEST",
            aws_secret_access_key="test-secret",
            config=Config(retries={"total_max_attempts": 1}),
        )
        client.meta.events.register("before-send.bedrock-runtime.*", self._send)
        return client

    @property
    def body(self) -> dict[str, Any]:
        return self.requests[-1][1]


def ask(text: str = "Weather in Paris?", **fields: Any) -> ModelRequest:
    return ModelRequest(model=MODEL, messages=(UserMessage(content=text),), **fields)


def converse(*content: dict[str, Any], stop: str = "end_turn", usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": list(content)}},
        "stopReason": stop,
        "usage": usage or {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
        "metrics": {"latencyMs": 10},
    }


__all__ = [
    "CLOCK",
    "FakeBedrock",
    "MESSAGE_START",
    "MODEL",
    "Raw",
    "WEATHER",
    "ask",
    "block_stop",
    "converse",
    "final",
    "frame",
    "message_stop",
    "metadata",
    "run",
    "text_delta",
    "tool_delta",
    "tool_start",
]
