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

The per-call invariants (``error_feedback``, ``skip_semantics``, ``cancel_semantics``) and
``InvariantViolation`` live in ``harness.oracle._batches``; this module re-exports them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from harness._contract import HARD_CAP, effective_cap
from harness.oracle._batches import InvariantViolation, cancel_semantics, error_feedback, run_views, skip_semantics
from harness.oracle._grammar import first_violation
from harness.trace import Batch, RunView, Trace, batches, diff, render_message, show_messages
from harness.trace._trace import event_window, show_batch
from openprogram.providers import ModelRequest
from openprogram.types import AssistantMessage, Message, ToolResultMessage

_fail = InvariantViolation


# ---------------------------------------------------------------------------------------------
# The invariants
# ---------------------------------------------------------------------------------------------


def terminates_within_cap(trace: Trace) -> None:
    """The run makes at most ``contract.effective_cap(max_iterations)`` model requests.

    A model that never stops picking tools must not keep the loop alive: the cap counts requests
    over the whole run (follow-up rounds included). Counted as the run's assistant messages, which
    is one per request (plus at most one synthesized ``aborted`` message that replaces a request).
    Nested runs are held to the hard cap, since their own ``max_iterations`` is not in the trace.
    """
    name = "terminates_within_cap"
    for run in run_views(trace):
        calls = [e.message for e in run.events if e.type == "message_end" and isinstance(e.message, AssistantMessage)]
        cap = effective_cap(trace.max_iterations) if run.is_root else HARD_CAP
        if len(calls) > cap:
            given = trace.max_iterations if run.is_root else None
            listed = "\n".join(f"    [request {i + 1}] {render_message(m)}" for i, m in enumerate(calls[: cap + 2]))
            more = f"\n    ... {len(calls) - cap - 2} more" if len(calls) > cap + 2 else ""
            raise _fail(
                name,
                f"the run{run.where()} made {len(calls)} model requests but the cap is "
                f"min({HARD_CAP}, max(1, max_iterations={given})) = {cap}:\n{listed}{more}",
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
    early, as may one whose consumer left (``trace.left``) and a nested run whose stream raised
    inside its tool.
    """
    # A getter that handed over junk: its valid items are committed (maybe after a turn_end), then it raises.
    refused = (trace.error or "").startswith(("TypeError: get_steering_messages", "TypeError: get_follow_up"))
    for run in run_views(trace):
        allow_unfinished = trace.error is not None or trace.left is not None or not run.is_root
        _check_grammar(run, allow_unfinished, refused and run.is_root)


def _check_grammar(run: RunView, allow_unfinished: bool, refused: bool = False) -> None:
    events, where = run.events, run.where()
    if not events:
        if allow_unfinished:
            return
        raise _fail("event_grammar", f"the run{where} has no events at all")
    if refused:  # the refused poll's valid items close the stream wherever the poll was: judge what came before
        while len(events) >= 2 and [e.type for e in events[-2:]] == ["message_start", "message_end"]:
            if getattr(events[-1].message, "role", None) != "user":
                break
            events = events[:-2]
    end = run.end
    capped = end is not None and end.reason == "max_iterations"
    found = first_violation(events, capped=capped, allow_unfinished=allow_unfinished)
    if found is not None:
        index, problem = found
        window = event_window(events, min(index, len(events) - 1))
        raise _fail("event_grammar", f"{problem}{where} at event #{index}:\n{window}")


def tool_calls_answered(trace: Trace) -> None:
    """Every tool call gets exactly one result with its id, in call order, before the next request.

    Applies to each committed assistant message whose ``stop_reason`` is not ``error``/``aborted``
    (those end the run, see ``error_ends_run``): the ``ToolResultMessage``s that directly follow
    it carry the calls' ids and names in the calls' order, none missing, none extra, none twice.
    The next model request must carry the same assistant message followed by results with the
    same ids in the same order. A run whose stream raised may lack the results of its last batch.
    """
    name = "tool_calls_answered"
    for run in run_views(trace):
        calls = batches(run)
        unfinished = run.end is None
        for k, batch in enumerate(calls):
            if batch.message.stop_reason in ("error", "aborted"):
                continue
            expected = [(c.id, c.name) for c in batch.calls]
            got = [(r.tool_call_id, r.tool_name) for r in batch.results]
            is_last = k == len(calls) - 1
            if got != expected and not (unfinished and is_last and expected[: len(got)] == got):
                raise _fail(
                    name,
                    f"model call {batch.number}{run.where()} made {len(expected)} tool call(s) "
                    f"{_ids(expected)} but the results that follow it are {_ids(got)}:\n{show_batch(batch)}",
                )
            if batch.message.stop_reason not in ("error", "aborted") and k + 1 < len(calls):
                request = batch.next_request
                if request is None:
                    synthesized = calls[k + 1].message.stop_reason == "aborted"  # cancelled: no request made
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
    name: str, run: RunView, batch: Batch, request: ModelRequest, expected: list[tuple[str, str]]
) -> None:
    messages = list(request.messages)
    last = max((i for i, m in enumerate(messages) if isinstance(m, AssistantMessage)), default=None)
    if last is None or messages[last] != batch.message:
        raise _fail(
            name,
            f"request {batch.number + 1}{run.where()} does not end its history with the assistant message of "
            f"model call {batch.number}; the request's messages:\n{show_messages(messages)}",
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
            f"{show_messages(messages[last:])}",
        )


def conservation(trace: Trace) -> None:
    """Nothing is lost or duplicated: the run's messages are the messages it committed.

    ``agent_end.messages`` equals the messages committed by ``message_end`` events, in order;
    ``new_messages`` equals ``agent_end.messages``; in particular every user message committed in
    the run (prompts, steering, follow-ups, the ones committed at the cap) is in ``new_messages``
    exactly as many times as it was committed.
    """
    name = "conservation"
    for run in run_views(trace):
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
                        f"in new_messages:\n  new_messages:\n{show_messages(trace.new_messages)}",
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
        f"  {left_name}:\n{show_messages(left)}\n  {right_name}:\n{show_messages(right)}",
    )


def error_ends_run(trace: Trace) -> None:
    """An ``error`` or ``aborted`` model turn ends the run at once, and says so.

    After such an assistant message come only its ``turn_end`` (with no tool results) and
    ``agent_end``: no tool runs for it, even if it holds tool calls, and no further model call or
    message. ``agent_end.reason`` is its stop reason; conversely a run that ends ``error`` or
    ``aborted`` ends with such a message.
    """
    name = "error_ends_run"
    for run in run_views(trace):
        events, where = run.events, run.where()
        for i, event in enumerate(events):
            if event.type != "message_end" or not isinstance(event.message, AssistantMessage):
                continue
            if event.message.stop_reason in ("error", "aborted"):
                _check_nothing_after(name, run, i, event.message.stop_reason)
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
                    f"{event_window(events, len(events) - 1, before=4, after=0)}",
                )


def _check_nothing_after(name: str, run: RunView, i: int, reason: str) -> None:
    """Only the ``turn_end`` (without tool results) and ``agent_end`` of the run follow the
    ``error`` or ``aborted`` model turn ending at ``run.events[i]``, and the run ends for its reason."""
    events, where = run.events, run.where()
    after = [e.type for e in events[i + 1 :]]
    allowed = ["turn_end", "agent_end"]
    if after != allowed[: len(after)] or (run.end is not None and after != allowed):
        raise _fail(
            name,
            f"the run{where} continued after an {reason} model turn (only turn_end and agent_end may "
            f"follow it):\n{event_window(events, i, before=2, after=6)}",
        )
    if len(after) >= 1 and events[i + 1].tool_results:
        shown = event_window(events, i + 1)
        raise _fail(name, f"the {reason} model turn{where} reports tool results:\n{shown}")
    end = run.end
    if end is not None and end.reason != reason:
        raise _fail(
            name,
            f"the run{where} ended with an {reason} model turn but agent_end.reason is {end.reason!r}:\n"
            f"{event_window(events, len(events) - 1, before=3, after=0)}",
        )


def end_reason_consistent(trace: Trace) -> None:
    """``agent_end.reason`` (and ``trace.reason``) tell the truth about why a normal run ended.

    ``stop``: the last assistant message holds no tool calls and nothing was committed after it
    (a pending steering message would have called the model again). ``max_iterations``: the run
    made exactly ``contract.effective_cap(max_iterations)`` model requests and still had work: the last
    assistant message holds tool calls or messages were taken from a queue after it.
    """
    name = "end_reason_consistent"
    for run in run_views(trace):
        end = run.end
        if end is None:
            continue
        where = run.where()
        if run.is_root and trace.reason is not None and trace.reason != end.reason:
            raise _fail(name, f"trace.reason is {trace.reason!r} but agent_end.reason is {end.reason!r}")
        committed = run.committed
        indices = run.model_calls()
        if end.reason not in ("stop", "max_iterations"):
            continue
        if not indices:
            raise _fail(name, f"the run{where} ended {end.reason!r} without any model call")
        last = committed[indices[-1]]
        after = committed[indices[-1] + 1 :]
        has_calls = isinstance(last, AssistantMessage) and bool(last.tool_calls)  # it is: an assistant index
        if end.reason == "stop":
            if has_calls or after:
                raise _fail(
                    name,
                    f"the run{where} ended 'stop', but its last model call left work (tool calls, or messages "
                    f"committed after it, would make the loop call the model again){_last_call(last, after)}",
                )
        else:
            if not has_calls and not any(m.role != "toolResult" for m in after):
                raise _fail(
                    name,
                    f"the run{where} ended 'max_iterations', but its last model call left no work: a reply "
                    f"without tool calls and no queued message is a 'stop'{_last_call(last, after)}",
                )
            if run.is_root:
                cap = effective_cap(trace.max_iterations)
                if len(indices) != cap:
                    raise _fail(
                        name,
                        f"the run ended 'max_iterations' after {len(indices)} model request(s), but the cap is "
                        f"min({HARD_CAP}, max(1, max_iterations={trace.max_iterations})) = {cap}",
                    )


def _last_call(last: Message, after: Sequence[Message]) -> str:
    """A run's last model call and what was committed after it, for a failure message (rendered
    only then: nearly every check passes)."""
    return f"\n  last model call: {render_message(last)}\n  committed after it:\n{show_messages(after)}"


def consumer_left(trace: Trace) -> None:
    """A consumer that stops early cancels the run: no tool starts after it has gone.

    DESIGN 4, Robustness: ``await stream.aclose()`` and leaving ``async with agent_loop(...) as
    stream:`` cancel a run that is still going, so its ``stream.result()`` raises
    ``CancelledError``; no tool body starts after the consumer left (none of its events says one
    did); the provider's stream is closed, not left open. Read off ``trace.left``, what the
    harness saw of the run after the consumer left; a trace without it is not checked.
    """
    name = "consumer_left"
    left = trace.left
    if left is None:
        return
    started = [e for e in left.events_after if e == "tool_execution_start"]
    if left.tools_after or started:
        names = ", ".join(left.tools_after) or f"{len(started)} tool_execution_start event(s)"
        raise _fail(name, f"a tool started after the consumer left (after event #{left.after}): {names}")
    ended = any(e.type == "agent_end" for e in run_views(trace)[0].events) if trace.events else False
    if not ended and left.outcome != "cancelled":
        after = ", ".join(left.events_after) or "no event"
        raise _fail(
            name,
            f"the consumer left after event #{left.after} while the run was going, but the run was not "
            f"cancelled: stream.result() {left.outcome}; pushed after it left: {after}",
        )
    if left.provider_open:
        raise _fail(name, f"the provider's stream was left open after the consumer left (after event #{left.after})")


ALL_INVARIANTS: tuple[Callable[[Trace], None], ...] = (
    event_grammar,
    terminates_within_cap,
    conservation,
    error_ends_run,
    end_reason_consistent,
    tool_calls_answered,
    error_feedback,
    skip_semantics,
    cancel_semantics,
    consumer_left,
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
