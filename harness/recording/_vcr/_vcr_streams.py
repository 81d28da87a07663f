"""A recorded reply as its events: the one stream type of record-replay, and a cut stream refused.

A streamed body is split where its events end (:func:`event_chunks`: SSE events, AWS
event-stream messages, NDJSON lines) and handed over one event at a time by :class:`EventChunks`, to httpx2,
to botocore, and in vcrpy's own httpx stub (vcrpy#597), so a replayed stream reaches the SDK at the
boundaries it was recorded with. A body that ends inside an event (:func:`cut_tail`,
:func:`stream_cut`) would replay as a shorter reply and no error: :func:`cut_stream_error` says so.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import harness.wire as wire
from harness.recording._vcr._vcr_matchers import body_bytes
from harness.wire import header_values, outer_coding


def event_chunks(body: bytes, content_type: str | None) -> list[bytes]:
    """A recorded body split where its events end: SSE events, AWS event-stream messages, NDJSON lines, else one chunk.

    The chunks joined are the body; a cut last event stays as the last chunk, as it arrived.
    """
    if wire.is_sse(content_type, body):
        return wire.sse_events(body)
    if _media(content_type) == wire.EVENTSTREAM:
        return wire.eventstream_messages(body)
    if _media(content_type) == wire.NDJSON:
        return wire.ndjson_lines(body)
    return [body] if body else []


def _media(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def cut_tail(body: bytes, content_type: str | None) -> int:
    """How many bytes at the end of a streamed body belong to no whole event; 0 when it ends whole.

    An SSE reader drops an event the stream ends inside (no blank line after it), and an AWS
    event-stream message shorter than its prelude says is no message: an SDK replaying such a
    body sees a shorter reply and no error. Whatever cut it (a killed recording, an edit), the
    cassette no longer holds what the provider sent.
    """
    if wire.is_sse(content_type, body):
        last = wire.sse_events(body)[-1:] or [b""]
        return 0 if wire.sse_whole(last[0]) else len(last[0])
    if _media(content_type) == wire.EVENTSTREAM:
        last = wire.eventstream_messages(body)[-1:]
        return len(last[0]) if last and wire.eventstream_payload(last[0]) is None else 0
    if _media(content_type) == wire.NDJSON:
        lines = wire.ndjson_lines(body)[-1:] or [b""]
        return 0 if wire.ndjson_whole(lines[0]) else len(lines[0])
    return 0


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
    body = body_bytes((response.get("body") or {}).get("string"))
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
    return cut_tail(body_bytes((response.get("body") or {}).get("string")), kind or None)


def cut_stream_error(path: Any, interaction: int | None, request: Any, replayed_for: int, cut: int) -> CutStreamError:
    """The one error for a cut stream, alike under the ``recorded`` fixture and the plain ``vcr`` marker."""
    which = f"interaction {interaction} " if interaction is not None else "the interaction "
    return CutStreamError(
        f"{path}: {which}({request.method} {request.uri}), the recorded reply to request {replayed_for}, "
        f"is a stream cut inside its last event ({cut} bytes end no event), so a replay would end short "
        "without an error; re-record it: --record-mode=rewrite"
    )
