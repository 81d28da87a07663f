"""Faults real providers produce, placed in an emulator script where a turn would go.

A fault either replaces the reply (``fault.status``: any HTTP status with the provider's own
error body) or changes how a rendered turn is delivered (dropped mid-stream, cut before its
terminal event, cut inside an event, the provider's own error event in place of the stop reason,
slow, a broken JSON delta, an unknown event, unknown fields, several calls interleaved, gzip; the
bytes re-cut at other boundaries, as TCP delivers them; a stream that stalls without closing; a
status that comes late). The delivery faults wrap a turn (``fault.slow(0.05, turn.text("hi"))``)
and combine by wrapping each other
(``fault.gzip(fault.slow(0.01, turn.text("hi")))``); without a turn they deliver a short text.

The byte-level edits work on SSE (``data:`` frames); a provider whose wire is not SSE (Bedrock's
event stream) and one whose events differ from the generic SSE ones supply
``malformed(chunk) -> bytes``, ``unknown_event(request) -> bytes`` and
``terminal(reply, request) -> int`` in their module to say how these look on their wire
(``anthropic``: ``terminal``; ``openai``, ``gemini``: ``terminal``, ``unknown_event``, chat's an SSE
comment; ``bedrock``: all three). Every provider module says what its in-band error looks like:
``stream_error(status, message, reply, request) -> list[bytes]``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip as _gzip
import itertools
import json
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2

from harness.emulator._exchange import WireReply, WireRequest
from harness.script import turn
from harness.wire import (
    decode_frame,
    eventstream_messages,
    eventstream_payload,
    ndjson_lines,
    ndjson_whole,
    sse_data,
    sse_events,
    sse_frame,
    sse_whole,
)

Wrapped = Any  # a Turn, a ScriptedCall, a str, or another Fault


@dataclass(frozen=True)
class Fault:
    """One request's fault. ``status`` set: the reply is that error; otherwise ``turn`` is rendered
    and delivered as the other fields say."""

    turn: Wrapped = None
    status: int | None = None
    message: str = ""
    retry_after: float | None = None
    drop_after: int | None = None
    truncate: bool = False
    delay: float = 0.0
    malformed: bool = False
    unknown_event: bool = False
    gzip: bool = False
    error_event: int | None = None
    cut_mid_event: bool = False
    bad_checksum: bool = False
    split: tuple[int, ...] = ()
    stall_after: int | None = None
    first_byte: float = 0.0
    unknown_fields: bool = False
    interleaved: bool = False
    code: str | None = None
    refusal: str | None = None

    def describe(self) -> str:
        changed = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "turn" and getattr(self, f.name) != f.default
        }
        return "fault(" + ", ".join(f"{k}={v!r}" for k, v in changed.items()) + ")"


def _wrap(inner: Wrapped, **changes: Any) -> Fault:
    if isinstance(inner, Fault):
        return dataclasses.replace(inner, **changes)
    return Fault(turn=inner if inner is not None else turn.text("This reply is cut short by a fault."), **changes)


class fault:
    """Builders for scripted faults (each one answers one request)."""

    @staticmethod
    def status(status: int, message: str = "", *, retry_after: float | None = None, code: str | None = None) -> Fault:
        """The provider answers with HTTP ``status``, its own error body holding ``message``;
        ``retry_after`` adds the ``retry-after`` header (seconds) real rate limits send; ``code``
        is the error's code where the wire has one (OpenAI's ``insufficient_quota`` 429)."""
        if not 400 <= status <= 599:
            raise ValueError(f"fault.status takes an error status (400-599), got {status}")
        return Fault(status=status, message=message or f"emulated HTTP {status}", retry_after=retry_after, code=code)

    @staticmethod
    def refusal(inner: Wrapped = None) -> Fault:
        """The reply as the model's refusal on the wire: Anthropic's ``stop_reason: refusal``,
        OpenAI chat's ``refusal`` field (content null), Responses' ``refusal`` part, Gemini's
        ``finishReason: SAFETY``, Bedrock's ``content_filtered`` (each module's ``refuse``)."""
        return _wrap(inner, refusal="refusal")

    @staticmethod
    def content_filter(inner: Wrapped = None) -> Fault:
        """The reply as the provider's content filter withheld it: OpenAI chat's ``finish_reason:
        content_filter``, Responses' ``incomplete`` (``content_filter``), Gemini's blocked prompt
        (``promptFeedback.blockReason``, no candidates), Bedrock's ``guardrail_intervened``."""
        return _wrap(inner, refusal="content_filter")

    @staticmethod
    def drop_mid_stream(after_chunks: int = 1, inner: Wrapped = None) -> Fault:
        """The connection closes after ``after_chunks`` chunks of the (streamed) reply."""
        if after_chunks < 0:
            raise ValueError("after_chunks must be 0 or more")
        return _wrap(inner, drop_after=after_chunks)

    @staticmethod
    def truncate(inner: Wrapped = None) -> Fault:
        """The stream ends cleanly but without its terminal events, the stop reason with them
        (``[DONE]`` and the finish chunk, ``response.completed``, ``message_delta`` and
        ``message_stop``, Gemini's ``finishReason`` chunk, Bedrock's ``messageStop`` and ``metadata``)."""
        return _wrap(inner, truncate=True)

    @staticmethod
    def error_event(status: int = 500, message: str = "", inner: Wrapped = None) -> Fault:
        """The stream starts as the reply does, then the provider's own error event takes the place
        of its stop reason (OpenAI chat's ``data: {"error": ...}``, Responses' ``response.failed``,
        Anthropic's ``event: error`` (529: ``overloaded_error``), Gemini's error object, Bedrock's
        exception frame: ``throttlingException`` for 429, ``internalServerException`` for 500).
        ``status`` picks the error's type as that HTTP status would; a request that is not streamed
        gets that HTTP error instead (the only way such a failure can reach it)."""
        if not 400 <= status <= 599:
            raise ValueError(f"fault.error_event takes an error status (400-599), got {status}")
        return _wrap(inner, error_event=status, message=message or _IN_BAND_MESSAGES.get(status, "Internal error"))

    @staticmethod
    def cut_mid_event(inner: Wrapped = None) -> Fault:
        """The stream ends cleanly in the middle of an event: its terminal events are gone and the
        last event before them is cut in half (an SSE ``data:`` line without its end, half an
        event-stream frame), as a connection closed by a proxy leaves it. A client that checks can
        notice; one that does not is left with a partial reply. A whole body is not cut."""
        return _wrap(inner, cut_mid_event=True)

    @staticmethod
    def slow(seconds_per_chunk: float, inner: Wrapped = None) -> Fault:
        """Each chunk (the whole body, when not streamed) waits ``seconds_per_chunk`` first."""
        if seconds_per_chunk < 0:
            raise ValueError("seconds_per_chunk must be 0 or more")
        return _wrap(inner, delay=seconds_per_chunk)

    @staticmethod
    def malformed_chunk(inner: Wrapped = None) -> Fault:
        """The first delta of the stream carries broken JSON."""
        return _wrap(inner, malformed=True)

    @staticmethod
    def bad_checksum(inner: Wrapped = None) -> Fault:
        """The first delta's frame arrives with a wrong message CRC, as a corrupted event-stream
        frame does (Bedrock; botocore raises ``ChecksumMismatch``). An SSE wire has no checksum: there
        it is ``malformed_chunk``, the event's JSON broken."""
        return _wrap(inner, bad_checksum=True)

    @staticmethod
    def unknown_event(inner: Wrapped = None) -> Fault:
        """An event of a type no client knows arrives after the stream's first event."""
        return _wrap(inner, unknown_event=True)

    @staticmethod
    def unknown_fields(inner: Wrapped = None) -> Fault:
        """Every event (a whole body too) carries a field no client knows, at its top and inside the
        objects it is made of (a chunk's choice and delta, a content block, a usage object), as an
        API adds them: the providers document that clients ignore what they do not know."""
        return _wrap(inner, unknown_fields=True)

    @staticmethod
    def interleaved(inner: Wrapped = None) -> Fault:
        """Several calls streamed apart: OpenAI chat's call deltas alternate by ``index`` (call 0's
        opener, call 1's, then their argument pieces in turn), Gemini sends each ``functionCall``
        in its own chunk (every generation, as 2.5 and later do), Ollama each call in its own line.
        Wires whose calls come block by block (Anthropic, Bedrock, Responses' items) already send
        them so."""
        return _wrap(inner, interleaved=True)

    @staticmethod
    def gzip(inner: Wrapped = None) -> Fault:
        """The body is sent gzip-encoded (``content-encoding: gzip``), streamed or not, to a client
        whose ``accept-encoding`` admits gzip (as a real server would; botocore's does not)."""
        return _wrap(inner, gzip=True)

    @staticmethod
    def split(sizes: Sequence[int], inner: Wrapped = None) -> Fault:
        """The body's bytes re-cut into pieces of ``sizes`` bytes in turn (repeated to its end), as
        TCP delivers them: a piece may end inside an event, a UTF-8 character or an event-stream
        frame's prelude, and hold several events. The bytes are the reply's, unchanged."""
        sizes = tuple(sizes)
        if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes):
            raise ValueError(f"split takes a list of piece sizes in bytes (1 or more each), got {list(sizes)!r:.60}")
        return _wrap(inner, split=sizes)

    @staticmethod
    def stall(after_events: int = 1, inner: Wrapped = None) -> Fault:
        """The stream sends its first ``after_events`` events (never its stop reason), then nothing
        more, the connection open, until the client gives up (its read timeout) or the emulator
        stops (the connection then closes). A reply that is not streamed gets its status and headers
        and no body."""
        if after_events < 0:
            raise ValueError("after_events must be 0 or more")
        return _wrap(inner, stall_after=after_events)

    @staticmethod
    def slow_first_byte(seconds: float, inner: Wrapped = None) -> Fault:
        """The status and headers come ``seconds`` late (a model slow to start), then the reply whole."""
        if seconds < 0:
            raise ValueError("seconds must be 0 or more")
        return _wrap(inner, first_byte=seconds)


