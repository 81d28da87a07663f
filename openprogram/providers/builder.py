"""Assembles an ``AssistantMessage`` from streamed pieces and emits the matching events.

Every backend has the same job once the wire format is decoded: open a block, append deltas,
close it, finish. Doing it here once keeps the event shapes, the ``partial`` snapshots, the JSON
parsing of tool arguments and the ``toolUse`` stop-reason rule identical across providers.
"""

from __future__ import annotations

from typing import Any

from openprogram.types import (
    AssistantMessage,
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


class MessageBuilder:
    """Mutable scratch space for one streaming reply; every method returns the event to yield.

    Blocks are addressed by the index the builder hands out, so a backend whose wire format
    interleaves blocks (several tool calls streaming at once) maps its own index to ours.
    """

    def __init__(self, *, model: str = "", provider: str = "") -> None:
        self.model = model
        self.provider = provider
        self.usage = Usage()
        self._blocks: list[Any] = []
        self._buffers: list[list[str]] = []
        self._tool_ids: dict[int, tuple[str, str]] = {}
        self._closed: set[int] = set()
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
    def open_indices(self) -> list[int]:
        return [i for i in range(len(self._blocks)) if i not in self._closed]

    def start(self) -> StartEvent:
        return StartEvent(partial=self.snapshot())

    # -- text -----------------------------------------------------------------------------
    def text_start(self) -> tuple[int, TextStartEvent]:
        index = self._open(TextContent(type="text", text=""))
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
    def thinking_start(self) -> tuple[int, ThinkingStartEvent]:
        index = self._open(ThinkingContent(type="thinking", thinking="", signature=None))
        return index, ThinkingStartEvent(content_index=index, partial=self.snapshot())

    def thinking_delta(self, index: int, delta: str) -> ThinkingDeltaEvent:
        self._buffers[index].append(delta)
        signature = self._blocks[index].signature
        self._set(index, ThinkingContent(thinking="".join(self._buffers[index]), signature=signature))
        return ThinkingDeltaEvent(content_index=index, delta=delta, partial=self.snapshot())

    def thinking_signature(self, index: int, signature: str) -> None:
        block = self._blocks[index]
        self._set(index, ThinkingContent(thinking=block.thinking, signature=(block.signature or "") + signature))

    def thinking_end(self, index: int) -> ThinkingEndEvent:
        self._closed.add(index)
        text = "".join(self._buffers[index])
        return ThinkingEndEvent(content_index=index, content=text, partial=self.snapshot())

    # -- tool calls -----------------------------------------------------------------------
    def toolcall_start(self, id: str, name: str) -> tuple[int, ToolCallStartEvent]:
        index = self._open(ToolCall(id=id, name=name, arguments={}, raw_arguments=None))
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
        call = ToolCall(id=id, name=name, arguments=arguments, raw_arguments=raw)
        self._set(index, call)
        return ToolCallEndEvent(content_index=index, tool_call=call, partial=self.snapshot())

    # -- finishing ------------------------------------------------------------------------
    def done(self, reason: StopReason = "stop") -> DoneEvent:
        """Finish normally. A reply holding tool calls is ``toolUse`` unless it was truncated."""
        if any(isinstance(block, ToolCall) for block in self._blocks) and reason == "stop":
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

    def _open(self, block: Any) -> int:
        self._snapshot = None
        self._blocks.append(block)
        self._buffers.append([])
        return len(self._blocks) - 1
