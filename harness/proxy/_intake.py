"""Taking a request in: its body read to a limit, decoded, and known to be JSON before anything uses it.

Everything the proxy does with a body (matching, scrubbing, the pre-write scan, YAML, sending it
on) assumes bounded, well-formed JSON text; a body that is not must be refused here, in the
provider's envelope and saying what is wrong, not fail later as "a bug in the harness". The limit
is counted as the body arrives (Content-Length first, then the chunks), so a body past it is
never held whole; Content-Encoding is undone through ``harness.wire.decoded``, to the same limit.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from harness.wire import BodyDecodingError, BodyTooLargeError, content_codings, decoded, without_codings

MAX_BODY: Final = 100 * 1024 * 1024
"""``--max-body``'s default, 100 MiB: the largest request a provider documents taking (the Gemini
API's inline data, raised to 100 MB in January 2026; Anthropic's Messages API takes 32 MB)."""

MAX_DEPTH: Final = 128
"""How deep a request's JSON may nest; far beyond a real request (a tool's schema nests a few
levels), far within what the harness's recursive readers (matching, scrubbing) take."""

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
    """What keeps ``body`` from being the UTF-8 JSON every provider takes, in a few words; ``None`` if nothing."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start} ({body[exc.start : exc.start + 1]!r})"
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return f"nested deeper than {MAX_DEPTH} levels"
    except ValueError as exc:  # JSONDecodeError, and _no_constant's
        return str(exc) if not isinstance(exc, json.JSONDecodeError) else f"{exc.msg} at byte {exc.pos}"
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and _deeper_than(document, MAX_DEPTH):
        return f"nested deeper than {MAX_DEPTH} levels"
    if b"\\ud" in body or b"\\uD" in body:  # only an escape can spell a surrogate: look only then
        try:
            json.dumps(document, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"a lone surrogate escape (\\u{ord(exc.object[exc.start]):04x}) that is no character"
    return None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _deeper_than(document: Any, limit: int) -> bool:
    """Whether ``document`` nests past ``limit`` containers: walked a level at a time, containers only."""
    level, depth = [document], 1
    while level:
        below: list[Any] = []
        for value in level:
            children = value.values() if type(value) is dict else value if type(value) is list else ()
            below += [child for child in children if type(child) is dict or type(child) is list]
        if below and depth >= limit:
            return True
        level, depth = below, depth + 1
    return False