_IN_BAND_MESSAGES = {429: "Too many requests", 500: "Internal server error", 529: "Overloaded"}


@dataclass
class Delivery:
    """A reply as it goes out: the chunks to send, a pause before each, and where to hang up; or
    when to send the status (``first_byte``) and whether to hold the connection open, silent, after
    the last chunk (``stalls``) until ``released`` (the emulator stops) or the client gives up."""

    reply: WireReply
    delay: float = 0.0
    drop_after: int | None = None
    first_byte: float = 0.0
    stalls: bool = False
    released: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    @property
    def parts(self) -> list[bytes]:
        """The bytes in the pieces they are sent in (one piece for a whole body)."""
        if self.reply.chunks is not None:
            return list(self.reply.chunks)
        return [self.reply.body or b""]


def edit_events(reply: WireReply, edit: Callable[[str | None, Any], tuple[str | None, Any]]) -> WireReply:
    """``reply`` with ``edit(event name, JSON)`` applied to its JSON body, or to each JSON event of
    its SSE stream (a ``[DONE]`` or other non-JSON event is kept): how a module's ``refuse`` turns a
    rendered reply into the refused one without rendering it anew."""
    if reply.chunks is None:
        _, body = edit(None, json.loads(reply.body or b"null"))
        return dataclasses.replace(reply, body=json.dumps(body, ensure_ascii=False).encode())
    chunks: list[bytes] = []
    for chunk in reply.chunks:
        data = sse_data(chunk)
        try:
            value = json.loads(data)
        except ValueError:
            chunks.append(chunk)
            continue
        named = next((line[6:].strip().decode() for line in chunk.splitlines() if line.startswith(b"event:")), None)
        name, value = edit(named, value)
        chunks.append(sse_frame(json.dumps(value, separators=(",", ":"), ensure_ascii=False), name))
    return dataclasses.replace(reply, chunks=chunks)


