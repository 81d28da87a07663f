"""Gemini ``generateContent`` / ``streamGenerateContent``, rendered as the service sends them.

Paths: the Developer API (``/v1beta/models/M:generateContent``), Vertex AI with a project
(``/v1/projects/P/locations/L/publishers/google/models/M:...``) and Vertex express mode (an API
key, no project: ``/v1/publishers/google/models/M:...``). Gemini puts the model and the method in
one path segment (``gemini-2.0-flash:generateContent``); each route spells the method as a literal
after the ``{model}`` parameter, which starlette compiles to ``(?P<model>[^/]+):generateContent``,
so its regex match already splits the segment (the parameter backtracks to the last ``:``). A
server that matches one ``{model_action}`` segment instead can use :func:`split_model_action`.

What the recordings show, and this module reproduces:

- the reply is ``{"candidates": [{"content": {"parts": [...], "role": "model"}, "finishReason",
  ...}], "usageMetadata", "modelVersion", "responseId"}``; a non-streamed body is indented JSON,
  a stream is ``data: <json>`` events separated by CRLF CRLF;
- a function call is a whole ``functionCall`` part (``name``, ``args``; ``id`` only where the
  model sends one, as gemini-3.5 does), also when streamed: never argument fragments;
- thought parts are ``{"text", "thought": true}``; thinking models (2.5 and later) sign the
  first function call of a reply, and here a thought's last part, with a base64
  ``thoughtSignature``;
- generations differ in small ways, chosen from the model name: before 2.5 a stream puts every
  call in one chunk and the finish reason on the last content chunk, and a whole reply carries
  ``avgLogprobs``; from 2.5 on every candidate has ``index: 0``, calls stream one a chunk, a
  stream closes with an empty text part carrying the finish reason, and a
  reply with calls says ``finishMessage: "Model generated function call(s)."``.

Finish reasons: ``stop`` -> ``STOP``, ``length`` -> ``MAX_TOKENS``; a call whose scripted raw
arguments are not a JSON object ends the reply with ``MALFORMED_FUNCTION_CALL`` (Gemini cannot
send such arguments); an ``error`` (or ``aborted``) turn is Gemini's error body with status 500,
in band as a ``data: {"error": ...}`` event when streamed.

Delivery faults on the SSE stream (the hooks ``harness.emulator._faults`` looks for): a truncated
stream loses its last chunk, the one carrying ``finishReason`` (or the in-band error event); a
malformed chunk is a ``data:`` event whose JSON is cut in half, still CRLF-framed. Gemini's
events carry no type: every one is a ``GenerateContentResponse``, so an unknown event is a chunk
holding only a field no client knows, as a newer service version would send; google-genai keeps
the fields it knows, so it reaches a backend as a chunk with no candidates.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from typing import Any, Final

import harness.emulator._exchange as exchange
from harness.emulator._scripted import (
    arguments_of,
    check_renderable,
    estimated_usage,
    opaque,
    pieces,
    thinking_tokens,
)
from harness.script import ScriptedCall, Turn
from harness.wire import Route, routes_of, sse_data, sse_frame

_METHODS: Final = ("generateContent", "streamGenerateContent")
_PREFIXES: Final = (
    "/{version}/models/{model}",
    "/{version}/projects/{project}/locations/{location}/publishers/google/models/{model}",
    "/{version}/publishers/google/models/{model}",
)

ROUTES: Final[tuple[Route, ...]] = routes_of("gemini")
"""Developer API, Vertex AI with a project, Vertex express mode; each for both methods."""

STATUS_NAMES: Final[dict[int, str]] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""HTTP status -> the google.rpc status name Gemini puts in ``error.status``."""

_JSON_HEADERS: Final = {
    "content-type": "application/json; charset=UTF-8",
    "vary": "Origin, X-Origin, Referer",
    "server": "scaffolding on HTTPServer2",
    "server-timing": "gfet4t7; dur=1",
}
_SSE_HEADERS: Final = {
    "content-type": "text/event-stream",
    "content-disposition": "attachment",
    "vary": "Origin, X-Origin, Referer",
    "server": "scaffolding on HTTPServer2",
    "server-timing": "gfet4t7; dur=1",
}
_CALLS_MESSAGE: Final = "Model generated function call(s)."
_STREAM_PIECE: Final = 24
_VERSION = re.compile(r"gemini-(\d+(?:\.\d+)?)")


