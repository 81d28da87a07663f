"""vcrpy's matchers, honest: request bodies compared as data, and a mismatch that says where.

:func:`json_body` and :func:`safe_query` are registered by name (``harness_body``,
``harness_query``): JSON bodies compared as data, by type (key order and volatile fields ignored;
``harness._jsondiff``), multipart uploads part by part whatever their boundary, parallel tool
results in any order, the query without credential parameters. :func:`first_difference` and
:func:`request_text` are what the recorded backend's mismatch error shows.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any, Final

import harness._jsondiff as jsondiff
from harness.recording._scrub import scrub_uri
from harness.recording._vcr._vcr_yaml import is_utf8

VOLATILE_FIELDS: Final[frozenset[str]] = frozenset(
    {"request_id", "idempotency_key", "client_request_id", "timestamp", "created", "created_at", "user_agent"}
)
"""JSON keys left out when request bodies are compared: generated per call, never what a test is about.

Headers are not compared at all (SDK version, user agent, retry counters, AWS dates and
signatures change with no change of meaning). Extend per test with ``ignore_fields`` in
``vcr_config`` or the ``vcr`` marker.
"""


MATCH_ON: Final[tuple[str, ...]] = ("method", "host", "path", "harness_query", "harness_body")
"""What a request must share with a recorded one to replay it."""


def body_bytes(body: Any) -> bytes:
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    return str(body).encode("utf-8")


def normalized_body(body: Any, ignore: Iterable[str] = VOLATILE_FIELDS) -> Any:
    """A request body as comparable data: parsed JSON without the ignored keys, else its text.

    Memoized (treat the value as read-only): vcrpy asks the matcher for every pair of a sent and a
    recorded request, so without it each replayed request re-parsed the whole cassette's bodies
    and replay grew with the square of the cassette's length.
    """
    return _normalized(body_bytes(body), frozenset(ignore))


@functools.lru_cache(maxsize=4096)
def _normalized(data: bytes, ignore: frozenset[str]) -> Any:
    try:
        parsed = json.loads(data) if data.strip() else None
    except ValueError:
        parts = _form_parts(data, ignore)
        return data.decode("utf-8", "replace") if parts is None else {"multipart": parts}
    return _tool_results_sorted(_without(parsed, ignore))


_BOUNDARY = re.compile(rb"--([0-9A-Za-z'()+_,./:=? -]{1,70})\r\n")  # RFC 2046's characters


def _form_parts(data: bytes, ignore: frozenset[str]) -> list[dict[str, Any]] | None:
    """A multipart body (a file, batch or audio upload) as its parts, or ``None`` if it is none.

    The HTTP client draws a new boundary for every request, so the bytes never match a recording;
    the parts do: each part's name, file name, type and content (JSON compared as data, binary by
    its length and digest). The standard library's MIME parser reads them, the boundary taken
    from the body's first line (the matchers see no headers).
    """
    import email.parser
    import email.policy
    import hashlib

    found = _BOUNDARY.match(data)
    if found is None or b"\r\n--" + found[1] + b"--" not in data:
        return None
    head = b'Content-Type: multipart/form-data; boundary="' + found[1] + b'"\r\n\r\n'
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + data)
    if not message.is_multipart():
        return None
    parts = []
    for part in message.iter_parts():
        payload = part.get_payload(decode=True)
        content = payload if isinstance(payload, bytes) else b""
        shown: Any = _normalized(content, ignore) if is_utf8(content) else None
        if shown is None and content:
            shown = f"{len(content)} bytes, sha256 {hashlib.sha256(content).hexdigest()}"
        name = part.get_param("name", header="content-disposition")
        parts.append({"name": name, "filename": part.get_filename(), "type": part.get_content_type(), "content": shown})
    return parts


def _is_tool_result(item: Any) -> bool:
    """One answer to one tool call, named by the call's id, in any provider's request body."""
    if not isinstance(item, dict):
        return False
    return (
        (item.get("role") == "tool" and "tool_call_id" in item)  # OpenAI chat: a message
        or item.get("type") in ("function_call_output", "tool_result")  # OpenAI responses, Anthropic
        or "functionResponse" in item  # Gemini: a part
        or "toolResult" in item  # Bedrock: a content block
    )


def _tool_results_sorted(value: Any) -> Any:
    """``value`` with every run of consecutive tool results in one order (by their JSON text).

    Tool results that follow one another answer the parallel calls of one assistant turn; code
    that runs those calls concurrently sends the results in the order they finish, which carries
    no meaning (each names its call's id). Everything else keeps its order: messages, content
    blocks, the calls themselves, tool declarations.
    """
    if isinstance(value, dict):
        return {key: _tool_results_sorted(item) for key, item in value.items()}
    if not isinstance(value, list):
        return value
    items = [_tool_results_sorted(item) for item in value]
    out: list[Any] = []
    run: list[Any] = []
    for item in items:
        if _is_tool_result(item):
            run.append(item)
            continue
        out.extend(sorted(run, key=_json_text))
        run = []
        out.append(item)
    return [*out, *sorted(run, key=_json_text)]


def _json_text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _without(value: Any, ignore: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {key: _without(item, ignore) for key, item in value.items() if key not in ignore}
    if isinstance(value, list):
        return [_without(item, ignore) for item in value]
    return value


def request_text(request: Any, ignore: Iterable[str] = VOLATILE_FIELDS) -> str:
    """A request as the lines a diff shows: method, URI, then the body as sorted, indented JSON."""
    body = normalized_body(request.body, ignore)
    shown = json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) if not isinstance(body, str) else body
    return f"{request.method} {scrub_uri(request.uri)}\n{shown}\n"


def json_body(r1: Any, r2: Any, ignore: Iterable[str] = VOLATILE_FIELDS) -> None:
    """vcrpy matcher ``harness_body``: equal as data; raises AssertionError naming the first difference.

    vcrpy runs every matcher on every (sent, recorded) pair while it looks for a match, and reads
    each failure's text at once: a full diff here made replay cost grow with the cassette. The
    first differing field is cheap and says what changed; the recorded backend's own mismatch
    error (``CassetteMismatchError``) shows the whole diff against the closest request.
    """
    sent, recorded = normalized_body(r1.body, ignore), normalized_body(r2.body, ignore)
    if sent == recorded and jsondiff.same(sent, recorded):  # == first: it is fast, and nearly always false
        return
    raise AssertionError(f"body differs at {jsondiff.first_difference(sent, recorded)}")


def first_difference(sent: Any, recorded: Any) -> str:
    """Where two request bodies first part, naming the tool or function the place belongs to.

    A unified diff of a changed tool schema shows a few lines of context (``"limit": {``), not
    which of several tools changed; the path and the name say it in one line.
    """
    text = jsondiff.first_difference(sent, recorded)
    path = text.split(": ", 1)[0]
    name = _owner_name(sent, path) or _owner_name(recorded, path)
    return f"{text} (in {name})" if name else text


def _owner_name(body: Any, path: str) -> str | None:
    """The innermost ``name`` along ``path`` under a tool or function key: ``the tool 'search'``."""
    found, value, under_tool = None, body, False
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        if key:
            under_tool = under_tool or any(word in key.lower() for word in ("tool", "function"))
            value = value.get(key) if isinstance(value, dict) else None
        else:
            value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
        if isinstance(value, dict) and isinstance(value.get("name"), str) and under_tool:
            found = value["name"]
        if value is None:
            break
    return f"the tool {found!r}" if found else None


def safe_query(r1: Any, r2: Any) -> None:
    """vcrpy matcher ``harness_query``: the query pairs, credential parameters left out."""
    from urllib.parse import parse_qsl, urlsplit

    def pairs(request: Any) -> list[tuple[str, str]]:
        return sorted(parse_qsl(urlsplit(scrub_uri(request.uri)).query, keep_blank_values=True))

    assert pairs(r1) == pairs(r2), f"query {pairs(r1)} != recorded {pairs(r2)}"
