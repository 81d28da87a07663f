"""Bedrock backend: boto3 ``bedrock-runtime`` ``converse`` / ``converse_stream``.

boto3 is synchronous, so every blocking step (the call itself, then each read of the event
stream) runs in a worker thread and the event loop stays free. On cancel we stop waiting at once
and close the HTTP stream, which also unblocks a worker stuck in a read.

Converse has two rules the other backends do not: roles must alternate (so tool results and a
steering message that follows them share one user message), and a request whose history holds
``toolUse``/``toolResult`` blocks must carry a ``toolConfig``. When we send no tools (the request
has none, or ``tool_choice="none"``, which Converse can only express by withholding them), those
history blocks are rendered as plain text instead, so the model still reads what happened and
cannot call anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

try:
    import boto3
    from botocore.exceptions import ClientError, EventStreamError
except ImportError as exc:  # pragma: no cover - exercised by simulating the missing extra
    raise ImportError('The Bedrock backend needs boto3, an optional extra: pip install "openprogram[bedrock]"') from exc

from openprogram.providers import ModelRequest, tool_choice
from openprogram.providers.builder import MessageBuilder
from openprogram.types import (
    AssistantMessage,
    AssistantMessageEvent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

_T = TypeVar("_T")

_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "stop",  # the builder turns it into toolUse
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
"""Every other stop reason (guardrail_intervened, content_filtered, ...) is an error."""

_EMPTY_RESULT = "(no output)"
"""Converse rejects empty text blocks; a tool result must still say something."""

_END = object()


class _Aborted(Exception):
    """The caller's cancel event fired while we were waiting on Bedrock."""


