"""OpenAI backends: Chat Completions and Responses, over the official ``openai`` SDK.

Both APIs are decoded into the same ``MessageBuilder`` calls, so the loop cannot tell which one
answered. The two share everything that is not wire format (``_OpenAIProvider``); the
per-event-loop client cache, cancellation, and the rule that HTTP and SDK failures become an
``error`` event, never an exception in the loop, are every SDK backend's (``_shared``).

Choices a reader might wonder about:

- OpenAI has no "this tool result is an error" flag, so a failed result is sent as
  ``"Error: <text>"``; without the prefix a raised exception's text would read like a success.
- A ``ToolCall`` whose argument text was not JSON is sent back with that very text (both APIs
  take arguments as a string), so the model sees what it actually wrote.
- Assistant messages that ended in ``error`` / ``aborted`` are not sent back: their tool calls
  never got results, and OpenAI rejects a tool call without a result.
- Responses reasoning items become ``ThinkingContent`` (summary text, possibly empty) whose
  ``signature`` carries the item id and ``encrypted_content``; they are sent back only in front
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
import json
from collections.abc import AsyncIterator, Awaitable
from typing import Any, ClassVar

import httpx2
import openai
from openai import AsyncOpenAI

from openprogram.providers import ModelRequest, tool_choice
from openprogram.providers._shared import (
    END,
    CancelRace,
    ReplyError,
    SDKProvider,
    describe_exception,
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
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

# Chat ``finish_reason`` → our stop reason. Unknown values (proxies invent their own) count as a
# normal stop: the content already tells whether it was a tool call.
CHAT_STOP_REASONS: dict[str, StopReason] = {
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


class _Blocks:
    """Open builder blocks by kind, so a finish can close each with the right ``*_end`` call."""

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self.kinds: dict[int, str] = {}
        self.received: dict[int, bool] = {}

    def open_text(self) -> tuple[int, AssistantMessageEvent]:
        index, event = self.builder.text_start()
        self.kinds[index] = "text"
        return index, event

    def open_thinking(self) -> tuple[int, AssistantMessageEvent]:
        index, event = self.builder.thinking_start()
        self.kinds[index] = "thinking"
        return index, event

    def open_call(self, id: str, name: str) -> tuple[int, AssistantMessageEvent]:
        index, event = self.builder.toolcall_start(id, name)
        self.kinds[index] = "call"
        self.received[index] = False
        return index, event

    def call_delta(self, index: int, delta: str) -> AssistantMessageEvent:
        self.received[index] = True
        return self.builder.toolcall_delta(index, delta)

    def close(self, index: int) -> list[AssistantMessageEvent]:
        kind = self.kinds.pop(index, None)
        if kind == "text":
            return [self.builder.text_end(index)]
        if kind == "thinking":
            return [self.builder.thinking_end(index)]
        if kind == "call":
            call_id, _ = self.builder.tool_identity(index)
            if not call_id:  # some proxies send no id; the loop needs one to pair the result
                self.builder.toolcall_rename(index, id=f"call_{index}")
            return [self.builder.toolcall_end(index)]
        return []

    def close_all(self) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        for index in sorted(self.kinds):
            events.extend(self.close(index))
        return events


# ---------------------------------------------------------------------------------------------
# The provider skeleton both APIs share
# ---------------------------------------------------------------------------------------------


class _Decoder:
    """Turns one API's wire objects into builder events; one instance per reply."""

    started = False
    finished = False

    def feed(self, item: Any) -> list[AssistantMessageEvent]:
        raise NotImplementedError

    def finish(self) -> list[AssistantMessageEvent]:
        raise NotImplementedError

    def whole(self, response: Any) -> list[AssistantMessageEvent]:
        raise NotImplementedError


