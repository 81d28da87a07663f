"""OpenAI as the emulator speaks it: Chat Completions and Responses, whole or streamed (SSE).

The shapes follow what the recordings in ``../shared/provider-cassettes/openai`` show for current
models: Chat chunks open with the role (and the first tool call's id, type and name with empty
``arguments``), carry the argument JSON in several fragments, end with a chunk holding only the
``finish_reason``, then a usage-only chunk when ``stream_options.include_usage`` asked for it, then
``data: [DONE]``. Responses streams run ``response.created``, ``response.in_progress``, per output
item ``output_item.added`` / its deltas / its ``*.done`` / ``output_item.done``, and finish with
``response.completed`` (or ``response.incomplete``), every event with a ``sequence_number``.

Choices a reader might wonder about:

- Chat Completions has no reasoning field at OpenAI; a scripted thinking block goes out as
  ``reasoning_content``, the field OpenAI-compatible servers (DeepSeek, OpenRouter) use, so a
  scripted turn loses nothing on either API.
- A tool the request declared as a ``custom`` (free-form) tool is answered with a custom call
  (Chat ``type: "custom"``, Responses ``custom_tool_call``) whose input is the call's raw text,
  as the real service does for such tools.
- ``obfuscation`` (random padding the real service adds to stream deltas) is left out: it carries
  nothing and no client reads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import harness.wire as wire
from harness.emulator._exchange import IdSource, WireReply, WireRequest
from harness.emulator._faults import edit_events, unknown_sse_event
from harness.emulator._scripted import opaque
from harness.script import ScriptedCall, Turn

ROUTES: tuple[wire.Route, ...] = wire.routes_of("openai")

CHUNK = 8
"""Characters per streamed text or argument fragment: small, so every value spans several deltas."""

CREATED = 1_780_000_000
"""The fixed ``created`` timestamp: replies are deterministic."""

_HEADERS = {"openai-version": "2020-10-01", "openai-processing-ms": "1"}

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("rate_limit_exceeded", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def split(text: str, size: int = CHUNK) -> list[str]:
    """``text`` in fragments of ``size`` characters (``[""]`` for the empty string: one empty delta)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse(events: Iterable[tuple[str | None, Any]], *, done: bool = False) -> list[bytes]:
    """SSE frames: ``event:`` lines where the API names events (Responses), ``data:`` JSON always."""
    frames = [
        wire.sse_frame(json.dumps(data, separators=(",", ":"), ensure_ascii=False), name or None)
        for name, data in events
    ]
    if done:
        frames.append(wire.sse_frame("[DONE]"))
    return frames


def _json_reply(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> WireReply:
    head = {"content-type": "application/json", **_HEADERS, **(headers or {})}
    return WireReply(status, head, json.dumps(body, ensure_ascii=False).encode())


def _stream_reply(chunks: list[bytes], request_id: str) -> WireReply:
    head = {"content-type": "text/event-stream; charset=utf-8", **_HEADERS, "x-request-id": request_id}
    return WireReply(200, head, chunks=chunks)


def _model(request: WireRequest) -> str:
    body = request.body if isinstance(request.body, Mapping) else {}
    model = body.get("model")
    return model if isinstance(model, str) and model else "gpt-emulated"


def custom_tools(request: WireRequest) -> frozenset[str]:
    """Names of the tools the request declared as ``custom`` (free-form input, not JSON)."""
    body = request.body if isinstance(request.body, Mapping) else {}
    names = set()
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping) and tool.get("type") == "custom":
            name = tool.get("name") or (tool.get("custom") or {}).get("name")
            if isinstance(name, str):
                names.add(name)
    return frozenset(names)


def _usage_counts(turn: Turn) -> tuple[int, int, int]:
    """(prompt, completion, cached) tokens: the scripted usage, or small fixed counts."""
    usage = turn.usage
    if usage is None:
        return 10, 5, 0
    return usage.input + usage.cache_read, usage.output, usage.cache_read


def _texts(turn: Turn, kind: str) -> str:
    return "".join(block[1] for block in turn.blocks if not isinstance(block, ScriptedCall) and block[0] == kind)


def _calls(turn: Turn) -> list[ScriptedCall]:
    return [block for block in turn.blocks if isinstance(block, ScriptedCall)]


