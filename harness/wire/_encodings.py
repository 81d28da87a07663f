"""Content-Encoding, read one way: which codings a body is in, and undoing gzip.

A recorded reply may carry its codings in one header (``gzip, br``), in several, in vcrpy's
``{name: [values]}`` form, as ``!!binary`` bytes or as plain pairs; readers that each took the
first value, or the last header, or the whole text, disagreed on ``gzip, identity`` and on two
headers. Here every reader gets the same answer: the codings in the order they were applied,
``identity`` left out, and the outer one (the one a client undoes first) last.

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
