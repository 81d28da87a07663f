"""Assembles an ``AssistantMessage`` from streamed pieces and emits the matching events.

Every backend has the same job once the wire format is decoded: open a block, append deltas,
close it, finish. Doing it here once keeps the event shapes, the ``partial`` snapshots, the JSON
parsing of tool arguments and the ``toolUse`` stop-reason rule identical across providers.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any

from openprogram.types import (
    AssistantMessage,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    StopReason,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingContent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    Usage,
    parse_tool_arguments,
)

__all__ = ["MessageBuilder"]


class MessageBuilder:
    """Mutable scratch space for one streaming reply; every method returns the event to yield.

    Blocks are addressed by the index the builder hands out. A backend whose wire format names
    blocks itself (Anthropic's and Bedrock's block index, OpenAI's ``output_index``) passes that
    name as ``wire=`` when it opens a block and finds the block again with :meth:`index_of`, so
    interleaved blocks (several tool calls streaming at once) need no table in each backend.

    The closing rules every backend shares live here too: :meth:`close` ends a block with the
    ``*_end`` call its kind needs, :meth:`close_all` ends what is still open before a finish, and
    the ``whole_*`` methods replay a block that arrived complete as start, delta and end.
    """

    def __init__(self, *, model: str = "", provider: str = "") -> None:
        self.model = model
        self.provider = provider
        self.usage = Usage()
        self._blocks: list[Any] = []
        self._buffers: list[list[str]] = []
        self._tool_ids: dict[int, tuple[str, str]] = {}
        self._closed: set[int] = set()
        self._wire: dict[Hashable, int] = {}
        self._snapshot: AssistantMessage | None = None  # valid until a block or the usage changes

    # -- snapshots ------------------------------------------------------------------------
    def snapshot(self, stop_reason: StopReason = "stop", error_message: str | None = None) -> AssistantMessage:
        cached = self._snapshot
        if cached is not None and stop_reason == "stop" and error_message is None and cached.usage is self.usage:
            return cached  # nothing changed since the last event: share it
        snapshot = AssistantMessage(
            content=tuple(self._blocks),
            stop_reason=stop_reason,
            error_message=error_message,
            usage=self.usage,
            model=self.model,
            provider=self.provider,
        )
        if stop_reason == "stop" and error_message is None:
            self._snapshot = snapshot
        return snapshot

    @property
    def has_content(self) -> bool:
        return bool(self._blocks)

    @property
    def has_tool_calls(self) -> bool:
        return any(isinstance(block, ToolCall) for block in self._blocks)

    @property
    def open_indices(self) -> list[int]:
        return [i for i in range(len(self._blocks)) if i not in self._closed]

    def block(self, index: int) -> Any:
        """The block at ``index`` as it stands (a ``TextContent``, ``ThinkingContent`` or ``ToolCall``)."""
        return self._blocks[index]

    def index_of(self, wire: Hashable) -> int | None:
        """The builder index of the block opened with ``wire=`` (None: never opened, or closed by wire)."""
        return self._wire.get(wire)

    def received_deltas(self, index: int) -> bool:
        """Whether any delta (even an empty one) was appended to the block."""
        return bool(self._buffers[index])

    def start(self) -> StartEvent:
        return StartEvent(partial=self.snapshot())

    # -- text -----------------------------------------------------------------------------
    def text_start(self, *, wire: Hashable | None = None) -> tuple[int, TextStartEvent]:
        index = self._open(TextContent(type="text", text=""), wire)
        return index, TextStartEvent(content_index=index, partial=self.snapshot())

    def text_delta(self, index: int, delta: str) -> TextDeltaEvent:
        self._buffers[index].append(delta)
        self._set(index, TextContent(type="text", text="".join(self._buffers[index])))
        return TextDeltaEvent(content_index=index, delta=delta, partial=self.snapshot())

    def text_end(self, index: int) -> TextEndEvent:
        self._closed.add(index)
        text = "".join(self._buffers[index])
        return TextEndEvent(content_index=index, content=text, partial=self.snapshot())

    # -- thinking -------------------------------------------------------------------------
    def thinking_start(self, *, wire: Hashable | None = None) -> tuple[int, ThinkingStartEvent]:
        index = self._open(ThinkingContent(type="thinking", thinking="", signature=None), wire)
        return index, ThinkingStartEvent(content_index=index, partial=self.snapshot())

    def thinking_delta(self, index: int, delta: str) -> ThinkingDeltaEvent:
        self._buffers[index].append(delta)
        self._set(index, self._blocks[index].model_copy(update={"thinking": "".join(self._buffers[index])}))
        return ThinkingDeltaEvent(content_index=index, delta=delta, partial=self.snapshot())

    def thinking_signature(self, index: int, signature: str) -> None:
        block = self._blocks[index]
        self._set(index, block.model_copy(update={"signature": (block.signature or "") + signature}))

    def thinking_fields(self, index: int, **fields: Any) -> None:
        """Set the named provider fields of a thinking block (``redacted``, ``item_id``, ...)."""
        self._set(index, self._blocks[index].model_copy(update=fields))

    def thinking_end(self, index: int) -> ThinkingEndEvent:
        self._closed.add(index)
        text = "".join(self._buffers[index])
        return ThinkingEndEvent(content_index=index, content=text, partial=self.snapshot())

    # -- tool calls -----------------------------------------------------------------------
    def toolcall_start(
        self, id: str, name: str, *, wire: Hashable | None = None, thought_signature: str | None = None
    ) -> tuple[int, ToolCallStartEvent]:
        call = ToolCall(id=id, name=name, arguments={}, raw_arguments=None, thought_signature=thought_signature)
        index = self._open(call, wire)
        self._tool_ids[index] = (id, name)
        return index, ToolCallStartEvent(content_index=index, partial=self.snapshot())

    def toolcall_rename(self, index: int, *, id: str | None = None, name: str | None = None) -> None:
        """Fill in an id or name that arrived after the call opened (OpenAI sends them in deltas)."""
        old_id, old_name = self._tool_ids[index]
        self._tool_ids[index] = (id or old_id, name or old_name)
        self._set(index, self._blocks[index].model_copy(update={"id": id or old_id, "name": name or old_name}))

    def tool_identity(self, index: int) -> tuple[str, str]:
        return self._tool_ids[index]

    def toolcall_delta(self, index: int, delta: str) -> ToolCallDeltaEvent:
        self._buffers[index].append(delta)
        return ToolCallDeltaEvent(content_index=index, delta=delta, partial=self.snapshot())

    def toolcall_end(self, index: int, arguments: dict[str, Any] | None = None) -> ToolCallEndEvent:
        """Close a call; ``arguments`` skips JSON parsing for backends that receive objects."""
        self._closed.add(index)
        id, name = self._tool_ids[index]
        if arguments is None:
            arguments, raw = parse_tool_arguments("".join(self._buffers[index]))
        else:
            raw = None
        fields = {"id": id, "name": name, "arguments": arguments, "raw_arguments": raw}
        call = self._blocks[index].model_copy(update=fields)
        self._set(index, call)
        return ToolCallEndEvent(content_index=index, tool_call=call, partial=self.snapshot())

    # -- whole blocks and closing -----------------------------------------------------------
    def whole_text(self, text: str) -> list[AssistantMessageEvent]:
        """A text block that arrived complete, as the start, delta and end a stream would show."""
        index, start = self.text_start()
        deltas = [self.text_delta(index, text)] if text else []
        return [start, *deltas, self.text_end(index)]

    def whole_thinking(self, thinking: str, signature: str | None = None, **fields: Any) -> list[AssistantMessageEvent]:
        """A complete thinking block; ``fields`` are its provider fields (``redacted``, ``item_id``, ...)."""
        index, start = self.thinking_start()
        deltas = [self.thinking_delta(index, thinking)] if thinking else []
        if signature:
            self.thinking_signature(index, signature)
        if fields:
            self.thinking_fields(index, **fields)
        return [start, *deltas, self.thinking_end(index)]

    def whole_toolcall(
        self, id: str, name: str, arguments: Any, *, thought_signature: str | None = None
    ) -> list[AssistantMessageEvent]:
        """A call whose arguments arrived as a value. A dict is taken as it is; anything else goes
        through the JSON text, so the builder keeps it in ``raw_arguments`` as it would a bad stream."""
        index, start = self.toolcall_start(id, name, thought_signature=thought_signature)
        delta = self.toolcall_delta(index, json.dumps(arguments, ensure_ascii=False))
        end = self.toolcall_end(index, arguments=arguments) if isinstance(arguments, dict) else self.toolcall_end(index)
        return [start, delta, end]

    def close(self, index: int, *, arguments: dict[str, Any] | None = None) -> list[AssistantMessageEvent]:
        """End block ``index`` with the end event of its kind; nothing if it is closed already.

        ``arguments`` is for a tool call whose arguments came as an object (see :meth:`toolcall_end`).
        """
        if index in self._closed or index >= len(self._blocks):
            return []
        block = self._blocks[index]
        if isinstance(block, TextContent):
            return [self.text_end(index)]
        if isinstance(block, ThinkingContent):
            return [self.thinking_end(index)]
        return [self.toolcall_end(index, arguments)]

    def close_wire(self, wire: Hashable, *, arguments: dict[str, Any] | None = None) -> list[AssistantMessageEvent]:
        """End the block opened with ``wire=``, and forget the name (a later block may reuse it)."""
        index = self._wire.pop(wire, None)
        return [] if index is None else self.close(index, arguments=arguments)

    def close_all(self) -> list[AssistantMessageEvent]:
        """End every open block, in order: what a finish does with blocks the wire never closed."""
        self._wire.clear()
        return [event for index in self.open_indices for event in self.close(index)]

    # -- finishing ------------------------------------------------------------------------
    def done(self, reason: StopReason = "stop") -> DoneEvent:
        """Finish normally. A reply holding tool calls is ``toolUse`` unless it was truncated."""
        if self.has_tool_calls and reason == "stop":
            reason = "toolUse"
        if reason not in ("stop", "length", "toolUse"):
            return self.error(reason, f"provider finished with stop reason {reason!r}")  # type: ignore[return-value]
        return DoneEvent(reason=reason, message=self.snapshot(reason))

    def error(self, reason: StopReason, message: str) -> ErrorEvent:
        reason = "aborted" if reason == "aborted" else "error"
        return ErrorEvent(reason=reason, error=self.snapshot(reason, message))

    def _set(self, index: int, block: Any) -> None:
        self._blocks[index] = block
        self._snapshot = None

    def _open(self, block: Any, wire: Hashable | None = None) -> int:
        self._snapshot = None
        self._blocks.append(block)
        self._buffers.append([])
        index = len(self._blocks) - 1
        if wire is not None:
            self._wire[wire] = index
        return index
