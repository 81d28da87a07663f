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

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.contract import (
    HARD_CAP,
    RECEIVED_ARGUMENTS,
    SKIPPED_CANCELLED,
    SKIPPED_STEERING,
    VALIDATION_ERROR_LINE,
    call_kind,
    effective_cap,
    invalid_json_prefix,
    looks_skipped,
    not_found_list_prefix,
    schema_errors,
    validation_prefix,
)
from harness.grammar import first_violation
from harness.trace import (
    Batch,
    RunView,
    Trace,
    assistant_indices,
    batches,
    diff,
    event_window,
    render_message,
    run_views,
    shorten,
    show_batch,
    show_messages,
)
from openprogram.providers import ModelRequest
from openprogram.types import AssistantMessage, Message, ToolCall, ToolResultMessage, ToolSpec

__all__ = [
    "ALL_INVARIANTS",
    "InvariantViolation",
    "check_all",
    "check_deterministic",
    "conservation",
    "end_reason_consistent",
    "error_feedback",
    "error_ends_run",
    "event_grammar",
    "cancel_semantics",
    "skip_semantics",
    "terminates_within_cap",
    "tool_calls_answered",
]


class InvariantViolation(AssertionError):
    """A run broke an invariant. ``name`` is the invariant, ``message`` what and where."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"invariant {name!r} violated: {message}")
        self.name = name
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (pytest-xdist, multiprocessing)
        return (type(self), (self.name, self.message))


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
    early, as may a nested run whose stream raised inside its tool.
    """
    # A getter that handed over junk: its valid items are committed (maybe after a turn_end), then it raises.
    refused = (trace.error or "").startswith(("TypeError: get_steering_messages", "TypeError: get_follow_up"))
    for run in run_views(trace):
        allow_unfinished = trace.error is not None or not run.is_root
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


# -- error feedback and the ledger --------------------------------------------------------


@dataclass
class _Call:
    """A call and its result, classified by what the loop must have done with it."""

    run: RunView
    batch: Batch
    call: ToolCall
    result: ToolResultMessage
    kind: str  # skipped | not_found | invalid_json | invalid_args | executed | unchecked
    specs: tuple[ToolSpec, ...] | None

    @property
    def key(self) -> tuple[str, str]:
        return (self.call.id, self.call.name)


def _classify(runs: list[RunView]) -> list[_Call]:
    out = []
    for run in runs:
        for batch in batches(run):
            if batch.message.stop_reason in ("error", "aborted"):
                continue
            specs = run.menu(batch)
            # name -> schema; of two tools with one name, the first is the one the loop looks up
            menu = None if specs is None else dict(reversed([(s.name, s.parameters) for s in specs]))
            for call, result in zip(batch.calls, batch.results, strict=False):
                if result.tool_call_id != call.id:
                    break  # the pairing is broken: tool_calls_answered reports it
                kind = call_kind(call.name, call.arguments, call.raw_arguments, menu, result.text, result.is_error)
                out.append(_Call(run, batch, call, result, kind, specs))
    return out


