"""A vcrpy cassette as data: what was asked, of which provider endpoint, and what came back.

Replaying a cassette, recording one, linting one and emulating a provider all start by reading
the same file, and each used to need the same small decisions: which provider a URL belongs to,
whether a body is gzip, where the model is named, whether a request asked for a stream. This
module makes them once. It reads (never writes) the YAML that vcrpy writes, with vcrpy's own safe
loader, and turns it into small frozen values: a :class:`Cassette` of :class:`Interaction` s, each
a :class:`Request` and a :class:`Response` with :class:`Headers` and a :class:`Body`, and a
:class:`harness.wire.Destination` naming the ``(provider, endpoint)`` a request was sent to
(routing, like every piece of wire knowledge, is ``harness.wire``'s).

Loading checks only what every use needs (the file parses, each interaction has a request method
and URI and a response status) and fails with a :class:`CassetteError` naming the file and the
reason. Routing is lazy: a cassette with one request to an unknown host still loads, and asking
that request for its :attr:`Request.route` raises :class:`RouteError` saying why.
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

import yaml
from vcr.serializers import yamlserializer

import harness._yaml as bounded_yaml
import harness.wire as wire
from openprogram.types import ToolSpec


class CassetteError(Exception):
    """A file that cannot be read as a vcrpy cassette; the message starts with the path."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Requests and replies as data.
# ---------------------------------------------------------------------------------------------


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
        return _TOOL_READERS[self.route.provider](self.body.object, self.route.endpoint)


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


