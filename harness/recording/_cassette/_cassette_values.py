"""A vcrpy cassette as data: what was asked, of which provider endpoint, and what came back.

Replaying a cassette, recording one, linting one and emulating a provider all start by reading
the same file, and each used to need the same small decisions: which provider a URL belongs to,
whether a body is gzip, where the model is named, whether a request asked for a stream. These
values make them once: a :class:`Cassette` of :class:`Interaction` s, each a :class:`Request` and
a :class:`Response` with :class:`Headers` and a :class:`Body`, and a
:class:`harness.wire.Destination` naming the ``(provider, endpoint)`` a request was sent to
(routing, like every piece of wire knowledge, is ``harness.wire``'s). Routing is lazy: a cassette
with one request to an unknown host still loads, and asking that request for its
:attr:`Request.route` raises :class:`harness.wire.RouteError` saying why.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import harness.wire as wire
from harness.recording._cassette._tool_specs import TOOL_READERS
from openprogram.types import ToolSpec


@dataclass(frozen=True)
class Headers:
    """Recorded headers in their recorded order; lookups ignore case (HTTP header names do)."""

    items: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, recorded: Any) -> Headers:
        """From vcrpy's form (a mapping of a name to a value or a list of values; ``!!binary`` too)."""
        if not isinstance(recorded, Mapping):
            return cls()
        pairs = []
        for name, values in recorded.items():
            for value in values if isinstance(values, list | tuple) else [values]:
                pairs.append((_header_text(name), _header_text(value)))
        return cls(tuple(pairs))

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first value of ``name``, or ``default``."""
        return next(iter(self.get_all(name)), default)

    def get_all(self, name: str) -> tuple[str, ...]:
        """Every value of ``name``, in order."""
        wanted = name.lower()
        return tuple(value for key, value in self.items if key.lower() == wanted)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


def _header_text(value: Any) -> str:
    if isinstance(value, bytes):  # botocore records signed request headers as !!binary
        return value.decode("latin-1")
    return str(value)


@dataclass(frozen=True)
class Body:
    """A recorded body: ``stored`` as in the file, ``data`` with gzip undone.

    Ten of the shared recordings keep gzip bytes with the header still in place and some recorders
    strip every header, so compression is recognized by its magic bytes, never by the header.
    A streamed reply stays one body: ``text`` for SSE, ``data`` for the binary AWS event stream.
    """

    stored: bytes = b""
    data: bytes = b""

    @classmethod
    def of(cls, recorded: Any) -> Body:
        """From any form vcrpy stores a body in: text, ``!!binary`` bytes, ``{"string": ...}``, a buffer."""
        if isinstance(recorded, Mapping) and "string" in recorded:  # responses, and some recorders' requests
            recorded = recorded["string"]
        if isinstance(recorded, io.BytesIO):
            recorded = recorded.getvalue()
        if isinstance(recorded, str):
            stored = recorded.encode("utf-8")
        elif isinstance(recorded, bytes | bytearray):
            stored = bytes(recorded)
        elif isinstance(recorded, Iterable) and not isinstance(recorded, Mapping):
            stored = b"".join(chunk if isinstance(chunk, bytes) else str(chunk).encode() for chunk in recorded)
        else:
            stored = b""
        return cls(stored=stored, data=wire.gunzipped(stored))

    @property
    def compressed(self) -> bool:
        """True when the file holds the body gzip-compressed."""
        return self.data != self.stored

    @cached_property
    def text(self) -> str:
        """The decoded body as text (undecodable bytes replaced: meant for JSON and SSE)."""
        return self.data.decode("utf-8", "replace")

    @cached_property
    def json(self) -> Any | None:
        """The body parsed as JSON, or ``None`` when it is empty or not JSON (a stream, say)."""
        if not self.data:
            return None
        try:
            return json.loads(self.text)
        except ValueError:
            return None

    @property
    def object(self) -> dict[str, Any]:
        """The body as a JSON object, ``{}`` when it is anything else: the common way to read a field."""
        value = self.json
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Request:
    """A recorded request. The properties read what a replay needs; routing is done on first use."""

    method: str
    uri: str
    headers: Headers = Headers()
    body: Body = Body()

    @property
    def host(self) -> str:
        return (urlsplit(self.uri).hostname or "").lower()

    @property
    def path(self) -> str:
        return urlsplit(self.uri).path

    @property
    def query(self) -> tuple[tuple[str, str], ...]:
        """The query pairs in recorded order (blank values kept)."""
        return tuple(parse_qsl(urlsplit(self.uri).query, keep_blank_values=True))

    @cached_property
    def route(self) -> wire.Destination:
        """The provider endpoint; raises :class:`RouteError` when openprogram has no backend for it."""
        return wire.route(self.method, self.uri, self.headers)

    @property
    def model(self) -> str | None:
        """The model the request asked for: from the URL (Gemini, Bedrock) or the body's ``model``."""
        if self.route.model:
            return self.route.model
        model = self.body.object.get("model")
        return model if isinstance(model, str) and model else None

    @property
    def stream(self) -> bool:
        """Whether the request asked for a streamed reply (the URL decides, else ``"stream": true``)."""
        streams = self.route.streams
        return streams if streams is not None else self.body.object.get("stream") is True

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The client tools the request declared, in JSON Schema (provider-run tools left out)."""
        return TOOL_READERS[self.route.provider](self.body.object, self.route.endpoint)


@dataclass(frozen=True)
class Response:
    """A recorded reply: status, reason phrase, headers and body."""

    status: int
    reason: str = ""
    headers: Headers = Headers()
    body: Body = Body()

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


@dataclass(frozen=True)
class Interaction:
    """One request and its reply; ``index`` is its position in the cassette, as vcrpy counts."""

    index: int
    request: Request
    response: Response

    @property
    def where(self) -> str:
        """How messages name this interaction: ``interaction 3 (POST https://...)``."""
        return f"interaction {self.index} ({self.request.method} {self.request.uri})"


@dataclass(frozen=True)
class Cassette:
    """A loaded cassette: its path and interactions in recorded order."""

    path: Path
    interactions: tuple[Interaction, ...]

    def __iter__(self) -> Iterator[Interaction]:
        return iter(self.interactions)

    def __len__(self) -> int:
        return len(self.interactions)
