"""OpenAI backends: Chat Completions and Responses, over the official ``openai`` SDK.

Both APIs are decoded into the same ``MessageBuilder`` calls, so the loop cannot tell which one
answered. The two share everything that is not wire format (``_common_fields`` builds the body
fields both spell alike, ``_reply_events`` sends and decodes); the
per-event-loop client cache, cancellation, and the rule that HTTP and SDK failures become an
``error`` event, never an exception in the loop, are every SDK backend's (``_shared``).

Choices a reader might wonder about:

- OpenAI has no "this tool result is an error" flag, so a failed result is sent as
  ``"Error: <text>"``; without the prefix a raised exception's text would read like a success.
- A ``ToolCall`` whose argument text was not JSON is sent back with that very text (both APIs
  take arguments as a string), so the model sees what it actually wrote.
- Assistant messages that ended in ``error`` / ``aborted`` are not sent back: their tool calls
  never got results, and OpenAI rejects a tool call without a result.
- Responses reasoning items become ``ThinkingContent`` (summary text, possibly empty) with the
  item's ``item_id`` and ``encrypted_content``; they are sent back only in front
  of the tool calls they led to, the one place the API uses them (it discards reasoning from
  earlier turns itself).
- Responses tools are sent with ``strict: false``: the API defaults to strict mode, which
  rejects ordinary JSON Schemas (optional properties) with a 400.
- ``ModelRequest.extra`` is merged into the JSON body (``extra_body``), so any API field can be
  set without waiting for SDK support.
- A refusal is an ``error`` finish carrying the refusal text, like Anthropic's ``refusal``:
  dropping it would make the run end with an empty answer and no explanation.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import aclosing
from typing import Any, ClassVar

import httpx2
import openai
from openai import AsyncOpenAI

from openprogram.errors import ReplyError, describe_exception
from openprogram.providers import ModelRequest, tool_choice
from openprogram.providers._shared import (
    END,
    CancelRace,
    Decoder,
    SDKProvider,
    error_body_fields,
    http_error_text,
    is_replayable,
    retry_after,
    usage_with_cached_prompt,
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

# Chat ``finish_reason`` → our stop reason (Responses finishes by ``status``, read in its decoder).
# Unknown values (proxies invent their own) count as a normal stop: the content tells whether it was a tool call.
STOP_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "stop",
    "function_call": "stop",
    "content_filter": "error",
    "error": "error",
}


# ---------------------------------------------------------------------------------------------
# Error text and history rules both APIs share
# ---------------------------------------------------------------------------------------------


def describe_error(exc: BaseException, *, mid_stream: bool = False) -> str:
    """The error text of an ``error`` event: HTTP status and the provider's own words first."""
    if isinstance(exc, openai.APIStatusError):
        kind, message = error_body_fields(exc.body)
        return http_error_text(exc.status_code, kind, message or exc.message, retry_after(exc.response.headers))
    if isinstance(exc, openai.APITimeoutError):
        return "stream cut mid-way: request timed out" if mid_stream else "request timed out"
    if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
        cause = exc.__cause__ if isinstance(exc, openai.APIConnectionError) else exc
        detail = describe_exception(cause) if cause is not None else str(exc)
        return f"{'stream cut mid-way' if mid_stream else 'connection error'}: {detail}"
    if isinstance(exc, openai.APIError):  # an error object inside a 200 stream
        kind, message = error_body_fields(exc.body)
        message = message or exc.message
        return f"stream error {kind}: {message}" if kind else f"stream error: {message}"
    return describe_exception(exc)


def _result_text(message: ToolResultMessage) -> str:
    return f"Error: {message.text}" if message.is_error else message.text


def _call_arguments_text(call: ToolCall) -> str:
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)


