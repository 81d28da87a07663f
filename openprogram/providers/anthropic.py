"""Anthropic Messages API backend: one ``ModelRequest`` in, the builder's event stream out.

The module speaks Anthropic's wire format in both directions. Outbound, the loop's messages are
turned into ``messages.create`` arguments (signed thinking goes back as thinking, a batch of tool
results becomes the one user message Anthropic requires). Inbound, raw SSE events (or one whole
``Message`` when streaming is off) are replayed through ``MessageBuilder`` so the loop sees the
same event sequence whichever mode ran. Every failure the SDK or the network can produce ends as
an ``error`` event: the loop must never have to catch a provider exception.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar

import anthropic

from openprogram.errors import ReplyError, describe_exception
from openprogram.providers import ModelRequest, tool_choice
from openprogram.providers._shared import (
    END,
    Aborted,
    CancelRace,
    Decoder,
    SDKProvider,
    error_body_fields,
    http_error_text,
    is_replayable,
    retry_after,
)
from openprogram.providers.builder import MessageBuilder
from openprogram.types import (
    AssistantMessage,
    AssistantMessageEvent,
    Message,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

DEFAULT_MAX_TOKENS = 4096
"""Anthropic rejects a request without ``max_tokens``; this is the cap when nobody chose one."""

_LEGACY_REDACTED_PREFIX = "redacted_thinking:"
"""How histories saved before ``ThinkingContent.redacted`` existed marked a redacted block: the
opaque ``data`` behind this prefix in ``signature``. Still read, so those histories re-send as
they were; never written."""

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "stop",  # the builder turns "stop" with tool calls into "toolUse"
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "error",
}

# Documented status of each Anthropic error type: an error event inside a 200 stream carries only
# the type, and naming the status it stands for keeps its message shaped like a non-2xx reply's.
_ERROR_TYPE_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

_TOOL_ID_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


class AnthropicProvider(SDKProvider[anthropic.AsyncAnthropic]):
    """A ``Provider`` over the official ``anthropic`` SDK (``AsyncAnthropic().messages.create``).

    ``client`` is used as given. Without one, a client is built from ``client_kwargs`` and the
    environment (``ANTHROPIC_API_KEY``) once per event loop: a sync ``runtime.exec`` nested in a
    tool runs a second loop on a helper thread, and an async HTTP client cannot cross loops.
    """

    name: ClassVar[str] = "anthropic"
    model_example: ClassVar[str | None] = "claude-sonnet-4-5"

    client_factory: ClassVar[Callable[..., Any]] = anthropic.AsyncAnthropic

    async def _reply(
        self, request: ModelRequest, model: str, builder: MessageBuilder, race: CancelRace
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        client = self._client_for_running_loop()
        kwargs = _request_kwargs(client, request, model, request.max_tokens or self.max_tokens)
        decoder = AnthropicDecoder(builder)
        if not self.streaming:
            for event in decoder.whole(await race.run(client.messages.create(**kwargs))):
                yield event
            return
        sdk_stream = await race.run(client.messages.create(**kwargs, stream=True))
        try:
            iterator = sdk_stream.__aiter__()
            while True:
                try:
                    item = await race.run(anext(iterator, END))
                except (Aborted, anthropic.APIStatusError):
                    raise
                except Exception as exc:  # the SSE body broke off after the request succeeded
                    status = getattr(getattr(sdk_stream, "response", None), "status_code", "?")
                    raise ReplyError(f"stream interrupted after HTTP {status}: {describe_exception(exc)}") from exc
                if item is END:
                    break
                for event in decoder.feed(item):
                    yield event
                race.raise_if_cancelled()
            for event in decoder.finish():
                yield event
        finally:
            await sdk_stream.close()

    def _describe(self, exc: Exception) -> str:
        return describe_error(exc)


# ---------------------------------------------------------------------------------------------
# Outbound: ModelRequest -> messages.create keyword arguments
# ---------------------------------------------------------------------------------------------


def _request_kwargs(
    client: anthropic.AsyncAnthropic, request: ModelRequest, model: str, max_tokens: int | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
        "messages": convert_messages(request.messages),
    }
    if request.system_prompt:
        body["system"] = request.system_prompt
    if request.tools:
        body["tools"] = convert_tools(request.tools)
        body.update(tool_choice.anthropic(request.tool_choice, request.parallel_tool_calls))
    if request.temperature is not None:
        body["temperature"] = request.temperature
    body.update(request.extra)
    return _route_unknown_keywords(client.messages.create, body)


def _route_unknown_keywords(create: Callable[..., Any], body: dict[str, Any]) -> dict[str, Any]:
    """Move body fields the installed SDK no longer takes as keywords into ``extra_body``.

    SDK releases drop keywords the API still accepts (anthropic 2.x lost ``temperature``); the
    bytes on the wire are the same either way, so routing them keeps old requests working.
    """
    accepted = _keyword_names(create)
    if accepted is None:
        return body
    kwargs: dict[str, Any] = {}
    extra_body: dict[str, Any] = dict(body.pop("extra_body", None) or {})
    for key, value in body.items():
        if key in accepted:
            kwargs[key] = value
        else:
            extra_body[key] = value
    if extra_body:
        kwargs["extra_body"] = extra_body
    return kwargs


def _keyword_names(create: Callable[..., Any]) -> frozenset[str] | None:
    function = getattr(create, "__func__", create)
    try:
        return _keyword_names_of(function)
    except TypeError:  # unhashable or unintrospectable stand-in: send everything as keywords
        return None


@lru_cache(maxsize=8)
def _keyword_names_of(function: Callable[..., Any]) -> frozenset[str] | None:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return frozenset(p.name for p in parameters)


def convert_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """ToolSpecs as Anthropic tool definitions (the JSON Schema goes in ``input_schema``)."""
    converted = []
    for tool in tools:
        entry: dict[str, Any] = {"name": tool.name, "input_schema": tool.parameters}
        if tool.description:
            entry["description"] = tool.description
        converted.append(entry)
    return converted


def convert_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The loop's history in Anthropic's alternating user/assistant shape.

    Consecutive tool results (one batch) share a single user message, as Anthropic requires every
    ``tool_result`` answering one assistant turn to sit in the next user turn. Assistant messages
    that ended in error or abort are left out: their tool calls never got results, and Anthropic
    rejects a ``tool_use`` without one.
    """
    converted: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ToolResultMessage):
            results.append(_tool_result_block(message))
            continue
        if results:
            converted.append({"role": "user", "content": results})
            results = []
        if isinstance(message, UserMessage):
            converted.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            if not is_replayable(message):
                continue
            blocks = _assistant_blocks(message)
            if blocks:
                converted.append({"role": "assistant", "content": blocks})
    if results:
        converted.append({"role": "user", "content": results})
    return converted


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    return [{"type": "text", "text": block.text} for block in message.content if block.text]


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    # A signature only verifies against the provider that issued it.
    own_signatures = message.provider in ("", AnthropicProvider.name)
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text:  # Anthropic rejects empty text blocks
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if not (block.signature and own_signatures):
                continue  # unsigned thinking cannot be sent back
            if block.redacted:
                blocks.append({"type": "redacted_thinking", "data": block.signature})
            elif block.signature.startswith(_LEGACY_REDACTED_PREFIX):
                blocks.append({"type": "redacted_thinking", "data": block.signature[len(_LEGACY_REDACTED_PREFIX) :]})
            else:
                blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
        elif isinstance(block, ToolCall):
            # A call whose argument text was not JSON is replayed as {}: Anthropic takes an object.
            arguments = {} if block.raw_arguments is not None else block.arguments
            blocks.append({"type": "tool_use", "id": _tool_id(block.id), "name": block.name, "input": arguments})
    return blocks


