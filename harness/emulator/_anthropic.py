"""Anthropic Messages as the emulator speaks it: one ``Message`` or its SSE stream.

The stream follows the recordings in ``../shared/provider-cassettes/anthropic``: ``message_start``
(empty content, input usage), a ``ping``, then per block ``content_block_start`` (text and
thinking empty, ``tool_use`` with ``input: {}``), its deltas (``text_delta``, ``thinking_delta``
then one ``signature_delta``, ``input_json_delta`` fragments), ``content_block_stop``; then
``message_delta`` with the stop reason and the cumulative usage, and ``message_stop``.

Scripted thinking gets a signature (Anthropic's are opaque base64; these are derived from the
thinking they sign, :func:`signature_of`, so the same block is signed the same way wherever it is
served, and a changed or dropped block can be told apart when the agent sends it back). A
block made by :func:`redacted_thinking` is sent as a ``redacted_thinking`` block carrying its
data, the shape Anthropic uses when its safety systems encrypt the reasoning. The block is a
``("thinking", data)`` pair to everything else (``Turn`` takes only text and thinking blocks, and
``ScriptedProvider`` streams it as thinking), so no new turn vocabulary is needed.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

import harness.wire as wire
from harness.emulator._exchange import IdSource, WireReply, WireRequest
from harness.emulator._faults import edit_events
from harness.emulator._openai import split
from harness.emulator._scripted import opaque
from harness.script import ScriptedCall, Turn

ROUTES: tuple[wire.Route, ...] = wire.routes_of("anthropic")
"""Anthropic's own, at the root too, and Claude on Vertex AI (the model in the path, the body's
``anthropic_version: vertex-2023-10-16`` in its place); Bedrock's InvokeModel is ``_bedrock``'s,
its envelope around this module's replies."""


class RedactedThinking(tuple[str, str]):
    """A ``("thinking", data)`` block this renderer sends as ``redacted_thinking``."""

    __slots__ = ()


def redacted_thinking(data: str) -> tuple[str, str]:
    """A turn block for Anthropic redacted thinking holding the opaque ``data``."""
    return RedactedThinking(("thinking", data))


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _model(request: WireRequest) -> str:
    """The body's model, else the path's (Vertex, Bedrock), else a stand-in."""
    body = request.body if isinstance(request.body, Mapping) else {}
    model = body.get("model")
    if isinstance(model, str) and model:
        return model
    return request.path_params.get("model") or request.path_params.get("modelId") or "claude-emulated"


def event_of(chunk: bytes) -> dict[str, Any]:
    """The event one of this module's SSE frames carries (what Bedrock's envelope frames again)."""
    event: dict[str, Any] = json.loads(wire.sse_data(chunk))
    return event


def _usage(turn: Turn) -> dict[str, Any]:
    usage = turn.usage
    fresh, output, read, write = (
        (10, 5, 0, 0) if usage is None else (usage.input, usage.output, usage.cache_read, usage.cache_write)
    )
    return {
        "input_tokens": fresh,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0},
        "inference_geo": "not_available",
        "output_tokens": output,
        "service_tier": "standard",
    }


def signature_of(thinking: str) -> str:
    """The signature a thinking block is served with: opaque base64 as Anthropic's, derived from
    the thinking it signs (``_scripted.opaque``), so W2 knows what must come back unchanged."""
    return base64.b64encode(opaque("anthropic thinking", thinking, 48).encode()).decode()


def _blocks(turn: Turn, ids: IdSource) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in turn.blocks:
        if isinstance(block, ScriptedCall):
            try:
                arguments = json.loads(block.arguments_text())
            except ValueError:
                arguments = None  # not JSON: only a stream can carry it (as its raw fragments)
            blocks.append(
                {
                    "type": "tool_use",
                    "id": block.id or ids.next("toolu_01"),
                    "name": block.name,
                    "input": arguments,
                    "caller": {"type": "direct"},
                    "_raw": block.arguments_text(),
                }
            )
        elif isinstance(block, RedactedThinking):
            blocks.append({"type": "redacted_thinking", "data": block[1]})
        elif block[0] == "thinking":
            blocks.append({"type": "thinking", "thinking": block[1], "signature": signature_of(block[1])})
        else:
            blocks.append({"type": "text", "text": block[1]})
    return blocks


def _stop_reason(turn: Turn, blocks: list[dict[str, Any]]) -> str:
    if turn.stop_reason == "length":
        return "max_tokens"
    return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"


def _headers(ids: IdSource, content_type: str) -> dict[str, str]:
    return {
        "content-type": content_type,
        "request-id": ids.next("req_011", 21),
        "anthropic-organization-id": "emulated",
    }


