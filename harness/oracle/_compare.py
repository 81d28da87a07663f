"""Comparing a prediction of the reference model against a real trace.

``Prediction`` is what ``harness.oracle._reference.predict`` works out a run must show;
``differences(expected, trace)`` lists, in readable lines, where a real run departs from it. This
module knows nothing of how a prediction is made (it never imports ``harness.oracle._reference``), and,
like the reference, never imports or runs the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from harness.trace import LedgerEntry, Left, Trace, render_message
from harness.trace._trace import shorten
from openprogram.types import Message, ToolResultMessage


@dataclass
class Prediction:
    """What the run must show. ``events`` are signatures: ``(type, key fields...)``."""

    events: list[tuple[Any, ...]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    ledger: list[LedgerEntry] = field(default_factory=list)
    new_messages: list[Message] = field(default_factory=list)
    reason: str | None = "stop"
    loose: set[int] = field(default_factory=set)
    """ids of predicted tool results of real tools: only their text and error flag are known."""
    error: str | None = None
    """What the run raises instead of ending (its type name, then the text when it is known)."""
    left: Left | None = None
    """The consumer leaves early: what the run must do after (``Trace.left``); None: it reads to the end."""

    @property
    def event_types(self) -> list[str]:
        return [e[0].rstrip("*") for e in self.events]


def differences(expected: Prediction, trace: Trace) -> list[str]:
    """Readable lines saying where ``trace`` departs from ``expected``; ``[]`` when it agrees."""
    same = _Matcher(expected.loose)
    out: list[str] = []
    if expected.error is None and trace.error is not None:
        out.append(f"the event stream raised instead of ending: {trace.error}")
    elif expected.error is not None and not (trace.error or "").startswith(expected.error):
        out.append(f"expected the run to raise {expected.error}..., got {trace.error or 'no error'}")
    if trace.reason != expected.reason:
        out.append(f"end reason: expected {expected.reason!r}, got {trace.reason!r}")
    out.extend(_compare_left(expected.left, trace.left))
    out.extend(_compare_events(expected.events, trace.events, same))
    out.extend(_compare_requests(expected.requests, trace, same))
    if trace.ledger is not None:
        out.extend(_compare_list("ledger entry", expected.ledger, trace.ledger, lambda a, b: a == b, repr))
    out.extend(_compare_list("new_messages", expected.new_messages, trace.new_messages, same, render_message))
    return out


class _Matcher:
    """Equality of predicted and actual values, loose only for real tools' results."""

    def __init__(self, loose: set[int]) -> None:
        self.loose = loose
        # The same message objects recur in many events and every later request; both sides
        # share them by reference, so each (expected, actual) pair is compared once.
        self.seen: dict[tuple[int, int], bool] = {}

    def __call__(self, expected: Any, actual: Any) -> bool:
        if isinstance(expected, (tuple, list)):
            if not isinstance(actual, (tuple, list)) or len(expected) != len(actual):
                return False
            for e, a in zip(expected, actual, strict=True):  # a loop, not all(<generator>): this is the hot path
                if not self(e, a):
                    return False
            return True
        if not isinstance(expected, BaseModel):
            return bool(expected == actual)
        key = (id(expected), id(actual))
        found = self.seen.get(key)
        if found is None:
            found = self.seen[key] = self._same_message(expected, actual)
        return found

    def _same_message(self, expected: Any, actual: Any) -> bool:
        if id(expected) in self.loose:
            return isinstance(actual, ToolResultMessage) and (
                actual.tool_call_id,
                actual.tool_name,
                actual.text,
                actual.is_error,
                actual.timestamp,
            ) == (expected.tool_call_id, expected.tool_name, expected.text, expected.is_error, expected.timestamp)
        return bool(expected == actual)


def _signature(event: Any) -> tuple[Any, ...]:
    kind = event.type
    if kind == "message_start":
        role = event.message.role
        return (kind, role, None if role == "assistant" else event.message)
    if kind == "message_end":
        return (kind, event.message)
    if kind == "tool_execution_start":
        return (kind, event.tool_call_id, event.tool_name, event.args)
    if kind == "tool_execution_update":
        return (kind, event.tool_call_id, event.tool_name, event.partial_result)
    if kind == "tool_execution_end":
        return (kind, event.tool_call_id, event.tool_name, event.result.text, event.is_error)
    if kind == "turn_end":
        return (kind, event.message, tuple(event.tool_results))
    if kind == "agent_end":
        return (kind, event.reason, tuple(event.messages))
    return (kind,)


