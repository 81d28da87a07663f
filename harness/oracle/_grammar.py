"""The event grammar of one run (DESIGN section 4, "Order of a run"), one small rule per event type.

``harness.oracle._run_invariants.event_grammar`` splits a trace into its runs and holds each to this grammar;
the rules live here, apart from the other invariants, because they are a state machine: each
event type has one function saying what must hold when it arrives and what it changes, and
``first_violation`` feeds a run's events through them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.trace import show_messages
from harness.trace._trace import shorten
from openprogram.types import AssistantMessage, ToolResultMessage


class _Bad(Exception):
    def __init__(self, problem: str, index: int) -> None:
        super().__init__(problem)
        self.problem, self.index = problem, index


@dataclass
class _Grammar:
    """Where one run's event stream stands, as the grammar reads it one event at a time."""

    events: Sequence[Any]
    capped: bool  # the run ended at the iteration cap: queued messages may follow the last turn
    index: int = 0
    in_turn: bool = False
    turns: int = 0
    phase: str = "pre"  # within a turn: "pre" (user messages), "post" (after the assistant message)
    turn_assistant: Any = None
    turn_results: list[ToolResultMessage] = field(default_factory=list)
    open_message: Any = None
    open_tool: Any = None
    expect_result: Any = None  # the tool_execution_end whose ToolResultMessage must come next
    tail: bool = False  # messages committed at the cap, after the last turn_end
    ended: bool = False

    def bad(self, problem: str, index: int | None = None) -> _Bad:
        return _Bad(problem, self.index if index is None else index)


def _on_agent_start(g: _Grammar, event: Any) -> None:
    events = g.events
    if g.index != 0:
        raise g.bad("a second agent_start")
    if len(events) > 1 and events[1].type != "turn_start":
        raise g.bad(f"agent_start is followed by {events[1].type}, not turn_start", 1)


def _on_turn_start(g: _Grammar, event: Any) -> None:
    if g.in_turn:
        raise g.bad("turn_start inside an open turn (turns never nest)")
    if g.tail:
        raise g.bad("turn_start after the messages committed at the iteration cap")
    g.in_turn, g.phase, g.turn_assistant, g.turn_results = True, "pre", None, []


def _on_message_start(g: _Grammar, event: Any) -> None:
    if g.open_message is not None:
        raise g.bad("message_start while another message is open")
    if g.open_tool is not None:
        raise g.bad(f"message_start inside the execution of {g.open_tool.tool_name}#{g.open_tool.tool_call_id}")
    message, expected = event.message, g.expect_result
    if expected is not None:
        if not isinstance(message, ToolResultMessage) or message.tool_call_id != expected.tool_call_id:
            raise g.bad(
                f"tool_execution_end of {expected.tool_name}#{expected.tool_call_id} is followed "
                "by a different message instead of its ToolResultMessage"
            )
    elif not g.in_turn:
        if g.turns == 0 or not g.capped or isinstance(message, AssistantMessage):
            raise g.bad(
                "a message outside any turn (only messages taken from a queue when the iteration cap "
                "ends the run may follow the last turn_end)"
            )
        g.tail = True
    elif isinstance(message, ToolResultMessage):
        raise g.bad(f"a ToolResultMessage for #{message.tool_call_id} with no tool execution before it")
    elif g.phase != "pre":
        what = "a second assistant message" if isinstance(message, AssistantMessage) else "a user message"
        raise g.bad(f"{what} after the turn's assistant message (one model call per turn)")
    g.open_message = event


def _on_message_update(g: _Grammar, event: Any) -> None:
    if g.open_message is None or not isinstance(g.open_message.message, AssistantMessage):
        raise g.bad("message_update outside an assistant message")


def _on_message_end(g: _Grammar, event: Any) -> None:
    if g.open_message is None:
        raise g.bad("message_end without message_start")
    started, message = g.open_message.message, event.message
    if started.role != message.role:
        raise g.bad(f"message_start of a {started.role} message closed by message_end of a {message.role}")
    if not isinstance(message, AssistantMessage) and started != message:
        raise g.bad("message_end carries a different message than its message_start")
    g.open_message = None
    expected = g.expect_result
    if expected is not None:
        result = expected.result
        if (
            message.tool_name != expected.tool_name
            or message.text != result.text
            or message.is_error != expected.is_error
        ):
            raise g.bad(
                f"the ToolResultMessage does not match its tool_execution_end "
                f"({expected.tool_name}, is_error={expected.is_error}, {shorten(result.text, 100)!r})"
            )
        g.turn_results.append(message)
        g.expect_result = None
    elif isinstance(message, AssistantMessage) and g.in_turn:
        g.phase, g.turn_assistant = "post", message


