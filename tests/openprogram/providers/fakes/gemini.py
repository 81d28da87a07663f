"""Gemini wire fake: ``generateContent`` bodies, SSE chunks, error bodies, and ``FakeGemini``, which
queues responses, captures requests and gives a ``genai.Client`` wired to it.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

from google import genai
from google.genai import types as genai_types

try:  # google-genai talks through httpx2 when installed, httpx otherwise
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx  # type: ignore[no-redef]

from openprogram.providers import ModelRequest
from openprogram.types import (
    ToolSpec,
    UserMessage,
)
from tests.openprogram.providers.fakes.common import collect as run
from tests.openprogram.providers.fakes.common import final

MODEL = "gemini-test"
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SIGNATURE = b"\x12\x34signed-by-gemini\xff"
SIGNATURE_B64 = base64.b64encode(SIGNATURE).decode()


# -- wire helpers -------------------------------------------------------------------------------


def reply(*parts: dict[str, Any], finish: str | None = "STOP", usage: dict[str, int] | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    body: dict[str, Any] = {"candidates": [candidate], "modelVersion": MODEL}
    if usage is not None:
        body["usageMetadata"] = usage
    return body


def call(name: str, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"functionCall": {"name": name, "args": args, **extra.pop("call", {})}, **extra}


def sse(*chunks: dict[str, Any]) -> bytes:
    """Gemini's SSE: ``data:`` lines separated by CRLF CRLF."""
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" for chunk in chunks)


def error_body(code: int, status: str, message: str, details: list[Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "status": status, "message": message}
    if details is not None:
        error["details"] = details
    return {"error": error}


class Body(httpx.AsyncByteStream):
    """A streamed response body that can stall, break mid-way, and reports whether it was closed."""

    def __init__(self, chunks: list[bytes], *, then: BaseException | None = None, stall: bool = False) -> None:
        self.chunks = chunks
        self.then = then
        self.stall = stall
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        if self.stall:
            await asyncio.sleep(3600)
        if self.then is not None:
            raise self.then

    async def aclose(self) -> None:
        self.closed = True


class FakeGemini:
    """An in-memory Gemini endpoint: queued responses out, recorded request bodies in."""

    def __init__(self) -> None:
        self.responses: list[httpx.Response] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def json(self, body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> FakeGemini:
        self.responses.append(httpx.Response(status, json=body, headers=headers))
        return self

    def stream(self, *chunks: dict[str, Any], then: BaseException | None = None, stall: bool = False) -> Body:
        body = Body([sse(*chunks)], then=then, stall=stall)
        self.responses.append(httpx.Response(200, stream=body, headers={"content-type": "text/event-stream"}))
        return body

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.url.path, json.loads(request.content)))
        if not self.responses:
            raise AssertionError("unexpected request")
        return self.responses.pop(0)

    def client(self) -> genai.Client:
        transport = httpx.MockTransport(self.handle)
        return genai.Client(
            api_key="fake",
            http_options=genai_types.HttpOptions(
                api_version="v1beta", httpx_async_client=httpx.AsyncClient(transport=transport)
            ),
        )

    @property
    def body(self) -> dict[str, Any]:
        return self.requests[-1][1]


def ask(text: str = "Weather in Paris?", **fields: Any) -> ModelRequest:
    return ModelRequest(model=MODEL, messages=(UserMessage(content=text),), **fields)


__all__ = [
    "Body",
    "FakeGemini",
    "MODEL",
    "SIGNATURE",
    "SIGNATURE_B64",
    "WEATHER",
    "ask",
    "call",
    "error_body",
    "final",
    "reply",
    "run",
    "sse",
]
