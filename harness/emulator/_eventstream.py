"""AWS event-stream framing (``application/vnd.amazon.eventstream``), the encoding half.

botocore ships only the decoder (``botocore.eventstream``), and the Bedrock renderer needs to
write frames that decoder, and every other AWS SDK, accepts: a 12-byte prelude (total length,
headers length, CRC32 of those 8 bytes), the headers, the payload, and a CRC32 of everything
before it. Only string header values (type 7) are written: the only kind Bedrock sends.
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable

__all__ = ["encode_frame", "event_frame", "exception_frame"]

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
