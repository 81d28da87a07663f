"""Assembles an ``AssistantMessage`` from streamed pieces and emits the matching events.

Every backend has the same job once the wire format is decoded: open a block, append deltas,
close it, finish. Doing it here once keeps the event shapes, the ``partial`` snapshots, the JSON
parsing of tool arguments and the ``toolUse`` stop-reason rule identical across providers.

Streaming costs time and memory linear in the reply's length: a block's deltas are gathered
and folded into its text a batch at a time (``_Text``), and each event's ``partial`` is lazy:
the event keeps how long each open block's text was when it was made (two integers) and builds
the message from the shared text only if someone reads it. An eager snapshot per delta would copy
the text so far on every delta (a 1 MB reply in 4-character deltas is 250,000 copies of up to 1 MB).
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
    trusted,
    trusted_copy,
)

__all__ = ["MessageBuilder"]


_MESSAGE_SET = frozenset({"content", "stop_reason", "error_message", "usage", "model", "provider"})
_TEXT_SET = frozenset({"type", "text"})
_NO_USAGE = Usage()  # frozen: every builder may start from the same zeros
_CALL_SET = frozenset({"id", "name", "arguments", "raw_arguments", "thought_signature"})


_FOLD_EVERY = 256
"""Deltas gathered before they are folded into a block's text."""


class _Text:
    """One block's streamed text: deltas gathered in ``tail``, folded into ``head`` every
    ``_FOLD_EVERY`` deltas and whenever the text is read.

    Why not ``text += delta`` per delta: CPython grows a string in place only while nothing else
    refers to it and the allocator has room after it; a consumer that keeps events, or anything
    else allocating between deltas, makes each ``+=`` copy the text so far, and a long reply
    quadratic. Folding a batch at a time makes such a copy 256 times rarer, and gathering costs
    one list append a delta.
    """

    __slots__ = ("head", "length", "tail")

    def __init__(self) -> None:
        self.head = ""
        self.tail: list[str] = []
        self.length = 0

    def append(self, delta: str) -> None:
        tail = self.tail
        tail.append(delta)
        self.length += len(delta)
        if len(tail) >= _FOLD_EVERY:
            self._fold()

    def _fold(self) -> None:
        head = self.head
        self.head = ""  # the only reference left is ``head``, so += may grow it in place
        head += "".join(self.tail)
        self.head = head
        self.tail.clear()

    def value(self) -> str:
        if self.tail:
            self._fold()
        return self.head

    def prefix(self, end: int) -> str:
        text = self.value()
        return text if end == len(text) else text[:end]


class _Version:
    """The blocks and usage between two changes of structure; every event in between shares it.

    Text and thinking blocks still streaming are stale in ``blocks`` (their text is in the
    builder's ``_texts``); a :class:`_Partial` says how much of that text its event had seen.
    """

    __slots__ = ("blocks", "message", "model", "provider", "texts", "usage")

    def __init__(self, builder: MessageBuilder) -> None:
        # No reference back to the builder: a cycle would keep every reply's events alive until
        # the garbage collector ran, instead of freeing them when the last one is dropped.
        self.texts = builder._texts
        self.model = builder.model
        self.provider = builder.provider
        self.blocks = tuple(builder._blocks)
        self.usage = builder.usage
        self.message: AssistantMessage | None = None


class _Partial:
    """The recipe of one event's ``partial``: a version and the open blocks' text lengths."""

    __slots__ = ("positions", "version")

    def __init__(self, version: _Version, positions: tuple[tuple[int, int], ...]) -> None:
        self.version = version
        self.positions = positions

    def __call__(self) -> AssistantMessage:
        version = self.version
        if not self.positions:
            if version.message is None:
                version.message = _message(version, version.blocks, version.usage, "stop", None)
            return version.message
        blocks = list(version.blocks)
        texts = version.texts
        for index, end in self.positions:
            blocks[index] = _with_text(blocks[index], texts[index].prefix(end))
        return _message(version, tuple(blocks), version.usage, "stop", None)


def _message(
    source: Any, blocks: tuple[Any, ...], usage: Usage, stop_reason: StopReason, error_message: str | None
) -> AssistantMessage:
    values = {
        "role": "assistant",
        "content": blocks,
        "stop_reason": stop_reason,
        "error_message": error_message,
        "usage": usage,
        "model": source.model,
        "provider": source.provider,
        "timestamp": None,
    }
    return trusted(AssistantMessage, values, _MESSAGE_SET)


def _with_text(block: Any, text: str) -> Any:
    if isinstance(block, TextContent):
        return trusted(TextContent, {"type": "text", "text": text}, _TEXT_SET)
    return trusted_copy(block, thinking=text)


