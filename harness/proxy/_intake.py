"""Taking a request in: its body read to a limit, decoded, and known to be JSON before anything uses it.

Everything the proxy does with a body (matching, scrubbing, the pre-write scan, YAML, sending it
on) assumes bounded, well-formed JSON text; a body that is not must be refused here, in the
provider's envelope and saying what is wrong, not fail later as "a bug in the harness". The limit
is counted as the body arrives (Content-Length first, then the chunks), so a body past it is
never held whole; Content-Encoding is undone through ``harness.wire.decoded``, to the same limit.
"""

from __future__ import annotations

import re
from typing import Any, Final

from harness.wire import BodyDecodingError, BodyTooLargeError, content_codings, decoded, read_json, without_codings

MAX_BODY: Final = 100 * 1024 * 1024
"""``--max-body``'s default, 100 MiB: the largest request a provider documents taking (the Gemini
API's inline data, raised to 100 MB in January 2026; Anthropic's Messages API takes 32 MB)."""

_PATH: Final = re.compile(r"(?:/[A-Za-z0-9\-._~%!$&'()*+,;=:@]*)*")
"""A path of RFC 3986 characters: no ``#``, ``\\`` or space that would change the URL it is sent to."""

_DOT_SEGMENT: Final = re.compile(r"/\.\.?(?:/|$)")


class IntakeError(Exception):
    """A request the proxy will not take, with the status to answer it with; the text says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ClientLeft(Exception):
    """The client went away before its body was whole: nothing to answer, nothing the harness did wrong."""


def checked_path(path: str) -> None:
    """Refuse a path that would not reach the provider as it reads (an RFC 3986 path, no dot segments)."""
    if not _PATH.fullmatch(path) or _DOT_SEGMENT.search(path):
        raise IntakeError(400, f"harness proxy: the path {path[:120]!r} is not a plain URL path; nothing was sent")


async def body_of(request: Any, headers: list[tuple[str, str]], limit: int) -> tuple[bytes, list[tuple[str, str]]]:
    """The request's body, decoded and checked to be JSON, and its headers as they now describe it.

    Raises :class:`IntakeError` (413 past ``limit``, 400 for a body that does not decode or is
    not JSON) or :class:`ClientLeft`.
    """
    raw = await _read(request, limit)
    codings = content_codings(headers)
    if codings:
        try:
            raw = decoded(raw, codings, limit)
        except BodyTooLargeError as exc:
            raise IntakeError(413, f"harness proxy: {exc}, more than --max-body {limit}") from None
        except BodyDecodingError as exc:
            raise IntakeError(400, f"harness proxy: the request body does not decode: {exc}") from None
        headers = without_codings(headers)
    problem = json_problem(raw)
    if problem is not None:
        raise IntakeError(400, f"harness proxy: the request body is not JSON a provider takes: {problem}")
    return raw, headers


async def _read(request: Any, limit: int) -> bytes:
    """The body as it arrives, stopped as soon as it passes ``limit`` bytes."""
    from starlette.requests import ClientDisconnect

    declared = request.headers.get("content-length")
    too_large = f"harness proxy: the request body is larger than --max-body ({limit} bytes); nothing was read"
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise IntakeError(413, too_large)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise IntakeError(413, too_large.replace("nothing was read", f"reading stopped at {size} bytes"))
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientLeft from None
    return b"".join(chunks)


def json_problem(body: bytes) -> str | None:
    """What keeps ``body`` from being the UTF-8 JSON every provider takes, in a few words; ``None`` if
    nothing: the emulator's reader (``harness.wire.read_json``), so both servers take the same bodies."""
    return read_json(body)[1]
