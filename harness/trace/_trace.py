"""A run, written down: its events, the requests the model received, and what the tools did.

A ``Trace`` is the harness's unit of evidence. Invariants read it, the reference model predicts
it, regression files replay into it, and two traces can be diffed to show where runs diverged.
It is built only from what a run shows the outside (the event stream, the provider's captured
requests, a ledger kept by the tools that ran), never from loop internals.

This module holds the record and the one way it is shown: ``Trace.render`` is the one rendering
(nested runs indented), the one-line forms of a message, an event and a batch serve every
failure message, ``shorten`` is the one way long values are cut down for people to read, and
``diff`` says where two traces part. Building a trace is ``_trace_recorder``'s; reading one into
runs and model calls for the oracle is ``_run_views``'.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.trace._leaving import Left
from harness.trace._run_views import run_views
from openprogram.agent.events import AgentEvent, EndReason
from openprogram.providers import ModelRequest
from openprogram.types import AssistantMessage, Message, TextContent, ThinkingContent, ToolCall, ToolResultMessage

if TYPE_CHECKING:
    from harness.trace._run_views import Batch


def shorten(value: Any, limit: int | None = 120) -> str:
    """``value`` (JSON unless a str) on one line of at most ``limit`` characters (``None``: all)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "\\n")
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


class LedgerEntry(BaseModel):
    """One real execution of a tool body: proof of what ran, independent of what the events say."""

    model_config = ConfigDict(frozen=True)
    tool_name: str
    tool_call_id: str
    arguments: dict[str, Any]
    outcome: Literal["returned", "raised"] = "returned"
    text: str = ""
    is_error: bool = False


class Trace(BaseModel):
    """Everything observable about one run (the top-level one; nested runs add their requests)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    events: list[AgentEvent] = Field(default_factory=list)
    requests: list[ModelRequest] = Field(default_factory=list)
    ledger: list[LedgerEntry] | None = None
    new_messages: list[Message] = Field(default_factory=list)
    reason: EndReason | None = None
    error: str | None = None
    max_iterations: int | None = None
    left: Left | None = None  # the consumer stopped reading early: what the run did after (harness.trace._leaving)

    # -- views ----------------------------------------------------------------------------
    @property
    def event_types(self) -> list[str]:
        return [event.type for event in self.events]

    @property
    def assistant_messages(self) -> list[AssistantMessage]:
        return [m for m in self.new_messages if isinstance(m, AssistantMessage)]

    @property
    def tool_results(self) -> list[ToolResultMessage]:
        return [m for m in self.new_messages if isinstance(m, ToolResultMessage)]

    @property
    def final_text(self) -> str:
        messages = self.assistant_messages
        return messages[-1].text if messages else ""

    def ledger_by_call(self) -> dict[tuple[str, str], list[LedgerEntry]]:
        """The ledger's entries per ``(tool_call_id, tool_name)``, in order of execution."""
        entries: dict[tuple[str, str], list[LedgerEntry]] = {}
        for entry in self.ledger or ():
            entries.setdefault((entry.tool_call_id, entry.tool_name), []).append(entry)
        return entries

    # -- persistence ----------------------------------------------------------------------
    def to_json(self, *, indent: int | None = None) -> str:
        """Canonical JSON: the same run always gives the same bytes (the determinism check)."""
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Trace:
        return cls.model_validate_json(text)

    def snapshot(self) -> dict[str, Any]:
        """The conversation without streaming detail, for snapshot tests (``harness.trace._snapshot``)."""
        from harness.trace._snapshot import snapshot  # the form lives there, next to what it leaves out

        return snapshot(self, run_views(self)[1:])

    def snapshot_json(self) -> str:
        """``snapshot()`` as indented JSON: the same bytes for the same run, small enough to review."""
        return json.dumps(self.snapshot(), indent=2, ensure_ascii=False) + "\n"

    # -- reading --------------------------------------------------------------------------
    def render(self, *, full: bool = False) -> str:
        """The run as a timeline to read (nested runs indented, numbered anew); ``full``: nothing cut."""
        at = None if full else 120  # how long a value may get
        lines: list[str] = []
        depth = 0
        turns, calls = [0], [0]  # per open run
        for event in self.events:
            pad = "  " * depth
            if event.type == "agent_start":
                if lines:
                    depth += 1
                    turns.append(0)
                    calls.append(0)
                    lines.append(f"{'  ' * depth}agent_start (nested run)")
                else:
                    lines.append("agent_start")
            elif event.type == "turn_start":
                turns[-1] += 1
                lines.append(f"{pad}-- turn {turns[-1]} --")
            elif event.type == "message_end":
                if isinstance(event.message, AssistantMessage):
                    calls[-1] += 1
                    lines.append(f"{pad}  [request {calls[-1]}] {render_message(event.message, full=full)}")
                else:
                    lines.append(f"{pad}  {render_message(event.message, full=full)}")
            elif event.type == "tool_execution_update":
                lines.append(f"{pad}    ~ {event.tool_name} update: {shorten(event.partial_result, at)}")
            elif event.type == "agent_end":
                lines.append(f"{pad}agent_end reason={event.reason} ({len(event.messages)} new messages)")
                if depth:
                    depth -= 1
                    turns.pop()
                    calls.pop()
        if self.error is not None:
            lines.append(f"stream raised: {self.error}")
        if self.ledger is not None:
            executed = ", ".join(f"{e.tool_name}#{e.tool_call_id}" for e in self.ledger) or "nothing"
            lines.append(f"tools executed: {executed}")
        return "\n".join(lines)