def _on_tool_start(g: _Grammar, event: Any) -> None:
    if not g.in_turn or g.phase != "post":
        raise g.bad("tool_execution_start outside a turn's tool phase (it must follow the assistant message)")
    if g.open_message is not None or g.open_tool is not None:
        raise g.bad("tool_execution_start while a message or another tool execution is open")
    g.open_tool = event


def _on_tool_update(g: _Grammar, event: Any) -> None:
    if g.open_tool is None or g.open_tool.tool_call_id != event.tool_call_id:
        raise g.bad(f"tool_execution_update for #{event.tool_call_id}, which is not executing")


def _on_tool_end(g: _Grammar, event: Any) -> None:
    if g.open_tool is None or g.open_tool.tool_call_id != event.tool_call_id:
        raise g.bad(f"tool_execution_end for #{event.tool_call_id}, which is not executing")
    if g.open_tool.tool_name != event.tool_name:
        raise g.bad(f"tool_execution_end names {event.tool_name}, its start named {g.open_tool.tool_name}")
    g.open_tool, g.expect_result = None, event


def _on_turn_end(g: _Grammar, event: Any) -> None:
    if not g.in_turn:
        raise g.bad("turn_end without turn_start")
    if g.open_message is not None or g.open_tool is not None:
        raise g.bad("turn_end while a message or tool execution is still open")
    if g.turn_assistant is None:
        raise g.bad("turn_end of a turn without an assistant message")
    if event.message != g.turn_assistant:
        raise g.bad("turn_end reports a different assistant message than the turn committed")
    if tuple(event.tool_results) != tuple(g.turn_results):
        raise g.bad(
            f"turn_end reports {len(event.tool_results)} tool result(s), the turn committed "
            f"{len(g.turn_results)}:\n  reported:\n{show_messages(event.tool_results)}\n"
            f"  committed:\n{show_messages(g.turn_results)}"
        )
    g.in_turn, g.turns = False, g.turns + 1


def _on_agent_end(g: _Grammar, event: Any) -> None:
    if g.in_turn or g.open_message is not None or g.open_tool is not None:
        raise g.bad("agent_end inside an open turn, message or tool execution")
    if g.turns == 0:
        raise g.bad("agent_end without any completed turn")
    g.ended = True


_GRAMMAR: dict[str, Callable[[_Grammar, Any], None]] = {
    "agent_start": _on_agent_start,
    "turn_start": _on_turn_start,
    "message_start": _on_message_start,
    "message_update": _on_message_update,
    "message_end": _on_message_end,
    "tool_execution_start": _on_tool_start,
    "tool_execution_update": _on_tool_update,
    "tool_execution_end": _on_tool_end,
    "turn_end": _on_turn_end,
    "agent_end": _on_agent_end,
}
"""Each event type's rule: what must hold when it arrives, and what it changes."""


def first_violation(events: Sequence[Any], *, capped: bool, allow_unfinished: bool) -> tuple[int, str] | None:
    """The first place ``events`` (one run's own, nested runs taken out) break the order of a
    run, as ``(index, problem)``; ``None`` when they keep it. ``capped``: the run ended at the
    iteration cap; ``allow_unfinished``: the stream may stop before ``agent_end``."""
    g = _Grammar(events, capped=capped)
    try:
        for g.index, event in enumerate(events):
            kind = event.type
            if g.ended:
                raise g.bad(f"{kind} after agent_end")
            if g.index == 0 and kind != "agent_start":
                raise g.bad(f"the first event is {kind}, not agent_start")
            expected = g.expect_result
            if expected is not None and kind not in ("message_start", "message_end"):
                raise g.bad(
                    f"tool_execution_end of {expected.tool_name}#{expected.tool_call_id} is followed by "
                    f"{kind} instead of the message_start/message_end of its ToolResultMessage"
                )
            rule = _GRAMMAR.get(kind)
            if rule is None:
                raise g.bad(f"unknown event type {kind!r}")
            rule(g, event)
        if not g.ended and not allow_unfinished:
            raise g.bad("the stream ended without agent_end (and the trace records no error)", len(events) - 1)
    except _Bad as bad:
        return bad.index, bad.problem
    return None
