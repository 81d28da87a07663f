"""Properties every run of the loop must have, checked on a ``Trace`` alone.

Each invariant is a plain function of a ``Trace`` that raises ``InvariantViolation`` (an
``AssertionError``) naming itself and showing the offending part of the run. They read only what
any run exposes (the events, the captured requests, ``new_messages``, and the tool ledger and
``max_iterations`` when the trace has them), so they work on traces of users' own agents as well
as on the harness's generated scenarios. What a trace lacks is not checked: no requests means no
request checks, no ledger means no "did the tool really run" checks.

Traces may hold nested runs (an agentic tool that calls ``runtime.exec`` again): their events sit
inline between the outer ``tool_execution_start`` and ``tool_execution_end``. The invariants
separate them and check each run on its own; the outer run's rules never see the inner events.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from harness.contract import (
    HARD_CAP,
    SKIPPED_STEERING,
    effective_cap,
    invalid_json_prefix,
    not_found_prefix,
    validation_prefix,
)
from harness.trace import Trace, diff, render_message
from openprogram.providers import ModelRequest
from openprogram.types import AssistantMessage, Message, ToolCall, ToolResultMessage, ToolSpec

__all__ = [
    "ALL_INVARIANTS",
    "HARD_CAP",
    "SKIP_TEXT",
    "InvariantViolation",
    "check_all",
    "check_deterministic",
    "conservation",
    "effective_cap",
    "end_reason_consistent",
    "error_feedback",
    "error_ends_run",
    "event_grammar",
    "skip_semantics",
    "terminates_within_cap",
    "tool_calls_answered",
]

SKIP_TEXT = SKIPPED_STEERING  # the name this module has always exported


class InvariantViolation(AssertionError):
    """A run broke an invariant. ``name`` is the invariant, ``message`` what and where."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"invariant {name!r} violated: {message}")
        self.name = name
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (pytest-xdist, multiprocessing)
        return (type(self), (self.name, self.message))


# ---------------------------------------------------------------------------------------------
# Reading a trace: runs, committed history, batches, and the request behind each model call
# ---------------------------------------------------------------------------------------------


@dataclass
class _Run:
    """One run's own events (nested runs taken out) and the runs nested inside its tools."""

    label: str
    events: list[Any] = field(default_factory=list)
    nested: list[_Run] = field(default_factory=list)
    open_tools: list[str] = field(default_factory=list)  # ids, while splitting
    open_names: list[str] = field(default_factory=list)
    requests: list[ModelRequest | None] = field(default_factory=list)

    @property
    def is_root(self) -> bool:
        return self.label == "run"

    def where(self) -> str:
        return "" if self.is_root else f" (in {self.label})"

    @property
    def end(self) -> Any | None:
        return next((e for e in reversed(self.events) if e.type == "agent_end"), None)

    @property
    def committed(self) -> list[Message]:
        """The messages this run committed, in order: the ``message`` of each ``message_end``."""
        return [e.message for e in self.events if e.type == "message_end"]


def _split_runs(events: Sequence[Any]) -> list[_Run]:
    """The top-level run first, then every nested run (depth first), each with only its own events.

    A nested run is an ``agent_start`` that arrives while the current run is executing a tool.
    A nested run that never ends (its stream raised inside the tool) is closed when the outer
    tool's ``tool_execution_end`` arrives.
    """
    root = _Run("run")
    runs = [root]
    stack = [root]
    for event in events:
        kind = event.type
        top = stack[-1]
        if kind == "agent_start" and top.open_tools and top.events:
            child = _Run(f"nested run {len(runs)} inside {top.open_names[-1]}#{top.open_tools[-1]}")
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


def _assistant_indices(committed: Sequence[Message]) -> list[int]:
    return [i for i, m in enumerate(committed) if isinstance(m, AssistantMessage)]


def _attach_requests(trace: Trace, runs: list[_Run]) -> None:
    """Give each model call of each run the captured request that produced it (or ``None``).

    A request belongs to the call whose preceding history it ends with. When that matching fails
    for a run without nested runs and the counts agree, requests are paired by position, so a
    request that lost or reordered messages is still compared with the call it belongs to.
    """
    pool = list(trace.requests)
    for run in runs:
        committed = run.committed
        indices = _assistant_indices(committed)
        run.requests = [None] * len(indices)
    if not pool:
        return
    used: set[int] = set()
    for run in runs:
        committed = run.committed
        position = 0
        for k, index in enumerate(_assistant_indices(committed)):
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
        last = root.committed[_assistant_indices(root.committed)[-1]] if calls else None
        synthesized_abort = last is not None and last.stop_reason == "aborted" and len(pool) == calls - 1
        if len(pool) == calls or synthesized_abort:
            root.requests = [pool[k] if k < len(pool) else None for k in range(calls)]


@dataclass
class _Batch:
    """One model call's tool calls and the results committed right after it."""

    number: int  # 1-based model call number within its run
    index: int  # position of the assistant message in the run's committed history
    message: AssistantMessage
    calls: list[ToolCall]
    results: list[ToolResultMessage]
    after: list[Message]  # non-assistant messages after the results, up to the next assistant message
    next_request: ModelRequest | None
    request: ModelRequest | None