class BedrockProvider:
    """A :class:`~openprogram.providers.Provider` for models on Amazon Bedrock's Converse API.

    ``client`` is a ready boto3 ``bedrock-runtime`` client and is used as given. Without one, a
    client is built from ``client_kwargs`` (``region_name``, credentials, ``config``...) and the
    usual AWS environment on first use. A boto3 client is thread-safe and bound to no event
    loop, so one client serves every loop.
    """

    name: ClassVar[str] = "bedrock"

    def __init__(
        self,
        client: Any = None,
        *,
        model: str | None = None,
        stream: bool = True,
        max_tokens: int | None = None,
        **client_kwargs: Any,
    ) -> None:
        self._client = client
        self._client_kwargs = client_kwargs
        self.model = model
        self.streaming = stream
        self.max_tokens = max_tokens

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = boto3.client("bedrock-runtime", **self._client_kwargs)
        return self._client

    async def stream(
        self, request: ModelRequest, cancel_event: asyncio.Event | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        model = request.model or self.model
        builder = MessageBuilder(model=model or "", provider=self.name)
        yield builder.start()
        if not model:
            yield builder.error(
                "error", "No Bedrock model given: pass BedrockProvider(model=...) or set ModelRequest.model."
            )
            return
        if cancel_event is not None and cancel_event.is_set():
            yield builder.error("aborted", "Request was aborted")
            return

        event_stream: Any = None
        try:
            kwargs = self._converse_kwargs(model, request)
            client = await asyncio.to_thread(lambda: self.client)
            reader = _ReplyReader(builder)
            if self.streaming:
                response = await _in_thread(
                    functools.partial(client.converse_stream, **kwargs), cancel_event, on_abandon=_close_stream_of
                )
                event_stream = response["stream"]
                events = iter(event_stream)
                while True:
                    item = await _in_thread(functools.partial(next, events, _END), cancel_event)
                    if item is _END:
                        break
                    for event in reader.feed_stream_event(item):
                        yield event
            else:
                response = await _in_thread(functools.partial(client.converse, **kwargs), cancel_event)
                for event in reader.feed_response(response):
                    yield event
            if cancel_event is not None and cancel_event.is_set():
                raise _Aborted
            for event in reader.finish():
                yield event
        except _Aborted:
            yield builder.error("aborted", "Request was aborted")
        except Exception as error:  # HTTP, in-band and transport failures: never raise into the loop
            yield builder.error("error", describe_error(error))
        finally:
            if event_stream is not None:
                with contextlib.suppress(Exception):
                    event_stream.close()

    def _converse_kwargs(self, model: str, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"modelId": model}
        tool_config: dict[str, Any] | None = None
        if request.tools:
            choice = tool_choice.bedrock(request.tool_choice, request.parallel_tool_calls)
            if tool_choice.OMIT_TOOLS not in choice:
                tool_config = {"tools": [to_bedrock_tool(spec) for spec in request.tools], **choice}
        kwargs["messages"] = to_bedrock_messages(request.messages, tool_blocks=tool_config is not None)
        if tool_config is not None:
            kwargs["toolConfig"] = tool_config
        if request.system_prompt:
            kwargs["system"] = [{"text": request.system_prompt}]
        inference: dict[str, Any] = {}
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens is not None:
            inference["maxTokens"] = max_tokens
        if request.temperature is not None:
            inference["temperature"] = request.temperature
        if inference:
            kwargs["inferenceConfig"] = inference
        kwargs.update(request.extra)
        return kwargs


# -- request conversion ---------------------------------------------------------------------------


def to_bedrock_tool(spec: ToolSpec) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": spec.name, "inputSchema": {"json": spec.parameters}}
    if spec.description:  # Converse rejects an empty description
        tool["description"] = spec.description
    return {"toolSpec": tool}


def to_bedrock_messages(messages: Sequence[Message], *, tool_blocks: bool = True) -> list[dict[str, Any]]:
    """Map the loop's history to Converse messages, merging neighbours of the same role.

    ``tool_blocks=False`` renders tool calls and results as text, for requests sent without a
    ``toolConfig``. Assistant messages that ended in error or abort are dropped: their calls never
    got results, and Converse rejects a ``toolUse`` without its ``toolResult``.
    """
    converted: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            role, content = "user", _user_blocks(message)
        elif isinstance(message, ToolResultMessage):
            role, content = "user", [_tool_result_block(message) if tool_blocks else _tool_result_text(message)]
        elif message.stop_reason in ("error", "aborted"):
            continue
        else:
            role, content = "assistant", _assistant_blocks(message, tool_blocks=tool_blocks)
        if not content:
            continue
        if converted and converted[-1]["role"] == role:
            converted[-1]["content"].extend(content)
        else:
            converted.append({"role": role, "content": content})
    return converted


def _user_blocks(message: UserMessage) -> list[dict[str, Any]]:
    texts = [message.content] if isinstance(message.content, str) else [block.text for block in message.content]
    return [{"text": text} for text in texts if text]


def _tool_result_block(message: ToolResultMessage) -> dict[str, Any]:
    return {
        "toolResult": {
            "toolUseId": message.tool_call_id,
            "content": [{"text": message.text or _EMPTY_RESULT}],
            "status": "error" if message.is_error else "success",
        }
    }


def _tool_result_text(message: ToolResultMessage) -> dict[str, Any]:
    kind = "error from" if message.is_error else "result of"
    return {"text": f"[{kind} {message.tool_name}: {message.text or _EMPTY_RESULT}]"}


def _assistant_blocks(message: AssistantMessage, *, tool_blocks: bool) -> list[dict[str, Any]]:
    # Reasoning signatures only verify on the provider that signed them.
    own = message.provider in ("", BedrockProvider.name)
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text:
                blocks.append({"text": block.text})
        elif isinstance(block, ThinkingContent):
            if own and block.thinking:
                reasoning: dict[str, Any] = {"text": block.thinking}
                if block.signature:
                    reasoning["signature"] = block.signature
                blocks.append({"reasoningContent": {"reasoningText": reasoning}})
        elif isinstance(block, ToolCall):
            if tool_blocks:
                blocks.append({"toolUse": {"toolUseId": block.id, "name": block.name, "input": dict(block.arguments)}})
            else:
                arguments = block.raw_arguments or json.dumps(block.arguments, ensure_ascii=False)
                blocks.append({"text": f"[called {block.name} with {arguments}]"})
    return blocks


# -- response reading ------------------------------------------------------------------------------


class _ReplyReader:
    """Turns a Converse response, or the events of a Converse stream, into builder events.

    The stream names blocks by ``contentBlockIndex``; text and reasoning blocks get no
    ``contentBlockStart``, so a block opens on its first delta.
    """

    def __init__(self, builder: MessageBuilder) -> None:
        self._builder = builder
        self._blocks: dict[int, tuple[str, int]] = {}
        self._stop_reason: str | None = None

    # streaming
    def feed_stream_event(self, event: Mapping[str, Any]) -> Iterator[AssistantMessageEvent]:
        builder = self._builder
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = start.get("start", {}).get("toolUse")
            if tool is not None:
                index, opened = builder.toolcall_start(tool.get("toolUseId", ""), tool.get("name", ""))
                self._blocks[start.get("contentBlockIndex", 0)] = ("toolCall", index)
                yield opened
        elif "contentBlockDelta" in event:
            yield from self._delta(event["contentBlockDelta"])
        elif "contentBlockStop" in event:
            yield from self._close(event["contentBlockStop"].get("contentBlockIndex", 0))
        elif "messageStop" in event:
            self._stop_reason = event["messageStop"].get("stopReason")
        elif "metadata" in event:
            usage = event["metadata"].get("usage")
            if usage:
                builder.usage = _usage(usage)
        else:
            for key, value in event.items():
                if key.endswith("Exception"):  # an exception frame the SDK handed over instead of raising
                    message = value.get("message", value) if isinstance(value, Mapping) else value
                    raise _InBandError(f"Bedrock stream error {key}: {message}")

    def _delta(self, delta_event: Mapping[str, Any]) -> Iterator[AssistantMessageEvent]:
        builder = self._builder
        wire_index = delta_event.get("contentBlockIndex", 0)
        delta = delta_event.get("delta", {})
        if "text" in delta:
            index = yield from self._ensure_open(wire_index, "text")
            if delta["text"]:
                yield builder.text_delta(index, delta["text"])
        elif "toolUse" in delta:
            if wire_index not in self._blocks:  # no contentBlockStart seen: keep the fragments anyway
                index, opened = builder.toolcall_start("", "")
                self._blocks[wire_index] = ("toolCall", index)
                yield opened
            kind, index = self._blocks[wire_index]
            fragment = delta["toolUse"].get("input", "")
            if kind == "toolCall" and fragment:
                yield builder.toolcall_delta(index, fragment)
        elif "reasoningContent" in delta:
            reasoning = delta["reasoningContent"]
            if "text" in reasoning or "signature" in reasoning:
                index = yield from self._ensure_open(wire_index, "thinking")
                if reasoning.get("text"):
                    yield builder.thinking_delta(index, reasoning["text"])
                if reasoning.get("signature"):
                    builder.thinking_signature(index, reasoning["signature"])

    def _ensure_open(self, wire_index: int, kind: str) -> Iterator[AssistantMessageEvent]:
        """The builder index of the wire block, opening it as ``kind`` on first sight."""
        if wire_index in self._blocks:
            return self._blocks[wire_index][1]
        if kind == "text":
            index, opened = self._builder.text_start()
        else:
            index, opened = self._builder.thinking_start()
        self._blocks[wire_index] = (kind, index)
        yield opened
        return index

    def _close(self, wire_index: int) -> Iterator[AssistantMessageEvent]:
        entry = self._blocks.pop(wire_index, None)
        if entry is None:
            return
        kind, index = entry
        if kind == "text":
            yield self._builder.text_end(index)
        elif kind == "thinking":
            yield self._builder.thinking_end(index)
        else:
            yield self._builder.toolcall_end(index)

    # non-streaming
    def feed_response(self, response: Mapping[str, Any]) -> Iterator[AssistantMessageEvent]:
        builder = self._builder
        if response.get("usage"):
            builder.usage = _usage(response["usage"])
        self._stop_reason = response.get("stopReason")
        content = response.get("output", {}).get("message", {}).get("content", [])
        for block in content:
            if "text" in block:
                index, opened = builder.text_start()
                yield opened
                if block["text"]:
                    yield builder.text_delta(index, block["text"])
                yield builder.text_end(index)
            elif "toolUse" in block:
                tool = block["toolUse"]
                arguments = tool.get("input")
                index, opened = builder.toolcall_start(tool.get("toolUseId", ""), tool.get("name", ""))
                yield opened
                yield builder.toolcall_delta(index, json.dumps(arguments, ensure_ascii=False))
                if isinstance(arguments, dict):
                    yield builder.toolcall_end(index, arguments=arguments)
                else:  # not an object: let the builder keep the text in raw_arguments
                    yield builder.toolcall_end(index)
            elif "reasoningContent" in block:
                reasoning = block["reasoningContent"].get("reasoningText")
                if reasoning is None:
                    continue  # redactedContent: opaque bytes a ThinkingContent cannot hold
                index, opened = builder.thinking_start()
                yield opened
                if reasoning.get("text"):
                    yield builder.thinking_delta(index, reasoning["text"])
                if reasoning.get("signature"):
                    builder.thinking_signature(index, reasoning["signature"])
                yield builder.thinking_end(index)

    def finish(self) -> list[AssistantMessageEvent]:
        builder = self._builder
        if self._stop_reason is None and self._blocks:
            return [builder.error("error", "Bedrock stream ended before its blocks were complete (stream cut?)")]
        closing = [event for wire_index in list(self._blocks) for event in self._close(wire_index)]
        has_calls = any(isinstance(block, ToolCall) for block in builder.snapshot().content)
        reason = self._stop_reason
        if reason in _STOP_REASONS:
            return [*closing, builder.done(_STOP_REASONS[reason])]  # type: ignore[arg-type]
        if reason is None and has_calls:
            return [*closing, builder.done("stop")]
        if reason is None:
            return [*closing, builder.error("error", "Bedrock reply ended without a stop reason (stream cut?)")]
        return [*closing, builder.error("error", f"Bedrock stopped the reply: {reason}")]


class _InBandError(Exception):
    """An exception frame inside a 2xx event stream."""


def _usage(usage: Mapping[str, Any]) -> Usage:
    """Converse's ``inputTokens`` already excludes cache reads and writes."""
    input_tokens = usage.get("inputTokens", 0) or 0
    output_tokens = usage.get("outputTokens", 0) or 0
    cache_read = usage.get("cacheReadInputTokens", 0) or 0
    cache_write = usage.get("cacheWriteInputTokens", 0) or 0
    total = usage.get("totalTokens") or input_tokens + output_tokens + cache_read + cache_write
    return Usage(
        input=input_tokens, output=output_tokens, cache_read=cache_read, cache_write=cache_write, total_tokens=total
    )


# -- errors and threads ----------------------------------------------------------------------------


def describe_error(error: BaseException) -> str:
    """``HTTP <status> <Code>: <Bedrock's message>`` (plus ``retry after``), or the exception itself."""
    if isinstance(error, EventStreamError):
        details = error.response.get("Error", {})
        return f"Bedrock stream error {details.get('Code') or 'unknown'}: {details.get('Message') or error}"
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        metadata = error.response.get("ResponseMetadata", {})
        status = metadata.get("HTTPStatusCode")
        code = details.get("Code") or ""
        message = details.get("Message") or str(error)
        head = f"HTTP {status}" if status else "Bedrock error"
        if code and code != str(status):  # botocore falls back to the status when the type header is gone
            head += f" {code}"
        text = f"{head}: {message}"
        retry_after = {k.lower(): v for k, v in (metadata.get("HTTPHeaders") or {}).items()}.get("retry-after")
        if retry_after:
            text += f" (retry after {retry_after}s)" if str(retry_after).isdigit() else f" (retry after {retry_after})"
        return text
    if isinstance(error, _InBandError):
        return str(error)
    return f"{type(error).__name__}: {error}"


def _close_stream_of(response: Mapping[str, Any]) -> None:
    with contextlib.suppress(Exception):
        response["stream"].close()


async def _in_thread(
    call: Callable[[], _T],
    cancel_event: asyncio.Event | None,
    *,
    on_abandon: Callable[[_T], None] | None = None,
) -> _T:
    """Run a blocking boto3 step in a worker thread; on cancel, stop waiting for it.

    A thread cannot be interrupted, so an abandoned step finishes on its own; ``on_abandon``
    then receives its late result (e.g. to close a stream nobody will read). The hand-over is
    settled under a lock in the worker itself, so it happens even if the event loop is gone by then.
    """
    handover = _Handover(on_abandon)
    work = asyncio.ensure_future(asyncio.to_thread(handover.run, call))
    waiter = asyncio.ensure_future(cancel_event.wait()) if cancel_event is not None else None
    try:
        await asyncio.wait({work} if waiter is None else {work, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:  # also reached when our own task is cancelled: the late result is still disposed of
        if waiter is not None:
            waiter.cancel()
        if not work.done():
            work.add_done_callback(_consume)
            handover.abandon()
    if not work.done():
        raise _Aborted
    return work.result()


class _Handover:
    """Delivers a worker's result to exactly one owner: the waiting coroutine or ``on_abandon``."""

    def __init__(self, on_abandon: Callable[[Any], None] | None) -> None:
        self._on_abandon = on_abandon
        self._lock = threading.Lock()
        self._abandoned = False
        self._result: tuple[Any] | None = None

    def run(self, call: Callable[[], _T]) -> _T:
        result = call()
        with self._lock:
            if self._abandoned:
                self._dispose(result)
            else:
                self._result = (result,)
        return result

    def abandon(self) -> None:
        with self._lock:
            self._abandoned = True
            if self._result is not None:  # finished, but the loop had not seen it yet
                self._dispose(self._result[0])

    def _dispose(self, result: Any) -> None:
        if self._on_abandon is not None:
            with contextlib.suppress(Exception):
                self._on_abandon(result)


def _consume(work: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned step's outcome so asyncio does not log it as never retrieved."""
    if not work.cancelled():
        work.exception()


__all__ = ["BedrockProvider", "describe_error", "to_bedrock_messages", "to_bedrock_tool"]
