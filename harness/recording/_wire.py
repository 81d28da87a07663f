"""The vcrpy parts of recording: readable YAML, the atomic scanning persister, honest matchers, event streams.

Each piece plugs into vcrpy by its own extension points, so it serves two callers alike: the
recorded backend (``harness.recording._recorded``, which drives a :class:`vcr.cassette.Cassette` through
its own SDK transports) and a project's plain ``@pytest.mark.vcr`` tests (pytest-recording's
``pytest_recording_configure`` hook calls :func:`configure_vcr`).

- :data:`READABLE_YAML`, a vcrpy serializer: standard vcrpy YAML (any vcrpy reads it), with JSON
  bodies pretty-printed and multi-line text (SSE streams, JSON) written as literal blocks.
- :class:`AtomicPersister`: reading a cassette that does not parse fails with
  :class:`CassetteCorruptError` (path and reason, places as ``line L, column C``, an alias bomb
  refused by ``harness._yaml``) instead of vcrpy's "treat it as empty and overwrite it";
  writing scrubs (``harness.recording._scrub``, whose filters vcrpy runs too), scans for
  credentials from the environment (nothing is written when one is found) and replaces the file
  atomically (``harness.wire.write_atomic``: through a symbolic link to its target), so a killed
  recording leaves the old cassette whole.
- :func:`json_body`, :func:`safe_query`: matchers registered by name (``harness_body``,
  ``harness_query``): JSON bodies compared as data, by type (key order and volatile fields
  ignored; ``harness._jsondiff``), multipart uploads part by part whatever their boundary, the
  query without credential parameters; a mismatch explains itself with a unified diff.
- :class:`EventChunks`, the one stream type: a recorded reply handed over split at its event
  boundaries (``harness.recording._cassettes.event_chunks``: SSE events, AWS event-stream
  messages), to httpx2, to botocore, and, through :func:`stream_replaying_httpx_response`, in
  vcrpy's own httpx stub (vcrpy#597).
- vcrpy's private names are reached only through ``harness.recording._vcr_compat``.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

import harness._jsondiff as jsondiff
import harness._yaml as bounded_yaml
import harness.recording._vcr_compat as vcr_compat
from harness.recording._age import RECORDED_AT, AgeLimit, date_text, recorded_at
from harness.recording._cassettes import CassetteError, cut_tail, event_chunks, shape_problem
from harness.recording._scrub import (
    CredentialLeakError,
    find_credentials,
    find_credentials_in,
    find_hidden_credentials,
    honest_encoding,
    scrub_request,
    scrub_response,
    scrub_uri,
)
from harness.wire import header_values, outer_coding, write_atomic

VOLATILE_FIELDS: Final[frozenset[str]] = frozenset(
    {"request_id", "idempotency_key", "client_request_id", "timestamp", "created", "created_at", "user_agent"}
)
"""JSON keys left out when request bodies are compared: generated per call, never what a test is about.

