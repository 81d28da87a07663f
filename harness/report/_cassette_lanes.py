"""A recorded conversation (a cassette's decoded steps) read into the same lanes as a run.

The steps come from ``harness.recording`` (``read_steps``), a package of this one's layer, which
this package must not import: the command line hands them over and they are read here by their
shape (the protocols below), so a report can be drawn from any object that has it.

A recording has no events: the order is the wire's. Each interaction adds the messages its
request brought (the prompt, the results of the previous reply's tool calls, a user message
that arrived meanwhile), then the request and its reply. A tool's result is shown where it was
sent back, with the arguments of the call it answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from harness.report._model import CallShown, Entry, Lane, Offered
from openprogram.types import AssistantMessage


class SaidLike(Protocol):
    @property
    def role(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def calls(self) -> Sequence[Any]: ...
    @property
    def call_id(self) -> str | None: ...
    @property
    def tool_name(self) -> str | None: ...
    @property
    def is_error(self) -> bool: ...


class StepLike(Protocol):
    """One interaction as ``harness.recording``'s ``read_steps`` gives it."""

    @property
    def interaction(self) -> Any: ...  # .index, .response.status
    @property
    def call(self) -> Any: ...  # .provider, .endpoint, .model, .stream, .tools
    @property
    def conversation(self) -> Any: ...  # .system
    @property
    def new(self) -> Sequence[SaidLike]: ...
    @property
    def starts_conversation(self) -> bool: ...
    @property
    def reply(self) -> AssistantMessage: ...


def read_steps(steps: Sequence[StepLike], key: str) -> list[Lane]:
    """One lane per conversation the cassette holds (a request that does not continue the previous
    one's history starts a new one)."""
    lanes: list[Lane] = []
    calls: dict[str, CallShown] = {}
    menu: tuple[tuple[str, ...], int] | None = None
    lane: Lane | None = None
    number = 0
    for step in steps:
        if lane is None or step.starts_conversation:
            lane = Lane(f"conversation {len(lanes) + 1}")
            lanes.append(lane)
            number, menu, calls = 0, None, {}
        index = step.interaction.index
        for position, said in enumerate(step.new):
            lane.entries.append(_said_entry(said, f"{key}-i{index}-s{position}", calls, first=number == 0))
        number += 1
        entry = _model_entry(step, f"{key}-i{index}", number)
        names = tuple(s.name for s in step.call.tools)
        if menu is not None and menu[0] == names:
            entry.tools_same_as = menu[1]
        else:
            menu = (names, number)
        for shown_call in entry.calls:
            calls[shown_call.id] = shown_call
        lane.entries.append(entry)
    for lane in lanes:
        _end(lane)
    return lanes


def _said_entry(said: SaidLike, anchor: str, calls: Mapping[str, CallShown], *, first: bool) -> Entry:
    """A message the request brought: a tool's result (with the call it answers), a user's, or history."""
    if said.role == "tool":
        shown = calls.get(said.call_id or "") or CallShown(said.call_id or "-", said.tool_name or "?", None)
        entry = Entry("tool", anchor, label=shown.name, call=shown, text=said.text)
        entry.status = "error" if said.is_error else "ok"
        return entry
    if said.role == "user":
        return Entry("user", anchor, label="prompt" if first else "user message", text=said.text)
    text = said.text + "".join(f" [call {c.name}]" for c in said.calls)
    return Entry("user", anchor, label="assistant (history)", text=text)


def _model_entry(step: StepLike, anchor: str, number: int) -> Entry:
    """The request an interaction sent and the reply it got, as one model entry."""
    call, reply = step.call, step.reply
    entry = Entry("model", anchor, number=number, label=f"interaction #{step.interaction.index}")
    entry.options = {
        "provider": call.provider,
        "endpoint": call.endpoint,
        "model": call.model,
        "streamed": bool(call.stream),
        "HTTP status": step.interaction.response.status,
    }
    entry.system = step.conversation.system if step.starts_conversation else ""
    entry.tools = [Offered(s.name, s.description, dict(s.parameters)) for s in call.tools]
    entry.text = reply.text
    entry.calls = [CallShown(c.id, c.name, c.arguments, c.raw_arguments) for c in reply.tool_calls]
    entry.stop_reason = reply.stop_reason
    entry.error = reply.error_message
    usage = reply.usage
    entry.usage = {k: v for k, v in (("in", usage.input), ("out", usage.output), ("cached", usage.cache_read)) if v}
    return entry


def _end(lane: Lane) -> None:
    """Close a conversation's lane where the recording ends, saying why and what was left unanswered."""
    last = next((e for e in reversed(lane.entries) if e.kind == "model"), None)
    if last is None:
        return
    lane.reason = last.stop_reason
    pending = f"; its {len(last.calls)} tool call(s) were not answered in the recording" if last.calls else ""
    text = f"the recording ends after {last.number} request(s), the last reply's stop reason {last.stop_reason}"
    lane.entries.append(
        Entry("end", f"{last.anchor}-end", label=f"recording ends ({last.stop_reason})", text=text + pending)
    )