class _OpenAIProvider(SDKProvider[AsyncOpenAI]):
    name: ClassVar[str] = "openai"

    @property
    def client(self) -> AsyncOpenAI | None:
        """The client given to the constructor (None: one is built per event loop)."""
        return self._client

    @client.setter
    def client(self, client: AsyncOpenAI | None) -> None:
        self._client = client

    def _build_client(self) -> AsyncOpenAI:
        return AsyncOpenAI(**self._client_kwargs)

    # -- what each API defines ---------------------------------------------------------------
    max_tokens_field: ClassVar[str]
    """The body field that caps the reply's length."""

    def _history_fields(self, request: ModelRequest) -> dict[str, Any]:
        """The history (and system prompt) in this API's body fields."""
        raise NotImplementedError

    def _tool_fields(self, request: ModelRequest) -> dict[str, Any]:
        """The tools and the tool choice in this API's body fields; called when there are tools."""
        raise NotImplementedError

    def _create(self, client: AsyncOpenAI, kwargs: dict[str, Any]) -> Awaitable[Any]:
        raise NotImplementedError

    def _decoder(self, builder: MessageBuilder) -> _Decoder:
        raise NotImplementedError

    # -- the request and the reply ----------------------------------------------------------
    def build_request(self, request: ModelRequest, model: str) -> dict[str, Any]:
        """The SDK keyword arguments for this request (without ``stream``)."""
        kwargs: dict[str, Any] = {"model": model, **self._history_fields(request)}
        if request.tools:
            kwargs.update(self._tool_fields(request))
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens is not None:
            kwargs[self.max_tokens_field] = max_tokens
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.extra:
            kwargs["extra_body"] = dict(request.extra)
        return kwargs

    def _describe(self, exc: Exception) -> str:
        return describe_error(exc)

    async def _reply(
        self, request: ModelRequest, model: str, builder: MessageBuilder, race: CancelRace
    ) -> AsyncIterator[AssistantMessageEvent]:
        client = self._client_for_running_loop()
        kwargs = self.build_request(request, model)
        if self.streaming:
            kwargs["stream"] = True
        decoder = self._decoder(builder)
        sdk_stream: Any = None
        try:
            result = await race.run(self._create(client, kwargs))
            if not self.streaming:
                for event in decoder.whole(result):
                    yield event
                return
            sdk_stream = result
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