def load(path: str | Path) -> Cassette:
    """Read a vcrpy YAML cassette; raises :class:`CassetteError` naming the file and the reason."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise CassetteError(path, f"cannot read the cassette: {exc.strerror or exc}") from exc
    try:
        data = bounded_yaml.load(text, yamlserializer.deserialize)
    except yaml.YAMLError as exc:
        raise CassetteError(path, f"not a YAML cassette: {bounded_yaml.reason(exc)}") from None
    recorded = data.get("interactions") if isinstance(data, dict) else None
    if not recorded or not isinstance(recorded, list):
        raise CassetteError(path, "not a vcrpy cassette (no interactions)")
    problem = next(filter(None, (shape_problem(i, item) for i, item in enumerate(recorded))), None)
    if problem is not None:  # what a replay refuses, the tools refuse in the same words
        raise CassetteError(path, problem)
    return Cassette(path, tuple(_interaction(path, index, item) for index, item in enumerate(recorded)))


def shape_problem(index: int, interaction: Any) -> str | None:
    """Why interaction ``index`` is not in the shape vcrpy replays, or ``None``."""
    where = f"interactions[{index}]"
    if not isinstance(interaction, dict) or not {"request", "response"} <= interaction.keys():
        return f"interaction {index} has no request or response"
    request, response = interaction["request"], interaction["response"]
    for side, part in (("request", request), ("response", response)):
        if not isinstance(part, dict):
            return f"{where}.{side} is {_kind(part)}, not a mapping"
        headers = part.get("headers")
        if headers is not None and not isinstance(headers, dict):
            return f"{where}.{side}.headers is {_kind(headers)}; vcrpy stores headers as a mapping of name to values"
    for key in ("method", "uri"):
        if not isinstance(request.get(key), str):
            return f"{where}.request has no {key}"
    for key in ("body", "headers"):  # vcrpy's Request takes both (null and {} are enough)
        if key not in request:
            return f"{where}.request has no {key} (vcrpy writes {key}: null or {{}} when there is none)"
    if "status_code" in response:  # the form vcrpy's httpx stub once wrote, which it still replays
        return None
    status = response.get("status")
    if not isinstance(status, dict) or not _is_status(status.get("code")):
        return f"{where}.response has no status code (status: {{code: 200, message: OK}})"
    body = response.get("body")
    if not isinstance(body, dict) or "string" not in body:
        return f"{where}.response.body has no string (body: {{string: ...}})"
    return None


def _kind(value: Any) -> str:
    return "missing" if value is None else f"a {type(value).__name__}"


def _is_status(code: Any) -> bool:
    return isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599


def _interaction(path: Path, index: int, recorded: Any) -> Interaction:
    request = recorded.get("request") if isinstance(recorded, Mapping) else None
    if not isinstance(request, Mapping) or "method" not in request or "uri" not in request:
        raise CassetteError(path, f"interaction {index} has no request method/uri")
    response = recorded.get("response")
    status = response.get("status") if isinstance(response, Mapping) else None
    if not isinstance(response, Mapping) or not isinstance(status, Mapping) or not _is_code(status.get("code")):
        raise CassetteError(path, f"interaction {index} has no response status code")
    return Interaction(
        index,
        Request(
            str(request["method"]),
            str(request["uri"]),
            Headers.of(request.get("headers")),
            Body.of(request.get("body")),
        ),
        Response(
            int(status["code"]),
            str(status.get("message") or ""),
            Headers.of(response.get("headers")),
            Body.of(response.get("body")),
        ),
    )


def _is_code(value: Any) -> bool:
    try:
        return 100 <= int(value) <= 599
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------
# Tools a request declared, per provider, as openprogram ToolSpecs (JSON Schema parameters).
# ---------------------------------------------------------------------------------------------


def _spec(name: Any, description: Any, parameters: Any) -> ToolSpec | None:
    if not isinstance(name, str) or not name:
        return None
    schema = parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}
    return ToolSpec(name=name, description=description if isinstance(description, str) else "", parameters=schema)


def _specs(candidates: Iterable[ToolSpec | None]) -> tuple[ToolSpec, ...]:
    return tuple(spec for spec in candidates if spec is not None)


def _openai_tools(body: dict[str, Any], endpoint: str) -> tuple[ToolSpec, ...]:
    tools = [tool for tool in body.get("tools") or [] if isinstance(tool, dict) and tool.get("type") == "function"]
    if endpoint == "responses":
        return _specs(_spec(t.get("name"), t.get("description"), t.get("parameters")) for t in tools)
    functions: list[dict[str, Any]] = [t["function"] for t in tools if isinstance(t.get("function"), dict)]
    return _specs(_spec(f.get("name"), f.get("description"), f.get("parameters")) for f in functions)


def _anthropic_tools(body: dict[str, Any], endpoint: str) -> tuple[ToolSpec, ...]:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") in (None, "custom")]
    return _specs(_spec(t.get("name"), t.get("description"), t.get("input_schema")) for t in tools)


def _gemini_tools(body: dict[str, Any], endpoint: str) -> tuple[ToolSpec, ...]:
    declarations: list[dict[str, Any]] = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            found = tool.get("functionDeclarations") or tool.get("function_declarations") or []
            declarations.extend(d for d in found if isinstance(d, dict))
    specs = []
    for declaration in declarations:
        schema = declaration.get("parametersJsonSchema") or declaration.get("parameters_json_schema")
        if schema is None:  # Gemini's OpenAPI subset spells types in capitals; ToolSpec holds JSON Schema
            schema = _lowercase_types(declaration.get("parameters"))
        specs.append(_spec(declaration.get("name"), declaration.get("description"), schema))
    return _specs(specs)


def _lowercase_types(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            key: value.lower() if key == "type" and isinstance(value, str) else _lowercase_types(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_lowercase_types(item) for item in schema]
    return schema


def _bedrock_tools(body: dict[str, Any], endpoint: str) -> tuple[ToolSpec, ...]:
    config: dict[str, Any] = body["toolConfig"] if isinstance(body.get("toolConfig"), dict) else {}
    specs = [t.get("toolSpec") for t in config.get("tools") or [] if isinstance(t, dict)]
    return _specs(
        _spec(s.get("name"), s.get("description"), (s.get("inputSchema") or {}).get("json"))
        for s in specs
        if isinstance(s, dict)
    )


_TOOL_READERS = {
    "openai": _openai_tools,
    "anthropic": _anthropic_tools,
    "gemini": _gemini_tools,
    "bedrock": _bedrock_tools,
}
