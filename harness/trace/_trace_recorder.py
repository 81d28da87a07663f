"""Building a trace: the recorder of one run, and the collector of every run a test starts.

``TraceRecorder`` is fed a run's events and writes the tool ledger (``record_returned`` /
``record_raised``, by the wrapper of ``wrap_tool`` or by a tool that keeps its own books);
``RunCollector`` is what the ``trace`` fixture gives a test: one recorder per top-level run,
nested runs told apart from concurrent ones by the run whose task is executing.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from harness.trace._trace import LedgerEntry, Trace
from openprogram.providers import ModelRequest
from openprogram.tools import AgentTool, AgentToolResult, OnUpdate
from openprogram.types import AssistantMessage, Message

_Provider = TypeVar("_Provider")


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