def _batches(run: _Run) -> list[_Batch]:
    committed = run.committed
    indices = _assistant_indices(committed)
    out = []
    for k, index in enumerate(indices):
        message = committed[index]
        end = indices[k + 1] if k + 1 < len(indices) else len(committed)
        results: list[ToolResultMessage] = []
        position = index + 1
        while position < end and isinstance(committed[position], ToolResultMessage):
            results.append(committed[position])  # type: ignore[arg-type]
            position += 1
        out.append(
            _Batch(
                number=k + 1,
                index=index,
                message=message,  # type: ignore[arg-type]
                calls=[c for c in message.content if isinstance(c, ToolCall)],  # type: ignore[union-attr]
                results=results,
                after=list(committed[position:end]),
                next_request=run.requests[k + 1] if k + 1 < len(run.requests) else None,
                request=run.requests[k] if k < len(run.requests) else None,
            )
        )
    return out


def _parse(trace: Trace) -> list[_Run]:
    runs = _split_runs(trace.events)
    _attach_requests(trace, runs)
    return runs


# ---------------------------------------------------------------------------------------------
# Showing the evidence
# ---------------------------------------------------------------------------------------------


def _short(value: Any, limit: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_event(event: Any) -> str:
    """One event on one line, for failure messages."""
    kind = event.type
    if kind in ("message_start", "message_end"):
        return f"{kind} {render_message(event.message)}"
    if kind == "message_update":
        return f"message_update {event.assistant_message_event.type}"
    if kind == "tool_execution_start":
        return f"tool_execution_start {event.tool_name}#{event.tool_call_id} {_short(event.args, 60)}"
    if kind == "tool_execution_update":
        return f"tool_execution_update {event.tool_name}#{event.tool_call_id} {_short(event.partial_result, 60)}"
    if kind == "tool_execution_end":
        flag = " ERROR" if event.is_error else ""
        return f"tool_execution_end {event.tool_name}#{event.tool_call_id}{flag} -> {_short(event.result.text, 60)}"
    if kind == "turn_end":
        return f"turn_end (assistant [{event.message.stop_reason}], {len(event.tool_results)} tool result(s))"
    if kind == "agent_end":
        return f"agent_end reason={event.reason} ({len(event.messages)} messages)"
    return kind


def _window(events: Sequence[Any], index: int, before: int = 5, after: int = 2) -> str:
    start, stop = max(0, index - before), min(len(events), index + after + 1)
    lines = []
    if start > 0:
        lines.append("      ...")
    for i in range(start, stop):
        marker = ">>" if i == index else "  "
        lines.append(f"  {marker} #{i} {describe_event(events[i])}")
    if stop < len(events):
        lines.append("      ...")
    return "\n".join(lines)


def _show_batch(batch: _Batch) -> str:
    lines = [f"  [request {batch.number}] {render_message(batch.message)}"]
    lines.extend(f"    {render_message(r)}" for r in batch.results)
    lines.extend(f"    {render_message(m)}" for m in batch.after)
    return "\n".join(lines)


def _show_messages(messages: Iterable[Message], indent: str = "    ") -> str:
    shown = [f"{indent}{render_message(m)}" for m in messages]
    return "\n".join(shown) or f"{indent}(none)"


def _fail(name: str, message: str) -> InvariantViolation:
    return InvariantViolation(name, message)


# ---------------------------------------------------------------------------------------------
# The invariants
# ---------------------------------------------------------------------------------------------


def terminates_within_cap(trace: Trace) -> None:
    """The run makes at most ``min(50, max(1, max_iterations))`` model requests.

    A model that never stops picking tools must not keep the loop alive: the cap counts requests
    over the whole run (follow-up rounds included). Counted as the run's assistant messages, which
    is one per request (plus at most one synthesized ``aborted`` message that replaces a request).
    Nested runs are held to the hard cap, since their own ``max_iterations`` is not in the trace.
    """
    name = "terminates_within_cap"
    for run in _parse(trace):
        calls = [e.message for e in run.events if e.type == "message_end" and isinstance(e.message, AssistantMessage)]
        cap = effective_cap(trace.max_iterations) if run.is_root else HARD_CAP
        if len(calls) > cap:
            given = trace.max_iterations if run.is_root else None
            listed = "\n".join(f"    [request {i + 1}] {render_message(m)}" for i, m in enumerate(calls[: cap + 2]))
            more = f"\n    ... {len(calls) - cap - 2} more" if len(calls) > cap + 2 else ""
            raise _fail(
                name,
                f"the run{run.where()} made {len(calls)} model requests but the cap is "
                f"min(50, max(1, max_iterations={given})) = {cap}:\n{listed}{more}",
            )


def event_grammar(trace: Trace) -> None:
    """The events form a well-bracketed run.

    ``agent_start`` first, ``agent_end`` last and exactly once; ``turn_start``/``turn_end``
    balanced and never nested; each turn holds the pending user messages, then exactly one
    assistant message, then one tool execution per call; ``message_start``/``message_end`` paired,
    with ``message_update`` only inside an assistant message; ``tool_execution_start``/``update``/
    ``end`` nested with matching ids, and each ``tool_execution_end`` followed at once by the
    ``message_start``/``message_end`` of its ``ToolResultMessage`` (same id, text and error flag);
    ``turn_end`` reports the turn's assistant message and results. The one exception: when the
    iteration cap ends a run, messages already taken from a queue are committed after the last
    ``turn_end``, just before ``agent_end``. A trace whose stream raised (``trace.error``) may stop
    early, as may a nested run whose stream raised inside its tool.
    """
    for run in _parse(trace):
        allow_unfinished = trace.error is not None or not run.is_root
        _check_grammar(run, allow_unfinished)


def _check_grammar(run: _Run, allow_unfinished: bool) -> None:
    name = "event_grammar"
    events = run.events
    where = run.where()

    def bad(index: int, problem: str) -> InvariantViolation:
        return _fail(name, f"{problem}{where} at event #{index}:\n{_window(events, min(index, len(events) - 1))}")

    if not events:
        if allow_unfinished:
            return
        raise _fail(name, f"the run{where} has no events at all")
    end_event = run.end
    capped = end_event is not None and end_event.reason == "max_iterations"
    in_turn = False
    turns = 0
    phase = "pre"  # within a turn: "pre" (user messages), "post" (after the assistant message)
    turn_assistant: Any = None
    turn_results: list[ToolResultMessage] = []
    open_message: Any = None
    open_tool: Any = None
    expect_result: Any = None  # the tool_execution_end whose ToolResultMessage must come next
    tail = False
    ended = False
    for i, event in enumerate(events):
        kind = event.type
        if ended:
            raise bad(i, f"{kind} after agent_end")
        if i == 0 and kind != "agent_start":
            raise bad(i, f"the first event is {kind}, not agent_start")
        if expect_result is not None and kind not in ("message_start", "message_end"):
            raise bad(
                i,
                f"tool_execution_end of {expect_result.tool_name}#{expect_result.tool_call_id} is followed by "
                f"{kind} instead of the message_start/message_end of its ToolResultMessage",
            )
        if kind == "agent_start":
            if i != 0:
                raise bad(i, "a second agent_start")
            if len(events) > 1 and events[1].type != "turn_start":
                raise bad(1, f"agent_start is followed by {events[1].type}, not turn_start")
        elif kind == "turn_start":
            if in_turn:
                raise bad(i, "turn_start inside an open turn (turns never nest)")
            if tail:
                raise bad(i, "turn_start after the messages committed at the iteration cap")
            in_turn, phase, turn_assistant, turn_results = True, "pre", None, []
        elif kind == "message_start":
            if open_message is not None:
                raise bad(i, "message_start while another message is open")
            if open_tool is not None:
                raise bad(i, f"message_start inside the execution of {open_tool.tool_name}#{open_tool.tool_call_id}")
            message = event.message
            if expect_result is not None:
                if not isinstance(message, ToolResultMessage) or message.tool_call_id != expect_result.tool_call_id:
                    raise bad(
                        i,
                        f"tool_execution_end of {expect_result.tool_name}#{expect_result.tool_call_id} is followed "
                        "by a different message instead of its ToolResultMessage",
                    )
            elif not in_turn:
                if turns == 0 or not capped or isinstance(message, AssistantMessage):
                    raise bad(
                        i,
                        "a message outside any turn (only messages taken from a queue when the iteration cap "
                        "ends the run may follow the last turn_end)",
                    )
                tail = True
            elif isinstance(message, ToolResultMessage):
                raise bad(i, f"a ToolResultMessage for #{message.tool_call_id} with no tool execution before it")
            elif phase != "pre":
                what = "a second assistant message" if isinstance(message, AssistantMessage) else "a user message"
                raise bad(i, f"{what} after the turn's assistant message (one model call per turn)")
            open_message = event
        elif kind == "message_update":
            if open_message is None or not isinstance(open_message.message, AssistantMessage):
                raise bad(i, "message_update outside an assistant message")
        elif kind == "message_end":
            if open_message is None:
                raise bad(i, "message_end without message_start")
            started, message = open_message.message, event.message
            if started.role != message.role:
                raise bad(i, f"message_start of a {started.role} message closed by message_end of a {message.role}")
            if not isinstance(message, AssistantMessage) and started != message:
                raise bad(i, "message_end carries a different message than its message_start")
            open_message = None
            if expect_result is not None:
                result = expect_result.result
                if (
                    message.tool_name != expect_result.tool_name
                    or message.text != result.text
                    or message.is_error != expect_result.is_error
                ):
                    raise bad(
                        i,
                        f"the ToolResultMessage does not match its tool_execution_end "
                        f"({expect_result.tool_name}, is_error={expect_result.is_error}, {_short(result.text)!r})",
                    )
                turn_results.append(message)
                expect_result = None
            elif isinstance(message, AssistantMessage) and in_turn:
                phase, turn_assistant = "post", message
        elif kind == "tool_execution_start":
            if not in_turn or phase != "post":
                raise bad(i, "tool_execution_start outside a turn's tool phase (it must follow the assistant message)")
            if open_message is not None or open_tool is not None:
                raise bad(i, "tool_execution_start while a message or another tool execution is open")
            open_tool = event
        elif kind == "tool_execution_update":
            if open_tool is None or open_tool.tool_call_id != event.tool_call_id:
                raise bad(i, f"tool_execution_update for #{event.tool_call_id}, which is not executing")
        elif kind == "tool_execution_end":
            if open_tool is None or open_tool.tool_call_id != event.tool_call_id:
                raise bad(i, f"tool_execution_end for #{event.tool_call_id}, which is not executing")
            if open_tool.tool_name != event.tool_name:
                raise bad(i, f"tool_execution_end names {event.tool_name}, its start named {open_tool.tool_name}")
            open_tool, expect_result = None, event
        elif kind == "turn_end":
            if not in_turn:
                raise bad(i, "turn_end without turn_start")
            if open_message is not None or open_tool is not None:
                raise bad(i, "turn_end while a message or tool execution is still open")
            if turn_assistant is None:
                raise bad(i, "turn_end of a turn without an assistant message")
            if event.message != turn_assistant:
                raise bad(i, "turn_end reports a different assistant message than the turn committed")
            if tuple(event.tool_results) != tuple(turn_results):
                raise bad(
                    i,
                    f"turn_end reports {len(event.tool_results)} tool result(s), the turn committed "
                    f"{len(turn_results)}:\n  reported:\n{_show_messages(event.tool_results)}\n"
                    f"  committed:\n{_show_messages(turn_results)}",
                )
            in_turn, turns = False, turns + 1
        elif kind == "agent_end":
            if in_turn or open_message is not None or open_tool is not None:
                raise bad(i, "agent_end inside an open turn, message or tool execution")
            if turns == 0:
                raise bad(i, "agent_end without any completed turn")
            ended = True
        else:
            raise bad(i, f"unknown event type {kind!r}")
    if not ended and not allow_unfinished:
        last = len(events) - 1
        raise bad(last, "the stream ended without agent_end (and the trace records no error)")


def tool_calls_answered(trace: Trace) -> None:
    """Every tool call gets exactly one result with its id, in call order, before the next request.

    Applies to each committed assistant message whose ``stop_reason`` is not ``error``/``aborted``
    (those end the run, see ``error_ends_run``): the ``ToolResultMessage``s that directly follow
    it carry the calls' ids and names in the calls' order, none missing, none extra, none twice.
    The next model request must carry the same assistant message followed by results with the
    same ids in the same order. A run whose stream raised may lack the results of its last batch.
    """
    name = "tool_calls_answered"
    for run in _parse(trace):
        batches = _batches(run)
        unfinished = run.end is None
        for k, batch in enumerate(batches):
            if batch.message.stop_reason in ("error", "aborted"):
                continue
            expected = [(c.id, c.name) for c in batch.calls]
            got = [(r.tool_call_id, r.tool_name) for r in batch.results]
            is_last = k == len(batches) - 1
            if got != expected and not (unfinished and is_last and expected[: len(got)] == got):
                raise _fail(
                    name,
                    f"model call {batch.number}{run.where()} made {len(expected)} tool call(s) "
                    f"{_ids(expected)} but the results that follow it are {_ids(got)}:\n{_show_batch(batch)}",
                )
            if batch.message.stop_reason not in ("error", "aborted") and k + 1 < len(batches):
                request = batch.next_request
                if request is None:
                    synthesized = batches[k + 1].message.stop_reason == "aborted"  # cancelled: no request made
                    if run.is_root and not synthesized and any(r is not None for r in run.requests):
                        raise _fail(
                            name,
                            f"no captured request carries the history before model call {batch.number + 1}"
                            f"{run.where()}: the requests lost or reordered messages",
                        )
                    continue
                _check_request_results(name, run, batch, request, expected)


def _ids(pairs: Sequence[tuple[str, str]]) -> str:
    return "[" + ", ".join(f"{n}#{i}" for i, n in pairs) + "]"


def _check_request_results(
    name: str, run: _Run, batch: _Batch, request: ModelRequest, expected: list[tuple[str, str]]
) -> None:
    messages = list(request.messages)
    last = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=None)
    if last is None or messages[last] != batch.message:
        raise _fail(
            name,
            f"request {batch.number + 1}{run.where()} does not end its history with the assistant message of "
            f"model call {batch.number}; the request's messages:\n{_show_messages(messages)}",
        )
    results = []
    for message in messages[last + 1 :]:
        if not isinstance(message, ToolResultMessage):
            break
        results.append((message.tool_call_id, message.tool_name))
    if results != expected:
        raise _fail(
            name,
            f"request {batch.number + 1}{run.where()} shows the model the results {_ids(results)} for the calls "
            f"{_ids(expected)} of model call {batch.number}; the request's messages from that call on:\n"
            f"{_show_messages(messages[last:])}",
        )