def _show(signature: tuple[Any, ...] | None) -> str:
    if signature is None:
        return "(nothing: the run had ended)"
    kind: str = signature[0]
    fields = list(signature[1:])
    if kind in ("message_start", "message_end"):
        message = fields[-1]
        return f"{kind} " + (render_message(message) if message is not None else "(assistant, streaming)")
    if kind == "turn_end":
        message, results = fields
        return f"turn_end {render_message(message)}; results: " + "; ".join(render_message(r) for r in results)
    if kind == "agent_end":
        reason, messages = fields
        return f"agent_end reason={reason} ({len(messages)} messages)"
    if kind == "tool_execution_end":
        call_id, name, text, is_error = fields
        return f"tool_execution_end {name}#{call_id} is_error={is_error} {shorten(text, 160)}"
    if fields:
        return f"{kind} " + " ".join(shorten(f, 160) for f in fields)
    return kind


def _compare_events(expected: list[tuple[Any, ...]], events: list[Any], same: _Matcher) -> list[str]:
    actual = [_signature(e) for e in events]
    i = j = 0
    while i < len(expected) or j < len(actual):
        want = expected[i] if i < len(expected) else None
        if want is not None and want[0] == "tool_execution_update*":
            while j < len(actual) and actual[j][0] == "tool_execution_update" and actual[j][1] == want[1]:
                j += 1
            i += 1
            continue
        got = actual[j] if j < len(actual) else None
        if (
            want is not None
            and got is not None
            and want[0] == got[0]
            and ((len(want) == 1 and len(got) == 1) or same(want[1:], got[1:]))  # most are message_update
        ):
            i += 1
            j += 1
            continue
        before = ", ".join(s[0] for s in actual[max(0, j - 4) : j]) or "(start)"
        return [
            f"first event divergence at event #{j}:",
            f"  after:    {before}",
            f"  expected: {_show(want)}",
            f"  actual:   {_show(got)}",
        ]
    return []


def _compare_left(expected: Left | None, left: Left | None) -> list[str]:
    """The consumer leaves where the scenario says (or reads to the end), and after it left the
    run is cancelled: no event, no tool, no open provider stream."""
    if expected is None:
        if left is None:
            return []
        return [f"the consumer left after {left.after} events, though the run should have ended first"]
    if left is None:
        return [f"the consumer should have left after event #{expected.after}, but read the run to its end"]
    if expected == left:
        return []
    out = []
    if left.after != expected.after:
        out.append(f"the consumer left after {left.after} events, expected after {expected.after}")
    for what, want, got in (
        ("events pushed after the consumer left", expected.events_after, left.events_after),
        ("tools started after the consumer left", expected.tools_after, left.tools_after),
        ("the run's outcome after the consumer left (stream.result())", expected.outcome, left.outcome),
        ("the provider's stream still open", expected.provider_open, left.provider_open),
    ):
        if want != got:
            out.append(f"{what}: expected {want!r}, got {got!r}")
    return out


def _compare_requests(expected: list[dict[str, Any]], trace: Trace, same: _Matcher) -> list[str]:
    out: list[str] = []
    if len(expected) != len(trace.requests):
        out.append(f"model requests: expected {len(expected)}, got {len(trace.requests)}")
    for number, (want, request) in enumerate(zip(expected, trace.requests, strict=False), start=1):
        got: dict[str, Any] = {
            "model": request.model,
            "system_prompt": request.system_prompt,
            "messages": tuple(request.messages),
            "tools": tuple((spec.name, spec.description, dict(spec.parameters)) for spec in request.tools),
            "tool_choice": request.tool_choice,
            "parallel_tool_calls": request.parallel_tool_calls,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "extra": dict(request.extra),
        }
        for key, value in want.items():
            if key == "messages":
                problems = _compare_list(f"request {number} message", value, got[key], same, render_message)
                out.extend(problems)
                if problems:
                    return out
            elif value != got[key]:
                out.append(f"request {number} {key}: expected {value!r}, got {got[key]!r}")
                return out
    return out


def _compare_list(what: str, expected: Sequence[Any], actual: Sequence[Any], same: Any, show: Any) -> list[str]:
    for index in range(max(len(expected), len(actual))):
        want = expected[index] if index < len(expected) else None
        got = actual[index] if index < len(actual) else None
        if want is not None and got is not None and same(want, got):
            continue
        return [
            f"first {what} divergence at #{index + 1} (expected {len(expected)}, got {len(actual)}):",
            f"  expected: {show(want) if want is not None else '(nothing)'}",
            f"  actual:   {show(got) if got is not None else '(nothing)'}",
        ]
    return []
