"""Bedrock ``converse`` / ``converse-stream``, rendered as the service sends them.

Paths: ``/model/{modelId}/converse`` and ``/model/{modelId}/converse-stream``. botocore
percent-encodes the model id (``us.amazon.nova-micro-v1%3A0``); an ARN (an inference profile)
holds ``/`` once decoded, so the routes use starlette's ``path`` convertor for it.

What the recordings show, and this module reproduces:

- Converse: ``{"metrics": {"latencyMs"}, "output": {"message": {"content": [...], "role":
  "assistant"}}, "stopReason", "usage": {...}}`` with keys sorted, content blocks ``text``,
  ``toolUse`` (``input``, ``name``, ``toolUseId``: ``tooluse_`` and 22 characters) and
  ``reasoningContent.reasoningText`` (``text``, ``signature``);
- ConverseStream: AWS event-stream frames (``harness.wire``'s codec) with ``:event-type``,
  ``:content-type`` and ``:message-type`` headers: ``messageStart``; per block
  ``contentBlockStart`` (tool calls only), ``contentBlockDelta`` (text, reasoning text then its
  signature, tool input JSON split across several deltas, Anthropic models opening with an empty
  one) and ``contentBlockStop``; ``messageStop``; ``metadata`` (usage, metrics). Every payload
  carries AWS's ``p`` padding field (a run of ``abc...`` of varying length);
- errors: ``{"message"}`` with an ``x-amzn-ErrorType`` header, also for a streamed request that
  fails before its stream starts (as recorded); once a stream has answered 200, a failure is an
  ``exception`` frame (:func:`stream_error_reply`).

Raw (scripted, maybe broken) call arguments go out verbatim in a stream's input deltas; a whole
Converse reply can only carry a JSON document, so there text that is not JSON becomes a string.

Delivery faults on the event stream (the hooks ``harness.emulator._faults`` looks for): a truncated
stream loses its ``messageStop`` and ``metadata`` frames (or its closing exception frame); a
malformed chunk is a well-framed ``contentBlockDelta`` (correct CRCs) whose JSON payload is cut in
half (botocore hands it over as an event without fields); a bad checksum is that frame with its
message CRC wrong (botocore raises); an unknown event is a frame with an ``:event-type`` no SDK
knows (``emulatorUnknownEvent``), which botocore skips, as it skips every event type newer than its service model.

Stop reasons: ``stop`` -> ``end_turn`` (``tool_use`` when the reply calls tools), ``length`` ->
``max_tokens``; an ``error`` (or ``aborted``) turn fails with ``InternalServerException``: a 500
when not streamed, an in-band ``internalServerException`` frame after ``messageStart`` when it is.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import string
from typing import Any, Final

import harness.emulator._anthropic as anthropic
import harness.emulator._exchange as exchange
import harness.emulator._faults as faults
from harness.emulator._scripted import arguments_of, check_renderable, estimated_usage, fragments, opaque, pieces
from harness.script import ScriptedCall, Turn
from harness.wire import Route, decode_frame, encode_frame, event_frame, exception_frame, routes_of

ROUTES: Final[tuple[Route, ...]] = routes_of("bedrock")

ERROR_TYPES: Final[dict[int, str]] = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    409: "ConflictException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
"""HTTP status -> the error shape Bedrock names in ``x-amzn-ErrorType`` (and botocore's ``Error.Code``)."""

_ERROR_NAMESPACE: Final = "http://internal.amazon.com/coral/com.amazon.bedrock/"
_PADDING: Final = string.ascii_lowercase + string.ascii_uppercase + string.digits
_TEXT_PIECE: Final = 12
_INPUT_PIECE: Final = 10


def model_of(request: exchange.WireRequest) -> str:
    """The model id the path names (the ``modelId`` path parameter, else read off the path)."""
    model = request.path_params.get("modelId")
    if model:
        return model
    return request.path.partition("/model/")[2].rpartition("/")[0]


def request_id(ids: exchange.IdSource) -> str:
    """An ``x-amzn-RequestId``: a UUID's shape, deterministic digits."""
    digits = ids.next("", 32)
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def _error_type(status: int) -> str:
    return ERROR_TYPES.get(status, "InternalServerException" if status >= 500 else "ValidationException")


def _stop_reason(turn: Turn) -> str:
    if turn.stop_reason == "length":
        return "max_tokens"
    return "tool_use" if any(isinstance(block, ScriptedCall) for block in turn.blocks) else "end_turn"


def _usage(turn: Turn, request_body: Any) -> dict[str, Any]:
    usage = estimated_usage(turn, request_body)
    fields: dict[str, Any] = {
        "inputTokens": usage.input,
        "outputTokens": usage.output,
        "totalTokens": usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write,
    }
    if usage.cache_read or usage.cache_write:
        fields["cacheReadInputTokens"] = usage.cache_read
        fields["cacheWriteInputTokens"] = usage.cache_write
    return fields


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# -- replies -------------------------------------------------------------------------------------


def render(turn: Turn, request: exchange.WireRequest, ids: exchange.IdSource) -> exchange.WireReply:
    """The turn as Bedrock answers ``request``: Converse JSON, or ConverseStream frames; on
    InvokeModel, Anthropic's Messages reply (:func:`_invoke`)."""
    check_renderable(turn)
    if request.route.endpoint in _INVOKE:
        return _invoke(turn, request, ids)
    streamed = request.route.endpoint == "converse-stream"
    if turn.stop_reason in ("error", "aborted"):
        if streamed:
            return stream_error_reply(500, turn.error or "", request, ids)
        return error_reply(500, turn.error or "", request)
    headers = {"x-amzn-RequestId": request_id(ids)}
    if streamed:
        headers["Content-Type"] = "application/vnd.amazon.eventstream"
        return exchange.WireReply(200, headers, chunks=_Stream(turn, request, ids).frames())
    headers["Content-Type"] = "application/json"
    content: list[dict[str, Any]] = []
    for block in turn.blocks:
        if isinstance(block, ScriptedCall):
            arguments, text = arguments_of(block)
            tool = {
                "input": arguments if arguments is not None else text,
                "name": block.name,
                "toolUseId": block.id or ids.next("tooluse_", 22),
            }
            content.append({"toolUse": tool})
        elif block[0] == "thinking":
            content.append(
                {"reasoningContent": {"reasoningText": {"signature": reasoning_signature(block[1]), "text": block[1]}}}
            )
        else:
            content.append({"text": block[1]})
    body = {
        "metrics": {"latencyMs": 100},
        "output": {"message": {"content": content, "role": "assistant"}},
        "stopReason": _stop_reason(turn),
        "usage": {**_usage(turn, request.body), "serverToolUsage": {}},
    }
    return exchange.WireReply(200, headers, body=_json(body))


def reasoning_signature(text: str) -> str:
    """The signature of a ``reasoningText`` block, derived from its text (``_scripted.opaque``):
    the same reasoning is signed the same way wherever it is served, and W2 knows what must come
    back with the call it preceded."""
    return "EmulatorReasoningSignature" + opaque("bedrock reasoning", text, 32)


class _Stream:
    """The frames of one ConverseStream reply; each payload padded the way AWS pads them."""

    def __init__(self, turn: Turn, request: exchange.WireRequest, ids: exchange.IdSource) -> None:
        self.turn, self.request, self.ids = turn, request, ids
        self.count = 0
        self.empty_first_fragment = "anthropic" in model_of(request)

    def event(self, event_type: str, payload: dict[str, Any]) -> bytes:
        self.count += 1
        padding = _PADDING[: (self.count * 17 + len(payload)) % len(_PADDING) + 1]
        return event_frame(event_type, _json({**payload, "p": padding}))

    def frames(self) -> list[bytes]:
        frames = [self.event("messageStart", {"role": "assistant"})]
        for index, block in enumerate(self.turn.blocks):
            frames += self.block(index, block)
        frames.append(self.event("messageStop", {"stopReason": _stop_reason(self.turn)}))
        usage = _usage(self.turn, self.request.body)
        frames.append(self.event("metadata", {"metrics": {"latencyMs": 100}, "usage": usage}))
        return frames

    def block(self, index: int, block: tuple[str, str] | ScriptedCall) -> list[bytes]:
        def delta(value: dict[str, Any]) -> bytes:
            return self.event("contentBlockDelta", {"contentBlockIndex": index, "delta": value})

        frames: list[bytes] = []
        if isinstance(block, ScriptedCall):
            tool = {"name": block.name, "toolUseId": block.id or self.ids.next("tooluse_", 22)}
            frames.append(self.event("contentBlockStart", {"contentBlockIndex": index, "start": {"toolUse": tool}}))
            text = block.arguments_text()
            parts = ([""] if self.empty_first_fragment else []) + fragments(text, _INPUT_PIECE)
            frames += [delta({"toolUse": {"input": part}}) for part in parts]
        elif block[0] == "thinking":
            frames += [delta({"reasoningContent": {"text": part}}) for part in pieces(block[1], _TEXT_PIECE)]
            frames.append(delta({"reasoningContent": {"signature": reasoning_signature(block[1])}}))
        else:
            frames += [delta({"text": part}) for part in pieces(block[1], _TEXT_PIECE)]
        frames.append(self.event("contentBlockStop", {"contentBlockIndex": index}))
        return frames


# -- InvokeModel: Claude's own Messages wire inside Bedrock's envelope --------------------------------

_INVOKE: Final = frozenset({"invoke", "invoke-with-response-stream"})
_INVOKE_STREAM: Final = "invoke-with-response-stream"


def _invoke(turn: Turn, request: exchange.WireRequest, ids: exchange.IdSource) -> exchange.WireReply:
    """Claude on ``InvokeModel``: the Messages reply Anthropic sends (the model read off the path,
    the body carrying ``anthropic_version: bedrock-2023-05-31`` instead); streamed, each of
    Anthropic's events base64-encoded in a ``chunk`` frame (``{"bytes": ...}``), the last one
    carrying Bedrock's ``amazon-bedrock-invocationMetrics``. Errors are Bedrock's, as on Converse."""
    streamed = request.route.endpoint == _INVOKE_STREAM
    if turn.stop_reason in ("error", "aborted"):
        if streamed:
            return stream_error_reply(500, turn.error or "", request, ids)
        return error_reply(500, turn.error or "", request)
    reply = anthropic.render(turn, request, ids)
    headers = {"x-amzn-RequestId": request_id(ids)}
    if reply.chunks is None:
        return exchange.WireReply(reply.status, {**headers, "Content-Type": "application/json"}, body=reply.body)
    events = [anthropic.event_of(chunk) for chunk in reply.chunks]
    if events:
        usage = events[-2].get("usage", {}) if len(events) > 1 else {}
        events[-1]["amazon-bedrock-invocationMetrics"] = {
            "inputTokenCount": usage.get("input_tokens", 0),
            "outputTokenCount": usage.get("output_tokens", 0),
            "invocationLatency": 100,
            "firstByteLatency": 10,
        }
    frames = [chunk_frame(event) for event in events]
    return exchange.WireReply(200, {**headers, "Content-Type": "application/vnd.amazon.eventstream"}, chunks=frames)


def chunk_frame(event: dict[str, Any]) -> bytes:
    """One of Anthropic's stream events as InvokeModelWithResponseStream frames it: ``{"bytes": base64(JSON)}``."""
    data = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return event_frame("chunk", _json({"bytes": base64.b64encode(data).decode("ascii"), "p": "abcd"}))


def _chunk_event(frame: bytes) -> str | None:
    """The Anthropic event type a ``chunk`` frame carries (``None`` for any other frame or payload)."""
    headers, payload = decode_frame(frame)
    if dict(headers).get(":event-type") != "chunk":
        return None
    try:
        event = json.loads(base64.b64decode(json.loads(payload)["bytes"]))
    except (ValueError, KeyError, TypeError):
        return None
    kind = event.get("type") if isinstance(event, dict) else None
    return kind if isinstance(kind, str) else None


# -- errors --------------------------------------------------------------------------------------


def error_reply(status: int, message: str, request: exchange.WireRequest) -> exchange.WireReply:
    """Bedrock's error: ``{"message"}`` and the ``x-amzn-ErrorType`` header botocore reads the code from.

    A streamed request that fails before its stream starts gets this same JSON reply (the
    recordings show it); a failure after the 200 is :func:`stream_error_reply`.
    """
    headers = {
        "Content-Type": "application/json",
        "x-amzn-ErrorType": f"{_error_type(status)}:{_ERROR_NAMESPACE}",
        "x-amzn-RequestId": "00000000-0000-0000-0000-000000000000",
    }
    return exchange.WireReply(status, headers, body=_json({"message": message}))


def stream_error_reply(
    status: int, message: str, request: exchange.WireRequest, ids: exchange.IdSource | None = None
) -> exchange.WireReply:
    """A ConverseStream that answers 200, starts the message, then fails in band.

    The exception frame is named as the stream's union member (``throttlingException``,
    ``internalServerException``...), the lowerCamel form of the error type.
    """
    name = _error_type(status)
    member = name[0].lower() + name[1:]
    headers = {
        "Content-Type": "application/vnd.amazon.eventstream",
        "x-amzn-RequestId": request_id(ids or exchange.IdSource()),
    }
    start = event_frame("messageStart", _json({"p": "abcd", "role": "assistant"}))
    return exchange.WireReply(200, headers, chunks=[start, exception_frame(member, _json({"message": message}))])


# -- delivery faults -----------------------------------------------------------------------------


def stream_error(status: int, message: str, reply: exchange.WireReply, request: exchange.WireRequest) -> list[bytes]:
    """The in-band error of a stream that answered 200: the exception frame ``status`` names
    (``throttlingException`` for 429, ``internalServerException`` for 500)."""
    name = _error_type(status)
    return [exception_frame(name[0].lower() + name[1:], _json({"message": message}))]


_TERMINAL_EVENTS: Final = frozenset({"messageStop", "metadata"})


def _frame_headers(frame: bytes) -> dict[str, str]:
    return dict(decode_frame(frame)[0])


def terminal(reply: exchange.WireReply, request: exchange.WireRequest) -> int:
    """How many trailing frames end the stream: ``messageStop`` and ``metadata``, or the closing
    exception frame of a stream that fails in band. ``fault.truncate`` removes them."""
    count = 0
    invoked = request.route.endpoint in _INVOKE  # Anthropic's closing events, inside chunk frames
    for frame in reversed(reply.chunks or []):
        headers = _frame_headers(frame)
        if headers.get(":message-type") == "exception":
            return count + 1
        ending = _chunk_event(frame) in ("message_delta", "message_stop") if invoked else None
        if not ending and headers.get(":event-type") not in _TERMINAL_EVENTS:
            break
        count += 1
    return count


_REFUSED_STOPS: Final = {"refusal": "content_filtered", "content_filter": "guardrail_intervened"}


def refuse(reply: exchange.WireReply, request: exchange.WireRequest, how: str) -> exchange.WireReply:
    """The rendered reply as Bedrock refuses: Converse's ``stopReason`` ``content_filtered`` (the
    model's refusal) or ``guardrail_intervened`` (a guardrail withheld it), in the body or the
    ``messageStop`` frame; on InvokeModel, Claude's own ``stop_reason: refusal``."""
    invoked = request.route.endpoint in _INVOKE
    if reply.chunks is None:
        body = json.loads(reply.body or b"null")
        if invoked:
            return dataclasses.replace(reply, body=_json(anthropic.refused(body)))
        return dataclasses.replace(reply, body=_json({**body, "stopReason": _REFUSED_STOPS[how]}))
    return dataclasses.replace(reply, chunks=[_refused_frame(frame, how, invoked) for frame in reply.chunks])


def _refused_frame(frame: bytes, how: str, invoked: bool) -> bytes:
    headers, payload = decode_frame(frame)
    kind = dict(headers).get(":event-type")
    if kind == "messageStop" and not invoked:
        return encode_frame(headers, _json({**json.loads(payload), "stopReason": _REFUSED_STOPS[how]}))
    if kind == "chunk" and invoked and _chunk_event(frame) == "message_delta":
        wrapped = json.loads(payload)
        event = anthropic.refused(json.loads(base64.b64decode(wrapped["bytes"])))
        wrapped["bytes"] = base64.b64encode(json.dumps(event).encode()).decode()
        return encode_frame(headers, _json(wrapped))
    return frame


def malformed(frame: bytes) -> bytes:
    """The frame with its JSON payload cut in half, framed again with correct CRCs: the damage is
    in the JSON, not in the framing (which botocore would catch as a checksum mismatch)."""
    headers, payload = decode_frame(frame)
    return encode_frame(headers, payload[: max(1, len(payload) // 2)])


def corrupt(frame: bytes) -> bytes:
    """The frame with its message CRC (the last four bytes) wrong: the damage is in the framing,
    which botocore checks (``ChecksumMismatch``), as a frame corrupted on its way would be."""
    return frame[:-4] + bytes(b ^ 0xFF for b in frame[-4:])


def unknown_event(request: exchange.WireRequest) -> bytes:
    """A well-formed event of a type no client knows, padded like the others."""
    return event_frame("emulatorUnknownEvent", _json({"note": "an event type no client knows", "p": "abcdefgh"}))


def unknown_fields(frame: bytes) -> bytes:
    """The frame's event carrying a field no client knows, at its top and in its ``usage`` and
    ``metrics``: not inside a ``delta`` or ``start``, which are unions (one member set, as botocore
    checks), where AWS adds members as new kinds of block instead."""
    headers, payload = decode_frame(frame)
    try:
        event = json.loads(payload)
    except ValueError:
        return frame
    return encode_frame(headers, _json(faults.with_unknown_fields(event, frozenset({"usage", "metrics"}))))
