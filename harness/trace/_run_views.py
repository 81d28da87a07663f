"""A trace read for the oracle: its runs apart, their committed history, each model call's batch.

``run_views`` splits a trace into the top-level run and every nested one (each with only its own
events) and gives each model call the captured request that produced it; ``batches`` reads a
run's model calls with the results and messages committed after each. Built from the trace
alone, never from the loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openprogram.agent.events import AgentEventAgentEnd
from openprogram.providers import ModelRequest
from openprogram.types import AssistantMessage, Message, ToolCall, ToolResultMessage

if TYPE_CHECKING:
    from harness.trace._trace import Trace


@dataclass
class RunView:
    """One run's own events (nested runs taken out), the runs nested inside its tools, and the
    captured request behind each of its model calls (``None`` where none matches)."""

    label: str
    events: list[Any] = field(default_factory=list)
    nested: list[RunView] = field(default_factory=list)
    open_tools: list[str] = field(default_factory=list)  # ids, while splitting
    open_names: list[str] = field(default_factory=list)
    requests: list[ModelRequest | None] = field(default_factory=list)
    batch_cache: tuple[Any, list[Batch]] | None = field(default=None, init=False, repr=False, compare=False)
    """``batches(self)`` and what it was computed from (see there)."""

    @property
    def is_root(self) -> bool:
        return self.label == "run"

    def where(self) -> str:
        return "" if self.is_root else f" (in {self.label})"

    @property
    def end(self) -> AgentEventAgentEnd | None:
        return next((e for e in reversed(self.events) if isinstance(e, AgentEventAgentEnd)), None)

    @property
    def committed(self) -> list[Message]:
        """The messages this run committed, in order: the ``message`` of each ``message_end``."""
        return [e.message for e in self.events if e.type == "message_end"]

    def model_calls(self) -> list[int]:
        """Where the model calls are in the run's committed history."""
        return assistant_indices(self.committed)

    def menu(self, batch: Batch) -> tuple[Any, ...] | None:
        """The tools a model call was offered: its request's, else the run's first captured one;
        ``None`` when the run has no captured request."""
        request = batch.request
        if request is None:
            request = next((r for r in self.requests if r is not None), None)
        return tuple(request.tools) if request is not None else None


def run_views(trace: Trace) -> list[RunView]:
    """The top-level run first, then every nested run (depth first), each with its requests."""
    runs = _split_runs(trace.events)
    _attach_requests(trace, runs)
    return runs


def _split_runs(events: Sequence[Any]) -> list[RunView]:
    """Each run with only its own events.

    A nested run is an ``agent_start`` that arrives while the current run is executing a tool.
    A nested run that never ends (its stream raised inside the tool) is closed when the outer
    tool's ``tool_execution_end`` arrives.
    """
    root = RunView("run")
    runs = [root]
    stack = [root]
    for event in events:
        kind = event.type
        top = stack[-1]
        if kind == "agent_start" and top.open_tools and top.events:
            child = RunView(f"nested run {len(runs)} inside {top.open_names[-1]}#{top.open_tools[-1]}")
            top.nested.append(child)
            runs.append(child)
            stack.append(child)
            top = child
        elif kind == "tool_execution_end" and len(stack) > 1 and event.tool_call_id not in top.open_tools:
            parent_index = next(
                (i for i in range(len(stack) - 2, -1, -1) if event.tool_call_id in stack[i].open_tools), None
            )
            if parent_index is not None:
                del stack[parent_index + 1 :]
                top = stack[-1]
        top.events.append(event)
        if kind == "tool_execution_start":
            top.open_tools.append(event.tool_call_id)
            top.open_names.append(event.tool_name)
        elif kind == "tool_execution_end" and event.tool_call_id in top.open_tools:
            position = top.open_tools.index(event.tool_call_id)
            del top.open_tools[position], top.open_names[position]
        elif kind == "agent_end" and len(stack) > 1:
            stack.pop()
    for run in runs:
        run.open_tools, run.open_names = [], []
    return runs


def _tail_equals(messages: Sequence[Message], prefix: Sequence[Message]) -> bool:
    if len(prefix) > len(messages):
        return False
    return not prefix or tuple(messages[len(messages) - len(prefix) :]) == tuple(prefix)


def assistant_indices(committed: Sequence[Message]) -> list[int]:
    """Where the model calls are in a committed history."""
    return [i for i, m in enumerate(committed) if isinstance(m, AssistantMessage)]


def _attach_requests(trace: Trace, runs: list[RunView]) -> None:
    """Give each model call of each run the captured request that produced it (or ``None``).

    A request belongs to the call whose preceding history it ends with. When that matching fails
    for a run without nested runs and the counts agree, requests are paired by position, so a
    request that lost or reordered messages is still compared with the call it belongs to.
    """
    pool = list(trace.requests)
    for run in runs:
        run.requests = [None] * len(assistant_indices(run.committed))
    if not pool:
        return
    used: set[int] = set()
    for run in runs:
        committed = run.committed
        position = 0
        for k, index in enumerate(assistant_indices(committed)):
            prefix = committed[:index]
            for j in range(position, len(pool)):
                if j not in used and _tail_equals(pool[j].messages, prefix):
                    run.requests[k] = pool[j]
                    used.add(j)
                    position = j + 1
                    break
    root = runs[0]
    if len(runs) == 1 and None in root.requests:
        calls = len(root.requests)
        last = root.committed[assistant_indices(root.committed)[-1]] if calls else None
        aborted = isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
        synthesized_abort = aborted and len(pool) == calls - 1
        if len(pool) == calls or synthesized_abort:
            root.requests = [pool[k] if k < len(pool) else None for k in range(calls)]


@dataclass
class Batch:
    """One model call's tool calls and the results committed right after it."""

    number: int  # 1-based model call number within its run
    index: int  # position of the assistant message in the run's committed history
    message: AssistantMessage
    calls: list[ToolCall]
    results: list[ToolResultMessage]
    after: list[Message]  # non-assistant messages after the results, up to the next assistant message
    next_request: ModelRequest | None
    request: ModelRequest | None


def batches(run: RunView) -> list[Batch]:
    """Every model call of ``run``, with the results and messages committed after it.

    Kept on the run while its events and requests stay the same: each invariant asks for the
    same run's batches (nine times a check), and building them was a tenth of checking a run.
    The batches are read, never changed, by whoever asks."""
    key = (len(run.events), tuple(map(id, run.requests)))
    cached = run.batch_cache
    if cached is not None and cached[0] == key:
        return cached[1]
    out = _batches(run)
    run.batch_cache = (key, out)
    return out


def _batches(run: RunView) -> list[Batch]:
    committed = run.committed
    assistants = [(i, m) for i, m in enumerate(committed) if isinstance(m, AssistantMessage)]
    out = []
    for k, (index, message) in enumerate(assistants):
        end = assistants[k + 1][0] if k + 1 < len(assistants) else len(committed)
        results: list[ToolResultMessage] = []
        position = index + 1
        while position < end and isinstance(result := committed[position], ToolResultMessage):
            results.append(result)
            position += 1
        out.append(
            Batch(
                number=k + 1,
                index=index,
                message=message,
                calls=[c for c in message.content if isinstance(c, ToolCall)],
                results=results,
                after=list(committed[position:end]),
                next_request=run.requests[k + 1] if k + 1 < len(run.requests) else None,
                request=run.requests[k] if k < len(run.requests) else None,
            )
        )
    return out
