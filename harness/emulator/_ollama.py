"""Ollama's native chat (``POST /api/chat``) as the emulator speaks it: one JSON reply or NDJSON lines.

Ollama is the local server many agents point at first, and its own API is not OpenAI's: the
request carries ``messages`` and ``tools`` (OpenAI's function shape) and ``stream`` (true when
absent, as Ollama's server reads it); the reply is ``{"model", "created_at", "message":
{"role": "assistant", "content", "thinking"?, "tool_calls"?}, "done", "done_reason", ...counts}``.
Streamed, every line is such an object with ``done: false`` carrying a piece of ``content`` or
``thinking``, the calls arrive whole in one line (Ollama parses the model's call before it sends
it: ``arguments`` is an object, never a fragment), and a last line with ``done: true``, the
``done_reason`` (``stop``, ``length``) and the counts ends it. An error is ``{"error": message}``,
as the reply's body or, once a stream has begun, as a line of it (the client raises either).

A scripted call whose raw arguments are not JSON is sent with its text as ``arguments``: no
server sends it (Ollama would have left the text as content), so only a hostile script asks it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import harness.emulator._faults as faults
import harness.wire as wire
from harness.emulator._exchange import IdSource, WireReply, WireRequest
from harness.emulator._scripted import arguments_of, check_renderable, estimated_usage, pieces
from harness.script import ScriptedCall, Turn

ROUTES: Final[tuple[wire.Route, ...]] = wire.routes_of("ollama")

CREATED_AT: Final = "2026-06-01T00:00:00.000000Z"
"""The fixed ``created_at``: replies are deterministic."""

_PIECE: Final = 12


def _model(request: WireRequest) -> str:
    body = request.body if isinstance(request.body, Mapping) else {}
    model = body.get("model")
    return model if isinstance(model, str) and model else "llama-emulated"


def _line(value: Mapping[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


def _calls(turn: Turn, ids: IdSource) -> list[dict[str, Any]]:
    calls = []
    for index, block in enumerate(b for b in turn.blocks if isinstance(b, ScriptedCall)):
        arguments, text = arguments_of(block)
        function = {"index": index, "name": block.name, "arguments": arguments if arguments is not None else text}
        calls.append({"id": block.id or ids.next("call_", 8), "function": function})
    return calls


def _texts(turn: Turn, kind: str) -> str:
    return "".join(block[1] for block in turn.blocks if not isinstance(block, ScriptedCall) and block[0] == kind)


def _closing(turn: Turn, request: WireRequest) -> dict[str, Any]:
    usage = estimated_usage(turn, request.body)
    return {
        "done": True,
        "done_reason": "length" if turn.stop_reason == "length" else "stop",
        "total_duration": 100_000_000,
        "load_duration": 1_000_000,
        "prompt_eval_count": usage.input + usage.cache_read,
        "prompt_eval_duration": 10_000_000,
        "eval_count": usage.output,
        "eval_duration": 80_000_000,
    }


def render(turn: Turn, request: WireRequest, ids: IdSource) -> WireReply:
    """The scripted turn as Ollama answers ``/api/chat``: NDJSON lines unless ``stream`` is false."""
    check_renderable(turn)
    if turn.stop_reason in ("error", "aborted"):
        return error_reply(500, turn.error or "model runner has unexpectedly stopped", request)
    head = {"model": _model(request), "created_at": CREATED_AT}
    text, thinking, calls = _texts(turn, "text"), _texts(turn, "thinking"), _calls(turn, ids)
    if not request.streaming:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if thinking:
            message["thinking"] = thinking
        if calls:
            message["tool_calls"] = calls
        body = {**head, "message": message, **_closing(turn, request)}
        return WireReply(200, {"content-type": "application/json; charset=utf-8"}, _line(body).rstrip(b"\n"))
    lines: list[bytes] = []
    for field, value in (("thinking", thinking), ("content", text)):
        if value:
            lines.extend(
                _line({**head, "message": {"role": "assistant", "content": "", field: piece}, "done": False})
                for piece in pieces(value, _PIECE)
            )
    if calls:
        lines.append(
            _line({**head, "message": {"role": "assistant", "content": "", "tool_calls": calls}, "done": False})
        )
    lines.append(_line({**head, "message": {"role": "assistant", "content": ""}, **_closing(turn, request)}))
    return WireReply(200, {"content-type": wire.NDJSON}, chunks=lines)


def error_reply(status: int, message: str, request: WireRequest) -> WireReply:
    """Ollama's error: ``{"error": message}`` with the status, streamed request or not."""
    return WireReply(
        status, {"content-type": "application/json; charset=utf-8"}, json.dumps({"error": message}).encode()
    )


# -- the hooks ``_faults`` looks for: NDJSON lines, not SSE events --------------------------------


def terminal(reply: WireReply, request: WireRequest) -> int:
    """The ``done: true`` line ends a stream; ``fault.truncate`` removes it, so the cut shows."""
    return 1 if reply.chunks and b'"done":true' in reply.chunks[-1] else 0


def stream_error(status: int, message: str, reply: WireReply, request: WireRequest) -> list[bytes]:
    """The in-band error of a stream that answered 200: a line ``{"error": message}``."""
    return [_line({"error": message})]


def malformed(line: bytes) -> bytes:
    """The line's JSON cut in half, its line break kept: each line is still a line, its JSON is not."""
    body = line.rstrip(b"\n")
    return body[: max(1, len(body) // 2)] + b"\n"


def unknown_event(request: WireRequest) -> bytes:
    """A line carrying a field no version of Ollama sends, and nothing else new (an empty piece)."""
    message = {"role": "assistant", "content": ""}
    return _line(
        {"model": "emulated", "created_at": CREATED_AT, "message": message, "emulator_unknown": 1, "done": False}
    )


def unknown_fields(line: bytes) -> bytes:
    """The line carrying a field no client knows, at its top and in its ``message`` (never inside a
    call's ``arguments``)."""
    try:
        value = json.loads(line)
    except ValueError:
        return line
    return _line(faults.with_unknown_fields(value, frozenset({"message"})))


def interleave(lines: list[bytes]) -> list[bytes]:
    """Several calls a line apart, as Ollama's streaming tool-call parser sends each call once it
    has parsed it (since 0.8): the line carrying them all split into one line per call."""
    out: list[bytes] = []
    for line in lines:
        try:
            value = json.loads(line)
            calls = value["message"]["tool_calls"]
        except (ValueError, KeyError, TypeError):
            out.append(line)
            continue
        out += [_line({**value, "message": {**value["message"], "tool_calls": [call]}}) for call in calls]
    return out
