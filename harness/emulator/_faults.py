"""Faults real providers produce, placed in an emulator script where a turn would go.

A fault either replaces the reply (``fault.status``: any HTTP status with the provider's own
error body) or changes how a rendered turn is delivered (dropped mid-stream, cut before its
terminal event, cut inside an event, the provider's own error event in place of the stop reason,
slow, a broken JSON delta, an unknown event, gzip). The delivery faults wrap a
turn (``fault.slow(0.05, turn.text("hi"))``) and combine by wrapping each other
(``fault.gzip(fault.slow(0.01, turn.text("hi")))``); without a turn they deliver a short text.

The byte-level edits work on SSE (``data:`` frames); a provider whose wire is not SSE (Bedrock's
event stream) and one whose events differ from the generic SSE ones supply
``malformed(chunk) -> bytes``, ``unknown_event() -> bytes`` and ``terminal(reply, request) -> int``
in their module to say how these look on their wire (``openai``, ``anthropic``: ``terminal``;
``gemini``: ``terminal``, ``unknown_event``; ``bedrock``: all three). Every provider module says
what its in-band error looks like: ``stream_error(status, message, reply, request) -> list[bytes]``.
"""

from __future__ import annotations

import dataclasses
import gzip as _gzip
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
    def gzip(inner: Wrapped = None) -> Fault:
        """The body is sent gzip-encoded (``content-encoding: gzip``), streamed or not, to a client
        whose ``accept-encoding`` admits gzip (as a real server would; botocore's does not)."""
        return _wrap(inner, gzip=True)


_IN_BAND_MESSAGES = {429: "Too many requests", 500: "Internal server error", 529: "Overloaded"}


@dataclass
class Delivery:
    """A reply as it goes out: the chunks to send, a pause before each, and where to hang up."""

    reply: WireReply
    delay: float = 0.0
    drop_after: int | None = None

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


def _unknown_sse() -> bytes:
    data = {"type": "emulator.unknown_event", "note": "an event type no client knows"}
    return f"event: emulator.unknown_event\ndata: {json.dumps(data)}\n\n".encode()


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
    if chunks is not None and (spec.truncate or spec.cut_mid_event or spec.error_event is not None):
        terminal: Callable[[WireReply, WireRequest], int] | None = getattr(module, "terminal", None)
        cut = terminal(reply, request) if terminal is not None else 1
        chunks = chunks[: max(0, len(chunks) - cut)]
    if chunks and (spec.malformed or spec.bad_checksum):
        breaker = getattr(module, "malformed", _break_json)
        if spec.bad_checksum:
            breaker = getattr(module, "corrupt", breaker)
        position = next((i for i, c in enumerate(chunks) if _is_delta(c)), min(1, len(chunks) - 1))
        chunks[position] = breaker(chunks[position])
    if chunks is not None and spec.unknown_event:
        maker = getattr(module, "unknown_event", _unknown_sse)
        chunks.insert(min(1, len(chunks)), maker())
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
    out = WireReply(reply.status, headers, body if chunks is None else None, chunks)
    return Delivery(out, delay=spec.delay, drop_after=spec.drop_after)


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
    if rest.strip():
        return f"the body ended cleanly inside an event, {after}"
    return f"the body ended cleanly {after}"


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
