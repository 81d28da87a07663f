"""A run, written down: its events, the requests the model received, and what the tools did.

A ``Trace`` is the harness's unit of evidence. Invariants read it, the reference model predicts
it, regression files replay into it, and two traces can be diffed to show where runs diverged.
It is built only from what a run shows the outside (the event stream, the provider's captured
requests, a ledger kept by the tools that ran), never from loop internals.

This module is the one place that builds, reads and shows traces: ``TraceRecorder`` builds one
(``RunCollector`` builds one per run of a test with it), ``TraceRecorder.record_returned`` /
``record_raised`` write the tool ledger, ``Trace.render`` is the one rendering (nested runs
indented), ``run_views`` / ``batches`` split a trace into its runs and model calls for the
oracle, and ``shorten`` is the one way long values are cut down for people to read.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from harness.trace._leaving import Left
from openprogram.agent.events import AgentEvent, AgentEventAgentEnd, EndReason
from openprogram.providers import ModelRequest
from openprogram.tools import AgentTool, AgentToolResult, OnUpdate
from openprogram.types import AssistantMessage, Message, TextContent, ThinkingContent, ToolCall, ToolResultMessage

_Provider = TypeVar("_Provider")


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


# -- Reading a trace: its runs, their committed history, batches, and the request behind each call ---


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


def show_batch(batch: Batch) -> str:
    """A model call with the results and messages committed after it, for failure messages."""
    lines = [f"  [request {batch.number}] {render_message(batch.message)}"]
    lines.extend(f"    {render_message(m)}" for m in (*batch.results, *batch.after))
    return "\n".join(lines)


# -- Building a trace: the recorder (one run) and the collector (every run of a test) --------


class TraceRecorder:
    """Builds a ``Trace`` while a run happens: feed it events, wrap the tools for the ledger.

    The ledger is written only through ``record_returned`` / ``record_raised``: by the wrapper of
    ``wrap_tool``, and by any tool that keeps its own books (the scenario's planned tools), so
    every ledger entry means the same thing whoever wrote it.
    """

    def __init__(self, *, ledger: bool = True) -> None:
        self.events: list[Any] = []
        self.ledger: list[LedgerEntry] | None = [] if ledger else None
        self.error: str | None = None

    def on_event(self, event: Any) -> None:
        self.events.append(event)

    # -- the ledger -----------------------------------------------------------------------
    def record_returned(self, tool_name: str, tool_call_id: str, args: Mapping[str, Any], result: Any) -> None:
        """A tool body returned ``result`` (an ``AgentToolResult``, or any value the loop wraps)."""
        if self.ledger is None:
            return
        text = result.text if isinstance(result, AgentToolResult) else str(result)
        self.ledger.append(
            LedgerEntry(
                tool_name=tool_name,
                tool_call_id=tool_call_id,
                arguments=dict(args),
                text=text,
                is_error=bool(getattr(result, "is_error", False)),
            )
        )

    def record_raised(self, tool_name: str, tool_call_id: str, args: Mapping[str, Any], exc: BaseException) -> None:
        """A tool body raised ``exc``: the loop reports its text (its type name when empty)."""
        if self.ledger is None:
            return
        self.ledger.append(
            LedgerEntry(
                tool_name=tool_name,
                tool_call_id=tool_call_id,
                arguments=dict(args),
                outcome="raised",
                text=str(exc) or type(exc).__name__,
                is_error=True,
            )
        )

    def wrap_tool(self, tool: AgentTool) -> AgentTool:
        """The same tool, but every real execution is written to the ledger first-hand."""
        if self.ledger is None:
            return tool
        inner = tool.execute

        async def execute(
            tool_call_id: str, args: dict[str, Any], cancel_event: Any, on_update: OnUpdate | None
        ) -> AgentToolResult:
            try:
                result = await inner(tool_call_id, args, cancel_event, on_update)
            except Exception as exc:
                self.record_raised(tool.name, tool_call_id, args, exc)
                raise
            self.record_returned(tool.name, tool_call_id, args, result)
            return result

        return dataclasses.replace(tool, execute=execute)

    def wrap_tools(self, tools: Iterable[AgentTool]) -> list[AgentTool]:
        return [self.wrap_tool(tool) for tool in tools]

    # -- the trace ------------------------------------------------------------------------
    def finish(
        self,
        requests: Sequence[ModelRequest] = (),
        *,
        new_messages: Sequence[Message] | None = None,
        max_iterations: int | None = None,
    ) -> Trace:
        """The ``Trace`` so far; ``new_messages`` default to what ``agent_end`` reported."""
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


NOT_ENDED = "no agent_end seen: the run raised, or had not finished when read"
"""The ``error`` of a collected run whose stream never ended (as far as the collector saw)."""


class _Record:
    """The events and requests of one top-level run (its nested runs' included, inline)."""

    def __init__(self, collector: RunCollector) -> None:
        self.collector = collector
        self.recorder = TraceRecorder(ledger=False)
        self.requests: list[Any] = []
        self.depth = 0  # open nested runs
        self.ended = False

    def trace(self) -> Trace:
        seen_end = any(e.type == "agent_end" for e in self.recorder.events)
        self.recorder.error = None if seen_end else NOT_ENDED
        return self.recorder.finish(self.requests)


# The top-level run whose task (or tool body, or nested run) is executing. Set in the run's own
# task context at its agent_start, so everything its tools start inherits it: that is how a
# nested run is told apart from a concurrent top-level one.
_current_record: contextvars.ContextVar[_Record | None] = contextvars.ContextVar("_harness_record", default=None)


class RunCollector:
    """What the ``trace`` fixture gives a test: every run started during it, as ``Trace`` objects.

    ``runs`` has one ``Trace`` per top-level run, in start order, with nested runs' events inline
    (between the outer tool's start and end) and their requests included. ``events`` is every
    event in arrival order. Requests come from the providers being watched: the ``scripted``
    fixture's, the one bound by ``runtime.use`` when a run calls it, and any passed to ``watch``.
    ``checker`` is what ``check()`` runs on each trace (the plugin passes the invariants; this
    module cannot import them, since they read traces through it). ``bound_provider`` returns the
    provider a run would use right now (the plugin passes ``runtime.current_provider``): the trace
    layer sits below the runtime and the oracle reads traces, so it must not import the loop.
    """

    def __init__(
        self,
        checker: Callable[[Trace], None] | None = None,
        bound_provider: Callable[[], Any] | None = None,
    ) -> None:
        self._bound_provider = bound_provider
        self._records: list[_Record] = []
        self.events: list[Any] = []
        self._watched: list[tuple[Any, list[int]]] = []
        self._lock = threading.RLock()
        self._checker = checker

    # -- recording ------------------------------------------------------------------------
    def watch(self, provider: _Provider) -> _Provider:
        """Collect this provider's captured ``requests`` (anything with a ``requests`` list)."""
        with self._lock:
            if not any(p is provider for p, _ in self._watched):
                seen = len(getattr(provider, "requests", ()) or ())
                self._watched.append((provider, [seen]))
        return provider

    def on_event(self, event: Any) -> None:
        with self._lock:
            self.events.append(event)
            record = _current_record.get()
            if record is not None and (record.collector is not self or record.ended):
                record = None
            if event.type == "agent_start":
                if record is None:
                    record = _Record(self)
                    self._records.append(record)
                    _current_record.set(record)
                else:
                    record.depth += 1
            elif record is None:
                record = next((r for r in reversed(self._records) if not r.ended), None)
                if record is None:
                    record = _Record(self)
                    self._records.append(record)
            record.recorder.on_event(event)
            if event.type == "message_start" and isinstance(event.message, AssistantMessage):
                self._collect_requests(record)
            elif event.type == "agent_end":
                if record.depth:
                    record.depth -= 1
                else:
                    record.ended = True

    def _collect_requests(self, record: _Record) -> None:
        bound = self._bound_provider() if self._bound_provider is not None else None
        if bound is not None and isinstance(getattr(bound, "requests", None), (list, tuple)):
            if not any(p is bound for p, _ in self._watched):
                self._watched.append((bound, [max(0, len(bound.requests) - 1)]))
        for provider, seen in self._watched:
            requests = getattr(provider, "requests", None) or []
            if len(requests) > seen[0]:
                record.requests.extend(requests[seen[0] :])
                seen[0] = len(requests)

    # -- reading --------------------------------------------------------------------------
    @property
    def runs(self) -> list[Trace]:
        with self._lock:
            return [record.trace() for record in self._records]

    @property
    def last(self) -> Trace:
        runs = self.runs
        if not runs:
            raise LookupError(
                "trace.last: no run was observed in this test (did the agent run? runs started in "
                "another thread without copying the context are not seen)"
            )
        return runs[-1]

    @property
    def requests(self) -> list[ModelRequest]:
        """Every captured request of every run, in order."""
        return [request for run in self.runs for request in run.requests]

    def check(self) -> None:
        """Assert every invariant of ``harness.oracle._run_invariants`` on every observed run."""
        if self._checker is None:
            raise RuntimeError("RunCollector.check: no checker given (RunCollector(checker=check_all))")
        for trace in self.runs:
            self._checker(trace)

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[Trace]:
        return iter(self.runs)

    def __str__(self) -> str:
        runs = self.runs
        if not runs:
            return "(no agent runs observed)"
        parts = []
        for number, trace in enumerate(runs, 1):
            header = f"=== run {number} of {len(runs)}: reason={trace.reason}, {len(trace.requests)} request(s) ==="
            parts.append(header + "\n" + trace.render())
        return "\n".join(parts)

    def __repr__(self) -> str:
        return f"<RunCollector {len(self._records)} run(s), {len(self.events)} event(s)>"


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
