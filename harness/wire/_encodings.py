"""Content-Encoding, read one way: which codings a body is in, and undoing gzip.

A recorded reply may carry its codings in one header (``gzip, br``), in several, in vcrpy's
``{name: [values]}`` form, as ``!!binary`` bytes or as plain pairs; readers that each took the
first value, or the last header, or the whole text, disagreed on ``gzip, identity`` and on two
headers. Here every reader gets the same answer: the codings in the order they were applied,
``identity`` left out, and the outer one (the one a client undoes first) last.

A request body is read through :func:`decoded` (gzip and deflate, bounded: a small compressed
body must not become gigabytes), so a compressed request is matched and stored as the JSON it is.

Compression is also known by its bytes: a gzip stream starts with :data:`GZIP_MAGIC`, whatever
the headers say (recorders that keep the compressed bytes and drop the header exist).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Mapping
from typing import Any, Final

GZIP_MAGIC: Final = b"\x1f\x8b"
"""How a gzip stream starts: how a stored body is known compressed, whatever its headers say."""

COMPRESSED: Final = frozenset({"gzip", "x-gzip", "deflate", "br", "zstd", "compress"})
"""Codings that turn a body into bytes no JSON or SSE reader can read."""


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):  # botocore records signed request headers as !!binary
        return bytes(value).decode("latin-1")
    return str(value)


def header_values(headers: Any, name: str) -> tuple[str, ...]:
    """Every value of header ``name`` (case-insensitive), in order, from any form headers are kept in.

    ``headers`` is a mapping of a name to a value or a list of values (vcrpy, httpx, a plain dict)
    or an iterable of ``(name, value)`` pairs; ``None`` has no values.
    """
    wanted = name.lower()
    if headers is None:
        return ()
    pairs: Iterable[Any] = headers.items() if isinstance(headers, Mapping) else headers
    found: list[str] = []
    for pair in pairs:
        if not isinstance(pair, tuple | list) or len(pair) != 2 or _text(pair[0]).lower() != wanted:
            continue
        values = pair[1] if isinstance(pair[1], list | tuple) else [pair[1]]
        found.extend(_text(value) for value in values if value is not None)
    return tuple(found)


def content_codings(headers: Any) -> tuple[str, ...]:
    """The codings of a body, in the order they were applied (``identity`` left out, lower case)."""
    return tuple(
        coding
        for value in header_values(headers, "content-encoding")
        for coding in (part.strip().lower() for part in value.split(","))
        if coding and coding != "identity"
    )


def outer_coding(headers: Any) -> str | None:
    """The coding a client undoes first (the last one applied), or ``None`` for a plain body."""
    codings = content_codings(headers)
    return codings[-1] if codings else None


def gunzipped(stored: bytes) -> bytes:
    """``stored`` with gzip undone when it starts with gzip's magic bytes; anything else as it is.

    A body that only looks like gzip (the magic bytes by coincidence, a cut recording) stays as stored.
    """
    if not stored.startswith(GZIP_MAGIC):
        return stored
    try:
        return gzip.decompress(stored)
    except (OSError, EOFError, zlib.error):
        return stored


DECODABLE: Final = frozenset({"gzip", "x-gzip", "deflate"})
"""Codings a request body is read through (the standard library's; br and zstd need packages the
harness does not depend on)."""


class BodyDecodingError(ValueError):
    """A body its Content-Encoding does not describe, or in a coding not read; the text says which."""


class BodyTooLargeError(BodyDecodingError):
    """A body that decodes to more than the limit it was read under."""


def without_codings(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers`` without Content-Encoding: those of a body once :func:`decoded` has undone it."""
    return [(name, value) for name, value in headers if name.lower() != "content-encoding"]


def decoded(body: bytes, codings: Iterable[str], limit: int) -> bytes:
    """``body`` with ``codings`` (as :func:`content_codings` lists them) undone, outer one first.

    Read at most ``limit`` bytes out of each: a small compressed request must not become gigabytes
    in memory (:class:`BodyTooLargeError`). A coding that is not read, or bytes that are not what
    it says, is a :class:`BodyDecodingError` naming the coding.
    """
    for coding in reversed(tuple(codings)):
        if coding not in DECODABLE:
            raise BodyDecodingError(
                f"Content-Encoding {coding} is not read here (gzip and deflate are); send the body"
                " uncompressed or gzip-compressed"
            )
        body = _inflated(body, coding, limit)
    return body


def _inflated(body: bytes, coding: str, limit: int) -> bytes:
    """One coding undone, every gzip member of it, stopping past ``limit`` bytes of output."""
    if coding == "deflate" and not (
        len(body) >= 2 and (body[0] & 0x0F) == 8 and int.from_bytes(body[:2], "big") % 31 == 0
    ):
        wbits = -zlib.MAX_WBITS  # raw deflate, without zlib's header: what some clients send as deflate
    else:
        wbits = zlib.MAX_WBITS | (16 if coding in ("gzip", "x-gzip") else 0)
    parts: list[bytes] = []
    size, rest = 0, body
    try:
        while True:
            inflater = zlib.decompressobj(wbits)
            part = inflater.decompress(rest, limit - size + 1)
            size += len(part)
            if size > limit:
                raise BodyTooLargeError(f"the {coding} body decodes to more than {limit} bytes")
            parts.append(part)
            if not inflater.eof:
                raise BodyDecodingError(f"the {coding} body is cut short (Content-Encoding: {coding})")
            rest = inflater.unused_data
            if not rest or wbits != zlib.MAX_WBITS | 16:
                break  # gzip alone may carry several members, one after another
    except zlib.error as exc:
        raise BodyDecodingError(f"the body is not {coding} as its Content-Encoding says: {exc}") from None
    return b"".join(parts)