def render_message(message: Message, *, full: bool = False) -> str:
    """One message as one timeline line; long values clipped unless ``full`` (a failure report wants them whole)."""
    at, short_at, args_at = (None, None, None) if full else (120, 60, 80)  # how long a value may get
    if isinstance(message, ToolResultMessage):
        flag = " ERROR" if message.is_error else ""
        return f"tool {message.tool_name}#{message.tool_call_id}{flag} -> {shorten(message.text, at)}"
    if isinstance(message, AssistantMessage):
        parts = []
        for block in message.content:
            if isinstance(block, TextContent):
                parts.append(shorten(block.text, at))
            elif isinstance(block, ThinkingContent):
                parts.append(f"(thinking {shorten(block.thinking, short_at)})")
            elif isinstance(block, ToolCall):
                args = block.raw_arguments if block.raw_arguments is not None else block.arguments
                parts.append(f"call {block.name}#{block.id} {shorten(args, args_at)}")
        body = " | ".join(parts) or "(empty)"
        extra = f" error={message.error_message!r}" if message.error_message else ""
        return f"assistant [{message.stop_reason}]{extra}: {body}"
    text = message.text if hasattr(message, "text") else str(message)
    return f"user: {shorten(text, at)}"


def describe_event(event: AgentEvent) -> str:
    """One event on one line, for failure messages."""
    kind = event.type
    if event.type == "message_start" or event.type == "message_end":
        return f"{kind} {render_message(event.message)}"
    if event.type == "message_update":
        return f"message_update {event.assistant_message_event.type}"
    if event.type == "tool_execution_start":
        return f"tool_execution_start {event.tool_name}#{event.tool_call_id} {shorten(event.args, 60)}"
    if event.type == "tool_execution_update":
        return f"tool_execution_update {event.tool_name}#{event.tool_call_id} {shorten(event.partial_result, 60)}"
    if event.type == "tool_execution_end":
        flag = " ERROR" if event.is_error else ""
        return f"tool_execution_end {event.tool_name}#{event.tool_call_id}{flag} -> {shorten(event.result.text, 60)}"
    if event.type == "turn_end":
        return f"turn_end (assistant [{event.message.stop_reason}], {len(event.tool_results)} tool result(s))"
    if event.type == "agent_end":
        return f"agent_end reason={event.reason} ({len(event.messages)} messages)"
    return kind


def show_messages(messages: Iterable[Message], indent: str = "    ") -> str:
    """Messages one per line (``(none)`` for none), for failure messages."""
    shown = [f"{indent}{render_message(m)}" for m in messages]
    return "\n".join(shown) or f"{indent}(none)"


def event_window(events: Sequence[Any], index: int, before: int = 5, after: int = 2) -> str:
    """The events around ``index``, the one at ``index`` marked ``>>``: where a rule broke."""
    start, stop = max(0, index - before), min(len(events), index + after + 1)
    lines = ["      ..."] if start > 0 else []
    for i in range(start, stop):
        marker = ">>" if i == index else "  "
        lines.append(f"  {marker} #{i} {describe_event(events[i])}")
    if stop < len(events):
        lines.append("      ...")
    return "\n".join(lines)


def show_batch(batch: Batch) -> str:
    """A model call with the results and messages committed after it, for failure messages."""
    lines = [f"  [request {batch.number}] {render_message(batch.message)}"]
    lines.extend(f"    {render_message(m)}" for m in (*batch.results, *batch.after))
    return "\n".join(lines)


# -- Comparing two traces --------------------------------------------------------------------


def diff(expected: Trace, actual: Trace, *, context: int = 3) -> str:
    """Where two traces first part ways, with the events around it; ``""`` when they agree.

    Compares what a user cares about in order: the end reason, the event sequence (types, then
    contents), the requests the model saw, and the ledger.
    """
    a, b = json.loads(expected.to_json()), json.loads(actual.to_json())
    out: list[str] = []
    if a["reason"] != b["reason"]:
        out.append(f"end reason: expected {a['reason']!r}, got {b['reason']!r}")
    if a["error"] != b["error"]:
        out.append(f"stream error: expected {a['error']!r}, got {b['error']!r}")
    out.extend(_first_divergence("event", a["events"], b["events"], context, expected))
    out.extend(_first_divergence("request", a["requests"], b["requests"], 0, None))
    if a["ledger"] != b["ledger"]:
        out.extend(_first_divergence("ledger entry", a["ledger"] or [], b["ledger"] or [], 0, None))
    return "\n".join(out)


def _first_divergence(
    what: str, left: list[Any], right: list[Any], context: int, left_trace: Trace | None
) -> list[str]:
    for index in range(max(len(left), len(right))):
        x = left[index] if index < len(left) else None
        y = right[index] if index < len(right) else None
        if x == y:
            continue
        lines = [f"first {what} divergence at #{index}:"]
        if context and left_trace is not None:
            start = max(0, index - context)
            shown = ", ".join(e.type for e in left_trace.events[start:index])
            lines.append(f"  after: {shown or '(start)'}")
        lines.append(f"  expected: {shorten(x, 400) if x is not None else '(nothing: the run had ended)'}")
        lines.append(f"  actual:   {shorten(y, 400) if y is not None else '(nothing: the run had ended)'}")
        if isinstance(x, dict) and isinstance(y, dict):
            keys = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
            lines.append(f"  differing fields: {', '.join(keys)}")
        return lines
    return []