def _tool_result_block(message: ToolResultMessage) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _tool_id(message.tool_call_id)}
    text = message.text
    if text:
        block["content"] = text
    if message.is_error:
        block["is_error"] = True
    return block


def _tool_id(tool_call_id: str) -> str:
    """Anthropic ids match ``^[a-zA-Z0-9_-]+$``; ids minted by other providers may not."""
    return _TOOL_ID_UNSAFE.sub("_", tool_call_id)[:64] or "call"


# ---------------------------------------------------------------------------------------------
# Inbound: SSE events or a whole Message -> builder events
# ---------------------------------------------------------------------------------------------


class AnthropicDecoder(Decoder):
    """Anthropic's SSE events (or one whole ``Message``) as builder calls; blocks go by their wire index."""

    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self.start_inputs: dict[int, dict[str, Any]] = {}
        self.counts: dict[str, int] = {}
        self.stop_reason: str | None = None
        self.stop_details: Any = None
        self.stopped = False

    def feed(self, event: Any) -> list[AssistantMessageEvent]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self._count(getattr(event.message, "usage", None))
        elif kind == "content_block_start":
            return self._block_start(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._block_delta(event.index, event.delta)
        elif kind == "content_block_stop":
            inputs = self.start_inputs.pop(event.index, None)
            index = self.builder.index_of(event.index)
            if inputs is not None and index is not None and not self.builder.received_deltas(index):
                return self.builder.close_wire(event.index, arguments=inputs)  # the start block held it all
            return self.builder.close_wire(event.index)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self.stop_details = getattr(event.delta, "stop_details", None) or self.stop_details
            self._count(getattr(event, "usage", None))
        elif kind == "message_stop":
            self.stopped = True
        return []

    def finish(self) -> list[AssistantMessageEvent]:
        if not self.stopped:
            raise ReplyError("stream ended before message_stop: the response is incomplete")
        return [self._finish()]

    def whole(self, message: Any) -> list[AssistantMessageEvent]:
        """The event sequence a stream of ``message`` would have produced."""
        builder = self.builder
        events: list[AssistantMessageEvent] = []
        for block in message.content:
            kind = getattr(block, "type", None)
            if kind == "text":
                events += builder.whole_text(block.text)
            elif kind == "thinking":
                events += builder.whole_thinking(block.thinking, block.signature)
            elif kind == "redacted_thinking":
                events += builder.whole_thinking("", block.data, redacted=True)
            elif kind == "tool_use":
                arguments = block.input if isinstance(block.input, dict) else {}
                events += builder.whole_toolcall(block.id, block.name, arguments)
            # server_tool_use and server tool results run on Anthropic's side: not the loop's calls
        self._count(message.usage)
        self.stop_reason, self.stop_details = message.stop_reason, getattr(message, "stop_details", None)
        return [*events, self._finish()]

    def _count(self, usage: Any) -> None:
        self.counts = _usage_counts(self.counts, usage)
        self.builder.usage = _usage(self.counts)

    def _block_start(self, wire: int, block: Any) -> list[AssistantMessageEvent]:
        kind = getattr(block, "type", None)
        builder = self.builder
        event: AssistantMessageEvent
        if kind == "text":
            index, event = builder.text_start(wire=wire)
            return [event, builder.text_delta(index, block.text)] if block.text else [event]
        if kind == "thinking":
            index, event = builder.thinking_start(wire=wire)
            events: list[AssistantMessageEvent] = [event]
            if block.thinking:
                events.append(builder.thinking_delta(index, block.thinking))
            if block.signature:
                builder.thinking_signature(index, block.signature)
            return events
        if kind == "redacted_thinking":
            index, event = builder.thinking_start(wire=wire)
            builder.thinking_fields(index, signature=block.data, redacted=True)
            return [event]
        if kind == "tool_use":
            _, event = builder.toolcall_start(block.id, block.name, wire=wire)
            self.start_inputs[wire] = block.input if isinstance(block.input, dict) else {}
            return [event]
        return []  # server tools and their results: not the loop's to run

    def _block_delta(self, wire: int, delta: Any) -> list[AssistantMessageEvent]:
        index = self.builder.index_of(wire)
        if index is None:
            return []
        kind = getattr(delta, "type", None)
        if kind == "text_delta" and delta.text:
            return [self.builder.text_delta(index, delta.text)]
        if kind == "thinking_delta" and delta.thinking:
            return [self.builder.thinking_delta(index, delta.thinking)]
        if kind == "signature_delta":
            self.builder.thinking_signature(index, delta.signature)
        elif kind == "input_json_delta" and delta.partial_json:
            return [self.builder.toolcall_delta(index, delta.partial_json)]
        return []

    def _finish(self) -> AssistantMessageEvent:
        mapped = STOP_REASONS.get(self.stop_reason or "", "stop")
        if mapped == "error":
            details = self.stop_details
            explanation = getattr(details, "explanation", None) or getattr(details, "category", None)
            detail = f": {explanation}" if explanation else ""
            return self.builder.error("error", f"Anthropic stopped with stop_reason {self.stop_reason!r}{detail}")
        return self.builder.done(mapped)


def _usage_counts(counts: Mapping[str, int], usage: Any) -> dict[str, int]:
    """Merge one usage report into the running counts; Anthropic's message_delta totals are cumulative."""
    merged = dict(counts)
    if usage is None:
        return merged
    for field in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = getattr(usage, field, None)
        if isinstance(value, int):
            merged[field] = value
    return merged


def _usage(counts: Mapping[str, int]) -> Usage:
    fresh = counts.get("input_tokens", 0)
    output = counts.get("output_tokens", 0)
    cache_read = counts.get("cache_read_input_tokens", 0)
    cache_write = counts.get("cache_creation_input_tokens", 0)
    return Usage(
        input=fresh,
        output=output,
        cache_read=cache_read,
        cache_write=cache_write,
        total_tokens=fresh + output + cache_read + cache_write,
    )


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


def describe_error(exc: BaseException) -> str:
    """One line naming the HTTP status and the provider's own words, for ``error_message``."""
    if isinstance(exc, anthropic.APIStatusError):
        return _describe_status_error(exc)
    if isinstance(exc, anthropic.APITimeoutError):
        return f"request timed out: {exc.message}"
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        reason = f" ({describe_exception(cause)})" if cause is not None else ""
        return f"connection error: {exc.message}{reason}"
    return describe_exception(exc)


def _describe_status_error(exc: anthropic.APIStatusError) -> str:
    error_type, message = error_body_fields(exc.body)
    status = exc.status_code
    if status < 400:  # an `event: error` inside a 2xx stream
        implied = _ERROR_TYPE_STATUS.get(error_type or "")
        return f"HTTP {implied or status} {error_type or 'error'}: {message or exc.message} (error event in the stream)"
    # The delay is reported for a rate limit (429) only.
    delay = retry_after(exc.response.headers) if status == 429 else None
    return http_error_text(status, error_type, message or exc.message, delay)


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "STOP_REASONS",
    "AnthropicDecoder",
    "AnthropicProvider",
    "convert_messages",
    "convert_tools",
    "describe_error",
]
