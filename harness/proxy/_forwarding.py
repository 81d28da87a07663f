"""Where a request the cassette lacks is really sent, and sending it.

The cassette names the provider's own host whatever the proxy was pointed at, as the
``recorded`` fixture's cassettes do (``https://api.openai.com/v1/chat/completions``), so one
recorded through the proxy replays under the fixture and the reverse: :func:`recorded_uri`.
When recording, the request goes to ``--upstream`` (the emulator, a gateway: its root plus the
request's path) or else to that provider host, a Bedrock request then signed again for it
(``_sigv4``). The reply is read whole, raw, and handed to the recording, which decodes,
scrubs and stores it; the client then gets it split at its events, as every replay will.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

import httpx2

from harness.proxy._cassette_select import CASSETTE_HEADER
from harness.proxy._sigv4 import resign, signed_by_sigv4
from harness.wire import Destination, check_values, provider_path

PROVIDER_ORIGINS: Final[Mapping[str, str]] = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "ollama": "http://127.0.0.1:11434",
    "openrouter": "https://openrouter.ai",
}
"""The hosts the SDKs address by default: the host a cassette names for these providers (and
these surfaces: ``harness.wire.Route.surface``)."""

UPSTREAM_ONLY: Final[Mapping[str, str]] = {
    "azure": "https://azure-openai.invalid",
    "openai-v1": "https://openai-v1.invalid",
}
"""Surfaces with no one host (an Azure resource's name is the user's; ``/openai/v1`` is Azure's
and Groq's): a cassette names this stand-in (``.invalid`` never resolves), and a request the
cassette lacks is forwarded only to ``--upstream``."""

HOP_BY_HOP: Final = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
        CASSETTE_HEADER,
    }
)
"""Headers of one hop (or of the proxy itself), never recorded or forwarded."""

TRANSPORT_CUT: Final = "harness_transport_cut"
"""Set on a reply (never stored) whose body the upstream's connection ended short of what its framing
(``Content-Length``, chunks) promised: how it ended. The client is handed it cut the same way."""

TIMEOUT: Final = httpx2.Timeout(600.0, connect=15.0)
"""A model may think for minutes before its first byte; a host that does not answer is said fast."""


def aws_region(destination: Destination, environ: Mapping[str, str]) -> str:
    """The Bedrock region: the client's SigV4 scope, else the proxy's ``AWS_REGION``, else us-east-1."""
    return destination.region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def provider_origin(destination: Destination, environ: Mapping[str, str]) -> str:
    """The provider's own scheme and host for a request read from its path.

    Only a region or location that has the shape of one names a host (``harness.wire.check_values``
    raises ``RouteError`` for any other): a value of the request never chooses where it goes."""
    check_values(destination)
    if destination.provider == "bedrock":
        return f"https://bedrock-runtime.{aws_region(destination, environ)}.amazonaws.com"
    if destination.surface in UPSTREAM_ONLY:
        return UPSTREAM_ONLY[destination.surface]
    if destination.surface in PROVIDER_ORIGINS:
        return PROVIDER_ORIGINS[destination.surface]
    if destination.vertex:  # Gemini's, and Claude's on Vertex AI
        location = destination.region or "global"
        return (
            "https://aiplatform.googleapis.com"
            if location == "global"
            else f"https://{location}-aiplatform.googleapis.com"
        )
    return PROVIDER_ORIGINS[destination.provider]


def recorded_uri(destination: Destination, path: str, query: str, environ: Mapping[str, str]) -> str:
    """The URI the cassette stores: the provider's host, the request's path and query as sent."""
    return f"{provider_origin(destination, environ)}{path}{'?' + query if query else ''}"


def kept_headers(headers: Mapping[str, str] | list[tuple[str, str]]) -> dict[str, str]:
    """The request's headers without the hop-by-hop ones (and the cassette's name)."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return {name: value for name, value in pairs if name.lower() not in HOP_BY_HOP}


class NeedsUpstream(Exception):
    """A request to be recorded on a surface with no one host, and no ``--upstream`` to send it to."""

    def __init__(self, surface: str) -> None:
        where = (
            "your Azure OpenAI resource (https://RESOURCE.openai.azure.com)"
            if surface == "azure"
            else ("the service behind /openai/v1 (your Azure resource, or https://api.groq.com)")
        )
        super().__init__(
            f"{surface} requests have no one host to record from: run harness proxy with --upstream {where}"
        )


class Forwarder:
    """Sends what is to be recorded: to ``upstream`` when given, else to the provider's host.

    ``origins`` replaces :func:`provider_origin` per provider (a test's loopback stand-in for a
    provider: treated as the provider, so a Bedrock request is signed again for it).
    """

    def __init__(
        self, upstream: str | None, environ: Mapping[str, str], origins: Mapping[str, str] | None = None
    ) -> None:
        self.upstream = upstream.rstrip("/") if upstream else None
        self.environ = environ
        self.origins = dict(origins or {})
        self._clients: dict[int, httpx2.AsyncClient] = {}

    @property
    def scripted(self) -> bool:
        """Whether the upstream is on loopback (the emulator): one that answers each request with its
        script's next turn, to be kept in step under ``new_episodes`` as the ``recorded`` fixture does."""
        host = urlsplit(self.upstream).hostname if self.upstream else None
        return host is not None and (host == "localhost" or host.startswith("127.") or host == "::1")

    def target(self, destination: Destination, path: str, query: str) -> str:
        """The URL a request to be recorded is sent to: the provider's host at the path the route
        table says it answers there (Anthropic's root ``/messages`` is its ``/v1/messages``), or
        ``upstream`` with the path as sent (a gateway's own paths are the user's to give)."""
        if self.upstream:
            return f"{self.upstream}{path}{'?' + query if query else ''}"
        root = self.origins.get(destination.provider) or provider_origin(destination, self.environ)
        return f"{root}{provider_path(destination, path)}{'?' + query if query else ''}"

    async def send(
        self, method: str, destination: Destination, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> dict[str, Any]:
        """The upstream's reply as a vcrpy response (its body read whole and left encoded as it came)."""
        url = self.target(destination, path, query)
        if self.upstream is None and destination.surface in UPSTREAM_ONLY:
            raise NeedsUpstream(destination.surface)
        if destination.provider == "bedrock" and self.upstream is None and signed_by_sigv4(headers):
            headers = resign(method, url, headers, body, aws_region(destination, self.environ), self.environ)
        client = self._client()
        request = client.build_request(method, url, headers=headers, content=body)
        response = await client.send(request, stream=True)
        parts: list[bytes] = []
        cut: str | None = None
        try:
            async for part in response.aiter_raw():
                parts.append(part)
        except (httpx2.RemoteProtocolError, httpx2.ReadError) as exc:  # a length or chunk promised, not sent
            cut = f"{type(exc).__name__}: {exc}"
        finally:
            await response.aclose()
        recorded: dict[str, list[str]] = {}
        for name, value in response.headers.multi_items():
            recorded.setdefault(name, []).append(value)
        reply: dict[str, Any] = {
            "status": {"code": response.status_code, "message": response.reason_phrase},
            "headers": recorded,
            "body": {"string": b"".join(parts)},
        }
        if cut is not None:
            reply[TRANSPORT_CUT] = cut
        return reply

    def _client(self) -> httpx2.AsyncClient:
        loop = id(asyncio.get_running_loop())
        client = self._clients.get(loop)
        if client is None:  # a connection pool belongs to one event loop
            client = self._clients[loop] = httpx2.AsyncClient(timeout=TIMEOUT, follow_redirects=False)
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()
