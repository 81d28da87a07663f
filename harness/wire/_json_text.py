"""A request body read as the JSON every provider takes, or the few words saying why it is not.

The emulator and the proxy both take bodies from clients they do not trust (a hand-rolled client,
a fuzzer, a web page) and hand them to recursive readers (rendering, journaling, matching,
scrubbing, YAML). One reader, one depth limit and one set of words, so a body one of them takes is
never one the other refuses or fails on.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

MAX_DEPTH: Final = 128
"""How deep a body's JSON may nest: far beyond a real request (a tool's schema nests a few levels),
far within what the recursive readers behind both servers take on any thread (the proxy's matching
failed between 350 and 400 levels)."""

_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")
"""Only an escape can spell a UTF-16 surrogate in UTF-8 JSON: the slower check runs only then."""


def read_json(body: bytes) -> tuple[Any, str | None]:
    """``(document, None)``, or ``(None, why)`` for a body no provider would read as JSON: bytes that
    are not UTF-8, text that is not JSON (``NaN`` and ``Infinity`` included), an integer too long to
    read, nesting past :data:`MAX_DEPTH`, or a lone surrogate escape that names no character."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"the body is not UTF-8 text (byte 0x{body[exc.start]:02x} at offset {exc.start})"
    nested = f"the body's JSON nests deeper than {MAX_DEPTH} levels"
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return None, nested
    except ValueError as exc:  # JSONDecodeError, _no_constant's, and the integer digit limit's
        return None, f"the body is not valid JSON: {str(exc).split(';')[0]}"
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and _deeper_than(document, MAX_DEPTH):
        return None, nested
    if _SURROGATE_ESCAPE.search(body):  # a pair decodes to one character; a lone half is no text
        try:
            json.dumps(document, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            lone = exc.object[exc.start : exc.end].encode("unicode_escape").decode()
            return None, f"the body's JSON holds a lone UTF-16 surrogate ({lone}), not text"
    return document, None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _deeper_than(document: Any, limit: int) -> bool:
    """Whether ``document`` nests past ``limit`` containers: walked a level at a time, without recursion."""
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
