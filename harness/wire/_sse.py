"""Server-sent events (``text/event-stream``): the one codec, writing for the emulator, reading for recording.

Every provider but Bedrock streams this way. An event is ``event:`` / ``data:`` lines ended by a
blank line; providers separate events with ``\\n\\n`` (OpenAI, Anthropic) or ``\\r\\n\\r\\n``
(Gemini), and a reader must accept ``\\r\\r`` too. A body that ends inside an event is cut: an SSE
reader drops that event, so a replay would show a shorter reply and no error.
"""

from __future__ import annotations

from typing import Final

SSE: Final = "text/event-stream"

_ENDS: Final = (b"\r\n\r\n", b"\n\n", b"\r\r")


def sse_frame(data: str | bytes, event: str | None = None, *, crlf: bool = False) -> bytes:
    """One event: an optional ``event:`` line, the ``data:`` line, and the blank line that ends it."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    end = b"\r\n\r\n" if crlf else b"\n\n"
    head = f"event: {event}\n".encode() if event is not None else b""
    return head + b"data: " + payload + end


def is_sse(content_type: str | None, body: bytes = b"") -> bool:
    """Whether a body is an event stream: by its content type, else (no type kept) by how it starts."""
    kind = (content_type or "").split(";")[0].strip().lower()
    return kind == SSE or (not kind and body.lstrip().startswith((b"data:", b"event:")))


def sse_events(body: bytes) -> list[bytes]:
    """``body`` split after each blank line that ends an event; joined, the pieces are the body.

    A cut last event stays as the last piece, as it arrived.
    """
    chunks, start = [], 0
    while start < len(body):
        ends = [(i, len(sep)) for sep in _ENDS if (i := body.find(sep, start)) != -1]
        if not ends:
            chunks.append(body[start:])
            break
        index, width = min(ends)
        chunks.append(body[start : index + width])
        start = index + width
    return chunks


def sse_data(event: bytes) -> bytes:
    """The ``data:`` lines of one event joined with line breaks, as an SSE reader hands them over."""
    return b"\n".join(line[5:].strip() for line in event.splitlines() if line.startswith(b"data:"))


def sse_whole(event: bytes) -> bool:
    """Whether an event ends with its blank line (or holds nothing): what a reader does not drop."""
    return event.endswith(_ENDS) or not event.strip()