def error_feedback(trace: Trace) -> None:
    """Every way a call can fail becomes an ``is_error`` result with the contract's text.

    Judged from the request that produced the call (its tools and their JSON Schemas):
    a tool not on the menu gives ``contract.not_found_text`` (naming the menu); argument text
    that is not a JSON object gives ``contract.invalid_json_text`` (quoting the text); arguments
    the schema rejects give a text starting ``contract.validation_prefix`` with one
    ``PATH: MESSAGE`` line per error and the received arguments; valid arguments are never
    reported as invalid. None of these runs the tool (the ledger shows no execution), while a
    valid call of the run does run. A ledger entry that ``raised`` gives an ``is_error`` result
    whose text is the exception text; one that returned gives its text and error flag. The next
    request carries each error result unchanged. Skipped calls are ``skip_semantics``' business.
    """
    name = "error_feedback"
    runs = run_views(trace)
    calls = _classify(runs)
    ledger = trace.ledger_by_call()
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
        shown = f"\n{show_batch(item.batch)}"
        if item.kind == "invalid_args" and _ledger_shows_valid_run(trace, item):
            item.kind = "executed"  # the loop's coercion made the arguments valid and the tool ran
        if item.kind != "executed" and not result.is_error:
            raise _fail(
                name, f"{where} could not run ({item.kind.replace('_', ' ')}) but its result is not is_error{shown}"
            )
        if item.kind == "not_found":
            names = [s.name for s in item.specs] if item.specs is not None else None
            expected = not_found_list_prefix(call.name)
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
            expected = invalid_json_prefix(call.name) + " "
            if not result.text.startswith(expected) or (call.raw_arguments or "") not in result.text:
                raise _fail(
                    name,
                    f"{where} sent argument text that is not a JSON object ({call.raw_arguments!r}); expected a "
                    f"result starting {expected!r} and quoting the text, got {result.text!r}{shown}",
                )
        elif item.kind == "invalid_args":
            expected = validation_prefix(call.name) + "\n"
            if (
                not result.text.startswith(expected)
                or VALIDATION_ERROR_LINE not in result.text
                or RECEIVED_ARGUMENTS not in result.text
            ):
                raise _fail(
                    name,
                    f"{where} has arguments {shorten(call.arguments, 100)} that the tool's schema rejects; expected a "
                    f"result starting {expected!r} with '{VALIDATION_ERROR_LINE[1:]}PATH: MESSAGE' lines and "
                    f"'{RECEIVED_ARGUMENTS}', "
                    f"got {result.text!r}{shown}",
                )
        elif result.text.startswith(validation_prefix(call.name)):
            raise _fail(
                name,
                f"{where} has arguments {shorten(call.arguments, 100)} that satisfy the tool's schema, "
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
                        f"with that id:\n{show_batch(item.batch)}",
                    )


def _unanswered_keys(runs: list[RunView]) -> Counter[tuple[str, str]]:
    unanswered: Counter[tuple[str, str]] = Counter()
    for run in runs:
        for batch in batches(run):
            if batch.message.stop_reason not in ("error", "aborted"):
                unanswered.update((call.id, call.name) for call in batch.calls[len(batch.results) :])
    return unanswered