# -- error feedback and the ledger --------------------------------------------------------


_validators: dict[str, Any] = {}


def _validator(schema: Any) -> Any:
    """A checked validator for ``schema`` (cached: checking a schema costs more than using it)."""
    try:
        key = json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError):
        key = repr(schema)
    if key not in _validators:
        try:
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            cls.check_schema(schema)
            validator: Any = cls(schema)
        except Exception:
            validator = None
        if len(_validators) >= 512:
            _validators.clear()
        _validators[key] = validator
    return _validators[key]


def _schema_errors(schema: Any, arguments: Any) -> list[str] | None:
    """Validation errors of ``arguments`` against ``schema``; ``None`` when the schema is unusable."""
    validator = _validator(schema)
    if validator is None:
        return None
    try:
        return [error.message for error in validator.iter_errors(arguments)]
    except Exception:
        return None


def _declared_types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(declared or ())
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            types |= _declared_types(branch)
    return types


def _loosely_coerced(value: Any, schema: Any) -> Any:
    """Strings toward the scalar type the schema asks for, the lenience models need ("5" → 5)."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, str):
        types = _declared_types(schema)
        if not types or "string" in types:
            return value
        text = value.strip()
        for kind, convert in (("integer", int), ("number", float)):
            if kind in types:
                try:
                    number = convert(text)
                except ValueError:
                    continue
                return int(number) if isinstance(number, float) and number.is_integer() and kind == "number" else number
        if "boolean" in types and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if "null" in types and text.lower() in ("null", "none", ""):
            return None
        return value
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        return {k: _loosely_coerced(v, properties.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_loosely_coerced(v, schema["items"]) for v in value]
    return value


@dataclass
class _Call:
    """A call and its result, classified by what the loop must have done with it."""

    run: _Run
    batch: _Batch
    position: int
    call: ToolCall
    result: ToolResultMessage
    kind: str  # skipped | not_found | invalid_json | invalid_args | executed | unchecked
    specs: tuple[ToolSpec, ...] | None

    @property
    def key(self) -> tuple[str, str]:
        return (self.call.id, self.call.name)


def _run_specs(run: _Run, batch: _Batch) -> tuple[ToolSpec, ...] | None:
    if batch.request is not None:
        return tuple(batch.request.tools)
    known = next((r for r in run.requests if r is not None), None)
    return tuple(known.tools) if known is not None else None


def _classify(runs: list[_Run]) -> list[_Call]:
    out = []
    for run in runs:
        for batch in _batches(run):
            if batch.message.stop_reason in ("error", "aborted"):
                continue
            specs = _run_specs(run, batch)
            for position, (call, result) in enumerate(zip(batch.calls, batch.results, strict=False)):
                if result.tool_call_id != call.id:
                    break  # the pairing is broken: tool_calls_answered reports it
                out.append(_Call(run, batch, position, call, result, _kind(call, result, specs), specs))
    return out


def _kind(call: ToolCall, result: ToolResultMessage, specs: tuple[ToolSpec, ...] | None) -> str:
    if _looks_skipped(result):
        return "skipped"  # inexact skip texts too: skip_semantics owns (and reports) them
    if specs is None:  # no request captured: trust what the result says it was
        for prefix, kind in (
            (not_found_prefix(call.name), "not_found"),
            (invalid_json_prefix(call.name), "invalid_json"),
            (validation_prefix(call.name), "invalid_args"),
        ):
            if result.is_error and result.text.startswith(prefix):
                return kind
        return "executed"
    spec = next((s for s in specs if s.name == call.name), None)
    if spec is None:
        return "not_found"
    if call.raw_arguments is not None:
        return "invalid_json"
    errors = _schema_errors(spec.parameters, call.arguments)
    if errors is None:
        return "unchecked"  # the tool's own schema is unusable: the contract says nothing about the text
    if not errors:
        return "executed"
    if _schema_errors(spec.parameters, _loosely_coerced(call.arguments, spec.parameters)):
        return "invalid_args"
    # only lenient coercion makes these arguments valid: either answer is within the contract
    return "invalid_args" if result.text.startswith(validation_prefix(call.name)) else "executed"


def _looks_skipped(result: ToolResultMessage) -> bool:
    """The skip text, or an error that is evidently meant as it (a tool's own "skipped" output is not)."""
    if result.text == SKIP_TEXT:
        return True
    lower = result.text.lower()
    return (
        result.is_error
        and len(lower) < 120
        and lower.startswith("skipped")
        and ("queued" in lower or "user message" in lower)
    )


def _ledger_entries(trace: Trace) -> dict[tuple[str, str], list[Any]]:
    entries: dict[tuple[str, str], list[Any]] = {}
    for entry in trace.ledger or ():
        entries.setdefault((entry.tool_call_id, entry.tool_name), []).append(entry)
    return entries


def error_feedback(trace: Trace) -> None:
    """Every way a call can fail becomes an ``is_error`` result with the contract's text.

    Judged from the request that produced the call (its tools and their JSON Schemas):
    a tool not on the menu gives ``Tool "NAME" not found. Available tools: A, B``; argument text
    that is not a JSON object gives ``Invalid JSON arguments for tool "NAME": ...`` quoting the
    text; arguments the schema rejects give ``Validation failed for tool "NAME":`` with one
    ``  - PATH: MESSAGE`` line per error and the received arguments; valid arguments are never
    reported as invalid. None of these runs the tool (the ledger shows no execution), while a
    valid call of the run does run. A ledger entry that ``raised`` gives an ``is_error`` result
    whose text is the exception text; one that returned gives its text and error flag. The next
    request carries each error result unchanged. Skipped calls are ``skip_semantics``' business.
    """
    name = "error_feedback"
    runs = _parse(trace)
    calls = _classify(runs)
    ledger = _ledger_entries(trace)
    executed = Counter(c.key for c in calls if c.kind == "executed")
    # A call whose run died while it executed (a BaseException) has a ledger entry but no result.
    executed.update(_unanswered_keys(runs))
    skipped_keys = {c.key for c in calls if c.kind == "skipped"}
    consumed: Counter[tuple[str, str]] = Counter()
    for item in calls:
        if item.kind in ("skipped", "unchecked"):
            continue
        call, result = item.call, item.result
        where = f"call {call.name}#{call.id} (model call {item.batch.number}{item.run.where()})"
        shown = f"\n{_show_batch(item.batch)}"
        if item.kind == "invalid_args" and _ledger_shows_valid_run(trace, item):
            item.kind = "executed"  # the loop's coercion made the arguments valid and the tool ran
        if item.kind != "executed" and not result.is_error:
            raise _fail(
                name, f"{where} could not run ({item.kind.replace('_', ' ')}) but its result is not is_error{shown}"
            )
        if item.kind == "not_found":
            names = [s.name for s in item.specs] if item.specs is not None else None
            expected = f'Tool "{call.name}" not found. Available tools: '
            if not result.text.startswith(expected) or (
                names is not None and names and result.text[len(expected) :] != ", ".join(names)
            ):
                listed = ", ".join(names) if names else "..."
                raise _fail(
                    name,
                    f"{where} names a tool that is not on the menu; expected the result {expected + listed!r}, "
                    f"got {result.text!r}{shown}",
                )
        elif item.kind == "invalid_json":
            expected = f'Invalid JSON arguments for tool "{call.name}": '
            if not result.text.startswith(expected) or (call.raw_arguments or "") not in result.text:
                raise _fail(
                    name,
                    f"{where} sent argument text that is not a JSON object ({call.raw_arguments!r}); expected a "
                    f"result starting {expected!r} and quoting the text, got {result.text!r}{shown}",
                )
        elif item.kind == "invalid_args":
            expected = f'Validation failed for tool "{call.name}":\n'
            if (
                not result.text.startswith(expected)
                or "\n  - " not in result.text
                or "Received arguments:" not in result.text
            ):
                raise _fail(
                    name,
                    f"{where} has arguments {_short(call.arguments)} that the tool's schema rejects; expected a "
                    f"result starting {expected!r} with '  - PATH: MESSAGE' lines and 'Received arguments:', "
                    f"got {result.text!r}{shown}",
                )
        elif result.text.startswith(validation_prefix(call.name)):
            raise _fail(
                name,
                f"{where} has arguments {_short(call.arguments)} that satisfy the tool's schema, "
                f"yet the result reports a validation failure: {result.text!r}{shown}",
            )
        if item.kind == "executed" and trace.ledger is not None:
            entries = ledger.get(item.key, [])
            if consumed[item.key] < len(entries):
                entry = entries[consumed[item.key]]
                consumed[item.key] += 1
                _check_against_ledger(name, where, result, entry, shown)
            elif item.run.is_root:
                raise _fail(
                    name,
                    f"{where} is a valid call of a tool on the menu, but the ledger shows no execution of it "
                    f"and its result is not the skip text: {result.text!r}{shown}",
                )
        if result.is_error:
            _check_carried(name, where, item, shown)
    if trace.ledger is not None:
        for item in calls:
            if item.kind in ("not_found", "invalid_json", "invalid_args") and item.key not in skipped_keys:
                ran = len(ledger.get(item.key, ()))
                if ran > executed[item.key]:
                    raise _fail(
                        name,
                        f"call {item.call.name}#{item.call.id} could not run ({item.kind.replace('_', ' ')}), "
                        f"but the ledger shows {ran} execution(s) for {executed[item.key]} valid call(s) "
                        f"with that id:\n{_show_batch(item.batch)}",
                    )


def _unanswered_keys(runs: list[_Run]) -> Counter[tuple[str, str]]:
    unanswered: Counter[tuple[str, str]] = Counter()
    for run in runs:
        for batch in _batches(run):
            if batch.message.stop_reason not in ("error", "aborted"):
                unanswered.update((call.id, call.name) for call in batch.calls[len(batch.results) :])
    return unanswered


def _ledger_shows_valid_run(trace: Trace, item: _Call) -> bool:
    if item.result.text.startswith(validation_prefix(item.call.name)) or item.specs is None:
        return False
    spec = next((s for s in item.specs if s.name == item.call.name), None)
    return spec is not None and any(
        _schema_errors(spec.parameters, entry.arguments) == []
        for entry in trace.ledger or ()
        if (entry.tool_call_id, entry.tool_name) == item.key
    )


def _check_against_ledger(name: str, where: str, result: ToolResultMessage, entry: Any, shown: str) -> None:
    if entry.outcome == "raised":
        if not result.is_error or result.text != entry.text:
            raise _fail(
                name,
                f"{where}: the tool raised {entry.text!r}, so the result must be is_error with exactly that text; "
                f"got is_error={result.is_error} {result.text!r}{shown}",
            )
    elif result.text != entry.text or result.is_error != entry.is_error:
        raise _fail(
            name,
            f"{where}: the tool returned is_error={entry.is_error} {entry.text!r}, but the result says "
            f"is_error={result.is_error} {result.text!r}{shown}",
        )


def _check_carried(name: str, where: str, item: _Call, shown: str) -> None:
    request = item.batch.next_request
    if request is None:
        return
    copies = [m for m in request.messages if isinstance(m, ToolResultMessage) and m.tool_call_id == item.call.id]
    if not any(m.is_error and m.text == item.result.text for m in copies):
        seen = "; ".join(f"is_error={m.is_error} {m.text!r}" for m in copies) or "no result with that id"
        raise _fail(
            name,
            f"{where}: the next request (request {item.batch.number + 1}) does not carry its error result "
            f"{item.result.text!r} unchanged (it shows: {seen}){shown}",
        )


def skip_semantics(trace: Trace) -> None:
    """Steering that arrives mid-batch skips the rest of the batch, and goes straight to the model.

    Within a batch the skipped calls are a suffix that never includes the first call (steering is
    polled after a call has run); each skipped result is ``is_error`` with exactly
    ``Skipped due to queued user message.``; the ledger shows no execution of a skipped call; and
    the steering message(s) are the next messages committed after the batch's results (before the
    next assistant message) and the last thing the next request shows the model.
    """
    name = "skip_semantics"
    runs = _parse(trace)
    calls = _classify(runs)
    ledger = _ledger_entries(trace)
    executed = Counter(c.key for c in calls if c.kind == "executed")
    for run in runs:
        for batch in _batches(run):
            if batch.message.stop_reason in ("error", "aborted"):
                continue
            pairs = list(zip(batch.calls, batch.results, strict=False))
            shown = f"\n{_show_batch(batch)}"
            where = f"model call {batch.number}{run.where()}"
            for call, result in pairs:
                if result.text != SKIP_TEXT and _looks_skipped(result):
                    raise _fail(
                        name,
                        f"the result of {call.name}#{call.id} in {where} reads like a skip but is not the exact text "
                        f"{SKIP_TEXT!r}: {result.text!r}{shown}",
                    )
            skipped = [j for j, (_, result) in enumerate(pairs) if result.text == SKIP_TEXT]
            if not skipped:
                continue
            first = skipped[0]
            if first == 0:
                raise _fail(
                    name, f"the first call of {where} was skipped, but steering is polled only after a call ran{shown}"
                )
            for j in range(first, len(batch.calls)):
                if j >= len(pairs) or pairs[j][1].text != SKIP_TEXT or not pairs[j][1].is_error:
                    call = batch.calls[j]
                    raise _fail(
                        name,
                        f"{call.name}#{call.id} comes after a skipped call in {where} but was not skipped "
                        f"(every remaining call of the batch must get is_error {SKIP_TEXT!r}){shown}",
                    )
            if trace.ledger is not None:
                for call in batch.calls[first:]:
                    key = (call.id, call.name)
                    ran = len(ledger.get(key, ()))
                    if ran > executed[key]:
                        raise _fail(
                            name,
                            f"{call.name}#{call.id} was skipped in {where}, but the ledger shows it ran "
                            f"(arguments {_short(ledger[key][-1].arguments)}){shown}",
                        )
            steering = []
            for message in batch.after:
                if isinstance(message, AssistantMessage):
                    break
                steering.append(message)
            if not steering:
                raise _fail(
                    name,
                    f"calls of {where} were skipped for a queued user message, but no message follows the batch's "
                    f"results before the next model call{shown}",
                )
            request = batch.next_request
            if request is not None:
                messages = list(request.messages)
                tail = messages[len(messages) - len(steering) :] if len(messages) >= len(steering) else messages
                before = messages[len(messages) - len(steering) - 1] if len(messages) > len(steering) else None
                if tail != steering or before != batch.results[-1]:
                    raise _fail(
                        name,
                        f"after the skipped calls of {where}, request {batch.number + 1} must show the batch's results "
                        f"and then exactly the steering message(s):\n{_show_messages(steering)}\n"
                        f"  but its last messages are:\n{_show_messages(messages[-len(steering) - 2 :])}{shown}",
                    )


def conservation(trace: Trace) -> None:
    """Nothing is lost or duplicated: the run's messages are the messages it committed.

    ``agent_end.messages`` equals the messages committed by ``message_end`` events, in order;
    ``new_messages`` equals ``agent_end.messages``; in particular every user message committed in
    the run (prompts, steering, follow-ups, the ones committed at the cap) is in ``new_messages``
    exactly as many times as it was committed.
    """
    name = "conservation"
    for run in _parse(trace):
        end = run.end
        if end is None:
            continue
        committed = run.committed
        reported = list(end.messages)
        where = run.where()
        if run.is_root:
            users = Counter(_key(m) for m in committed if m.role == "user")
            kept = Counter(_key(m) for m in trace.new_messages if m.role == "user")
            for key, count in users.items():
                if kept[key] != count:
                    raise _fail(
                        name,
                        f"the user message {key[1]!r} was committed {count} time(s) but appears {kept[key]} time(s) "
                        f"in new_messages:\n  new_messages:\n{_show_messages(trace.new_messages)}",
                    )
        _compare_lists(
            name, f"agent_end.messages{where}", reported, f"the messages committed by message_end{where}", committed
        )
        if run.is_root:
            _compare_lists(name, "new_messages", list(trace.new_messages), "agent_end.messages", reported)


def _key(message: Message) -> tuple[str, str]:
    return (message.model_dump_json(), getattr(message, "text", ""))


def _compare_lists(name: str, left_name: str, left: list[Message], right_name: str, right: list[Message]) -> None:
    if left == right:
        return
    index = next((i for i in range(min(len(left), len(right))) if left[i] != right[i]), min(len(left), len(right)))

    def at(items: list[Message], i: int) -> str:
        return render_message(items[i]) if i < len(items) else "(nothing)"

    raise _fail(
        name,
        f"{left_name} ({len(left)} messages) differs from {right_name} ({len(right)} messages) at #{index}:\n"
        f"  {left_name}: {at(left, index)}\n  {right_name}: {at(right, index)}\n"
        f"  {left_name}:\n{_show_messages(left)}\n  {right_name}:\n{_show_messages(right)}",
    )


def error_ends_run(trace: Trace) -> None:
    """An ``error`` or ``aborted`` model turn ends the run at once, and says so.

    After such an assistant message come only its ``turn_end`` (with no tool results) and
    ``agent_end``: no tool runs for it, even if it holds tool calls, and no further model call or
    message. ``agent_end.reason`` is its stop reason; conversely a run that ends ``error`` or
    ``aborted`` ends with such a message.
    """
    name = "error_ends_run"
    for run in _parse(trace):
        events, where = run.events, run.where()
        for i, event in enumerate(events):
            if event.type != "message_end" or not isinstance(event.message, AssistantMessage):
                continue
            reason = event.message.stop_reason
            if reason not in ("error", "aborted"):
                continue
            after = [e.type for e in events[i + 1 :]]
            allowed = ["turn_end", "agent_end"]
            if after != allowed[: len(after)] or (run.end is not None and after != allowed):
                raise _fail(
                    name,
                    f"the run{where} continued after an {reason} model turn (only turn_end and agent_end may "
                    f"follow it):\n{_window(events, i, before=2, after=6)}",
                )
            if len(after) >= 1 and events[i + 1].tool_results:
                raise _fail(name, f"the {reason} model turn{where} reports tool results:\n{_window(events, i + 1)}")
            end = run.end
            if end is not None and end.reason != reason:
                raise _fail(
                    name,
                    f"the run{where} ended with an {reason} model turn but agent_end.reason is {end.reason!r}:\n"
                    f"{_window(events, len(events) - 1, before=3, after=0)}",
                )
        end = run.end
        if end is not None and end.reason in ("error", "aborted"):
            last = next(
                (
                    e.message
                    for e in reversed(events)
                    if e.type == "message_end" and isinstance(e.message, AssistantMessage)
                ),
                None,
            )
            if last is None or last.stop_reason != end.reason:
                got = f"[{last.stop_reason}]" if last is not None else "no assistant message"
                raise _fail(
                    name,
                    f"the run{where} ended with reason {end.reason!r} but its last model turn is {got}:\n"
                    f"{_window(events, len(events) - 1, before=4, after=0)}",
                )


def end_reason_consistent(trace: Trace) -> None:
    """``agent_end.reason`` (and ``trace.reason``) tell the truth about why a normal run ended.

    ``stop``: the last assistant message holds no tool calls and nothing was committed after it
    (a pending steering message would have called the model again). ``max_iterations``: the run
    made exactly ``min(50, max(1, max_iterations))`` model requests and still had work: the last
    assistant message holds tool calls or messages were taken from a queue after it.
    """
    name = "end_reason_consistent"
    for run in _parse(trace):
        end = run.end
        if end is None:
            continue
        where = run.where()
        if run.is_root and trace.reason is not None and trace.reason != end.reason:
            raise _fail(name, f"trace.reason is {trace.reason!r} but agent_end.reason is {end.reason!r}")
        committed = run.committed
        indices = _assistant_indices(committed)
        if end.reason not in ("stop", "max_iterations"):
            continue
        if not indices:
            raise _fail(name, f"the run{where} ended {end.reason!r} without any model call")
        last = committed[indices[-1]]
        after = committed[indices[-1] + 1 :]
        has_calls = bool(last.tool_calls)  # type: ignore[union-attr]
        shown = f"\n  last model call: {render_message(last)}\n  committed after it:\n{_show_messages(after)}"
        if end.reason == "stop":
            if has_calls or after:
                raise _fail(
                    name,
                    f"the run{where} ended 'stop', but its last model call left work (tool calls, or messages "
                    f"committed after it, would make the loop call the model again){shown}",
                )
        else:
            if not has_calls and not any(m.role != "toolResult" for m in after):
                raise _fail(
                    name,
                    f"the run{where} ended 'max_iterations', but its last model call left no work: a reply "
                    f"without tool calls and no queued message is a 'stop'{shown}",
                )
            if run.is_root:
                cap = effective_cap(trace.max_iterations)
                if len(indices) != cap:
                    raise _fail(
                        name,
                        f"the run ended 'max_iterations' after {len(indices)} model request(s), but the cap is "
                        f"min(50, max(1, max_iterations={trace.max_iterations})) = {cap}",
                    )


ALL_INVARIANTS: tuple[Callable[[Trace], None], ...] = (
    event_grammar,
    terminates_within_cap,
    conservation,
    error_ends_run,
    end_reason_consistent,
    tool_calls_answered,
    error_feedback,
    skip_semantics,
)
"""The trace-only invariants, structural first, so the first violation reported is the root cause."""


def check_all(trace: Trace, scenario: Any = None) -> None:
    """Run every invariant of ``ALL_INVARIANTS``; raise the first violation, listing any others.

    ``scenario`` is optional context: when given, the message names it (its ``name`` attribute,
    or its type) so a failure in a property campaign says which scenario broke the rule.
    """
    violations: list[InvariantViolation] = []
    for invariant in ALL_INVARIANTS:
        try:
            invariant(trace)
        except InvariantViolation as violation:
            violations.append(violation)
    if not violations:
        return
    first = violations[0]
    message = first.message
    if len(violations) > 1:
        message += "\n(also violated: " + ", ".join(v.name for v in violations[1:]) + ")"
    if scenario is not None:
        label = getattr(scenario, "name", None) or type(scenario).__name__
        message += f"\n(scenario: {label})"
    if message == first.message:
        raise first
    raise InvariantViolation(first.name, message) from first


def check_deterministic(run: Callable[[], Trace]) -> None:
    """Run twice; the two traces must serialise to the same bytes.

    Timestamps come from an injectable clock and scripted ids are deterministic, so the same
    scenario must give a byte-identical trace; a difference means hidden state (wall clock,
    randomness, ordering of a set) leaked into the run. On failure the message shows where the
    two traces first part ways.
    """
    first, second = run(), run()
    a, b = first.to_json(), second.to_json()
    if a == b:
        return
    shown = diff(first, second)
    if not shown:
        index = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
        shown = (
            f"first differing byte at {index}:\n  run 1: ...{a[max(0, index - 60) : index + 60]}...\n"
            f"  run 2: ...{b[max(0, index - 60) : index + 60]}..."
        )
    raise InvariantViolation("check_deterministic", f"two runs of the same scenario gave different traces:\n{shown}")