def _check_delta(delta: Any) -> None:
    if not isinstance(delta, str):
        raise TypeError(f"a streamed delta is a str, got {type(delta).__name__}: {delta!r:.60}")


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
        self.usage = _NO_USAGE
        self._blocks: list[Any] = []
        self._texts: list[_Text] = []  # each block's streamed text (tool calls: argument text)
        self._deltas: list[int] = []  # deltas received per block (an empty one counts)
        self._streaming: dict[int, None] = {}  # open text/thinking blocks, whose text lives in _texts
        self._tool_ids: dict[int, tuple[str, str]] = {}
        self._closed: set[int] = set()
        self._wire: dict[Hashable, int] = {}
        # every event's recipe while no text streams; its version is valid until a block or the usage changes
        self._plain: _Partial | None = None
        self._has_calls = False  # a block is never removed, so once true it stays true

    # -- snapshots ------------------------------------------------------------------------
    def _partial(self) -> _Partial:
        plain = self._plain
        if plain is None or plain.version.usage is not self.usage:
            if not isinstance(self.usage, Usage):  # a backend may set any mapping of the counts
                self.usage = Usage.model_validate(self.usage)
            plain = self._plain = _Partial(_Version(self), ())
        streaming = self._streaming
        if not streaming:
            return plain
        version = plain.version
        texts = self._texts
        if len(streaming) == 1:
            for index in streaming:
                return _Partial(version, ((index, texts[index].length),))
        return _Partial(version, tuple((index, texts[index].length) for index in streaming))

    def snapshot(self, stop_reason: StopReason = "stop", error_message: str | None = None) -> AssistantMessage:
        """The message as it stands now (what the next event's ``partial`` would be)."""
        partial = self._partial()
        if stop_reason == "stop" and error_message is None:
            return partial()
        if not partial.positions:  # nothing streaming: one message from the version, not two
            version = partial.version
            return _message(version, version.blocks, version.usage, stop_reason, error_message)
        message = partial()
        return _message(self, message.content, message.usage, stop_reason, error_message)

    @property
    def has_content(self) -> bool:
        return bool(self._blocks)

    @property
    def has_tool_calls(self) -> bool:
        return self._has_calls

    @property
    def open_indices(self) -> list[int]:
        return [i for i in range(len(self._blocks)) if i not in self._closed]

    def block(self, index: int) -> Any:
        """The block at ``index`` as it stands (a ``TextContent``, ``ThinkingContent`` or ``ToolCall``)."""
        block = self._blocks[index]
        if index in self._streaming:
            return _with_text(block, self._texts[index].value())
        return block

    def index_of(self, wire: Hashable) -> int | None:
        """The builder index of the block opened with ``wire=`` (None: never opened, or closed by wire)."""
        return self._wire.get(wire)

    def received_deltas(self, index: int) -> bool:
        """Whether any delta (even an empty one) was appended to the block."""
        return self._deltas[index] > 0

    def start(self) -> StartEvent:
        return StartEvent.lazy({"type": "start"}, self._partial())

    def _append(self, index: int, delta: str) -> None:
        _check_delta(delta)
        self._texts[index].append(delta)
        self._deltas[index] += 1

    # -- text -----------------------------------------------------------------------------
    def text_start(self, *, wire: Hashable | None = None) -> tuple[int, TextStartEvent]:
        index = self._open(trusted(TextContent, {"type": "text", "text": ""}, _TEXT_SET), wire, streaming=True)
        return index, TextStartEvent.lazy({"type": "text_start", "content_index": index}, self._partial())

    def text_delta(self, index: int, delta: str) -> TextDeltaEvent:
        self._append(index, delta)
        return TextDeltaEvent.lazy({"type": "text_delta", "content_index": index, "delta": delta}, self._partial())

    def text_end(self, index: int) -> TextEndEvent:
        self._closed.add(index)
        text = self._texts[index].value()
        if index in self._streaming:
            del self._streaming[index]
            self._set(index, _with_text(self._blocks[index], text))
        return TextEndEvent.lazy({"type": "text_end", "content_index": index, "content": text}, self._partial())

    # -- thinking -------------------------------------------------------------------------
    def thinking_start(self, *, wire: Hashable | None = None) -> tuple[int, ThinkingStartEvent]:
        index = self._open(ThinkingContent(type="thinking", thinking="", signature=None), wire, streaming=True)
        return index, ThinkingStartEvent.lazy({"type": "thinking_start", "content_index": index}, self._partial())

    def thinking_delta(self, index: int, delta: str) -> ThinkingDeltaEvent:
        self._append(index, delta)
        values: dict[str, Any] = {"type": "thinking_delta", "content_index": index, "delta": delta}
        return ThinkingDeltaEvent.lazy(values, self._partial())

    def thinking_signature(self, index: int, signature: str) -> None:
        block = self._blocks[index]
        self._set(index, block.model_copy(update={"signature": (block.signature or "") + signature}))

    def thinking_fields(self, index: int, **fields: Any) -> None:
        """Set the named provider fields of a thinking block (``redacted``, ``item_id``, ...)."""
        self._set(index, self._blocks[index].model_copy(update=fields))

    def thinking_end(self, index: int) -> ThinkingEndEvent:
        self._closed.add(index)
        text = self._texts[index].value()
        if index in self._streaming:
            del self._streaming[index]
            self._set(index, _with_text(self._blocks[index], text))
        values = {"type": "thinking_end", "content_index": index, "content": text}
        return ThinkingEndEvent.lazy(values, self._partial())

    # -- tool calls -----------------------------------------------------------------------
    def toolcall_start(
        self, id: str, name: str, *, wire: Hashable | None = None, thought_signature: str | None = None
    ) -> tuple[int, ToolCallStartEvent]:
        if not isinstance(id, str) or not isinstance(name, str):
            raise TypeError(f"a tool call's id and name are str, got {id!r:.40} and {name!r:.40}")
        if thought_signature is not None and not isinstance(thought_signature, str):
            raise TypeError(f"a thought signature is a str, got {type(thought_signature).__name__}")
        values: dict[str, Any] = {
            "type": "toolCall",
            "id": id,
            "name": name,
            "arguments": {},
            "raw_arguments": None,
            "thought_signature": thought_signature,
        }
        call = trusted(ToolCall, values, _CALL_SET)
        index = self._open(call, wire)
        self._has_calls = True
        self._tool_ids[index] = (id, name)
        return index, ToolCallStartEvent.lazy({"type": "toolcall_start", "content_index": index}, self._partial())

    def toolcall_rename(self, index: int, *, id: str | None = None, name: str | None = None) -> None:
        """Fill in an id or name that arrived after the call opened (OpenAI sends them in deltas)."""
        old_id, old_name = self._tool_ids[index]
        self._tool_ids[index] = (id or old_id, name or old_name)
        self._set(index, self._blocks[index].model_copy(update={"id": id or old_id, "name": name or old_name}))

    def tool_identity(self, index: int) -> tuple[str, str]:
        return self._tool_ids[index]

    def toolcall_delta(self, index: int, delta: str) -> ToolCallDeltaEvent:
        self._append(index, delta)
        values = {"type": "toolcall_delta", "content_index": index, "delta": delta}
        return ToolCallDeltaEvent.lazy(values, self._partial())

    def toolcall_end(self, index: int, arguments: dict[str, Any] | None = None) -> ToolCallEndEvent:
        """Close a call; ``arguments`` skips JSON parsing for backends that receive objects."""
        self._closed.add(index)
        id, name = self._tool_ids[index]
        if arguments is None:
            arguments, raw = parse_tool_arguments(self._texts[index].value())
        else:
            raw = None
        if not isinstance(id, str) or not isinstance(name, str) or not isinstance(arguments, dict):
            raise TypeError(f"a tool call has a str id and name and dict arguments, got {id!r:.40}, {name!r:.40}")
        values = {
            "type": "toolCall",
            "id": id,
            "name": name,
            "arguments": arguments,
            "raw_arguments": raw,
            "thought_signature": self._blocks[index].thought_signature,
        }
        call = trusted(ToolCall, values, _CALL_SET)
        self._set(index, call)
        values = {"type": "toolcall_end", "content_index": index, "tool_call": call}
        return ToolCallEndEvent.lazy(values, self._partial())

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
    def done(self, reason: StopReason = "stop") -> DoneEvent | ErrorEvent:
        """Finish normally. A reply holding tool calls is ``toolUse`` unless it was truncated.

        ``error`` and ``aborted`` are stop reasons too, so a backend can pass on whatever the
        provider said: those finish with an :class:`ErrorEvent` instead.
        """
        if self.has_tool_calls and reason == "stop":
            reason = "toolUse"
        if reason not in ("stop", "length", "toolUse"):
            return self.error(reason, f"provider finished with stop reason {reason!r}")
        values = {"type": "done", "reason": reason, "message": self.snapshot(reason)}
        return trusted(DoneEvent, values, ("reason", "message"))

    def error(self, reason: StopReason, message: str) -> ErrorEvent:
        reason = "aborted" if reason == "aborted" else "error"
        return ErrorEvent(reason=reason, error=self.snapshot(reason, message))

    def _set(self, index: int, block: Any) -> None:
        self._blocks[index] = block
        self._plain = None

    def _open(self, block: Any, wire: Hashable | None = None, *, streaming: bool = False) -> int:
        self._plain = None
        self._blocks.append(block)
        self._texts.append(_Text())
        self._deltas.append(0)
        index = len(self._blocks) - 1
        if streaming:
            self._streaming[index] = None
        if wire is not None:
            self._wire[wire] = index
        return index