def _field(value: Any, name: str) -> Any:
    """``value.name`` or ``value[name]``: the SDK keeps fields its stream types do not declare
    (a custom tool call's ``custom`` in a Chat delta) as plain dicts."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _close(builder: MessageBuilder, index: int | None = None) -> list[AssistantMessageEvent]:
    """Close block ``index`` (None: every open block), first giving an id-less call the id
    ``call_<index>``: some proxies send none, and the loop needs one to pair the result."""
    indices = builder.open_indices if index is None else [index]
    for open_index in indices:
        block = builder.block(open_index)
        if isinstance(block, ToolCall) and not block.id and open_index in builder.open_indices:
            builder.toolcall_rename(open_index, id=f"call_{open_index}")
    return builder.close_all() if index is None else builder.close(index)


# ---------------------------------------------------------------------------------------------
# The request and the reply both APIs share (each provider class below reads top to bottom
# through these two functions)
# ---------------------------------------------------------------------------------------------


def _common_fields(request: ModelRequest, max_tokens_field: str, max_tokens: int | None) -> dict[str, Any]:
    """The last body fields, which both APIs spell alike but the length cap (``max_tokens_field``):
    the request's cap (else ``max_tokens``, the provider's), temperature and ``extra`` as is."""
    fields: dict[str, Any] = {}
    max_tokens = request.max_tokens or max_tokens
    if max_tokens is not None:
        fields[max_tokens_field] = max_tokens
    if request.temperature is not None:
        fields["temperature"] = request.temperature
    if request.extra:
        fields["extra_body"] = dict(request.extra)
    return fields


async def _reply_events(
    create: Callable[[], Awaitable[Any]],
    decoder: Decoder,
    race: CancelRace,
    *,
    streaming: bool,
    watch: Callable[[Any], None] | None = None,
) -> AsyncGenerator[AssistantMessageEvent, None]:
    """Send the request (``create()``, called here so that its failures meet the handling below) and
    decode the reply, whole or streamed, through ``decoder``.

    ``watch`` sees the SDK stream before it is read. A connection lost after the first wire item
    is the reply's failure (a cut stream), reported as such; before it, the request's. Iterate it
    under ``aclosing``, so a reply abandoned early closes the SDK stream at once, not at GC.
    """
    sdk_stream: Any = None
    try:
        result = await race.run(create())
        if not streaming:
            for event in decoder.whole(result):
                yield event
            return
        sdk_stream = result
        if watch is not None:
            watch(sdk_stream)
        iterator = sdk_stream.__aiter__()
        while not decoder.finished:
            item = await race.run(anext(iterator, END))
            if item is END:
                break
            for event in decoder.feed(item):
                yield event
        if not decoder.finished:
            for event in decoder.finish():
                yield event
    except (openai.APIConnectionError, httpx2.TransportError) as exc:
        if not decoder.started:
            raise
        raise ReplyError(describe_error(exc, mid_stream=True)) from exc
    finally:
        if sdk_stream is not None:
            with contextlib.suppress(Exception):
                await sdk_stream.close()


# ---------------------------------------------------------------------------------------------
# Chat Completions
# ---------------------------------------------------------------------------------------------


def convert_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """ToolSpecs as Chat Completions function tools."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def convert_messages(messages: Sequence[Message], *, system_prompt: str = "") -> list[dict[str, Any]]:
    """Our history as Chat Completions messages (thinking is dropped: the API takes none back)."""
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    for message in messages:
        if isinstance(message, UserMessage):
            content: Any = (
                message.content
                if isinstance(message.content, str)
                else [{"type": "text", "text": block.text} for block in message.content]
            )
            out.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            if not is_replayable(message):
                continue
            text = message.text
            calls = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _call_arguments_text(call)},
                }
                for call in message.tool_calls
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        elif isinstance(message, ToolResultMessage):
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": _result_text(message)})
    return out


def convert_usage(usage: Any) -> Usage:
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None) or 0
    return usage_with_cached_prompt(usage.prompt_tokens or 0, usage.completion_tokens or 0, cached, usage.total_tokens)