def _is_delta(chunk: bytes) -> bool:
    return b"delta" in chunk


def _break_json(chunk: bytes) -> bytes:
    """An SSE frame whose ``data:`` JSON is cut in half (the frame itself stays well-formed)."""
    lines = chunk.split(b"\n")
    for i, line in enumerate(lines):
        if line.startswith(b"data:"):
            payload = line[5:].strip()
            lines[i] = b"data: " + payload[: max(1, len(payload) // 2)]
            break
    return b"\n".join(lines)


def unknown_sse_event(request: WireRequest) -> bytes:
    """An SSE event of a type no client knows: the default for a wire whose module says nothing."""
    data = {"type": "emulator.unknown_event", "note": "an event type no client knows"}
    return f"event: emulator.unknown_event\ndata: {json.dumps(data)}\n\n".encode()


NEW_FIELD = "emulator_new_field"
"""The field no client knows that :meth:`fault.unknown_fields` adds."""
KNOWN_OBJECTS: frozenset[str] = frozenset(
    {"choices", "delta", "message", "usage", "content_block", "candidates", "content", "usageMetadata", "item", "part"}
)
"""The keys whose objects get the unknown field too (never a call's arguments, ``input`` or
``args``, nor what the request's own values are echoed in, ``tools`` and ``metadata``)."""


def with_unknown_fields(value: Any, keys: frozenset[str] = KNOWN_OBJECTS) -> Any:
    """``value`` (parsed JSON) with :data:`NEW_FIELD` in it and in each object under ``keys``."""
    if isinstance(value, list):
        return [with_unknown_fields(item, keys) for item in value]
    if not isinstance(value, dict):
        return value
    out = {k: with_unknown_fields(v, keys) if k in keys and isinstance(v, dict | list) else v for k, v in value.items()}
    out[NEW_FIELD] = "a field a newer version of the API sends"
    return out


def _sse_unknown_fields(frame: bytes) -> bytes:
    """An SSE frame whose ``data:`` JSON object carries unknown fields (its framing kept)."""
    lines = frame.split(b"\n")
    for i, line in enumerate(lines):
        if not line.startswith(b"data:"):
            continue
        end = b"\r" if line.endswith(b"\r") else b""
        try:
            data = json.loads(line[5:])
        except ValueError:  # [DONE]
            continue
        if isinstance(data, dict):
            lines[i] = b"data: " + json.dumps(with_unknown_fields(data), ensure_ascii=False).encode() + end
    return b"\n".join(lines)


def _body_unknown_fields(body: bytes | None) -> bytes | None:
    try:
        data = json.loads(body or b"")
    except ValueError:
        return body
    return json.dumps(with_unknown_fields(data), ensure_ascii=False).encode()


def _gzip_chunks(chunks: list[bytes]) -> list[bytes]:
    """Each chunk compressed and flushed, so a streamed body stays streamed (one gzip member)."""
    compressor = zlib.compressobj(wbits=31)
    out = [compressor.compress(chunk) + compressor.flush(zlib.Z_SYNC_FLUSH) for chunk in chunks]
    out[-1:] = [(out[-1] if out else b"") + compressor.flush()]
    return out


def accepts_gzip(request: WireRequest) -> bool:
    """Whether the client's ``accept-encoding`` admits gzip (RFC 9110: no header admits any coding).

    A server never gzips for a client that refused it, so neither does the gzip fault: botocore
    sends ``accept-encoding: identity`` (it cannot decode gzip), and gets the body plain, as from AWS.
    """
    header = request.headers.get("accept-encoding")
    if header is None:
        return True
    for item in header.lower().split(","):
        coding, _, parameters = item.strip().partition(";")
        if coding.strip() in ("gzip", "x-gzip", "*"):
            quality = parameters.strip().removeprefix("q=")
            try:
                return not parameters.strip().startswith("q=") or float(quality) > 0
            except ValueError:
                return True
    return False


def apply(
    spec: Fault,
    reply: WireReply,
    request: WireRequest,
    module: Any,
) -> Delivery:
    """The delivery of ``reply`` (rendered from ``spec.turn``) with the fault's changes applied."""
    if spec.refusal is not None and hasattr(module, "refuse"):
        reply = module.refuse(reply, request, spec.refusal)
    chunks = list(reply.chunks) if reply.chunks is not None else None
    if chunks is None and spec.error_event is not None:
        return Delivery(module.error_reply(spec.error_event, spec.message, request), delay=spec.delay)
    if spec.interleaved or spec.unknown_fields:
        reply, chunks = _reshaped(spec, reply, chunks, module)
    if chunks is not None and (spec.truncate or spec.cut_mid_event or spec.error_event is not None):
        chunks = chunks[: max(0, len(chunks) - _terminal_count(reply, request, module))]
    if spec.stall_after is not None:  # the events before the stall, never the stop reason
        whole = chunks if chunks is not None else [reply.body or b""]
        chunks = whole[: min(spec.stall_after, max(0, len(whole) - _terminal_count(reply, request, module)))]
    if chunks and (spec.malformed or spec.bad_checksum):
        breaker = getattr(module, "malformed", _break_json)
        if spec.bad_checksum:
            breaker = getattr(module, "corrupt", breaker)
        position = next((i for i, c in enumerate(chunks) if _is_delta(c)), min(1, len(chunks) - 1))
        chunks[position] = breaker(chunks[position])
    if chunks is not None and spec.unknown_event:
        maker: Callable[[WireRequest], bytes] = getattr(module, "unknown_event", unknown_sse_event)
        chunks.insert(min(1, len(chunks)), maker(request))
    if chunks is not None and spec.error_event is not None:
        chunks.extend(module.stream_error(spec.error_event, spec.message, reply, request))
    if chunks and spec.cut_mid_event:
        chunks[-1] = chunks[-1][: max(1, len(chunks[-1]) // 2)]
    headers = dict(reply.headers)
    body = reply.body
    if spec.gzip and accepts_gzip(request):
        headers["content-encoding"] = "gzip"
        headers.pop("content-length", None)
        if chunks is not None:
            chunks = _gzip_chunks(chunks)
        else:
            body = _gzip.compress(body or b"")
    if spec.split:
        chunks = rechunk(b"".join(chunks) if chunks is not None else body or b"", spec.split)
    out = WireReply(reply.status, headers, body if chunks is None else None, chunks)
    stalls = spec.stall_after is not None
    return Delivery(out, delay=spec.delay, drop_after=spec.drop_after, first_byte=spec.first_byte, stalls=stalls)


def _terminal_count(reply: WireReply, request: WireRequest, module: Any) -> int:
    """How many of a stream's last chunks carry its stop reason (a whole body: its one part)."""
    if reply.chunks is None:
        return 1
    terminal: Callable[[WireReply, WireRequest], int] | None = getattr(module, "terminal", None)
    return terminal(reply, request) if terminal is not None else 1


def rechunk(data: bytes, sizes: Sequence[int]) -> list[bytes]:
    """``data`` cut into pieces of ``sizes`` bytes in turn, the sizes repeated until it ends (what
    TCP may hand a reader: any boundary, several events in one read)."""
    pieces, start = [], 0
    for size in itertools.cycle(sizes):
        if start >= len(data):
            break
        pieces.append(data[start : start + size])
        start += size
    return pieces


class ReadTimeout(Exception):
    """The client's read timeout passed while the delivery waited: what its socket would raise."""


async def wait_async(delivery: Delivery, seconds: float | None, read_timeout: float | None) -> None:
    """Wait ``seconds`` (``None``: the stall, until released) as a client reading the socket sees
    it: past its ``read_timeout`` it gets :class:`ReadTimeout`; a released stall returns."""
    limit = seconds if read_timeout is None else read_timeout if seconds is None else min(seconds, read_timeout)
    if seconds is not None and limit == seconds:
        await asyncio.sleep(seconds)
        return
    deadline = None if limit is None else time.monotonic() + limit
    while not delivery.released.is_set():  # polled: a cancelled run's task stops here at once
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise ReadTimeout(f"emulator: no bytes for {read_timeout:g}s (the client's read timeout)")
        await asyncio.sleep(0.05 if left is None else min(0.05, left))


def wait_sync(delivery: Delivery, seconds: float | None, read_timeout: float | None) -> None:
    """:func:`wait_async` for a synchronous client's thread."""
    limit = seconds if read_timeout is None else read_timeout if seconds is None else min(seconds, read_timeout)
    if seconds is not None and limit == seconds:
        time.sleep(seconds)
        return
    if not delivery.released.wait(limit) and limit is not None:
        raise ReadTimeout(f"emulator: no bytes for {read_timeout:g}s (the client's read timeout)")


def _reshaped(spec: Fault, reply: WireReply, chunks: list[bytes] | None, module: Any) -> tuple[WireReply, Any]:
    """The reply with its calls interleaved and unknown fields added, as the module's hooks
    (``interleave(chunks)``, ``unknown_fields(chunk)``) or the SSE defaults say."""
    if chunks is not None and spec.interleaved and hasattr(module, "interleave"):
        chunks = module.interleave(chunks)
    if spec.unknown_fields and reply.status == 200:
        if chunks is not None:
            chunks = [getattr(module, "unknown_fields", _sse_unknown_fields)(chunk) for chunk in chunks]
        else:
            reply = dataclasses.replace(reply, body=_body_unknown_fields(reply.body))
    return reply, chunks


def ending(delivery: Delivery) -> str:
    """How a streamed delivery ends, in its wire's own events: after which complete event the body
    ended cleanly (a proxy or gateway closing it; inside an event when its last one is cut), or was
    reset mid-chunk (the network). What a finding says, so a maintainer can rebuild the bytes."""
    parts = delivery.parts
    reset = delivery.drop_after is not None
    if reset:
        cut = min(delivery.drop_after or 0, max(len(parts) - 1, 0))
        parts = [*parts[:cut], parts[cut][: len(parts[cut]) // 2] if parts else b""]
    body = b"".join(parts)
    events, rest = _events(body)
    last = _event_name(events[-1]) if events else None
    after = f"after {last}" if last else "before its first event"
    if reset:
        return f"the connection was reset mid-chunk, {after}"
    if delivery.stalls:
        return _stalled(len(events), last)
    if rest.strip():
        return f"the body ended cleanly inside an event, {after}"
    return f"the body ended cleanly {after}"


def _stalled(count: int, last: str | None) -> str:
    if not count:
        return "the stream stalled before its first event"
    ordinal = {1: "first", 2: "second", 3: "third"}.get(count, f"{count}th")
    return f"the stream stalled after its {ordinal} event, {last}"


def _events(body: bytes) -> tuple[list[bytes], bytes]:
    """The complete events of a body (SSE blocks, NDJSON lines or event-stream frames) and what trails them."""
    if body.startswith(b"{"):  # Ollama's NDJSON: a line is an event
        lines = ndjson_lines(body)
        whole = [line for line in lines if ndjson_whole(line)]
        return [line for line in whole if line.strip()], b"" if len(whole) == len(lines) else lines[-1]
    if not body.startswith(b"\x00"):  # an event-stream frame starts with its length's high byte
        pieces = sse_events(body)
        whole = [p for p in pieces if sse_whole(p)]
        rest = b"" if len(whole) == len(pieces) else pieces[-1]
        return [p for p in whole if p.strip()], rest
    messages = eventstream_messages(body)
    frames = [m for m in messages if eventstream_payload(m) is not None]
    return frames, b"" if len(frames) == len(messages) else messages[-1]


def _event_name(event: bytes) -> str:
    """An event as its wire names it: the SSE ``event:`` name, or for OpenAI chat and Gemini (whose
    events have none) the field the chunk carries; an event-stream frame's ``:event-type``."""
    if event.startswith(b"{"):  # an NDJSON line
        try:
            return _chunk_name(json.loads(event))
        except ValueError:
            return "a line whose JSON is broken"
    if not event.lstrip().startswith((b"event:", b"data:", b":")):
        try:
            headers, _ = decode_frame(event)
        except (ValueError, IndexError):
            return "an event-stream frame"
        fields = dict(headers)
        return f"`{fields.get(':event-type') or fields.get(':exception-type') or 'frame'}`"
    lines = event.decode("utf-8", "replace").splitlines()
    named = next((line[6:].strip() for line in lines if line.startswith("event:")), None)
    if named:
        return f"`{named}`"
    data = "".join(line[5:].strip() for line in lines if line.startswith("data:"))
    if data == "[DONE]":
        return "`data: [DONE]`"
    try:
        chunk = json.loads(data)
    except ValueError:
        return "an event whose JSON is broken"
    return _chunk_name(chunk)


def _chunk_name(chunk: Any) -> str:
    if not isinstance(chunk, dict):
        return "a data event"
    if "error" in chunk:
        return "an `error` event"
    if chunk.get("type"):
        return f"`{chunk['type']}`"
    for key, path in (("choices", "choices[0]"), ("candidates", "candidates[0]")):
        first = (chunk.get(key) or [{}])[0]
        if not isinstance(first, dict):
            continue
        if first.get("finish_reason") or first.get("finishReason"):
            reason = first.get("finish_reason") or first.get("finishReason")
            return f"the chunk with {path}.{'finish_reason' if key == 'choices' else 'finishReason'} {reason!r}"
        if key == "choices":
            delta = first.get("delta") or {}
            field = next((f for f in ("tool_calls", "content", "role") if delta.get(f)), None)
            if field:
                return f"a `{path}.delta.{field}` chunk"
        else:
            parts = (first.get("content") or {}).get("parts") or [{}]
            field = next((f for f in ("functionCall", "text") if f in parts[-1]), None)
            if field:
                return f"a `{path}.content.parts[].{field}` chunk"
    if "usage" in chunk:
        return "the usage chunk"
    if isinstance(chunk.get("message"), dict):  # Ollama's lines
        if chunk.get("done") is True:
            return f"the line with done: true (done_reason {chunk.get('done_reason')!r})"
        field = next((f for f in ("tool_calls", "content", "thinking") if chunk["message"].get(f)), None)
        return f"a `message.{field}` line" if field else "a line with an empty message"
    return "a data event"


# -- sending a delivery: on loopback (uvicorn) and in process (httpx2 streams) -------------------


class ConnectionDropped(Exception):
    """Raised inside a streamed body to make the server hang up mid-reply."""


async def deliver(
    delivery: Delivery, drop: Callable[[str], Exception], read_timeout: float | None = None
) -> AsyncIterator[bytes]:
    """The reply's parts, each after the fault's delay; at the drop point, half of that part and
    then ``drop(reason)``, as a connection reset mid-chunk leaves it: uvicorn then closes the
    socket mid-body, the in-process stream raises it to httpx2. A stall holds after the last part
    until released (then ``drop``) or, in process, the client's ``read_timeout`` passes."""
    parts = delivery.parts
    cut = None if delivery.drop_after is None else min(delivery.drop_after, max(len(parts) - 1, 0))
    for sent, part in enumerate(parts):
        if cut is not None and sent >= cut:
            if len(part) > 1:
                yield part[: len(part) // 2]
            raise drop(f"emulator: connection dropped after {sent} chunk(s)")
        if delivery.delay:
            await wait_async(delivery, delivery.delay, read_timeout)
        yield part
    if delivery.stalls:
        await wait_async(delivery, None, read_timeout)
        raise drop("emulator: the stalled stream was closed (the emulator stopped)")


def read_timeout_of(request: httpx2.Request) -> float | None:
    """The client's read timeout (httpx2 passes its timeouts in ``request.extensions``)."""
    timeout = request.extensions.get("timeout")
    read = timeout.get("read") if isinstance(timeout, dict) else None
    return float(read) if isinstance(read, int | float) else None


def timed_out(request: httpx2.Request, exc: ReadTimeout) -> httpx2.ReadTimeout:
    return httpx2.ReadTimeout(str(exc), request=request)


class AsyncStream(httpx2.AsyncByteStream):
    def __init__(self, delivery: Delivery, request: httpx2.Request) -> None:
        self._delivery, self._request = delivery, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in deliver(self._delivery, httpx2.RemoteProtocolError, read_timeout_of(self._request)):
                yield part
        except ReadTimeout as exc:
            raise timed_out(self._request, exc) from None


class SyncStream(httpx2.SyncByteStream):
    def __init__(self, delivery: Delivery, request: httpx2.Request) -> None:
        self._delivery, self._request = delivery, request

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._parts(read_timeout_of(self._request))
        except ReadTimeout as exc:
            raise timed_out(self._request, exc) from None

    def _parts(self, read_timeout: float | None) -> Iterator[bytes]:
        parts = self._delivery.parts
        drop = self._delivery.drop_after
        cut = None if drop is None else min(drop, max(len(parts) - 1, 0))
        for sent, part in enumerate(parts):
            if cut is not None and sent >= cut:  # half of it first, as deliver does
                if len(part) > 1:
                    yield part[: len(part) // 2]
                raise httpx2.RemoteProtocolError(f"emulator: connection dropped after {sent} chunk(s)")
            if self._delivery.delay:
                wait_sync(self._delivery, self._delivery.delay, read_timeout)
            yield part
        if self._delivery.stalls:
            wait_sync(self._delivery, None, read_timeout)
            raise httpx2.RemoteProtocolError("emulator: the stalled stream was closed (the emulator stopped)")
