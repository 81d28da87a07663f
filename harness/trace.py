"""A run, written down: its events, the requests the model received, and what the tools did.

A ``Trace`` is the harness's unit of evidence. Invariants read it, the reference model predicts
it, regression files replay into it, and two traces can be diffed to show where runs diverged.
It is built only from what a run shows the outside (the event stream, the provider's captured
requests, a ledger kept by wrapping the tools), never from loop internals.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from openprogram.agent.events import AgentEvent, EndReason
from openprogram.providers import ModelRequest
from openprogram.tools import AgentTool, AgentToolResult, OnUpdate
from openprogram.types import AssistantMessage, Message, TextContent, ThinkingContent, ToolCall, ToolResultMessage

__all__ = ["LedgerEntry", "Trace", "TraceRecorder", "diff", "render_message"]


class LedgerEntry(BaseModel):
    """One real execution of a tool body: proof of what ran, independent of what the events say."""

    model_config = ConfigDict(frozen=True)
    tool_name: str
    tool_call_id: str
    arguments: dict[str, Any]
    outcome: Literal["returned", "raised"] = "returned"
    text: str = ""
    is_error: bool = False


_events_adapter: TypeAdapter[list[AgentEvent]] = TypeAdapter(list[AgentEvent])


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

    # -- persistence ----------------------------------------------------------------------
    def to_json(self, *, indent: int | None = None) -> str:
        """Canonical JSON: the same run always gives the same bytes (the determinism check)."""
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> Trace:
        return cls.model_validate_json(text)

    # -- reading --------------------------------------------------------------------------
    def render(self) -> str:
        """The run as a conversation timeline a person can read in a failure message."""
        lines: list[str] = []
        turn = 0
        request_index = 0
        for event in self.events:
            kind = event.type
            if kind == "agent_start":
                lines.append("agent_start")
            elif kind == "turn_start":
                turn += 1
                lines.append(f"-- turn {turn} --")
            elif kind == "message_end":
                message = event.message
                if isinstance(message, AssistantMessage):
                    request_index += 1
                    lines.append(f"  [request {request_index}] " + render_message(message))
                else:
                    lines.append("  " + render_message(message))
            elif kind == "tool_execution_update":
                lines.append(f"    ~ {event.tool_name} update: {_short(event.partial_result)}")
            elif kind == "agent_end":
                lines.append(f"agent_end reason={event.reason} ({len(event.messages)} new messages)")
        if self.error is not None:
            lines.append(f"stream raised: {self.error}")
        if self.ledger is not None:
            executed = ", ".join(f"{e.tool_name}#{e.tool_call_id}" for e in self.ledger) or "nothing"
            lines.append(f"tools executed: {executed}")
        return "\n".join(lines)


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_message(message: Message) -> str:
    if isinstance(message, ToolResultMessage):
        flag = " ERROR" if message.is_error else ""
        return f"tool {message.tool_name}#{message.tool_call_id}{flag} -> {_short(message.text)}"
    if isinstance(message, AssistantMessage):
        parts = []
        for block in message.content:
            if isinstance(block, TextContent):
                parts.append(_short(block.text))
            elif isinstance(block, ThinkingContent):
                parts.append(f"(thinking {_short(block.thinking, 60)})")
            elif isinstance(block, ToolCall):
                args = block.raw_arguments if block.raw_arguments is not None else block.arguments
                parts.append(f"call {block.name}#{block.id} {_short(args, 80)}")
        body = " | ".join(parts) or "(empty)"
        extra = f" error={message.error_message!r}" if message.error_message else ""
        return f"assistant [{message.stop_reason}]{extra}: {body}"
    text = message.text if hasattr(message, "text") else str(message)
    return f"user: {_short(text)}"


class TraceRecorder:
    """Builds a ``Trace`` while a run happens: feed it events, wrap the tools for the ledger."""

    def __init__(self, *, ledger: bool = True) -> None:
        self.events: list[Any] = []
        self.ledger: list[LedgerEntry] | None = [] if ledger else None
        self.error: str | None = None

    def on_event(self, event: Any) -> None:
        self.events.append(event)

    def wrap_tool(self, tool: AgentTool) -> AgentTool:
        """The same tool, but every real execution is written to the ledger first-hand."""
        if self.ledger is None:
            return tool
        ledger = self.ledger
        inner = tool.execute

        async def execute(
            tool_call_id: str, args: dict[str, Any], cancel_event: Any, on_update: OnUpdate | None
        ) -> AgentToolResult:
            try:
                result = await inner(tool_call_id, args, cancel_event, on_update)
            except Exception as exc:
                ledger.append(
                    LedgerEntry(
                        tool_name=tool.name,
                        tool_call_id=tool_call_id,
                        arguments=dict(args),
                        outcome="raised",
                        text=str(exc) or type(exc).__name__,
                        is_error=True,
                    )
                )
                raise
            text = result.text if isinstance(result, AgentToolResult) else str(result)
            is_error = bool(getattr(result, "is_error", False))
            ledger.append(
                LedgerEntry(
                    tool_name=tool.name, tool_call_id=tool_call_id, arguments=dict(args), text=text, is_error=is_error
                )
            )
            return result

        return AgentTool(
            name=tool.name,
            description=tool.description,
            parameters=tool.parameters,
            execute=execute,
            source=tool.source,
        )

    def wrap_tools(self, tools: Iterable[AgentTool]) -> list[AgentTool]:
        return [self.wrap_tool(tool) for tool in tools]

    def finish(
        self,
        requests: Sequence[ModelRequest] = (),
        *,
        new_messages: Sequence[Message] | None = None,
        max_iterations: int | None = None,
    ) -> Trace:
        end = next((e for e in reversed(self.events) if e.type == "agent_end"), None)
        messages = list(new_messages) if new_messages is not None else (list(end.messages) if end else [])
        return Trace(
            events=list(self.events),
            requests=list(requests),
            ledger=list(self.ledger) if self.ledger is not None else None,
            new_messages=messages,
            reason=end.reason if end is not None else None,
            error=self.error,
            max_iterations=max_iterations,
        )


def _jsonable(trace: Trace) -> dict[str, Any]:
    return json.loads(trace.to_json())


def _describe(value: Any) -> str:
    return _short(value, 400)


def diff(expected: Trace, actual: Trace, *, context: int = 3) -> str:
    """Where two traces first part ways, with the events around it; ``""`` when they agree.

    Compares what a user cares about in order: the end reason, the event sequence (types, then
    contents), the requests the model saw, and the ledger.
    """
    a, b = _jsonable(expected), _jsonable(actual)
    out: list[str] = []
    if a["reason"] != b["reason"]:
        out.append(f"end reason: expected {a['reason']!r}, got {b['reason']!r}")
    if a["error"] != b["error"]:
        out.append(f"stream error: expected {a['error']!r}, got {b['error']!r}")
    out.extend(_first_divergence("event", a["events"], b["events"], context, expected, actual))
    out.extend(_first_divergence("request", a["requests"], b["requests"], 0, None, None))
    if a["ledger"] != b["ledger"]:
        out.extend(_first_divergence("ledger entry", a["ledger"] or [], b["ledger"] or [], 0, None, None))
    return "\n".join(out)


def _first_divergence(
    what: str,
    left: list[Any],
    right: list[Any],
    context: int,
    left_trace: Trace | None,
    right_trace: Trace | None,
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
        lines.append(f"  expected: {_describe(x) if x is not None else '(nothing: the run had ended)'}")
        lines.append(f"  actual:   {_describe(y) if y is not None else '(nothing: the run had ended)'}")
        if isinstance(x, dict) and isinstance(y, dict):
            keys = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
            lines.append(f"  differing fields: {', '.join(keys)}")
        return lines
    return []