Headers are not compared at all (SDK version, user agent, retry counters, AWS dates and
signatures change with no change of meaning). Extend per test with ``ignore_fields`` in
``vcr_config`` or the ``vcr`` marker.
"""

MATCH_ON: Final[tuple[str, ...]] = ("method", "host", "path", "harness_query", "harness_body")
"""What a request must share with a recorded one to replay it."""


class CassetteCorruptError(CassetteError):
    """A cassette file that exists but cannot be read; it is left exactly as it is."""


# ---------------------------------------------------------------------------------------------
# The serializer: vcrpy YAML, readable
# ---------------------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)


def pretty_body(body: Any) -> Any:
    """A JSON body as indented JSON text (key order kept: it is what the SDK parses); anything else as is."""
    text = body.decode("utf-8") if isinstance(body, bytes) and _is_utf8(body) else body
    if not isinstance(text, str) or text.lstrip()[:1] not in ("{", "["):
        return body
    try:
        parsed = json.loads(text)
    except ValueError:
        return body
    return json.dumps(parsed, indent=2, ensure_ascii=False) + "\n"


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class _ReadableYaml:
    """vcrpy's serializer protocol (``serialize``/``deserialize``) writing the readable form."""

    @staticmethod
    def deserialize(cassette_string: str) -> Any:
        from vcr.serializers import yamlserializer

        return bounded_yaml.load(cassette_string, yamlserializer.deserialize)

    @staticmethod
    def serialize(cassette_dict: dict[str, Any]) -> str:
        for interaction in cassette_dict.get("interactions", []):
            request, response = interaction["request"], interaction["response"]
            request["body"] = pretty_body(request.get("body"))
            body = response.get("body") or {}
            if "string" in body:
                pretty = pretty_body(body["string"])
                if pretty is not body["string"]:
                    body["string"] = pretty
                    _set_length(response, pretty)
        text = yaml.dump(cassette_dict, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
        if _ReadableYaml.deserialize(text) != cassette_dict:  # a literal block that would not round-trip
            text = yaml.dump(cassette_dict, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True)
        return text


def _set_length(response: dict[str, Any], body: str) -> None:
    headers = response.get("headers") or {}
    for name in list(headers):
        if name.lower() == "content-length":
            headers[name] = [str(len(body.encode("utf-8")))]


READABLE_YAML: Final = _ReadableYaml()
"""The serializer every harness VCR registers as ``yaml`` (so the file suffix stays ``.yaml``)."""


# ---------------------------------------------------------------------------------------------
# The persister
# ---------------------------------------------------------------------------------------------


class AtomicPersister:
    """vcrpy's persister protocol: strict loading, scanned atomic saving.

    ``inner`` is the persister it stands in front of (pytest-recording's, which also loads the
    extra cassettes a ``vcr`` marker names); ``hold`` is consulted before each write: when it
    returns a reason, the cassette is not written and the reason is kept in ``withheld``.
    ``environ`` and ``extra`` feed the credential scan (:func:`harness.recording._scrub.find_credentials`).
    """

    def __init__(
        self,
        inner: Any = None,
        *,
        environ: Mapping[str, str] | None = None,
        extra: Iterable[str] = (),
        hold: Callable[[str], str | None] | None = None,
    ) -> None:
        self.inner = inner
        self.environ = environ
        self.extra = tuple(extra)
        self.hold = hold
        self.withheld: list[tuple[str, str]] = []
        self.written: list[str] = []
        self.age: AgeLimit | None = None
        """How old a loaded cassette may be (``max_age``); set per cassette by whoever opens it."""
        self._loaded: dict[str, tuple[datetime | None, list[Any]]] = {}  # path -> its date, its interactions

    def load_cassette(self, cassette_path: str | os.PathLike[str], serializer: Any) -> Any:
        from vcr.persisters.filesystem import CassetteNotFoundError

        path = Path(cassette_path)
        if path.is_dir():  # found now, not by the atomic write after a whole recording
            raise CassetteCorruptError(path, "a directory, not a cassette file; move it away")
        if path.is_file():
            try:
                text = bounded_yaml.decoded(path.read_bytes())
            except OSError as exc:
                raise CassetteCorruptError(path, f"cannot read the cassette: {exc}") from exc
            except bounded_yaml.YamlFileError as exc:
                raise CassetteCorruptError(path, f"the cassette does not parse: {exc}") from None
            if text.strip():
                loaded, data = _check_parses(path, text, serializer)
                if self.age is not None and self.age.rerecords(path, data):
                    raise CassetteNotFoundError()  # recorded anew; the old file stays until the new one replaces it
                self._loaded[str(path)] = (recorded_at(data), [_same(item) for item in data["interactions"]])
                if self.inner is None:
                    return _honest(loaded)  # parsed once: checked and converted from the same data
            elif not getattr(self.inner, "extra_paths", None):  # pytest-recording's loader fails on it
                raise CassetteNotFoundError()  # an empty file is no recording yet, as for the recorded fixture
        elif self.inner is None:
            raise CassetteNotFoundError()
        if self.inner is not None and hasattr(self.inner, "load_cassette"):
            return _honest(self.inner.load_cassette(str(cassette_path), serializer))
        if not path.is_file() or not path.read_text(encoding="utf-8").strip():
            raise CassetteNotFoundError()
        from vcr.serialize import deserialize

        return _honest(deserialize(path.read_text(encoding="utf-8"), serializer))

    def save_cassette(
        self, cassette_path: str | os.PathLike[str], cassette_dict: dict[str, Any], serializer: Any
    ) -> None:
        from vcr.serialize import serialize

        path = Path(cassette_path)
        for request in cassette_dict["requests"]:  # again: a project's own filters replace ours in vcrpy
            scrub_request(request)
        for response in cassette_dict["responses"]:
            scrub_response(response)
        text = serialize(cassette_dict, serializer)
        loaded = _loaded(text, serializer)
        dated = self._date(str(path), loaded)
        if dated is not None:
            text = serialize(cassette_dict, _Dated(serializer, dated))
        findings = find_credentials(text, self.environ, extra=self.extra)
        hidden = find_hidden_credentials(loaded, self.environ, extra=self.extra)  # binary, or split in a stream
        if findings or hidden:
            structured = find_credentials_in(loaded, self.environ, extra=self.extra) if findings else []
            raise CredentialLeakError(str(path), dict.fromkeys([*(structured or findings), *hidden]))
        reason = self.hold(str(path)) if self.hold is not None else None
        if reason is not None:
            self.withheld.append((str(path), reason))
            return
        write_atomic(path, text)
        self.written.append(str(path))

    def forget(self, path: str) -> None:
        """Write ``path`` as recorded anew: nothing loaded from it is kept (``rewrite``)."""
        self._loaded.pop(str(Path(path)), None)

    def _date(self, path: str, saved: Any) -> str | None:
        """The ``recorded_at`` to write: the loaded cassette's when an interaction of it is kept as it
        was (``new_episodes``, ``all`` keeping what was not asked again), else now; ``None`` (no date)
        when the kept interactions come from a cassette that had none, whose age nobody knows."""
        date, interactions = self._loaded.get(path, (None, []))
        kept = isinstance(saved, dict) and any(_same(item) in interactions for item in saved.get("interactions", []))
        if not kept:
            return date_text(datetime.now(UTC))
        return date_text(date) if date is not None else None


def _same(interaction: Any) -> tuple[str, bytes]:
    """What two interactions share when one is the other kept (the body as bytes: vcrpy converts it)."""
    body = (interaction.get("response") or {}).get("body") or {}
    return json.dumps(interaction.get("request"), sort_keys=True, default=str), _body_bytes(body.get("string"))


class _Dated:
    """A serializer writing ``recorded_at`` beside vcrpy's ``version`` (which it reads, as vcrpy ignores it)."""

    def __init__(self, inner: Any, date: str) -> None:
        self.inner, self.date = inner, date

    def serialize(self, data: dict[str, Any]) -> str:
        version = {"version": data["version"]} if "version" in data else {}
        text: str = self.inner.serialize({**version, RECORDED_AT: self.date, **data})
        return text

    def deserialize(self, text: str) -> Any:
        return self.inner.deserialize(text)


def _honest(loaded: Any) -> Any:
    """vcrpy's loaded ``(requests, responses, ...)`` with every response's encoding made honest."""
    for response in loaded[1] if isinstance(loaded, tuple | list) and len(loaded) > 1 else ():
        if isinstance(response, dict):
            honest_encoding(response)
    return loaded


def _loaded(text: str, serializer: Any) -> Any:
    try:
        return serializer.deserialize(text)
    except Exception:
        return {}


class _Parsed:
    """A serializer that hands vcrpy data parsed already, so a cassette's YAML is parsed once."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def deserialize(self, cassette_string: str) -> Any:
        return self.data


def _check_parses(path: Path, text: str, serializer: Any) -> tuple[Any, dict[str, Any]]:
    """vcrpy's ``(requests, responses)`` for ``text`` and the parsed data, or :class:`CassetteCorruptError`.

    Every error is raised ``from None`` with its reason in its message: the cause is said once,
    not again in a chained traceback. The shape is checked here, where the path is known, since
    vcrpy would fail on it later with a bare ``KeyError`` or ``ValueError`` in the middle of a replay.
    """
    from vcr.serialize import deserialize

    try:
        data = serializer.deserialize(text)
    except Exception as exc:
        raise CassetteCorruptError(path, f"the cassette does not parse: {bounded_yaml.reason(exc)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteCorruptError(path, "not a vcrpy cassette (no interactions list)")
    problem = next(filter(None, (shape_problem(i, item) for i, item in enumerate(data["interactions"]))), None)
    if problem is not None:
        raise CassetteCorruptError(path, problem)
    try:
        return deserialize(text, _Parsed(data)), data
    except Exception as exc:
        raise CassetteCorruptError(path, f"vcrpy cannot read it: {bounded_yaml.reason(exc)}") from None


# ---------------------------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------------------------


def _body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    return str(body).encode("utf-8")


def normalized_body(body: Any, ignore: Iterable[str] = VOLATILE_FIELDS) -> Any:
    """A request body as comparable data: parsed JSON without the ignored keys, else its text.

    Memoized (treat the value as read-only): vcrpy asks the matcher for every pair of a sent and a
    recorded request, so without it each replayed request re-parsed the whole cassette's bodies
    and replay grew with the square of the cassette's length.
    """
    return _normalized(_body_bytes(body), frozenset(ignore))


@functools.lru_cache(maxsize=4096)
def _normalized(data: bytes, ignore: frozenset[str]) -> Any:
    try:
        parsed = json.loads(data) if data.strip() else None
    except ValueError:
        parts = _form_parts(data, ignore)
        return data.decode("utf-8", "replace") if parts is None else {"multipart": parts}
    return _tool_results_sorted(_without(parsed, ignore))


_BOUNDARY = re.compile(rb"--([0-9A-Za-z'()+_,./:=? -]{1,70})\r\n")  # RFC 2046's characters


def _form_parts(data: bytes, ignore: frozenset[str]) -> list[dict[str, Any]] | None:
    """A multipart body (a file, batch or audio upload) as its parts, or ``None`` if it is none.

    The HTTP client draws a new boundary for every request, so the bytes never match a recording;
    the parts do: each part's name, file name, type and content (JSON compared as data, binary by
    its length and digest). The standard library's MIME parser reads them, the boundary taken
    from the body's first line (the matchers see no headers).
    """
    import email.parser
    import email.policy
    import hashlib

    found = _BOUNDARY.match(data)
    if found is None or b"\r\n--" + found[1] + b"--" not in data:
        return None
    head = b'Content-Type: multipart/form-data; boundary="' + found[1] + b'"\r\n\r\n'
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + data)
    if not message.is_multipart():
        return None
    parts = []
    for part in message.iter_parts():
        payload = part.get_payload(decode=True)
        content = payload if isinstance(payload, bytes) else b""
        shown: Any = _normalized(content, ignore) if _is_utf8(content) else None
        if shown is None and content:
            shown = f"{len(content)} bytes, sha256 {hashlib.sha256(content).hexdigest()}"
        name = part.get_param("name", header="content-disposition")
        parts.append({"name": name, "filename": part.get_filename(), "type": part.get_content_type(), "content": shown})
    return parts


def _is_tool_result(item: Any) -> bool:
    """One answer to one tool call, named by the call's id, in any provider's request body."""
    if not isinstance(item, dict):
        return False
    return (
        (item.get("role") == "tool" and "tool_call_id" in item)  # OpenAI chat: a message
        or item.get("type") in ("function_call_output", "tool_result")  # OpenAI responses, Anthropic
        or "functionResponse" in item  # Gemini: a part
        or "toolResult" in item  # Bedrock: a content block
    )


def _tool_results_sorted(value: Any) -> Any:
    """``value`` with every run of consecutive tool results in one order (by their JSON text).

    Tool results that follow one another answer the parallel calls of one assistant turn; code
    that runs those calls concurrently sends the results in the order they finish, which carries
    no meaning (each names its call's id). Everything else keeps its order: messages, content
    blocks, the calls themselves, tool declarations.
    """
    if isinstance(value, dict):
        return {key: _tool_results_sorted(item) for key, item in value.items()}
    if not isinstance(value, list):
        return value
    items = [_tool_results_sorted(item) for item in value]
    out: list[Any] = []
    run: list[Any] = []
    for item in items:
        if _is_tool_result(item):
            run.append(item)
            continue
        out.extend(sorted(run, key=_json_text))
        run = []
        out.append(item)
    return [*out, *sorted(run, key=_json_text)]


def _json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _without(value: Any, ignore: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {key: _without(item, ignore) for key, item in value.items() if key not in ignore}
    if isinstance(value, list):
        return [_without(item, ignore) for item in value]
    return value


def request_text(request: Any, ignore: Iterable[str] = VOLATILE_FIELDS) -> str:
    """A request as the lines a diff shows: method, URI, then the body as sorted, indented JSON."""
    body = normalized_body(request.body, ignore)
    shown = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) if not isinstance(body, str) else body
    return f"{request.method} {scrub_uri(request.uri)}\n{shown}\n"


def json_body(r1: Any, r2: Any, ignore: Iterable[str] = VOLATILE_FIELDS) -> None:
    """vcrpy matcher ``harness_body``: equal as data; raises AssertionError naming the first difference.

    vcrpy runs every matcher on every (sent, recorded) pair while it looks for a match, and reads
    each failure's text at once: a full diff here made replay cost grow with the cassette. The
    first differing field is cheap and says what changed; the recorded backend's own mismatch
    error (``CassetteMismatchError``) shows the whole diff against the closest request.
    """
    sent, recorded = normalized_body(r1.body, ignore), normalized_body(r2.body, ignore)
    if sent == recorded and jsondiff.same(sent, recorded):  # == first: it is fast, and nearly always false
        return
    raise AssertionError(f"body differs at {jsondiff.first_difference(sent, recorded)}")


def first_difference(sent: Any, recorded: Any) -> str:
    """Where two request bodies first part, naming the tool or function the place belongs to.

    A unified diff of a changed tool schema shows a few lines of context (``"limit": {``), not
    which of several tools changed; the path and the name say it in one line.
    """
    text = jsondiff.first_difference(sent, recorded)
    path = text.split(": ", 1)[0]
    name = _owner_name(sent, path) or _owner_name(recorded, path)
    return f"{text} (in {name})" if name else text


def _owner_name(body: Any, path: str) -> str | None:
    """The innermost ``name`` along ``path`` under a tool or function key: ``the tool 'search'``."""
    found, value, under_tool = None, body, False
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        if key:
            under_tool = under_tool or any(word in key.lower() for word in ("tool", "function"))
            value = value.get(key) if isinstance(value, dict) else None
        else:
            value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
        if isinstance(value, dict) and isinstance(value.get("name"), str) and under_tool:
            found = value["name"]
        if value is None:
            break
    return f"the tool {found!r}" if found else None


def safe_query(r1: Any, r2: Any) -> None:
    """vcrpy matcher ``harness_query``: the query pairs, credential parameters left out."""
    from urllib.parse import parse_qsl, urlsplit

    def pairs(request: Any) -> list[tuple[str, str]]:
        return sorted(parse_qsl(urlsplit(scrub_uri(request.uri)).query, keep_blank_values=True))

    assert pairs(r1) == pairs(r2), f"query {pairs(r1)} != recorded {pairs(r2)}"


# ---------------------------------------------------------------------------------------------
# Event streams
# ---------------------------------------------------------------------------------------------


class EventChunks:
    """A recorded reply's body handed over one event at a time, the one stream type of record-replay.

    The same object serves every reader a reply meets: httpx2 (sync and async, through
    :meth:`for_httpx`, since httpx2 checks the stream's class), botocore (urllib3's
    ``stream``/``read``/``close``), and vcrpy's httpx stub under the plain ``vcr`` marker. So a
    streamed reply reaches the SDK split at the same boundaries whichever way it was replayed.
    """

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    @classmethod
    def for_httpx(cls, httpx: Any, chunks: list[bytes]) -> EventChunks:
        """The chunks as a byte stream of the ``httpx`` module given (httpx2, or httpx when vcrpy stubs it)."""
        return _httpx_kind(httpx)(chunks)

    def __iter__(self) -> Iterator[bytes]:
        return iter(list(self.chunks))

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    def stream(self, *_: Any, **__: Any) -> Iterator[bytes]:
        yield from self.chunks

    def read(self, *_: Any, **__: Any) -> bytes:
        return b"".join(self.chunks)

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


@functools.cache
def _httpx_kind(httpx: Any) -> type[EventChunks]:
    bases = (EventChunks, httpx.AsyncByteStream, httpx.SyncByteStream)
    return type(EventChunks.__name__, bases, {"__module__": __name__})


def reply_parts(response: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[bytes]]:
    """A vcrpy response's headers as ``(name, value)`` pairs and its body as event chunks."""
    pairs = []
    for name, values in (response.get("headers") or {}).items():
        for value in values if isinstance(values, list | tuple) else [values]:
            pairs.append((str(name), value.decode("latin-1") if isinstance(value, bytes) else str(value)))
    body = _body_bytes((response.get("body") or {}).get("string"))
    if outer_coding(pairs) is not None:
        return pairs, [body]  # still compressed (decoding was turned off): not splittable
    return pairs, event_chunks(body, next(iter(header_values(pairs, "content-type")), None))


class CutStreamError(AssertionError):
    """A recorded stream that ends inside an event: replayed, the SDK would drop that event (usage
    and all) and report a shorter reply as a success, so the test fails instead, naming it."""


def stream_cut(response: Mapping[str, Any]) -> int:
    """How many bytes at the end of a recorded response's streamed body end no event (0: whole)."""
    headers = response.get("headers")
    if outer_coding(headers) is not None:
        return 0  # stored compressed (decoding turned off): no event boundary to judge
    kind = next(iter(header_values(headers, "content-type")), None)
    return cut_tail(_body_bytes((response.get("body") or {}).get("string")), kind or None)


def cut_stream_error(path: Any, interaction: int | None, request: Any, replayed_for: int, cut: int) -> CutStreamError:
    """The one error for a cut stream, alike under the ``recorded`` fixture and the plain ``vcr`` marker."""
    which = f"interaction {interaction} " if interaction is not None else "the interaction "
    return CutStreamError(
        f"{path}: {which}({request.method} {request.uri}), the recorded reply to request {replayed_for}, "
        f"is a stream cut inside its last event ({cut} bytes end no event), so a replay would end short "
        "without an error; re-record it: --record-mode=rewrite"
    )


def stream_replaying_httpx_response(vcr_response: dict[str, Any], httpx: Any) -> Any:
    """A stand-in for vcrpy's httpx stub response builder: the body streamed event by event."""
    response = _ORIGINAL["deserialize"](vcr_response, httpx)
    _, chunks = reply_parts(vcr_response)
    if len(chunks) > 1:
        response.stream = EventChunks.for_httpx(httpx, chunks)
    return response


_ORIGINAL: dict[str, Callable[..., Any]] = {}


def configure_vcr(vcr: Any, *, persister: AtomicPersister | None = None) -> AtomicPersister:
    """Give a ``vcr.VCR`` the harness's additions; returns the persister now in front of its old one.

    What the project already configured wins where vcrpy lets it (its own ``match_on``,
    ``before_record_*`` filters); the persister's scrubbing and credential scan always run.
    """
    stubs, builder = vcr_compat.httpx_response_builder()
    if builder is not stream_replaying_httpx_response:
        _ORIGINAL["deserialize"] = builder
    vcr.register_serializer("yaml", READABLE_YAML)
    vcr.register_matcher("harness_body", json_body)
    vcr.register_matcher("harness_query", safe_query)
    if tuple(vcr.match_on) == ("method", "scheme", "host", "port", "path", "query"):  # vcrpy's default
        vcr.match_on = MATCH_ON
    if vcr.before_record_request is None:
        vcr.before_record_request = scrub_request
    if vcr.before_record_response is None:
        vcr.before_record_response = scrub_response
    vcr.decode_compressed_response = True
    persister = persister or AtomicPersister()
    if persister.inner is None and not isinstance(vcr.persister, AtomicPersister):
        persister.inner = vcr.persister
    vcr.register_persister(persister)
    vcr_compat.add_custom_patch(vcr, stubs, "_deserialize_response", stream_replaying_httpx_response)
    return persister