def split_model_action(segment: str) -> tuple[str, str]:
    """``"gemini-2.0-flash:generateContent"`` -> ``("gemini-2.0-flash", "generateContent")``."""
    model, _, action = segment.rpartition(":")
    return model, action


def model_of(request: exchange.WireRequest) -> str:
    """The model the path names (the ``model`` path parameter, else read off the path)."""
    model = request.path_params.get("model")
    if model:
        return model
    return split_model_action(request.path.rpartition("/models/")[2])[0]


def _thinking_generation(model: str) -> bool:
    """Gemini 2.5 and later think and sign; unknown names are taken as current models."""
    found = _VERSION.search(model)
    return found is None or float(found.group(1)) >= 2.5


def thought_signature(kind: str, covered: str) -> str:
    """A base64 ``thoughtSignature`` derived from what it signs (``_scripted.opaque``): a call's
    name and arguments (``kind`` ``call``) or a thought's text (``thought``), so the same reasoning
    is signed the same way wherever it is served, and W2 knows the signature that must come back."""
    return base64.b64encode(b"\x12\x1c" + opaque(f"gemini {kind}", covered, 24).encode()).decode("ascii")


def call_signature(name: str, arguments: dict[str, Any]) -> str:
    """The signature of the first function call of a reply (what Gemini 3 requires back with it)."""
    return thought_signature("call", name + json.dumps(arguments, sort_keys=True, ensure_ascii=False))


# -- replies -------------------------------------------------------------------------------------


def render(turn: Turn, request: exchange.WireRequest, ids: exchange.IdSource) -> exchange.WireReply:
    """The turn as Gemini answers ``request``: one JSON body, or SSE when the request streams."""
    check_renderable(turn)
    streamed = request.route.endpoint == "streamGenerateContent"
    if turn.stop_reason in ("error", "aborted"):
        if streamed and request.query.get("alt") == "sse":
            return exchange.WireReply(200, dict(_SSE_HEADERS), chunks=[stream_error_event(500, turn.error or "")])
        return error_reply(500, turn.error or "", request)
    model = model_of(request)
    modern = _thinking_generation(model)
    parts, finish = _parts(turn, modern, ids)
    usage = _usage_metadata(turn, request.body, modern)
    response_id = ids.next("", 23)
    if not streamed:
        candidate = _candidate(parts, finish, modern, whole=True)
        body = _response(candidate, usage, model, response_id)
        return exchange.WireReply(200, dict(_JSON_HEADERS), body=_indented(body))
    chunks = [_response(candidate, usage, model, response_id) for candidate in _stream(parts, finish, modern)]
    if request.query.get("alt") != "sse":  # streamGenerateContent without SSE answers one JSON array
        return exchange.WireReply(200, dict(_JSON_HEADERS), body=_indented(chunks))
    return exchange.WireReply(200, dict(_SSE_HEADERS), chunks=[_event(chunk) for chunk in chunks])


def _parts(turn: Turn, modern: bool, ids: exchange.IdSource) -> tuple[list[dict[str, Any]], str]:
    """The reply's parts in order, and its finish reason."""
    parts: list[dict[str, Any]] = []
    signed_call = False
    for block in turn.blocks:
        if isinstance(block, ScriptedCall):
            arguments, _ = arguments_of(block)
            if not isinstance(arguments, dict):
                return parts, "MALFORMED_FUNCTION_CALL"
            call: dict[str, Any] = {"name": block.name, "args": arguments}
            if block.id is not None:
                call["id"] = block.id
            part: dict[str, Any] = {"functionCall": call}
            if modern and not signed_call:
                part["thoughtSignature"] = call_signature(block.name, arguments)
                signed_call = True
            parts.append(part)
        else:
            kind, text = block
            if kind == "thinking":
                parts.append({"text": text, "thought": True, "thoughtSignature": thought_signature("thought", text)})
            else:
                parts.append({"text": text})
    return parts, "MAX_TOKENS" if turn.stop_reason == "length" else "STOP"