def chat_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def chat_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Our history as Chat Completions messages (thinking is dropped: the API takes none back)."""
    out: list[dict[str, Any]] = []
    if request.system_prompt:
        out.append({"role": "system", "content": request.system_prompt})
    for message in request.messages:
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


def chat_usage(usage: Any) -> Usage:
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None) or 0
    return usage_with_cached_prompt(usage.prompt_tokens or 0, usage.completion_tokens or 0, cached, usage.total_tokens)


class _ChatDecoder(_Decoder):
    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self.blocks = _Blocks(builder)
        self._text: int | None = None
        self._thinking: int | None = None
        self._calls: dict[int, int] = {}
        self._refusal: list[str] = []
        self._finish_reason: str | None = None

    def _text_delta(self, delta: str) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        if self._text is None:
            self._text, event = self.blocks.open_text()
            events.append(event)
        events.append(self.builder.text_delta(self._text, delta))
        return events

    def _thinking_delta(self, delta: str) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        if self._thinking is None:
            self._thinking, event = self.blocks.open_thinking()
            events.append(event)
        events.append(self.builder.thinking_delta(self._thinking, delta))
        return events

    def _call_delta(
        self, key: int, call_id: str | None, name: str | None, arguments: str | None
    ) -> list[AssistantMessageEvent]:
        """One tool-call fragment. The first non-empty id and name win: a proxy repeats them in every
        delta, and concatenating would turn ``"0"`` into ``"00"``."""
        events: list[AssistantMessageEvent] = []
        index = self._calls.get(key)
        if index is None:
            index, event = self.blocks.open_call(call_id or "", name or "")
            self._calls[key] = index
            events.append(event)
        else:
            known_id, known_name = self.builder.tool_identity(index)
            new_id = call_id if call_id and not known_id else None
            new_name = name if name and not known_name else None
            if new_id or new_name:
                self.builder.toolcall_rename(index, id=new_id, name=new_name)
        if arguments:
            events.append(self.blocks.call_delta(index, arguments))
        return events

    def _message_part(self, part: Any) -> list[AssistantMessageEvent]:
        """Content of a delta or of a whole message: the same fields in both shapes."""
        events: list[AssistantMessageEvent] = []
        reasoning = getattr(part, "reasoning_content", None) or getattr(part, "reasoning", None)
        if isinstance(reasoning, str) and reasoning:  # OpenAI-compatible servers (DeepSeek, OpenRouter)
            events.extend(self._thinking_delta(reasoning))
        if part.content:
            events.extend(self._text_delta(part.content))
        if getattr(part, "refusal", None):
            self._refusal.append(part.refusal)
        for position, call in enumerate(part.tool_calls or []):
            function = getattr(call, "function", None)
            if function is None:  # custom (non-function) tools are not ours
                continue
            # Streamed fragments are keyed by their ``index``; a whole message's calls (no index) by position.
            key = getattr(call, "index", None)
            key = position if key is None else key
            events.extend(self._call_delta(key, call.id, function.name, function.arguments))
        return events

    def feed(self, chunk: Any) -> list[AssistantMessageEvent]:
        self.started = True
        events: list[AssistantMessageEvent] = []
        if getattr(chunk, "usage", None):
            self.builder.usage = chat_usage(chunk.usage)
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
        events = self.blocks.close_all()
        reason = self._finish_reason
        if self._refusal and not self.builder.has_content:
            return [*events, self.builder.error("error", f"the model refused: {''.join(self._refusal)}")]
        if reason is None and not self.builder.has_content:
            return [*events, self.builder.error("error", "stream ended without a finish reason or any content")]
        stop = CHAT_STOP_REASONS.get(reason or "stop", "stop")
        if stop == "error":
            return [*events, self.builder.error("error", f"OpenAI finished with finish_reason {reason!r}")]
        return [*events, self.builder.done(stop)]

    def whole(self, completion: Any) -> list[AssistantMessageEvent]:
        self.started = True
        if getattr(completion, "usage", None):
            self.builder.usage = chat_usage(completion.usage)
        if not completion.choices:
            self.finished = True
            return [self.builder.error("error", "OpenAI returned no choices")]
        choice = completion.choices[0]
        events = self._message_part(choice.message)
        self._finish_reason = choice.finish_reason
        return [*events, *self.finish()]


class OpenAIChatProvider(_OpenAIProvider):
    """``client.chat.completions.create``: the API every OpenAI-compatible server speaks."""

    max_tokens_field: ClassVar[str] = "max_completion_tokens"

    def _history_fields(self, request: ModelRequest) -> dict[str, Any]:
        return {"messages": chat_messages(request)}

    def _tool_fields(self, request: ModelRequest) -> dict[str, Any]:
        choice = tool_choice.openai_chat(request.tool_choice, request.parallel_tool_calls)
        return {"tools": chat_tools(request.tools), **choice}

    def _create(self, client: AsyncOpenAI, kwargs: dict[str, Any]) -> Awaitable[Any]:
        if kwargs.get("stream"):
            kwargs = {**kwargs, "stream_options": {"include_usage": True}}
        return client.chat.completions.create(**kwargs)

    def _decoder(self, builder: MessageBuilder) -> _Decoder:
        return _ChatDecoder(builder)


# ---------------------------------------------------------------------------------------------
# Responses
# ---------------------------------------------------------------------------------------------

_REASONING_MARK = "openai.responses.reasoning"


def _reasoning_signature(item: Any) -> str | None:
    encrypted = getattr(item, "encrypted_content", None)
    if not encrypted:
        return None
    return json.dumps({"kind": _REASONING_MARK, "id": item.id, "encrypted_content": encrypted})


def _reasoning_item(block: ThinkingContent) -> dict[str, Any] | None:
    """The reasoning item a thinking block came from, or None when it came from elsewhere."""
    if not block.signature:
        return None
    try:
        data = json.loads(block.signature)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("kind") != _REASONING_MARK:
        return None
    summary = [{"type": "summary_text", "text": block.thinking}] if block.thinking else []
    return {"type": "reasoning", "id": data["id"], "encrypted_content": data["encrypted_content"], "summary": summary}


def responses_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False}
        for t in tools
    ]


def responses_input(request: ModelRequest) -> list[dict[str, Any]]:
    """Our history as Responses input items; the system prompt goes to ``instructions`` instead."""
    items: list[dict[str, Any]] = []
    for message in request.messages:
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


def responses_usage(usage: Any) -> Usage:
    cached = getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", None) or 0
    return usage_with_cached_prompt(usage.input_tokens or 0, usage.output_tokens or 0, cached, usage.total_tokens)


class _ResponsesDecoder(_Decoder):
    """Output items are addressed by ``output_index``; text parts by ``(output_index, content_index)``."""

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder
        self.blocks = _Blocks(builder)
        self._items: dict[int, int] = {}
        self._texts: dict[tuple[int, int], int] = {}
        self._summary_part: dict[int, int] = {}
        self._refusal: list[str] = []
        self._seen: set[int] = set()  # output positions that streamed at least one event

    # -- items ------------------------------------------------------------------------------
    def _item_added(self, position: int, item: Any) -> list[AssistantMessageEvent]:
        if item.type == "function_call":
            index, event = self.blocks.open_call(item.call_id or "", item.name or "")
        elif item.type == "reasoning":
            index, event = self.blocks.open_thinking()
        else:
            return []
        self._items[position] = index
        return [event]

    def _item_done(self, position: int, item: Any) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        if item.type == "message":
            opened = [key for key in self._texts if key[0] == position]
            if not opened:  # no deltas arrived (or not streamed): take the text from the item
                for part_index, part in enumerate(item.content or []):
                    events.extend(self._content_part(position, part_index, part))
            for key in sorted(key for key in self._texts if key[0] == position):
                events.extend(self.blocks.close(self._texts[key]))
            return events
        if item.type not in ("function_call", "reasoning"):
            return events  # hosted tools run on OpenAI's side: not ours to execute
        if position not in self._items:
            events.extend(self._item_added(position, item))
        index = self._items[position]
        if item.type == "function_call":
            self.builder.toolcall_rename(index, id=item.call_id or None, name=item.name or None)
            if not self.blocks.received.get(index) and item.arguments:
                events.append(self.blocks.call_delta(index, item.arguments))
        else:
            if position not in self._summary_part:
                texts = [part.text for part in (item.summary or []) if getattr(part, "text", None)]
                texts += [part.text for part in (getattr(item, "content", None) or []) if getattr(part, "text", None)]
                if texts:
                    events.append(self.builder.thinking_delta(index, "\n\n".join(texts)))
            signature = _reasoning_signature(item)
            if signature:
                self.builder.thinking_signature(index, signature)
        events.extend(self.blocks.close(index))
        return events

    def _content_part(self, position: int, part_index: int, part: Any) -> list[AssistantMessageEvent]:
        if part.type == "output_text" and part.text:
            return self._text_delta(position, part_index, part.text)
        if part.type == "refusal" and part.refusal:
            self._refusal.append(part.refusal)
        return []

    def _text_delta(self, position: int, part_index: int, delta: str) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        index = self._texts.get((position, part_index))
        if index is None:
            index, event = self.blocks.open_text()
            self._texts[(position, part_index)] = index
            events.append(event)
        events.append(self.builder.text_delta(index, delta))
        return events

    def _thinking_delta(self, position: int, part: int, delta: str) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        index = self._items.get(position)
        if index is None:
            index, event = self.blocks.open_thinking()
            self._items[position] = index
            events.append(event)
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
        if kind == "response.function_call_arguments.delta":
            index = self._items.get(event.output_index)
            if index is None:
                index, start = self.blocks.open_call("", "")
                self._items[event.output_index] = index
                return [start, self.blocks.call_delta(index, event.delta)]
            return [self.blocks.call_delta(index, event.delta)]
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
            return [*self.blocks.close_all(), self.builder.error("error", f"{label}: {event.message}")]
        return []

    def finish(self) -> list[AssistantMessageEvent]:
        self.finished = True
        events = self.blocks.close_all()
        return [*events, self.builder.error("error", "stream ended before response.completed")]

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
        events.extend(self.blocks.close_all())
        if getattr(response, "usage", None):
            self.builder.usage = responses_usage(response.usage)
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


class OpenAIResponsesProvider(_OpenAIProvider):
    """``client.responses.create``: OpenAI's current API, the one that returns reasoning items."""

    max_tokens_field: ClassVar[str] = "max_output_tokens"

    def _history_fields(self, request: ModelRequest) -> dict[str, Any]:
        fields: dict[str, Any] = {"input": responses_input(request)}
        if request.system_prompt:  # Responses takes the system prompt apart from the input
            fields["instructions"] = request.system_prompt
        return fields

    def _tool_fields(self, request: ModelRequest) -> dict[str, Any]:
        choice = tool_choice.openai_responses(request.tool_choice, request.parallel_tool_calls)
        return {"tools": responses_tools(request.tools), **choice}

    def _create(self, client: AsyncOpenAI, kwargs: dict[str, Any]) -> Awaitable[Any]:
        return client.responses.create(**kwargs)

    def _decoder(self, builder: MessageBuilder) -> _Decoder:
        return _ResponsesDecoder(builder)


__all__ = [
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "chat_messages",
    "chat_tools",
    "describe_error",
    "responses_input",
    "responses_tools",
]
