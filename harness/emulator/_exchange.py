"""The vocabulary every provider module of the emulator speaks: a request as received, a reply
to send, and the deterministic ids a reply carries.

Each provider module (``openai``, ``anthropic``, ``gemini``, ``bedrock``, ``ollama``) is a pure renderer:
``render(turn, request, ids) -> WireReply`` and ``error_reply(status, message, request) ->
WireReply``, plus the ``ROUTES`` it answers (its rows of ``harness.wire.ROUTES``, the one route
table). The server, the in-process transport and the fault injection are written once against
these types, so adding a provider is adding one module.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.wire import Route


@dataclass(frozen=True)
class WireRequest:
    """What the emulator received, as a test asserts on it: credentials removed, body parsed."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any
    route: Route
    path_params: Mapping[str, str] = field(default_factory=dict)

    @property
    def streaming(self) -> bool:
        """Whether the client asked for a stream (a body flag, an ``alt=sse`` query, or an endpoint
        named for streaming: ``streamGenerateContent``, ``converse-stream``; Ollama's unless its body
        says ``"stream": false``)."""
        if isinstance(self.body, Mapping) and self.body.get("stream") is True:
            return True
        if self.route.provider == "ollama":  # Ollama's server streams unless told not to
            return not (isinstance(self.body, Mapping) and self.body.get("stream") is False)
        return self.query.get("alt") == "sse" or self.route.stream is True


@dataclass
class WireReply:
    """What to send: a status, headers, and either one body or a sequence of chunks (a stream)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    chunks: list[bytes] | None = None

    @property
    def streaming(self) -> bool:
        return self.chunks is not None


class IdSource:
    """Deterministic ids in each provider's own format, restarting for each emulator."""

    def __init__(self) -> None:
        self._counter: Iterator[int] = itertools.count(1)

    def next(self, prefix: str, width: int = 24) -> str:
        """``prefix`` followed by a zero-padded counter: ``chatcmpl-000...1``, ``toolu_000...2``."""
        return f"{prefix}{next(self._counter):0{width}d}"