class OpenAIChatDecoder(Decoder):
    """Chat chunks (or one whole completion) as builder calls: one text block, one thinking block,
    and a call per tool-call ``index`` (wire names ``"text"``, ``"thinking"``, ``("call", index)``)."""

    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self._refusal: list[str] = []
        self._finish_reason: str | None = None
        self.done_marker: _DoneMarker | None = None
        """Set on a stream: tells whether its ``data: [DONE]`` arrived."""

    def _delta(self, kind: str, delta: str) -> list[AssistantMessageEvent]:
        builder = self.builder
        events: list[AssistantMessageEvent] = []
        index = builder.index_of(kind)
        if index is None:
            index, opened = builder.text_start(wire=kind) if kind == "text" else builder.thinking_start(wire=kind)
            events.append(opened)
        add = builder.text_delta if kind == "text" else builder.thinking_delta
        return [*events, add(index, delta)]

    def _call_delta(
        self, key: int, call_id: str | None, name: str | None, arguments: str | None
    ) -> list[AssistantMessageEvent]:
        """One tool-call fragment. The first non-empty id and name win: a proxy repeats them in every
        delta, and concatenating would turn ``"0"`` into ``"00"``."""
        builder = self.builder
        events: list[AssistantMessageEvent] = []
        index = builder.index_of(("call", key))
        if index is None:
            index, opened = builder.toolcall_start(call_id or "", name or "", wire=("call", key))
            events.append(opened)
        else:
            known_id, known_name = builder.tool_identity(index)
            new_id = call_id if call_id and not known_id else None
            new_name = name if name and not known_name else None
            if new_id or new_name:
                builder.toolcall_rename(index, id=new_id, name=new_name)
        if arguments:
            events.append(builder.toolcall_delta(index, arguments))
        return events

    def _message_part(self, part: Any) -> list[AssistantMessageEvent]:
        """Content of a delta or of a whole message: the same fields in both shapes."""
        events: list[AssistantMessageEvent] = []
        reasoning = getattr(part, "reasoning_content", None) or getattr(part, "reasoning", None)
        if isinstance(reasoning, str) and reasoning:  # OpenAI-compatible servers (DeepSeek, OpenRouter)
            events.extend(self._delta("thinking", reasoning))
        if part.content:
            events.extend(self._delta("text", part.content))
        if getattr(part, "refusal", None):
            self._refusal.append(part.refusal)
        for position, call in enumerate(part.tool_calls or []):
            function = getattr(call, "function", None)
            if function is not None:
                name, arguments = function.name, function.arguments
            else:  # a custom (free-form) tool: its input text is the call's argument text
                custom = _field(call, "custom")
                if custom is None:
                    continue
                name, arguments = _field(custom, "name"), _field(custom, "input")
            # Streamed fragments are keyed by their ``index``; a whole message's calls (no index) by position.
            key = getattr(call, "index", None)
            key = position if key is None else key
            events.extend(self._call_delta(key, call.id, name, arguments))
        return events

    def feed(self, chunk: Any) -> list[AssistantMessageEvent]:
        self.started = True
        events: list[AssistantMessageEvent] = []
        if getattr(chunk, "usage", None):
            self.builder.usage = convert_usage(chunk.usage)
        for choice in chunk.choices or []:
            if choice.index != 0:
                continue
            if choice.delta is not None:
                events.extend(self._message_part(choice.delta))
            if choice.finish_reason:
                self._finish_reason = choice.finish_reason
        return events

    def finish(self) -> list[AssistantMessageEvent]:
        self.finished = True
        events = _close(self.builder)
        reason = self._finish_reason
        if reason is None and self.done_marker is not None and not self.done_marker.seen:
            # Every Chat stream ends with ``[DONE]``, and OpenAI's also send a finish_reason first (a
            # proxy may not): with neither, the body ended early and the calls so far may be partial.
            return [*events, self.builder.error("error", "stream ended before its finish_reason and [DONE] (cut?)")]
        if self._refusal and not self.builder.has_content:
            return [*events, self.builder.error("error", f"the model refused: {''.join(self._refusal)}")]
        if reason is None and not self.builder.has_content:
            return [*events, self.builder.error("error", "stream ended without a finish reason or any content")]
        stop = STOP_REASONS.get(reason or "stop", "stop")
        if stop == "error":
            return [*events, self.builder.error("error", f"OpenAI finished with finish_reason {reason!r}")]
        return [*events, self.builder.done(stop)]

    def whole(self, completion: Any) -> list[AssistantMessageEvent]:
        self.started = True
        if getattr(completion, "usage", None):
            self.builder.usage = convert_usage(completion.usage)
        if not completion.choices:
            self.finished = True
            return [self.builder.error("error", "OpenAI returned no choices")]
        choice = completion.choices[0]
        events = self._message_part(choice.message)
        self._finish_reason = choice.finish_reason
        return [*events, *self.finish()]