def _ledger_shows_valid_run(trace: Trace, item: _Call) -> bool:
    if item.result.text.startswith(validation_prefix(item.call.name)) or item.specs is None:
        return False
    spec = next((s for s in item.specs if s.name == item.call.name), None)
    return spec is not None and any(
        schema_errors(spec.parameters, entry.arguments) == []
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
    ``contract.SKIPPED_STEERING``; the ledger shows no execution of a skipped call; and
    the steering message(s) are the next messages committed after the batch's results (before the
    next assistant message) and the last thing the next request shows the model.
    """
    name = "skip_semantics"
    runs = run_views(trace)
    calls = _classify(runs)
    ledger = trace.ledger_by_call()
    executed = Counter(c.key for c in calls if c.kind == "executed")
    for run in runs:
        for batch in batches(run):
            if batch.message.stop_reason in ("error", "aborted"):
                continue
            pairs = list(zip(batch.calls, batch.results, strict=False))
            shown = f"\n{show_batch(batch)}"
            where = f"model call {batch.number}{run.where()}"
            for call, result in pairs:
                if result.text not in (SKIPPED_STEERING, SKIPPED_CANCELLED) and looks_skipped(
                    result.text, result.is_error
                ):
                    raise _fail(
                        name,
                        f"the result of {call.name}#{call.id} in {where} reads like a skip but is not the exact text "
                        f"{SKIPPED_STEERING!r} or {SKIPPED_CANCELLED!r}: {result.text!r}{shown}",
                    )
            skipped = [j for j, (_, result) in enumerate(pairs) if result.text == SKIPPED_STEERING]
            if not skipped:
                continue
            first = skipped[0]
            if first == 0:
                raise _fail(
                    name, f"the first call of {where} was skipped, but steering is polled only after a call ran{shown}"
                )
            for j in range(first, len(batch.calls)):
                if j >= len(pairs) or pairs[j][1].text != SKIPPED_STEERING or not pairs[j][1].is_error:
                    call = batch.calls[j]
                    raise _fail(
                        name,
                        f"{call.name}#{call.id} comes after a skipped call in {where} but was not skipped "
                        f"(every remaining call of the batch must get is_error {SKIPPED_STEERING!r}){shown}",
                    )
            if trace.ledger is not None:
                for call in batch.calls[first:]:
                    key = (call.id, call.name)
                    ran = len(ledger.get(key, ()))
                    if ran > executed[key]:
                        raise _fail(
                            name,
                            f"{call.name}#{call.id} was skipped in {where}, but the ledger shows it ran "
                            f"(arguments {shorten(ledger[key][-1].arguments, 100)}){shown}",
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
                        f"and then exactly the steering message(s):\n{show_messages(steering)}\n"
                        f"  but its last messages are:\n{show_messages(messages[-len(steering) - 2 :])}{shown}",
                    )


def cancel_semantics(trace: Trace) -> None:
    """Once ``cancel_event`` is set no further tool of the batch starts, and the run ends ``aborted``.

    Within a batch the calls answered ``contract.SKIPPED_CANCELLED`` are a suffix (the first call
    too may be one: cancel is checked before each call), each ``is_error``; the ledger shows no
    execution of them; no model request follows the batch (the next assistant message, if any, is
    the loop's synthesized ``aborted`` one) and the run ends ``aborted``, or ``max_iterations``
    when the batch used the last request of the cap (the cap is checked first).
    """
    name = "cancel_semantics"
    runs = run_views(trace)
    calls = _classify(runs)
    ledger = trace.ledger_by_call()
    executed = Counter(c.key for c in calls if c.kind == "executed")
    for run in runs:
        run_batches = batches(run)
        for k, batch in enumerate(run_batches):
            if batch.message.stop_reason in ("error", "aborted"):
                continue
            pairs = list(zip(batch.calls, batch.results, strict=False))
            skipped = [j for j, (_, result) in enumerate(pairs) if result.text == SKIPPED_CANCELLED]
            if not skipped:
                continue
            shown = f"\n{show_batch(batch)}"
            where = f"model call {batch.number}{run.where()}"
            for j in range(skipped[0], len(batch.calls)):
                if j >= len(pairs) or pairs[j][1].text != SKIPPED_CANCELLED or not pairs[j][1].is_error:
                    call = batch.calls[j]
                    raise _fail(
                        name,
                        f"{call.name}#{call.id} comes after a call skipped for cancellation in {where} but was not "
                        f"skipped (once cancel is set every remaining call gets is_error {SKIPPED_CANCELLED!r})"
                        f"{shown}",
                    )
            if trace.ledger is not None:
                for call in batch.calls[skipped[0] :]:
                    key = (call.id, call.name)
                    if len(ledger.get(key, ())) > executed[key]:
                        raise _fail(
                            name,
                            f"{call.name}#{call.id} was skipped for cancellation in {where}, but "
                            f"the ledger shows it ran{shown}",
                        )
            following = run_batches[k + 1].message if k + 1 < len(run_batches) else None
            if following is not None and following.stop_reason != "aborted":
                raise _fail(
                    name,
                    f"calls of {where} were skipped for cancellation, yet the model was asked again "
                    f"({render_message(following)}){shown}",
                )
            end = run.end
            if end is not None and end.reason not in ("aborted", "max_iterations"):
                raise _fail(
                    name, f"calls of {where} were skipped for cancellation, but the run ended {end.reason!r}{shown}"
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
            reason = event.message.stop_reason
            if reason not in ("error", "aborted"):
                continue
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
        indices = assistant_indices(committed)
        if end.reason not in ("stop", "max_iterations"):
            continue
        if not indices:
            raise _fail(name, f"the run{where} ended {end.reason!r} without any model call")
        last = committed[indices[-1]]
        after = committed[indices[-1] + 1 :]
        has_calls = bool(last.tool_calls)  # type: ignore[union-attr]
        shown = f"\n  last model call: {render_message(last)}\n  committed after it:\n{show_messages(after)}"
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
                        f"min({HARD_CAP}, max(1, max_iterations={trace.max_iterations})) = {cap}",
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
    cancel_semantics,
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