def _candidate(parts: list[dict[str, Any]], finish: str | None, modern: bool, *, whole: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts or [{"text": ""}], "role": "model"}}
    if finish is not None:
        candidate["finishReason"] = finish
        if finish == "MALFORMED_FUNCTION_CALL":
            candidate["finishMessage"] = "Malformed function call: the arguments are not a JSON object."
        elif modern and whole and any("functionCall" in part for part in parts):
            candidate["finishMessage"] = _CALLS_MESSAGE
        if whole and not modern:
            candidate["avgLogprobs"] = -0.0123
    if modern:
        candidate["index"] = 0
    return candidate


def _stream(parts: list[dict[str, Any]], finish: str, modern: bool) -> list[dict[str, Any]]:
    """The candidates of a stream's chunks: text and thoughts in pieces, calls whole."""
    pending: list[list[dict[str, Any]]] = []
    legacy_calls: list[dict[str, Any]] = []
    for part in parts:
        if "functionCall" in part:
            if modern:
                pending.append([part])
            else:
                legacy_calls.append(part)
            continue
        if legacy_calls:
            pending.append(legacy_calls)
            legacy_calls = []
        texts = pieces(part["text"], _STREAM_PIECE)
        for number, text in enumerate(texts):
            piece: dict[str, Any] = {"text": text}
            if part.get("thought"):
                piece["thought"] = True
                if number == len(texts) - 1:
                    piece["thoughtSignature"] = part["thoughtSignature"]
            pending.append([piece])
    if legacy_calls:
        pending.append(legacy_calls)
    if not pending or modern or finish == "MALFORMED_FUNCTION_CALL":
        pending.append([{"text": ""}])
    last = len(pending) - 1
    return [_candidate(chunk, finish if i == last else None, modern, whole=False) for i, chunk in enumerate(pending)]


def _usage_metadata(turn: Turn, request_body: Any, modern: bool) -> dict[str, Any]:
    usage = estimated_usage(turn, request_body)
    prompt = usage.input + usage.cache_read
    thoughts = min(thinking_tokens(turn), usage.output) if turn.usage is None else 0
    candidates = usage.output - thoughts
    meta: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": usage.total_tokens or prompt + usage.output,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if usage.cache_read:
        meta["cachedContentTokenCount"] = usage.cache_read
    if thoughts:
        meta["thoughtsTokenCount"] = thoughts
    if not modern:
        meta["candidatesTokensDetails"] = [{"modality": "TEXT", "tokenCount": candidates}]
    meta["serviceTier"] = "standard"
    return meta


def _response(candidate: dict[str, Any], usage: dict[str, Any], model: str, response_id: str) -> dict[str, Any]:
    return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": response_id}


def _indented(body: Any) -> bytes:
    return json.dumps(body, indent=2, ensure_ascii=False).encode("utf-8")


def _event(chunk: dict[str, Any]) -> bytes:
    return sse_frame(json.dumps(chunk, separators=(",", ": "), ensure_ascii=False), crlf=True)


def refuse(reply: exchange.WireReply, request: exchange.WireRequest, how: str) -> exchange.WireReply:
    """The rendered reply as Gemini refuses: ``refusal``, its candidate stopped with
    ``finishReason: SAFETY`` and a blocked safety rating (the text before it kept);
    ``content_filter``, the prompt blocked: one chunk with ``promptFeedback.blockReason`` and no
    candidates at all."""
    if reply.chunks is None:
        value = json.loads(reply.body or b"null")
        chunks = _refused(value if isinstance(value, list) else [value], how)
        return dataclasses.replace(reply, body=_indented(chunks if isinstance(value, list) else chunks[0]))
    events = [json.loads(sse_data(chunk)) for chunk in reply.chunks]
    return dataclasses.replace(reply, chunks=[_event(chunk) for chunk in _refused(events, how)])


_BLOCKED = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]


