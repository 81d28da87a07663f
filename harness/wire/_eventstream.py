"""AWS event-stream framing (``application/vnd.amazon.eventstream``): the one codec, writing for
the emulator's Bedrock renderer and its faults, reading for recording's replay, scrub and lint.

botocore ships only the decoder (``botocore.eventstream``), and the Bedrock renderer needs to
write frames that decoder, and every other AWS SDK, accepts: a 12-byte prelude (total length,
headers length, CRC32 of those 8 bytes), the headers, the payload, and a CRC32 of everything
before it. Only string header values (type 7) are written: the only kind Bedrock sends. Reading
splits a recorded body at its messages' length preludes and keeps a cut or foreign rest whole, so
the pieces joined are always the body.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable
from typing import Final

EVENTSTREAM: Final = "application/vnd.amazon.eventstream"

_STRING = 7
_PRELUDE = 12
_CRC = 4


def _header(name: str, value: str) -> bytes:
    encoded_name, encoded_value = name.encode("utf-8"), value.encode("utf-8")
    if len(encoded_name) > 255 or len(encoded_value) > 0xFFFF:
        raise ValueError(f"event-stream header {name!r} is too long to encode")
    return (
        bytes([len(encoded_name)])
        + encoded_name
        + bytes([_STRING])
        + len(encoded_value).to_bytes(2, "big")
        + encoded_value
    )


def encode_frame(headers: Iterable[tuple[str, str]], payload: bytes) -> bytes:
    """One message: prelude, prelude CRC, headers, payload, message CRC (all big-endian)."""
    encoded = b"".join(_header(name, value) for name, value in headers)
    total = _PRELUDE + len(encoded) + len(payload) + _CRC
    prelude = total.to_bytes(4, "big") + len(encoded).to_bytes(4, "big")
    message = prelude + binascii.crc32(prelude).to_bytes(4, "big") + encoded + payload
    return message + binascii.crc32(message).to_bytes(4, "big")


def event_frame(event_type: str, payload: bytes) -> bytes:
    """An ``event`` message with a JSON payload, headers in the order Bedrock sends them."""
    return encode_frame(
        [(":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")], payload
    )


def exception_frame(exception_type: str, payload: bytes) -> bytes:
    """An in-band ``exception`` message: how a stream that already answered 200 reports a failure."""
    return encode_frame(
        [
            (":exception-type", exception_type),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        payload,
    )


def decode_frame(frame: bytes) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and payload of one message written by :func:`encode_frame` (string headers
    only): what a fault needs to rewrite a frame and frame it again with correct CRCs."""
    total = int.from_bytes(frame[:4], "big")
    headers_length = int.from_bytes(frame[4:8], "big")
    if total != len(frame):
        raise ValueError(f"an event-stream frame of {len(frame)} bytes says it holds {total}")
    raw, position, headers = frame[_PRELUDE : _PRELUDE + headers_length], 0, []
    while position < len(raw):
        name_length = raw[position]
        name = raw[position + 1 : position + 1 + name_length].decode("utf-8")
        position += 1 + name_length
        if raw[position] != _STRING:
            raise ValueError(f"event-stream header {name!r} is not a string")
        value_length = int.from_bytes(raw[position + 1 : position + 3], "big")
        headers.append((name, raw[position + 3 : position + 3 + value_length].decode("utf-8")))
        position += 3 + value_length
    return headers, frame[_PRELUDE + headers_length : total - _CRC]


def eventstream_messages(body: bytes) -> list[bytes]:
    """A body as its messages (by their length prelude); a cut or foreign rest stays whole."""
    chunks, start = [], 0
    while start < len(body):
        if len(body) - start < 4:
            chunks.append(body[start:])
            break
        total = int.from_bytes(body[start : start + 4], "big")
        if total < _PRELUDE + _CRC:  # not a message prelude: keep the rest whole
            chunks.append(body[start:])
            break
        chunks.append(body[start : start + total])
        start += total
    return chunks


def eventstream_payload(message: bytes) -> bytes | None:
    """The payload of one whole message, ``None`` when ``message`` is not one (cut, or foreign)."""
    if len(message) < _PRELUDE + _CRC or int.from_bytes(message[:4], "big") != len(message):
        return None
    headers = int.from_bytes(message[4:8], "big")
    if _PRELUDE + headers > len(message) - _CRC:
        return None
    return message[_PRELUDE + headers : -_CRC]


def with_eventstream_crc(message: bytes) -> bytes:
    """``message`` with its trailing CRC recomputed: a rewritten payload must still pass the SDK's check."""
    if eventstream_payload(message) is None:
        return message
    return message[:-_CRC] + binascii.crc32(message[:-_CRC]).to_bytes(_CRC, "big")
