"""Official SDK clients whose HTTP layer is a renderer of ``harness.emulator``, without a server.

google-genai takes an ``httpx2`` client (``http_options.httpx_async_client``), so its transport
is an ``httpx2.MockTransport``; boto3 lets a ``before-send`` hook answer with an ``AWSResponse``
whose raw body yields the reply's chunks. Either way the SDK parses the renderer's bytes exactly
as it parses the service's, and our backend decodes what the SDK hands it. The server does the
routing in the product; here :func:`match` does it with starlette's path syntax.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx2
from botocore.awsrequest import AWSResponse
from google import genai

from harness.emulator import _bedrock as bedrock
from harness.emulator import _exchange as wire
from harness.emulator import _gemini as gemini
from harness.recording import _clients as backends
from harness.script import Turn
from harness.wire import CREDENTIAL_HEADERS
from openprogram.providers import ModelRequest, Provider
from openprogram.types import AssistantMessage, UserMessage

Renderer = Callable[[Turn, wire.WireRequest, wire.IdSource], wire.WireReply]
Scripted = Turn | wire.WireReply | Callable[[wire.WireRequest], wire.WireReply]
"""A turn to render, a fixed reply, or a reply made from the request (an error reply, say)."""

_PARAM = re.compile(r"{([a-zA-Z_][a-zA-Z0-9_]*)(:path)?}")


def compile_path(path: str) -> re.Pattern[str]:
    """Starlette's reading of a route path: ``{name}`` is ``[^/]+``, ``{name:path}`` is ``.*``."""
    pattern, end = "^", 0
    for found in _PARAM.finditer(path):
        pattern += re.escape(path[end : found.start()])
        pattern += f"(?P<{found.group(1)}>{'.*' if found.group(2) else '[^/]+'})"
        end = found.end()
    return re.compile(pattern + re.escape(path[end:]) + "$")


def match(routes: Sequence[wire.Route], method: str, path: str) -> tuple[wire.Route, dict[str, str]]:
    """The route answering ``method path`` (already percent-decoded, as ASGI servers give it)."""
    for route in routes:
        found = compile_path(route.path).match(path)
        if route.method == method and found:
            return route, found.groupdict()
    raise AssertionError(f"no route for {method} {path}")


def wire_request(
    routes: Sequence[wire.Route], method: str, url: str, headers: dict[str, str], body: bytes
) -> wire.WireRequest:
    parts = urlsplit(url)
    path = unquote(parts.path)
    route, params = match(routes, method, path)
    kept = {name.lower(): value for name, value in headers.items() if name.lower() not in CREDENTIAL_HEADERS}
    return wire.WireRequest(
        method=method,
        path=path,
        query=dict(parse_qsl(parts.query)),
        headers=kept,
        body=json.loads(body) if body else None,
        route=route,
        path_params=params,
    )


@dataclass
class Emulated:
    """Queued turns (or fixed replies) out, captured requests and the replies sent, in."""

    routes: Sequence[wire.Route]
    renderer: Renderer
    turns: list[Scripted] = field(default_factory=list)
    requests: list[wire.WireRequest] = field(default_factory=list)
    replies: list[wire.WireReply] = field(default_factory=list)
    ids: wire.IdSource = field(default_factory=wire.IdSource)

    def answer(self, method: str, url: str, headers: dict[str, str], body: bytes) -> wire.WireReply:
        request = wire_request(self.routes, method, url, headers, body)
        self.requests.append(request)
        scripted = self.turns.pop(0)
        if isinstance(scripted, Turn):
            reply = self.renderer(scripted, request, self.ids)
        else:
            reply = scripted(request) if callable(scripted) else scripted
        self.replies.append(reply)
        return reply


# -- Gemini --------------------------------------------------------------------------------------


def gemini_client(emulated: Emulated, connection: backends.Connection | None = None) -> backends.SDKClient:
    def handle(request: httpx2.Request) -> httpx2.Response:
        reply = emulated.answer(request.method, str(request.url), dict(request.headers), request.content)
        content = reply.body if reply.chunks is None else b"".join(reply.chunks)
        return httpx2.Response(reply.status, headers=reply.headers, content=content)

    kwargs = backends.client_kwargs("gemini", connection or backends.Connection.test())
    kwargs["http_options"] = {
        **kwargs["http_options"],
        "httpx_async_client": httpx2.AsyncClient(transport=httpx2.MockTransport(handle)),
    }
    client = genai.Client(**kwargs)
    return backends.SDKClient("gemini", client, client.aio.aclose)


# -- Bedrock -------------------------------------------------------------------------------------


class _Raw:
    """The raw body botocore reads a reply from (urllib3's ``stream``/``close``)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield from self.chunks

    def read(self, *_: Any, **__: Any) -> bytes:
        return b"".join(self.chunks)

    def close(self) -> None:
        pass


def bedrock_client(emulated: Emulated, connection: backends.Connection | None = None) -> backends.SDKClient:
    sdk = backends.sdk_client("bedrock", connection or backends.Connection.test())

    def send(request: Any, **_: Any) -> AWSResponse:
        body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
        reply = emulated.answer(request.method, request.url, dict(request.headers.items()), body)
        chunks = reply.chunks if reply.chunks is not None else [reply.body or b""]
        return AWSResponse(request.url, reply.status, reply.headers, _Raw(chunks))

    sdk.client.meta.events.register("before-send.bedrock-runtime.*", send)
    return sdk


# -- driving a backend ---------------------------------------------------------------------------


class Session:
    """One SDK client over ``emulated`` and one event loop, for many backend calls (a client is slow to build)."""

    def __init__(self, provider: str, emulated: Emulated, connection: backends.Connection | None = None) -> None:
        self.provider, self.emulated = provider, emulated
        self.loop = asyncio.new_event_loop()
        build = gemini_client if provider == "gemini" else bedrock_client
        self.sdk = build(emulated, connection)

    def run(self, endpoint: str, request: ModelRequest, *, stream: bool | None = None) -> AssistantMessage:
        """One backend call: the final message (``done`` or ``error``)."""
        backend: Provider = backends.backend(
            self.provider, endpoint, model=request.model, stream=stream, client=self.sdk
        )
        return self.loop.run_until_complete(asyncio.wait_for(final_message(backend, request), timeout=30))

    def close(self) -> None:
        self.loop.run_until_complete(self.sdk.aclose())
        self.loop.close()


def run_backend(
    provider: str,
    endpoint: str,
    emulated: Emulated,
    request: ModelRequest,
    *,
    connection: backends.Connection | None = None,
) -> AssistantMessage:
    """One backend call over a new emulated SDK client: the final message (``done`` or ``error``)."""
    session = Session(provider, emulated, connection)
    try:
        return session.run(endpoint, request)
    finally:
        session.close()


async def final_message(backend: Provider, request: ModelRequest) -> AssistantMessage:
    async for event in backend.stream(request):
        if event.type == "done":
            return event.message
        if event.type == "error":
            return event.error
    raise AssertionError("the stream ended without a done or error event")


def ask(model: str, text: str = "Weather in Paris?", **fields: Any) -> ModelRequest:
    return ModelRequest(model=model, messages=(UserMessage(content=text),), **fields)


def gemini_emulated(*turns: Scripted) -> Emulated:
    return Emulated(gemini.ROUTES, gemini.render, list(turns))


def bedrock_emulated(*turns: Scripted) -> Emulated:
    return Emulated(bedrock.ROUTES, bedrock.render, list(turns))
