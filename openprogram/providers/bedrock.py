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
import base64
import contextlib
import functools
import json
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

try:
    import boto3
    from botocore.exceptions import ClientError, EventStreamError
except ImportError as exc:  # pragma: no cover - exercised by simulating the missing extra
    raise ImportError(
        'The Bedrock backend needs boto3, an optional extra: pip install -e ".[bedrock]" in the openprogram checkout'
    ) from exc

from openprogram.errors import ReplyError, describe_exception
from openprogram.providers import ModelRequest, tool_choice
from openprogram.providers._shared import (
    END,
    Aborted,
    CancelRace,
    Decoder,
    SDKProvider,
    http_error_text,
    merge_same_role,
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

_T = TypeVar("_T")

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "stop",  # the builder turns it into toolUse
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
}
"""Every other stop reason (guardrail_intervened, content_filtered, ...) is an error."""

_EMPTY_RESULT = "(no output)"
"""Converse rejects empty text blocks; a tool result must still say something."""


def _runtime_client(**kwargs: Any) -> Any:
    """A ``bedrock-runtime`` client; ``boto3.client`` is looked up per call, as boto3 expects."""
    return boto3.client("bedrock-runtime", **kwargs)


class BedrockProvider(SDKProvider[Any]):
    """A :class:`~openprogram.providers.Provider` for models on Amazon Bedrock's Converse API.

    ``client`` is a ready boto3 ``bedrock-runtime`` client and is used as given. Without one, a
    client is built from ``client_kwargs`` (``region_name``, credentials, ``config``...) and the
    usual AWS environment on first use. A boto3 client is thread-safe and bound to no event
    loop, so one client serves every loop.
    """

    name: ClassVar[str] = "bedrock"

    client_factory: ClassVar[Callable[..., Any]] = _runtime_client

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._build_client()
        return self._client

    @client.setter
    def client(self, client: Any) -> None:
        self._client = client

    def _client_for_running_loop(self) -> Any:
        """Not one per loop: a boto3 client is thread-safe and bound to no event loop, so one serves all."""
        return self.client

    def _describe(self, exc: Exception) -> str:
        return describe_error(exc)

    async def _reply(
        self, request: ModelRequest, model: str, builder: MessageBuilder, race: CancelRace
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        kwargs = self._converse_kwargs(model, request)
        client = await asyncio.to_thread(self._client_for_running_loop)  # building one reads files
        decoder = BedrockDecoder(builder)
        if self.streaming:
            response = await _in_thread(
                functools.partial(client.converse_stream, **kwargs), race, on_abandon=_close_stream_of
            )
            event_stream = response["stream"]
            try:
                events = iter(event_stream)
                while (item := await _in_thread(functools.partial(next, events, END), race)) is not END:
                    for event in decoder.feed(item):
                        yield event
            finally:
                with contextlib.suppress(Exception):
                    event_stream.close()
            race.raise_if_cancelled()
            for event in decoder.finish():
                yield event
        else:
            response = await _in_thread(functools.partial(client.converse, **kwargs), race)
            *blocks, finish = decoder.whole(response)
            for event in blocks:
                yield event
            race.raise_if_cancelled()  # a consumer that cancelled on a block's event gets an abort
            yield finish

    def _converse_kwargs(self, model: str, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"modelId": model}
        tool_config: dict[str, Any] | None = None
        if request.tools:
            choice = tool_choice.bedrock(request.tool_choice, request.parallel_tool_calls)
            if tool_choice.OMIT_TOOLS not in choice:
                tool_config = {"tools": convert_tools(request.tools), **choice}
        kwargs["messages"] = convert_messages(request.messages, tool_blocks=tool_config is not None)
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


def convert_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """ToolSpecs as Converse ``toolSpec`` entries (the JSON Schema goes in ``inputSchema.json``)."""
    converted = []
    for spec in tools:
        tool: dict[str, Any] = {"name": spec.name, "inputSchema": {"json": spec.parameters}}
        if spec.description:  # Converse rejects an empty description
            tool["description"] = spec.description
        converted.append({"toolSpec": tool})
    return converted


def convert_messages(messages: Sequence[Message], *, tool_blocks: bool = True) -> list[dict[str, Any]]:
    """Map the loop's history to Converse messages, merging neighbours of the same role.

    ``tool_blocks=False`` renders tool calls and results as text, for requests sent without a
    ``toolConfig``. Assistant messages that ended in error or abort are dropped: their calls never
    got results, and Converse rejects a ``toolUse`` without its ``toolResult``.
    """

    def turn(message: Message) -> tuple[str, list[dict[str, Any]]]:
        if isinstance(message, UserMessage):
            return "user", _user_blocks(message)
        if isinstance(message, ToolResultMessage):
            return "user", [_tool_result_block(message) if tool_blocks else _tool_result_text(message)]
        return "assistant", _assistant_blocks(message, tool_blocks=tool_blocks)

    return [{"role": role, "content": content} for role, content in merge_same_role(messages, turn)]


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
            if own and block.redacted and block.signature:
                blocks.append({"reasoningContent": {"redactedContent": base64.b64decode(block.signature)}})
            elif own and block.thinking:
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


class BedrockDecoder(Decoder):
    """A Converse stream's events (or one whole Converse response) as builder calls.

    The stream names blocks by ``contentBlockIndex``; text and reasoning blocks get no
    ``contentBlockStart``, so a block opens on its first delta.
    """

    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self.stop_reason: str | None = None
        self._whole = False

    def feed(self, event: Mapping[str, Any]) -> list[AssistantMessageEvent]:
        builder = self.builder
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            tool = start.get("start", {}).get("toolUse")
            if tool is not None:
                wire = start.get("contentBlockIndex", 0)
                return [builder.toolcall_start(tool.get("toolUseId", ""), tool.get("name", ""), wire=wire)[1]]
        elif "contentBlockDelta" in event:
            if "delta" not in event["contentBlockDelta"]:  # botocore reads a payload it cannot parse as {}
                raise ReplyError("Bedrock stream sent a contentBlockDelta with no delta (malformed JSON payload?)")
            return self._delta(event["contentBlockDelta"])
        elif "contentBlockStop" in event:
            return builder.close_wire(event["contentBlockStop"].get("contentBlockIndex", 0))
        elif "messageStop" in event:
            self.stop_reason = event["messageStop"].get("stopReason")
        elif "metadata" in event:
            usage = event["metadata"].get("usage")
            if usage:
                builder.usage = _usage(usage)
        else:
            for key, value in event.items():
                if key.endswith("Exception"):  # an exception frame the SDK handed over instead of raising
                    message = value.get("message", value) if isinstance(value, Mapping) else value
                    raise ReplyError(f"Bedrock stream error {key}: {message}")
        return []

    def _delta(self, delta_event: Mapping[str, Any]) -> list[AssistantMessageEvent]:
        builder = self.builder
        wire = delta_event.get("contentBlockIndex", 0)
        delta = delta_event.get("delta", {})
        events: list[AssistantMessageEvent] = []
        index: int | None
        if "text" in delta:
            index = self._open(wire, "text", events)
            if delta["text"]:
                events.append(builder.text_delta(index, delta["text"]))
        elif "toolUse" in delta:
            index = builder.index_of(wire)
            if index is None:  # no contentBlockStart seen: keep the fragments anyway
                index, opened = builder.toolcall_start("", "", wire=wire)
                events.append(opened)
            fragment = delta["toolUse"].get("input", "")
            if isinstance(builder.block(index), ToolCall) and fragment:
                events.append(builder.toolcall_delta(index, fragment))
        elif "reasoningContent" in delta:
            reasoning = delta["reasoningContent"]
            if reasoning.get("redactedContent") is not None:  # Claude's encrypted thinking, as bytes
                index = self._open(wire, "thinking", events)
                data = base64.b64decode(builder.block(index).signature or "") + reasoning["redactedContent"]
                builder.thinking_fields(index, signature=base64.b64encode(data).decode("ascii"), redacted=True)
            elif "text" in reasoning or "signature" in reasoning:
                index = self._open(wire, "thinking", events)
                if reasoning.get("text"):
                    events.append(builder.thinking_delta(index, reasoning["text"]))
                if reasoning.get("signature"):
                    builder.thinking_signature(index, reasoning["signature"])
        return events

    def _open(self, wire: int, kind: str, events: list[AssistantMessageEvent]) -> int:
        """The builder index of the wire block, opening it as ``kind`` on first sight."""
        index = self.builder.index_of(wire)
        if index is None:
            start = self.builder.text_start if kind == "text" else self.builder.thinking_start
            index, opened = start(wire=wire)
            events.append(opened)
        return index

    def whole(self, response: Mapping[str, Any]) -> list[AssistantMessageEvent]:
        self._whole = True
        builder = self.builder
        if response.get("usage"):
            builder.usage = _usage(response["usage"])
        self.stop_reason = response.get("stopReason")
        events: list[AssistantMessageEvent] = []
        for block in response.get("output", {}).get("message", {}).get("content", []):
            if "text" in block:
                events += builder.whole_text(block["text"])
            elif "toolUse" in block:
                tool = block["toolUse"]
                events += builder.whole_toolcall(tool.get("toolUseId", ""), tool.get("name", ""), tool.get("input"))
            elif "reasoningContent" in block:
                reasoning = block["reasoningContent"].get("reasoningText")
                redacted = block["reasoningContent"].get("redactedContent")
                if reasoning is not None:
                    events += builder.whole_thinking(reasoning.get("text") or "", reasoning.get("signature"))
                elif redacted is not None:  # Claude's encrypted thinking: kept (base64) to be sent back as it came
                    events += builder.whole_thinking("", base64.b64encode(redacted).decode("ascii"), redacted=True)
        return [*events, *self.finish()]

    def finish(self) -> list[AssistantMessageEvent]:
        builder = self.builder
        reason = self.stop_reason
        if reason is None and builder.open_indices:
            return [builder.error("error", "Bedrock stream ended before its blocks were complete (stream cut?)")]
        closing = builder.close_all()
        if reason in STOP_REASONS:
            return [*closing, builder.done(STOP_REASONS[reason])]
        if reason is None and builder.has_tool_calls and self._whole:
            return [*closing, builder.done("stop")]
        if reason is None:
            return [*closing, builder.error("error", "Bedrock reply ended without a stop reason (stream cut?)")]
        return [*closing, builder.error("error", f"Bedrock stopped the reply: {reason}")]


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
        code = details.get("Code") or None
        if code == str(status):  # botocore falls back to the status when the type header is gone
            code = None
        message = details.get("Message") or str(error)
        if not status:
            return f"Bedrock error {code}: {message}" if code else f"Bedrock error: {message}"
        headers = {name.lower(): value for name, value in (metadata.get("HTTPHeaders") or {}).items()}
        return http_error_text(status, code, message, retry_after(headers))
    return describe_exception(error)


def _close_stream_of(response: Mapping[str, Any]) -> None:
    with contextlib.suppress(Exception):
        response["stream"].close()


async def _in_thread(
    call: Callable[[], _T],
    race: CancelRace,
    *,
    on_abandon: Callable[[_T], None] | None = None,
) -> _T:
    """Run a blocking boto3 step in a worker thread; on cancel, stop waiting for it.

    A thread cannot be interrupted, so an abandoned step finishes on its own; ``on_abandon``
    then receives its late result (e.g. to close a stream nobody will read). The hand-over is
    settled under a lock in the worker itself, so it happens even if the event loop is gone by then.
    """
    race.raise_if_cancelled()  # no thread for a step nobody will wait for
    handover = _Handover(on_abandon)
    work = asyncio.ensure_future(asyncio.to_thread(handover.run, call))
    try:
        await race.wait(work)
    finally:  # also reached when our own task is cancelled: the late result is still disposed of
        if not work.done():
            work.add_done_callback(_consume)
            handover.abandon()
    if not work.done():
        raise Aborted
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


__all__ = ["STOP_REASONS", "BedrockDecoder", "BedrockProvider", "convert_messages", "convert_tools", "describe_error"]