def render(turn: Turn, request: WireRequest, ids: IdSource) -> WireReply:
    """The scripted turn as OpenAI answers the request's endpoint, streamed when it asked."""
    if turn.stop_reason in ("error", "aborted"):
        return error_reply(500, turn.error or "The server had an error while processing your request.", request)
    if request.route.endpoint == "responses":
        return _responses(turn, request, ids)
    return _chat(turn, request, ids)


# ---------------------------------------------------------------------------------------------
# Chat Completions
# ---------------------------------------------------------------------------------------------


def _chat_calls(turn: Turn, request: WireRequest, ids: IdSource) -> list[tuple[str, str, str, bool]]:
    custom = custom_tools(request)
    return [
        (call.id or ids.next("call_"), call.name, call.arguments_text(), call.name in custom) for call in _calls(turn)
    ]


def _chat_finish(turn: Turn, calls: list[Any]) -> str:
    if turn.stop_reason == "length":
        return "length"
    return "tool_calls" if calls else "stop"


def _chat_usage(turn: Turn) -> dict[str, Any]:
    prompt, completion, cached = _usage_counts(turn)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat(turn: Turn, request: WireRequest, ids: IdSource) -> WireReply:
    completion_id = ids.next("chatcmpl-")
    model = _model(request)
    calls = _chat_calls(turn, request, ids)
    text, thinking = _texts(turn, "text"), _texts(turn, "thinking")
    finish = _chat_finish(turn, calls)
    if not request.streaming:
        body = _chat_completion(turn, completion_id, model, calls, text, thinking, finish)
        return _json_reply(body, headers={"x-request-id": ids.next("req_", 32)})
    chunks = _chat_chunks(turn, request, completion_id, model, calls, (text, thinking), finish)
    return _stream_reply(sse(((None, c) for c in chunks), done=True), ids.next("req_", 32))


_ChatCalls = list[tuple[str, str, str, bool]]
"""Each call of a turn as chat sends it: its id, name, argument text and whether the tool is custom."""


def _chat_completion(
    turn: Turn, completion_id: str, model: str, calls: _ChatCalls, text: str, thinking: str, finish: str
) -> dict[str, Any]:
    """The whole ``chat.completion`` body."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None, "refusal": None, "annotations": []}
    if thinking:
        message["reasoning_content"] = thinking
    if calls:
        message["tool_calls"] = [_chat_call(call_id, name, args, is_custom) for call_id, name, args, is_custom in calls]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": CREATED,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": _chat_usage(turn),
        "service_tier": "default",
        "system_fingerprint": "fp_emulated",
    }


def _chat_chunks(
    turn: Turn,
    request: WireRequest,
    completion_id: str,
    model: str,
    calls: _ChatCalls,
    texts: tuple[str, str],
    finish: str,
) -> list[dict[str, Any]]:
    """The streamed ``chat.completion.chunk`` s: the role on the first delta, thinking, text, each call's
    opener and argument pieces, the finish, and the usage chunk when ``stream_options`` asks for it."""
    text, thinking = texts
    chunk, include_usage = _chunk_frame(request, completion_id, model)
    chunks: list[dict[str, Any]] = []
    role: dict[str, Any] = {"role": "assistant"}
    for piece in split(thinking) if thinking else []:
        chunks.append(
            chunk({**role, "content": None, "reasoning_content": piece} if role else {"reasoning_content": piece})
        )
        role = {}
    if text or not calls:
        for piece in split(text):
            chunks.append(chunk({**role, "content": piece, "refusal": None} if role else {"content": piece}))
            role = {}
    for position, (call_id, name, args, is_custom) in enumerate(calls):
        field, key = ("custom", "input") if is_custom else ("function", "arguments")
        opener = {"index": position, "id": call_id, "type": field, field: {"name": name, key: ""}}
        chunks.append(
            chunk(
                {**role, "content": None, "tool_calls": [opener], "refusal": None} if role else {"tool_calls": [opener]}
            )
        )
        role = {}
        for piece in split(args) if args else []:
            chunks.append(chunk({"tool_calls": [{"index": position, field: {key: piece}}]}))
    chunks.append(chunk({}, finish))
    if include_usage:
        chunks.append({**chunk(None), "usage": _chat_usage(turn)})
    return chunks


def _chunk_frame(request: WireRequest, completion_id: str, model: str) -> tuple[Callable[..., dict[str, Any]], bool]:
    """How each chunk of this completion is framed, and whether the client asked for a usage chunk."""
    sent: Mapping[str, Any] = request.body if isinstance(request.body, Mapping) else {}
    options = sent.get("stream_options")
    include_usage = bool(options.get("include_usage")) if isinstance(options, Mapping) else False

    def chunk(delta: dict[str, Any] | None, finish_reason: str | None = None) -> dict[str, Any]:
        choices = (
            [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        )
        data: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "service_tier": "default",
            "system_fingerprint": "fp_emulated",
            "choices": choices,
        }
        if include_usage:
            data["usage"] = None
        return data

    return chunk, include_usage


def _chat_call(call_id: str, name: str, args: str, is_custom: bool) -> dict[str, Any]:
    if is_custom:
        return {"id": call_id, "type": "custom", "custom": {"name": name, "input": args}}
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------


def _responses_usage(turn: Turn) -> dict[str, Any]:
    prompt, completion, cached = _usage_counts(turn)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + completion,
    }


def _items(turn: Turn, request: WireRequest, ids: IdSource) -> list[dict[str, Any]]:
    """The finished output items, in the turn's block order."""
    custom = custom_tools(request)
    items: list[dict[str, Any]] = []
    for block in turn.blocks:
        if isinstance(block, ScriptedCall):
            items.append(_call_item(block, block.name in custom, ids))
        elif block[0] == "thinking":
            items.append(reasoning_item(block[1], request))
        else:
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": block[1]}
            items.append(
                {
                    "id": ids.next("msg_", 48),
                    "type": "message",
                    "status": "completed",
                    "content": [part],
                    "phase": "final_answer",
                    "role": "assistant",
                }
            )
    return items