class OpenAIChatProvider(SDKProvider[AsyncOpenAI]):
    """``client.chat.completions.create``: the API every OpenAI-compatible server speaks."""

    name: ClassVar[str] = "openai"
    client_factory: ClassVar[Callable[..., Any]] = AsyncOpenAI

    def build_request(self, request: ModelRequest, model: str) -> dict[str, Any]:
        """The SDK keyword arguments for this request (without ``stream``)."""
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": convert_messages(request.messages, system_prompt=request.system_prompt),
        }
        if request.tools:
            kwargs["tools"] = convert_tools(request.tools)
            kwargs.update(tool_choice.openai_chat(request.tool_choice, request.parallel_tool_calls))
        kwargs.update(_common_fields(request, "max_completion_tokens", self.max_tokens))
        return kwargs

    async def _reply(
        self, request: ModelRequest, model: str, builder: MessageBuilder, race: CancelRace
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        client = self._client_for_running_loop()
        kwargs = self.build_request(request, model)
        if self.streaming:  # usage comes in a last chunk only when asked for
            kwargs.update(stream=True, stream_options={"include_usage": True})
        decoder = OpenAIChatDecoder(builder)

        def watch(sdk_stream: Any) -> None:
            # The SDK reads its SSE through ``_decoder`` and drops ``[DONE]``; wrapping that decoder
            # is the only way to see it. An SDK without the attribute leaves the check off.
            inner = getattr(sdk_stream, "_decoder", None)
            if inner is not None and hasattr(inner, "aiter_bytes"):
                decoder.done_marker = sdk_stream._decoder = _DoneMarker(inner)

        create = functools.partial(client.chat.completions.create, **kwargs)
        async with aclosing(_reply_events(create, decoder, race, streaming=self.streaming, watch=watch)) as events:
            async for event in events:
                yield event

    def _describe(self, exc: Exception) -> str:
        return describe_error(exc)


class _DoneMarker:
    """The openai SDK's SSE decoder, noting whether the stream's ``data: [DONE]`` went through it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.seen = False

    async def aiter_bytes(self, iterator: Any) -> AsyncIterator[Any]:
        async for event in self._inner.aiter_bytes(iterator):
            if getattr(event, "data", "").startswith("[DONE]"):
                self.seen = True
            yield event

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------

_LEGACY_REASONING_MARK = "openai.responses.reasoning"
"""How histories saved before ``ThinkingContent.item_id`` existed kept a reasoning item: JSON
``{"kind": <this>, "id", "encrypted_content"}`` in ``signature``. Still read; never written."""


def _reasoning_item(block: ThinkingContent) -> dict[str, Any] | None:
    """The reasoning item a thinking block came from, or None when it came from elsewhere (or has
    no encrypted content, which the API needs to take the item back)."""
    item_id, encrypted = block.item_id, block.encrypted_content
    if not (item_id and encrypted) and block.signature:
        with contextlib.suppress(ValueError):
            data = json.loads(block.signature)
            if isinstance(data, dict) and data.get("kind") == _LEGACY_REASONING_MARK:
                item_id, encrypted = data.get("id"), data.get("encrypted_content")
    if not (item_id and encrypted):
        return None
    summary = [{"type": "summary_text", "text": block.thinking}] if block.thinking else []
    return {"type": "reasoning", "id": item_id, "encrypted_content": encrypted, "summary": summary}


def convert_responses_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """ToolSpecs as Responses function tools (``strict: false``: see the module notes)."""
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False}
        for t in tools
    ]


def convert_responses_input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our history as Responses input items; the system prompt goes to ``instructions`` instead."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            content: Any = (
                message.content
                if isinstance(message.content, str)
                else [{"type": "input_text", "text": block.text} for block in message.content]
            )
            items.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            if not is_replayable(message):
                continue
            has_calls = bool(message.tool_calls)
            for block in message.content:
                if isinstance(block, ThinkingContent):
                    reasoning = _reasoning_item(block) if has_calls else None
                    if reasoning is not None:
                        items.append(reasoning)
                elif isinstance(block, TextContent):
                    if block.text:
                        items.append({"role": "assistant", "content": block.text})
                else:
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": block.id,
                            "name": block.name,
                            "arguments": _call_arguments_text(block),
                        }
                    )
        elif isinstance(message, ToolResultMessage):
            items.append(
                {"type": "function_call_output", "call_id": message.tool_call_id, "output": _result_text(message)}
            )
    return items


def convert_responses_usage(usage: Any) -> Usage:
    cached = getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", None) or 0
    return usage_with_cached_prompt(usage.input_tokens or 0, usage.output_tokens or 0, cached, usage.total_tokens)


_CALL_ITEMS = ("function_call", "custom_tool_call")
"""Responses output items that are the loop's tool calls; a custom (free-form) tool's ``input``
text is the call's argument text."""


class OpenAIResponsesDecoder(Decoder):
    """Responses stream events (or one whole response) as builder calls. Output items are wire
    blocks named by ``output_index``; text parts by ``("text", output_index, content_index)``."""

    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self._texts: set[tuple[str, int, int]] = set()
        self._summary_part: dict[int, int] = {}
        self._refusal: list[str] = []
        self._seen: set[int] = set()  # output positions that streamed at least one event

    # -- items ------------------------------------------------------------------------------
    def _item_added(self, position: int, item: Any) -> list[AssistantMessageEvent]:
        if item.type in _CALL_ITEMS:
            return [self.builder.toolcall_start(item.call_id or "", item.name or "", wire=position)[1]]
        if item.type == "reasoning":
            return [self.builder.thinking_start(wire=position)[1]]
        return []

    def _item_done(self, position: int, item: Any) -> list[AssistantMessageEvent]:
        builder = self.builder
        events: list[AssistantMessageEvent] = []
        if item.type == "message":
            opened = sorted(key for key in self._texts if key[1] == position)
            if not opened:  # no deltas arrived (or not streamed): take the text from the item
                for part_index, part in enumerate(item.content or []):
                    events.extend(self._content_part(position, part_index, part))
                opened = sorted(key for key in self._texts if key[1] == position)
            for key in opened:
                events.extend(_close(builder, builder.index_of(key)))
            return events
        if item.type not in (*_CALL_ITEMS, "reasoning"):
            return events  # hosted tools run on OpenAI's side: not ours to execute
        if builder.index_of(position) is None:
            events.extend(self._item_added(position, item))
        index = builder.index_of(position)
        assert index is not None
        if item.type in _CALL_ITEMS:
            builder.toolcall_rename(index, id=item.call_id or None, name=item.name or None)
            arguments = item.arguments if item.type == "function_call" else item.input
            if not builder.received_deltas(index) and arguments:
                events.append(builder.toolcall_delta(index, arguments))
        else:
            if position not in self._summary_part:
                texts = [part.text for part in (item.summary or []) if getattr(part, "text", None)]
                texts += [part.text for part in (getattr(item, "content", None) or []) if getattr(part, "text", None)]
                if texts:
                    events.append(builder.thinking_delta(index, "\n\n".join(texts)))
            encrypted = getattr(item, "encrypted_content", None) or None
            builder.thinking_fields(index, item_id=getattr(item, "id", None) or None, encrypted_content=encrypted)
        events.extend(_close(builder, index))
        return events

    def _content_part(self, position: int, part_index: int, part: Any) -> list[AssistantMessageEvent]:
        if part.type == "output_text" and part.text:
            return self._text_delta(position, part_index, part.text)
        if part.type == "refusal" and part.refusal:
            self._refusal.append(part.refusal)
        return []

    def _text_delta(self, position: int, part_index: int, delta: str) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        key = ("text", position, part_index)
        index = self.builder.index_of(key)
        if index is None:
            index, opened = self.builder.text_start(wire=key)
            self._texts.add(key)
            events.append(opened)
        events.append(self.builder.text_delta(index, delta))
        return events

    def _thinking_delta(self, position: int, part: int, delta: str) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        index = self.builder.index_of(position)
        if index is None:
            index, opened = self.builder.thinking_start(wire=position)
            events.append(opened)
        previous = self._summary_part.get(position)
        if previous is not None and previous != part:
            events.append(self.builder.thinking_delta(index, "\n\n"))
        self._summary_part[position] = part
        events.append(self.builder.thinking_delta(index, delta))
        return events

    # -- the stream --------------------------------------------------------------------------
    def feed(self, event: Any) -> list[AssistantMessageEvent]:
        self.started = True
        kind = event.type
        position = getattr(event, "output_index", None)
        if isinstance(position, int):
            self._seen.add(position)
        if kind == "response.output_item.added":
            return self._item_added(event.output_index, event.item)
        if kind == "response.output_item.done":
            return self._item_done(event.output_index, event.item)
        if kind == "response.output_text.delta":
            return self._text_delta(event.output_index, event.content_index, event.delta)
        if kind in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta"):
            index = self.builder.index_of(event.output_index)
            if index is None:
                index, start = self.builder.toolcall_start("", "", wire=event.output_index)
                return [start, self.builder.toolcall_delta(index, event.delta)]
            return [self.builder.toolcall_delta(index, event.delta)]
        if kind == "response.reasoning_summary_text.delta":
            return self._thinking_delta(event.output_index, event.summary_index, event.delta)
        if kind == "response.reasoning_text.delta":
            return self._thinking_delta(event.output_index, -1 - event.content_index, event.delta)
        if kind == "response.refusal.delta":
            self._refusal.append(event.delta)
            return []
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._complete(event.response)
        if kind == "error":
            self.finished = True
            label = f"stream error {event.code}" if event.code else "stream error"
            return [*_close(self.builder), self.builder.error("error", f"{label}: {event.message}")]
        return []

    def finish(self) -> list[AssistantMessageEvent]:
        self.finished = True
        return [*_close(self.builder), self.builder.error("error", "stream ended before response.completed")]

    def whole(self, response: Any) -> list[AssistantMessageEvent]:
        self.started = True
        return self._complete(response)

    def _complete(self, response: Any) -> list[AssistantMessageEvent]:
        """Finish from the final response object. Output items whose events never streamed (all of
        them, when not streaming) are taken from it, so nothing the response holds is lost."""
        self.finished = True
        events: list[AssistantMessageEvent] = []
        for position, item in enumerate(response.output or []):
            if position not in self._seen:
                events.extend(self._item_added(position, item))
                events.extend(self._item_done(position, item))
        events.extend(_close(self.builder))
        if getattr(response, "usage", None):
            self.builder.usage = convert_responses_usage(response.usage)
        status = response.status
        if status == "failed":
            error = getattr(response, "error", None)
            detail = f"{error.code}: {error.message}" if error is not None else "response failed"
            return [*events, self.builder.error("error", detail)]
        if status == "incomplete":
            details = getattr(response, "incomplete_details", None)
            reason = getattr(details, "reason", None)
            if reason == "max_output_tokens":
                return [*events, self.builder.done("length")]
            return [*events, self.builder.error("error", f"response incomplete: {reason}")]
        if status not in ("completed", None):
            return [*events, self.builder.error("error", f"response ended with status {status!r}")]
        if self._refusal and not self.builder.has_content:
            return [*events, self.builder.error("error", f"the model refused: {''.join(self._refusal)}")]
        return [*events, self.builder.done("stop")]


class OpenAIResponsesProvider(SDKProvider[AsyncOpenAI]):
    """``client.responses.create``: OpenAI's current API, the one that returns reasoning items."""

    name: ClassVar[str] = "openai"
    client_factory: ClassVar[Callable[..., Any]] = AsyncOpenAI

    def build_request(self, request: ModelRequest, model: str) -> dict[str, Any]:
        """The SDK keyword arguments for this request (without ``stream``)."""
        kwargs: dict[str, Any] = {"model": model, "input": convert_responses_input(request.messages)}
        if request.system_prompt:  # Responses takes the system prompt apart from the input
            kwargs["instructions"] = request.system_prompt
        if request.tools:
            kwargs["tools"] = convert_responses_tools(request.tools)
            kwargs.update(tool_choice.openai_responses(request.tool_choice, request.parallel_tool_calls))
        kwargs.update(_common_fields(request, "max_output_tokens", self.max_tokens))
        return kwargs

    async def _reply(
        self, request: ModelRequest, model: str, builder: MessageBuilder, race: CancelRace
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        client = self._client_for_running_loop()
        kwargs = self.build_request(request, model)
        if self.streaming:
            kwargs["stream"] = True
        create = functools.partial(client.responses.create, **kwargs)
        decoder = OpenAIResponsesDecoder(builder)
        async with aclosing(_reply_events(create, decoder, race, streaming=self.streaming)) as events:
            async for event in events:
                yield event

    def _describe(self, exc: Exception) -> str:
        return describe_error(exc)


__all__ = [
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "STOP_REASONS",
    "OpenAIChatDecoder",
    "OpenAIResponsesDecoder",
    "convert_messages",
    "convert_responses_input",
    "convert_responses_tools",
    "convert_tools",
    "describe_error",
]
