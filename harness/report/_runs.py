"""A ``Trace`` read into lanes: the top-level run, and each nested run under the tool that started it.

The trace holds a nested run's events inline, between the outer tool's start and end. They are
split here the way ``harness.trace.run_views`` splits them (so the n-th lane is its n-th run and
gets that run's captured requests), but keeping each event's place in the whole trace: that place
is what the oracle's messages point at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness._contract import SKIPPED_CANCELLED, SKIPPED_STEERING
from harness.report._model import CallShown, Entry, Lane, Offered
from harness.trace import Trace, run_views
from openprogram.types import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage

_SKIP_REASONS = {
    SKIPPED_STEERING: "a user message was queued while the batch ran (steering): the rest of the batch is skipped",
    SKIPPED_CANCELLED: "the run was cancelled: no further tool of the batch starts",
}


@dataclass
class _Split:
    """One run while the events are split: its events with their index in the whole trace."""

    events: list[tuple[int, Any]] = field(default_factory=list)
    parent: tuple[_Split, str] | None = None  # the run and the tool call it started in
    open_tools: list[str] = field(default_factory=list)


def _split(events: Sequence[Any]) -> list[_Split]:
    root = _Split()
    runs, stack = [root], [root]
    for index, event in enumerate(events):
        kind, top = event.type, stack[-1]
        if kind == "agent_start" and top.open_tools and top.events:
            child = _Split(parent=(top, top.open_tools[-1]))
            runs.append(child)
            stack.append(child)
            top = child
        elif kind == "tool_execution_end" and len(stack) > 1 and event.tool_call_id not in top.open_tools:
            # a nested run that never ended (its stream raised in the tool) closes with the tool
            for depth in range(len(stack) - 2, -1, -1):
                if event.tool_call_id in stack[depth].open_tools:
                    del stack[depth + 1 :]
                    top = stack[-1]
                    break
        top.events.append((index, event))
        if kind == "tool_execution_start":
            top.open_tools.append(event.tool_call_id)
        elif kind == "tool_execution_end" and event.tool_call_id in top.open_tools:
            top.open_tools.remove(event.tool_call_id)
        elif kind == "agent_end" and len(stack) > 1:
            stack.pop()
    return runs


def read_trace(trace: Trace, key: str) -> tuple[Lane, dict[int, Entry]]:
    """The top-level lane (nested lanes inside it) and, per event index, the entry showing it."""
    runs = _split(trace.events)
    views = run_views(trace)
    same = len(views) == len(runs) and all(
        bool(v.events) == bool(r.events) and (not v.events or v.events[0] is r.events[0][1])
        for v, r in zip(views, runs, strict=True)
    )
    at: dict[int, Entry] = {}
    lanes: dict[int, Lane] = {}
    tools_by_run: dict[int, dict[str, Entry]] = {}
    for number, run in enumerate(runs):
        requests = list(views[number].requests) if same else []
        label = "run" if run.parent is None else f"nested run {number}"
        reader = _LaneReader(key, number, requests, at)
        lane = reader.read(run.events, label)
        lanes[id(run)] = lane
        tools_by_run[id(run)] = reader.tools
        if run.parent is not None:
            parent, call_id = run.parent
            tool = tools_by_run[id(parent)].get(call_id)
            lane.label = f"nested run {number}, inside {tool.call.name if tool and tool.call else '?'}#{call_id}"
            if tool is not None:
                tool.nested.append(lane)
            else:  # pragma: no cover - a nested run starts inside an open tool, which has an entry
                lanes[id(runs[0])].entries.append(Entry("note", f"{key}-orphan-{number}", text=lane.label))
    root = lanes[id(runs[0])]
    if trace.error is not None:
        end = Entry("end", f"{key}-raised", label="raised", text=f"the event stream raised: {trace.error}")
        root.entries.append(end)
        at[len(trace.events)] = end
    elif trace.left is not None:
        left = trace.left
        text = (
            f"the consumer stopped reading after {left.after} events; then: "
            f"{len(left.events_after)} more event(s), tools started: {', '.join(left.tools_after) or 'none'}, "
            f"outcome {left.outcome}" + (", the provider's stream left open" if left.provider_open else "")
        )
        end = Entry("end", f"{key}-left", label="consumer left", text=text)
        root.entries.append(end)
        at[len(trace.events)] = end
    elif root.entries and root.entries[-1].kind == "end":
        at[len(trace.events)] = root.entries[-1]
    return root, at


class _LaneReader:
    """Reads one run's events into entries, in order."""

    def __init__(self, key: str, number: int, requests: list[Any], at: dict[int, Entry]) -> None:
        self.key = f"{key}-r{number}"
        self.requests = requests
        self.at = at
        self.tools: dict[str, Entry] = {}
        self.models = 0
        self.turns = 0
        self.last_calls = False  # the last reply made tool calls: a user message now is steering
        self.menu: tuple[tuple[tuple[str, str], ...], int] | None = None  # the last menu shown whole, and where

    def read(self, events: list[tuple[int, Any]], label: str) -> Lane:
        """The lane; every event maps to the entry that shows it (an event that opens something,
        a ``message_start`` say, to the entry its closing event makes)."""
        lane = Lane(label, nested=label != "run")
        waiting: list[int] = []
        for index, event in events:
            entry = self.entry(index, event, lane)
            if entry is None:
                waiting.append(index)
                continue
            for earlier in (*waiting, index):
                self.at[earlier] = entry
            waiting.clear()
        if waiting and lane.entries:
            for earlier in waiting:
                self.at[earlier] = lane.entries[-1]
        return lane

    def entry(self, index: int, event: Any, lane: Lane) -> Entry | None:
        kind = event.type
        if kind == "turn_start":
            self.turns += 1
            return self.add(lane, Entry("turn", f"{self.key}-t{self.turns}", label=f"turn {self.turns}"))
        if kind == "message_end":
            message = event.message
            if isinstance(message, AssistantMessage):
                return self.add(lane, self.model(message))
            if isinstance(message, ToolResultMessage):
                tool = self.tools.get(message.tool_call_id)
                if tool is None:
                    tool = self.add(lane, self.tool_entry(message.tool_call_id, message.tool_name, {}))
                tool.time = message.timestamp
                tool.details = message.details
                if tool.status == "":
                    self.finish(tool, message.text, message.is_error)
                return tool
            label = "prompt" if self.models == 0 else "steering" if self.last_calls else "steering or follow-up"
            text = message.text if hasattr(message, "text") else str(message)
            return self.add(lane, Entry("user", f"{self.key}-u{index}", label=label, text=text, time=message.timestamp))
        if kind == "tool_execution_start":
            return self.add(lane, self.tool_entry(event.tool_call_id, event.tool_name, event.args))
        if kind == "tool_execution_update":
            tool = self.tools.get(event.tool_call_id)
            if tool is not None:
                tool.updates.append(event.partial_result)
            return tool
        if kind == "tool_execution_end":
            tool = self.tools.get(event.tool_call_id)
            if tool is None:
                tool = self.add(lane, self.tool_entry(event.tool_call_id, event.tool_name, {}))
            self.finish(tool, event.result.text, event.is_error)
            return tool
        if kind == "agent_end":
            lane.reason = event.reason
            text = f"{len(event.messages)} new message(s), {self.models} model request(s)"
            return self.add(lane, Entry("end", f"{self.key}-end", label=str(event.reason), text=text))
        if kind == "message_start" and isinstance(event.message, ToolResultMessage):
            return self.tools.get(event.message.tool_call_id)
        if kind == "turn_end":
            return next((e for e in reversed(lane.entries) if e.kind == "model"), None)
        return None  # shown by the entry the next event makes (a reply is shown whole at its message_end)

    def add(self, lane: Lane, entry: Entry) -> Entry:
        lane.entries.append(entry)
        return entry

    def tool_entry(self, call_id: str, name: str, args: Any) -> Entry:
        entry = Entry("tool", f"{self.key}-c{len(self.tools)}", call=CallShown(call_id, name, args), label=name)
        self.tools[call_id] = entry
        return entry

    def finish(self, tool: Entry, text: str, is_error: bool) -> None:
        tool.text = text
        if is_error and text in _SKIP_REASONS:
            tool.status, tool.why = "skipped", _SKIP_REASONS[text]
        else:
            tool.status = "error" if is_error else "ok"

    def model(self, message: AssistantMessage) -> Entry:
        self.models += 1
        number = self.models
        request = self.requests[number - 1] if number - 1 < len(self.requests) else None
        entry = Entry("model", f"{self.key}-m{number}", number=number, time=message.timestamp)
        if request is not None:
            entry.options = {
                k: v
                for k, v in (
                    ("model", request.model),
                    ("tool_choice", request.tool_choice),
                    ("parallel_tool_calls", request.parallel_tool_calls),
                    ("max_tokens", request.max_tokens),
                    ("temperature", request.temperature),
                    *sorted(dict(request.extra).items()),
                )
                if v is not None
            }
            entry.system = request.system_prompt
            entry.history = len(request.messages)
            menu = tuple((spec.name, str(spec.parameters)) for spec in request.tools)
            entry.tools = [Offered(s.name, s.description, dict(s.parameters)) for s in request.tools]
            if self.menu is not None and self.menu[0] == menu:
                entry.tools_same_as = self.menu[1]
            else:
                self.menu = (menu, number)
        texts = [b.text for b in message.content if isinstance(b, TextContent)]
        entry.text = "".join(texts)
        entry.thinking = [b.thinking for b in message.content if isinstance(b, ThinkingContent)]
        entry.calls = [
            CallShown(b.id, b.name, b.arguments, b.raw_arguments) for b in message.content if isinstance(b, ToolCall)
        ]
        entry.stop_reason = message.stop_reason
        entry.error = message.error_message
        usage = message.usage
        entry.usage = {k: v for k, v in (("in", usage.input), ("out", usage.output), ("cached", usage.cache_read)) if v}
        if entry.usage and usage.cache_write:
            entry.usage["cache written"] = usage.cache_write
        self.last_calls = bool(entry.calls)
        return entry