def encrypts_reasoning(request: WireRequest) -> bool:
    """Whether a Responses request asked for its reasoning encrypted (``include:
    ["reasoning.encrypted_content"]``, what an agent with ``store: false`` needs to send it back)."""
    body = request.body if isinstance(request.body, Mapping) else {}
    include = body.get("include")
    return isinstance(include, list) and "reasoning.encrypted_content" in include


def reasoning_item(summary: str, request: WireRequest) -> dict[str, Any]:
    """A reasoning output item: its summary, and ``encrypted_content`` only when the request
    includes it (null otherwise, as OpenAI sends it). The id and the encrypted content are derived
    from the reasoning (``_scripted.opaque``), so W2 knows which item must come back unchanged."""
    return {
        "id": "rs_" + opaque("responses reasoning", summary, 48),
        "type": "reasoning",
        "encrypted_content": "gAAAAAB" + opaque("responses encrypted", summary, 64)
        if encrypts_reasoning(request)
        else None,
        "summary": [{"type": "summary_text", "text": summary}] if summary else [],
    }


def _call_item(call: ScriptedCall, custom: bool, ids: IdSource) -> dict[str, Any]:
    """A call as a finished output item: a ``custom_tool_call`` for a custom tool, else a ``function_call``."""
    call_id = call.id or ids.next("call_")
    if custom:
        return {
            "id": ids.next("ctc_", 48),
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": call_id,
            "input": call.arguments_text(),
            "name": call.name,
        }
    return {
        "id": ids.next("fc_", 48),
        "type": "function_call",
        "status": "completed",
        "arguments": call.arguments_text(),
        "call_id": call_id,
        "name": call.name,
    }


def _response(turn: Turn, request: WireRequest, response_id: str, output: list[Any], *, final: bool) -> dict[str, Any]:
    body = request.body if isinstance(request.body, Mapping) else {}
    incomplete = turn.stop_reason == "length"
    status = ("incomplete" if incomplete else "completed") if final else "in_progress"
    return {
        "id": response_id,
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "background": False,
        "billing": {"payer": "developer"},
        "completed_at": CREATED + 1 if final and not incomplete else None,
        "error": None,
        "frequency_penalty": 0.0,
        "incomplete_details": {"reason": "max_output_tokens"} if final and incomplete else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": _model(request),
        "moderation": None,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "presence_penalty": 0.0,
        "previous_response_id": None,
        "prompt_cache_key": None,
        "prompt_cache_retention": None,
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": _responses_usage(turn) if final else None,
        "user": None,
        "metadata": {},
    }