def render(turn: Turn, request: WireRequest, ids: IdSource) -> WireReply:
    """The scripted turn as Anthropic answers ``/v1/messages``, streamed when the body asks."""
    if turn.stop_reason in ("error", "aborted"):
        return error_reply(500, turn.error or "Internal server error", request)
    message_id = ids.next("msg_01")
    blocks = _blocks(turn, ids)
    stop = _stop_reason(turn, blocks)
    usage = _usage(turn)
    if not request.streaming:
        body = _message(request, message_id, blocks, stop, usage)
        return WireReply(200, _headers(ids, "application/json"), json.dumps(body, ensure_ascii=False).encode())
    events = _events(request, message_id, blocks, stop, usage)
    chunks = [
        wire.sse_frame(json.dumps(data, separators=(",", ":"), ensure_ascii=False), name) for name, data in events
    ]
    headers = {**_headers(ids, "text/event-stream; charset=utf-8"), "cache-control": "no-cache"}
    return WireReply(200, headers, chunks=chunks)


def _message(
    request: WireRequest, message_id: str, blocks: list[dict[str, Any]], stop: str, usage: dict[str, Any]
) -> dict[str, Any]:
    """The whole reply's body: the blocks without their raw argument text, a call without input given ``{}``."""
    content = [{k: v for k, v in b.items() if k != "_raw"} for b in blocks]
    for block in content:
        if block["type"] == "tool_use" and block["input"] is None:
            block["input"] = {}
    return {
        "model": _model(request),
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def _events(
    request: WireRequest, message_id: str, blocks: list[dict[str, Any]], stop: str, usage: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """The streamed reply as Anthropic's events: the message's start, each block, the stop and usage."""
    events: list[tuple[str, dict[str, Any]]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, **fields}))

    start_usage = {**usage, "output_tokens": 1}
    emit(
        "message_start",
        message={
            "model": _model(request),
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "stop_details": None,
            "usage": start_usage,
        },
    )
    for index, block in enumerate(blocks):
        _block_events(index, block, emit)
    if not blocks:
        emit("ping")
    cumulative = {
        k: usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    }
    emit("message_delta", delta={"stop_reason": stop, "stop_sequence": None, "stop_details": None}, usage=cumulative)
    emit("message_stop")
    return events


def _block_events(index: int, block: dict[str, Any], emit: Callable[..., None]) -> None:
    """One content block's start, its deltas and its stop; a ping follows the first block's start, as Anthropic's."""
    kind = block["type"]
    if kind == "text":
        emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
        if index == 0:
            emit("ping")
        for piece in split(block["text"]):
            emit("content_block_delta", index=index, delta={"type": "text_delta", "text": piece})
    elif kind == "thinking":
        emit("content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""})
        if index == 0:
            emit("ping")
        for piece in split(block["thinking"]):
            emit("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": piece})
        emit("content_block_delta", index=index, delta={"type": "signature_delta", "signature": block["signature"]})
    elif kind == "redacted_thinking":
        emit("content_block_start", index=index, content_block=block)
        if index == 0:
            emit("ping")
    else:
        opener = {
            "type": "tool_use",
            "id": block["id"],
            "name": block["name"],
            "input": {},
            "caller": {"type": "direct"},
        }
        emit("content_block_start", index=index, content_block=opener)
        if index == 0:
            emit("ping")
        raw = block["_raw"] if block["input"] != {} else ""
        for piece in split(raw):
            emit("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": piece})
    emit("content_block_stop", index=index)


_TERMINAL = (b"event: message_delta\n", b"event: message_stop\n")


def terminal(reply: WireReply, request: WireRequest) -> int:
    """How many trailing events end a stream: ``message_delta`` (it carries the stop reason) and
    ``message_stop``. ``fault.truncate`` removes both, so a cut stream is cut before its stop
    reason on this wire as on the others, and a client can notice it."""
    count = 0
    for chunk in reversed(reply.chunks or []):
        if not chunk.startswith(_TERMINAL):
            break
        count += 1
    return count


def stream_error(status: int, message: str, reply: WireReply, request: WireRequest) -> list[bytes]:
    """The in-band error of a stream that answered 200: ``event: error`` with the error body of
    ``status`` (529: ``{"type": "overloaded_error", "message": "Overloaded"}``, as the API streams it)."""
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return [wire.sse_frame(json.dumps(body), "error")]


def refuse(reply: WireReply, request: WireRequest, how: str) -> WireReply:
    """The rendered reply as the model's refusal: ``stop_reason: refusal`` (in the body, or on
    ``message_delta``), its text kept as what came before the classifier stopped it. Anthropic has
    no content filter of its own: ``content_filter`` is served as the refusal too."""
    return edit_events(reply, lambda name, event: (name, refused(event)))


def refused(event: Any) -> Any:
    """A message (or a ``message_delta`` event) with its stop reason made ``refusal``."""
    if isinstance(event, dict):
        said = event.get("delta") if event.get("type") == "message_delta" else event
        if isinstance(said, dict) and said.get("stop_reason") is not None:
            said["stop_reason"] = "refusal"
    return event


def error_reply(status: int, message: str, request: WireRequest) -> WireReply:
    """Anthropic's error body (``{"type": "error", "error": {type, message}, "request_id"}``) for ``status``.

    Every status is a JSON reply, streamed request or not; 529 is ``overloaded_error``.
    """
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011emulated"}
    headers = {"content-type": "application/json", "request-id": "req_011emulated"}
    if status in (429, 529):
        headers["x-should-retry"] = "true"
    return WireReply(status, headers, json.dumps(body).encode())