def _refused(chunks: list[Any], how: str) -> list[Any]:
    if how == "content_filter":
        first = {k: v for k, v in chunks[0].items() if k != "candidates"}
        return [{"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": _BLOCKED}, **first}]
    for chunk in chunks:
        for candidate in chunk.get("candidates") or ():
            if "finishReason" in candidate:
                candidate.update(finishReason="SAFETY", safetyRatings=_BLOCKED)
                candidate.pop("finishMessage", None)
    return chunks


# -- errors --------------------------------------------------------------------------------------


def error_body(status: int, message: str, retry_after: float | None = None) -> dict[str, Any]:
    """``{"error": {"code", "message", "status"}}``; a 429, or an error given ``retry_after``, also
    says how long to wait: a ``google.rpc.RetryInfo`` whose ``retryDelay`` is ``retry_after``
    (``1s`` for a 429 without one)."""
    error: dict[str, Any] = {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}
    if status == 429 or retry_after is not None:
        delay = duration(1.0 if retry_after is None else retry_after)
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]
    return {"error": error}


def duration(seconds: float) -> str:
    """A ``google.protobuf.Duration`` in its JSON form: seconds with 0, 3, 6 or 9 decimals and an
    ``s`` (``2s``, ``2.500s``, ``0.000250s``), as Google's JSON APIs write it."""
    whole, nanos = divmod(round(max(seconds, 0.0) * 1_000_000_000), 1_000_000_000)
    if not nanos:
        return f"{whole}s"
    digits = 3 if nanos % 1_000_000 == 0 else 6 if nanos % 1_000 == 0 else 9
    return f"{whole}.{nanos // 10 ** (9 - digits):0{digits}d}s"


def error_reply(
    status: int, message: str, request: exchange.WireRequest, *, retry_after: float | None = None
) -> exchange.WireReply:
    """Gemini's error: JSON with the google.rpc status name, also for a request that asked to stream."""
    return exchange.WireReply(status, dict(_JSON_HEADERS), body=_indented(error_body(status, message, retry_after)))


def stream_error_event(status: int, message: str) -> bytes:
    """An error inside a stream that already answered 200: a ``data:`` event holding the error body."""
    return _event(error_body(status, message))


def stream_error(status: int, message: str, reply: exchange.WireReply, request: exchange.WireRequest) -> list[bytes]:
    """The in-band error of a stream that answered 200 (the delivery fault ``error_event``)."""
    return [stream_error_event(status, message)]


# -- delivery faults -----------------------------------------------------------------------------


def terminal(reply: exchange.WireReply, request: exchange.WireRequest) -> int:
    """The stream's terminal event is its last chunk: the one with ``finishReason`` (or the error)."""
    return 1


def malformed(chunk: bytes) -> bytes:
    """The chunk's JSON cut in half, the event still framed as Gemini frames them (CRLF CRLF)."""
    payload = sse_data(chunk)
    return sse_frame(payload[: max(1, len(payload) // 2)], crlf=True)


def unknown_event(request: exchange.WireRequest) -> bytes:
    """A chunk of a shape no client knows: no candidates, one field from a newer API."""
    return _event({"emulatorUnknownEvent": {"note": "a field no client knows"}, "modelVersion": "emulated"})


def interleave(chunks: list[bytes]) -> list[bytes]:
    """A stream whose chunks hold one ``functionCall`` each: a chunk carrying several calls (what
    generations before 2.5 send) split into one chunk per call, the last keeping what else it had."""
    out: list[bytes] = []
    for chunk in chunks:
        try:
            data = json.loads(sse_data(chunk))
            parts = data["candidates"][0]["content"]["parts"]
        except (ValueError, KeyError, IndexError, TypeError):
            out.append(chunk)
            continue
        calls = [part for part in parts if "functionCall" in part]
        if len(calls) < 2:
            out.append(chunk)
            continue
        for call in calls[:-1]:
            candidate = {k: v for k, v in data["candidates"][0].items() if k in ("content", "index")}
            alone = {**data, "candidates": [{**candidate, "content": {"parts": [call], "role": "model"}}]}
            out.append(_event(alone))
        rest = [part for part in parts if part is calls[-1] or "functionCall" not in part]
        last = {**data["candidates"][0], "content": {**data["candidates"][0]["content"], "parts": rest}}
        out.append(_event({**data, "candidates": [last]}))
    return out