def _responses(turn: Turn, request: WireRequest, ids: IdSource) -> WireReply:
    response_id = ids.next("resp_", 48)
    items = _items(turn, request, ids)
    if not request.streaming:
        return _json_reply(
            _response(turn, request, response_id, items, final=True), headers={"x-request-id": ids.next("req_", 32)}
        )
    events: list[tuple[str, dict[str, Any]]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append((kind, {"type": kind, **fields, "sequence_number": len(events)}))

    emit("response.created", response=_response(turn, request, response_id, [], final=False))
    emit("response.in_progress", response=_response(turn, request, response_id, [], final=False))
    for position, item in enumerate(items):
        _item_events(position, item, emit)
    final = _response(turn, request, response_id, items, final=True)
    emit("response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final)
    return _stream_reply(sse(events), ids.next("req_", 32))


def _item_events(position: int, item: dict[str, Any], emit: Callable[..., None]) -> None:
    """One output item streamed: added, its content's deltas and done events, then done itself."""
    kind, item_id = item["type"], item["id"]
    at = {"item_id": item_id, "output_index": position}
    if kind == "message":
        emit(
            "response.output_item.added",
            item={**item, "status": "in_progress", "content": []},
            output_index=position,
        )
        text = item["content"][0]["text"]
        empty_part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        emit("response.content_part.added", content_index=0, **at, part=empty_part)
        for piece in split(text):
            emit("response.output_text.delta", content_index=0, delta=piece, **at, logprobs=[])
        emit("response.output_text.done", content_index=0, **at, logprobs=[], text=text)
        emit("response.content_part.done", content_index=0, **at, part=item["content"][0])
    elif kind == "reasoning":
        emit("response.output_item.added", item={**item, "summary": []}, output_index=position)
        for summary_index, part in enumerate(item["summary"]):
            at_part = {**at, "summary_index": summary_index}
            emit("response.reasoning_summary_part.added", **at_part, part={"type": "summary_text", "text": ""})
            for piece in split(part["text"]):
                emit("response.reasoning_summary_text.delta", delta=piece, **at_part)
            emit("response.reasoning_summary_text.done", **at_part, text=part["text"])
            emit("response.reasoning_summary_part.done", **at_part, part=part)
    elif kind == "function_call":
        emit(
            "response.output_item.added",
            item={**item, "status": "in_progress", "arguments": ""},
            output_index=position,
        )
        for piece in split(item["arguments"]) if item["arguments"] else []:
            emit("response.function_call_arguments.delta", delta=piece, **at)
        emit("response.function_call_arguments.done", arguments=item["arguments"], **at)
    else:  # custom_tool_call
        emit("response.output_item.added", item={**item, "status": "in_progress", "input": ""}, output_index=position)
        for piece in split(item["input"]) if item["input"] else []:
            emit("response.custom_tool_call_input.delta", delta=piece, **at)
        emit("response.custom_tool_call_input.done", input=item["input"], **at)
    emit("response.output_item.done", item=item, output_index=position)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def error_reply(status: int, message: str, request: WireRequest, *, code: str | None = None) -> WireReply:
    """OpenAI's error body (``{"error": {message, type, param, code}}``) and headers for ``status``;
    ``code``: the error's own (``insufficient_quota``, a 429 that is no rate limit: its type says
    it too, and no rate-limit header nor ``x-should-retry`` comes with it, so the ``openai`` SDK
    retries it as a rate limit).

    An error is plain JSON even when the request asked for a stream, as the recordings show.
    """
    kind, code = (code, code) if code else _error_type(status)
    headers = {"x-request-id": "req_emulated_error"}
    if status == 429 and kind == "rate_limit_exceeded":
        headers.update({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"})
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return _json_reply(body, status, headers)


def stream_error(status: int, message: str, reply: WireReply, request: WireRequest) -> list[bytes]:
    """The in-band error of a stream that answered 200: Chat's ``data: {"error": {...}}`` event (the
    body of ``status``'s error reply; the ``openai`` SDK raises ``APIError`` on it), or Responses'
    ``response.failed`` (the created response, ``status: failed``, with ``error: {code, message}``)."""
    kind, code = _error_type(status)
    if request.route.endpoint != "responses":
        return sse([(None, {"error": {"message": message, "type": kind, "param": None, "code": code}})])
    chunks = reply.chunks or []
    created: dict[str, Any] = {}
    if chunks:
        created = json.loads(wire.sse_data(chunks[0])).get("response", {})
    failed = {**created, "status": "failed", "error": {"code": code or kind, "message": message}}
    event = {"type": "response.failed", "response": failed, "sequence_number": len(chunks) - terminal(reply, request)}
    return sse([("response.failed", event)])


def _error_type(status: int) -> tuple[str, str | None]:
    return _ERROR_TYPES.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))


def refuse(reply: WireReply, request: WireRequest, how: str) -> WireReply:
    """The rendered reply as a refusal (``how``: ``refusal``) or a content filter
    (``content_filter``): Chat's ``message.refusal`` with content null (its deltas ``refusal``),
    or its ``finish_reason: content_filter``; Responses' ``refusal`` part (``response.refusal.*``
    events), or its response ``incomplete`` for ``content_filter``."""
    if request.route.endpoint == "responses":
        return edit_events(reply, lambda name, event: _responses_refused(name, event, how))
    return edit_events(reply, lambda name, chunk: (name, _chat_refused(chunk, how)))


def _chat_refused(chunk: Any, how: str) -> Any:
    for choice in chunk.get("choices") or () if isinstance(chunk, dict) else ():
        if how == "content_filter":
            if choice.get("finish_reason") == "stop":
                choice["finish_reason"] = "content_filter"
            continue
        said = choice.get("message") or choice.get("delta") or {}
        if said.get("content") is not None:
            said["refusal"], said["content"] = said["content"], None
    return chunk


_REFUSAL_EVENTS = {
    "response.output_text.delta": "response.refusal.delta",
    "response.output_text.done": "response.refusal.done",
}


def _responses_refused(name: str | None, event: Any, how: str) -> tuple[str | None, Any]:
    if how == "content_filter":
        response = event.get("response") if name is not None else event
        if isinstance(response, dict) and response.get("status") == "completed":
            response.update(status="incomplete", incomplete_details={"reason": "content_filter"})
            if name is not None:
                event["type"] = name = "response.incomplete"
        return name, event
    if name in _REFUSAL_EVENTS:
        event = {k: v for k, v in event.items() if k not in ("logprobs", "annotations")}
        event["type"] = name = _REFUSAL_EVENTS[name]
        if "text" in event:
            event["refusal"] = event.pop("text")
    return name, _refusal_parts(event)


def _refusal_parts(value: Any) -> Any:
    """Every ``output_text`` part within ``value`` as a ``refusal`` part holding its text."""
    if isinstance(value, list):
        return [_refusal_parts(v) for v in value]
    if not isinstance(value, dict):
        return value
    if value.get("type") == "output_text":
        return {"type": "refusal", "refusal": value.get("text", "")}
    return {k: _refusal_parts(v) for k, v in value.items()}


def terminal(reply: WireReply, request: WireRequest) -> int:
    """How many trailing chunks end a stream: Chat's finish chunk, usage chunk and ``[DONE]``;
    Responses' ``response.completed``. ``fault.truncate`` removes them."""
    if request.route.endpoint == "responses":
        return 1
    body = request.body if isinstance(request.body, Mapping) else {}
    return 3 if (body.get("stream_options") or {}).get("include_usage") else 2


def interleave(chunks: list[bytes]) -> list[bytes]:
    """A chat stream whose calls' deltas alternate by ``index``, as OpenAI-compatible servers that
    stream parallel calls side by side send them: each call's opener, then its argument pieces,
    taken one call at a time in turn (each call's own order kept; a Responses stream unchanged)."""
    positions: dict[int, list[int]] = {}
    for position, chunk in enumerate(chunks):
        index = _call_index(chunk)
        if index is not None:
            positions.setdefault(index, []).append(position)
    if len(positions) < 2:
        return chunks
    queues = [list(found) for _, found in sorted(positions.items())]
    order: list[int] = []
    while any(queues):
        order += [queue.pop(0) for queue in queues if queue]
    slots = sorted(p for found in positions.values() for p in found)
    out = list(chunks)
    for slot, taken in zip(slots, order, strict=True):
        out[slot] = chunks[taken]
    return out


def _call_index(chunk: bytes) -> int | None:
    """The ``index`` of the one call a chat chunk's delta carries (``None``: no call delta)."""
    if b'"tool_calls"' not in chunk or chunk.startswith(b"event:"):
        return None
    try:
        data = json.loads(wire.sse_data(chunk))
        (call,) = data["choices"][0]["delta"]["tool_calls"]
        return int(call["index"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def unknown_event(request: WireRequest) -> bytes:
    """What a stream carries that no client may act on. Responses: an event of a type no client
    knows (OpenAI adds event types there). Chat: its chunks have no types to add, so an SSE comment
    line, which the SSE standard says readers skip and OpenAI-compatible hosts send between chunks
    (OpenRouter's ``: OPENROUTER PROCESSING``)."""
    if request.route.endpoint == "chat.completions":
        return b": emulator keep-alive\n\n"
    return unknown_sse_event(request)
