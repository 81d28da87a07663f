"""What the loop does with each call of a tool batch, checked on a ``Trace`` alone.

The per-call invariants: ``error_feedback`` (every failing call becomes the contract's ``is_error``
result), ``skip_semantics`` (steering mid-batch skips the rest of the batch) and
``cancel_semantics`` (a set ``cancel_event`` starts no further tool and ends the run). They share
one classification of every answered call (``_classify``). ``InvariantViolation`` lives here, the
lowest invariant module, so ``harness.oracle._run_invariants`` can build on it; import both from there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness._contract import (
    RECEIVED_ARGUMENTS,
    SKIPPED_CANCELLED,
    SKIPPED_STEERING,
    VALIDATION_ERROR_LINE,
    call_kind,
    invalid_json_prefix,
    looks_skipped,
    not_found_list_prefix,
    schema_errors,
    validation_prefix,
)
from harness.trace import Batch, RunView, Trace, batches, render_message, show_messages
from harness.trace import run_views as _split_views
from harness.trace._trace import shorten, show_batch
from openprogram.types import AssistantMessage, ToolCall, ToolResultMessage, ToolSpec

# The last trace asked about and its views, and the last views and their classified calls: each
# one tuple, replaced whole, so a thread never reads one trace's key with another's value.
_last_views: list[Any] = [None]
_last_calls: list[Any] = [None]


def run_views(trace: Trace) -> list[RunView]:
    """``harness.trace.run_views``, kept for the trace last asked about: the invariants each ask
    for the same trace's runs, and splitting them is a tenth of checking a run."""
    key = (len(trace.events), len(trace.requests))
    last = _last_views[0]
    if last is None or last[0] is not trace or last[1] != key:
        last = _last_views[0] = (trace, key, _split_views(trace))
    views: list[RunView] = last[2]
    return views


class InvariantViolation(AssertionError):
    """A run broke an invariant. ``name`` is the invariant, ``message`` what and where."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"invariant {name!r} violated: {message}")
        self.name = name
        self.message = message

    def __reduce__(self) -> tuple[Any, ...]:  # picklable (pytest-xdist, multiprocessing)
        return (type(self), (self.name, self.message))


_fail = InvariantViolation


# -- error feedback and the ledger --------------------------------------------------------


@dataclass(frozen=True)
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


class _Shown:
    """A batch as a failure message shows it (on a line of its own), rendered only when a message
    is built: nearly every check passes, and rendering each batch up front cost a tenth of one."""

    __slots__ = ("batch",)

    def __init__(self, batch: Batch) -> None:
        self.batch = batch

    def __str__(self) -> str:
        return f"\n{show_batch(self.batch)}"


def _classify(runs: list[RunView]) -> tuple[list[_Call], Counter[tuple[str, str]]]:
    """Every answered call of ``runs``, classified, and what the ledger may show (``_may_have_run``);
    kept for the runs last asked about (the three invariants here ask for the same runs,
    ``run_views`` gives them the same list), since classifying validates arguments against their
    schemas. Nobody changes a ``_Call`` or the count."""
    last = _last_calls[0]
    if last is None or last[0] is not runs:
        calls = _classified(runs)
        last = _last_calls[0] = (runs, (calls, _may_have_run(calls, runs)))
    classified: tuple[list[_Call], Counter[tuple[str, str]]] = last[1]
    return classified


def _classified(runs: list[RunView]) -> list[_Call]:
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
    calls, executed = _classify(runs)
    ledger = trace.ledger_by_call()
    consumed: Counter[tuple[str, str]] = Counter()
    kinds = [item.kind for item in calls]  # as judged here (the classification itself is shared)
    for number, item in enumerate(calls):
        if item.kind in ("skipped", "unchecked"):
            continue
        call, result = item.call, item.result
        where = f"call {call.name}#{call.id} (model call {item.batch.number}{item.run.where()})"
        shown = _Shown(item.batch)
        kind = item.kind
        if kind == "invalid_args" and _ledger_shows_valid_run(trace, item):
            kind = kinds[number] = "executed"  # the loop's coercion made the arguments valid and the tool ran
        _check_error_text(name, where, kind, item, shown)
        if kind == "executed" and trace.ledger is not None:
            _check_executed(name, where, item, ledger.get(item.key, []), consumed, shown)
        if result.is_error:
            _check_carried(name, where, item, shown)
    if trace.ledger is not None:
        _check_refused_calls_did_not_run(name, calls, kinds, ledger, executed)


def _check_error_text(name: str, where: str, kind: str, item: _Call, shown: _Shown) -> None:
    """A call that could not run has the contract's ``is_error`` text for its reason; one that
    could is never reported as invalid."""
    call, result = item.call, item.result
    if kind != "executed" and not result.is_error:
        raise _fail(name, f"{where} could not run ({kind.replace('_', ' ')}) but its result is not is_error{shown}")
    if kind == "not_found":
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
    elif kind == "invalid_json":
        expected = invalid_json_prefix(call.name) + " "
        if not result.text.startswith(expected) or (call.raw_arguments or "") not in result.text:
            raise _fail(
                name,
                f"{where} sent argument text that is not a JSON object ({call.raw_arguments!r}); expected a "
                f"result starting {expected!r} and quoting the text, got {result.text!r}{shown}",
            )
    elif kind == "invalid_args":
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


def _check_executed(
    name: str, where: str, item: _Call, entries: list[Any], consumed: Counter[tuple[str, str]], shown: _Shown
) -> None:
    """A valid call's result is what its next ledger entry says; a valid call of the top-level run
    without one did not run, and must then carry the skip text (``skip_semantics``)."""
    if consumed[item.key] < len(entries):
        entry = entries[consumed[item.key]]
        consumed[item.key] += 1
        _check_against_ledger(name, where, item.result, entry, shown)
    elif item.run.is_root:
        raise _fail(
            name,
            f"{where} is a valid call of a tool on the menu, but the ledger shows no execution of it "
            f"and its result is not the skip text: {item.result.text!r}{shown}",
        )


def _check_refused_calls_did_not_run(
    name: str,
    calls: list[_Call],
    kinds: list[str],
    ledger: Mapping[tuple[str, str], list[Any]],
    executed: Counter[tuple[str, str]],
) -> None:
    """No call that could not run shows in the ledger beyond the valid calls sharing its id."""
    skipped_keys = {c.key for c in calls if c.kind == "skipped"}
    for item, kind in zip(calls, kinds, strict=True):
        if kind in ("not_found", "invalid_json", "invalid_args") and item.key not in skipped_keys:
            ran = len(ledger.get(item.key, ()))
            if ran > executed[item.key]:
                raise _fail(
                    name,
                    f"call {item.call.name}#{item.call.id} could not run ({kind.replace('_', ' ')}), "
                    f"but the ledger shows {ran} execution(s) for {executed[item.key]} valid call(s) "
                    f"with that id:\n{show_batch(item.batch)}",
                )


def _may_have_run(calls: list[_Call], runs: list[RunView]) -> Counter[tuple[str, str]]:
    """How many executions of each (call id, tool name) the trace allows the ledger to show.

    The calls whose results say they ran, plus the calls with no result at all: a run that
    stopped while one executed (a BaseException, a consumer that left) leaves its ledger entry
    without a result, and that call may share its id and name with one that was skipped earlier.
    """
    allowed = Counter(c.key for c in calls if c.kind == "executed")
    for run in runs:
        for batch in batches(run):
            if batch.message.stop_reason not in ("error", "aborted"):
                allowed.update((call.id, call.name) for call in batch.calls[len(batch.results) :])
    return allowed


def _ledger_shows_valid_run(trace: Trace, item: _Call) -> bool:
    if item.result.text.startswith(validation_prefix(item.call.name)) or item.specs is None:
        return False
    spec = next((s for s in item.specs if s.name == item.call.name), None)
    return spec is not None and any(
        schema_errors(spec.parameters, entry.arguments) == []
        for entry in trace.ledger or ()
        if (entry.tool_call_id, entry.tool_name) == item.key
    )


def _check_against_ledger(name: str, where: str, result: ToolResultMessage, entry: Any, shown: _Shown) -> None:
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


def _check_carried(name: str, where: str, item: _Call, shown: _Shown) -> None:
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
    _, executed = _classify(runs)  # the calls that may have run
    ledger = trace.ledger_by_call() if trace.ledger is not None else None
    for run in runs:
        for batch in batches(run):
            if batch.message.stop_reason in ("error", "aborted"):
                continue
            pairs = list(zip(batch.calls, batch.results, strict=False))
            shown = _Shown(batch)
            where = f"model call {batch.number}{run.where()}"
            _check_skip_texts(name, pairs, where, shown)
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
            if ledger is not None:
                _check_skipped_did_not_run(name, batch.calls[first:], where, ledger, executed, shown)
            _check_steering_follows(name, batch, where, shown)


def _check_skip_texts(name: str, pairs: list[tuple[ToolCall, ToolResultMessage]], where: str, shown: _Shown) -> None:
    """A result that reads like a skip is one of the two exact skip texts."""
    for call, result in pairs:
        if result.text not in (SKIPPED_STEERING, SKIPPED_CANCELLED) and looks_skipped(result.text, result.is_error):
            raise _fail(
                name,
                f"the result of {call.name}#{call.id} in {where} reads like a skip but is not the exact text "
                f"{SKIPPED_STEERING!r} or {SKIPPED_CANCELLED!r}: {result.text!r}{shown}",
            )


def _check_skipped_did_not_run(
    name: str,
    calls: list[ToolCall],
    where: str,
    ledger: Mapping[tuple[str, str], list[Any]],
    executed: Counter[tuple[str, str]],
    shown: _Shown,
) -> None:
    for call in calls:
        key = (call.id, call.name)
        ran = len(ledger.get(key, ()))
        if ran > executed[key]:
            raise _fail(
                name,
                f"{call.name}#{call.id} was skipped in {where}, but the ledger shows it ran "
                f"(arguments {shorten(ledger[key][-1].arguments, 100)}){shown}",
            )


def _check_steering_follows(name: str, batch: Batch, where: str, shown: _Shown) -> None:
    """The steering message(s) are the next messages after the batch's results, and the last thing
    the next request shows the model."""
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
    if request is None:
        return
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
    _, executed = _classify(runs)  # the calls that may have run
    ledger = trace.ledger_by_call() if trace.ledger is not None else None
    for run in runs:
        run_batches = batches(run)
        for k, batch in enumerate(run_batches):
            if batch.message.stop_reason in ("error", "aborted"):
                continue
            pairs = list(zip(batch.calls, batch.results, strict=False))
            skipped = [j for j, (_, result) in enumerate(pairs) if result.text == SKIPPED_CANCELLED]
            if not skipped:
                continue
            following = run_batches[k + 1].message if k + 1 < len(run_batches) else None
            _check_cancelled_batch(name, run, batch, pairs, skipped[0], following, ledger, executed)


def _check_cancelled_batch(
    name: str,
    run: RunView,
    batch: Batch,
    pairs: list[tuple[ToolCall, ToolResultMessage]],
    first: int,
    following: AssistantMessage | None,
    ledger: Mapping[tuple[str, str], list[Any]] | None,
    executed: Counter[tuple[str, str]],
) -> None:
    """From the first call skipped for cancellation on: every call skipped, none run, no model
    call after, and the run ends ``aborted`` (or at the cap)."""
    shown = _Shown(batch)
    where = f"model call {batch.number}{run.where()}"
    for j in range(first, len(batch.calls)):
        if j >= len(pairs) or pairs[j][1].text != SKIPPED_CANCELLED or not pairs[j][1].is_error:
            call = batch.calls[j]
            raise _fail(
                name,
                f"{call.name}#{call.id} comes after a call skipped for cancellation in {where} but was not "
                f"skipped (once cancel is set every remaining call gets is_error {SKIPPED_CANCELLED!r})"
                f"{shown}",
            )
    if ledger is not None:
        for call in batch.calls[first:]:
            key = (call.id, call.name)
            if len(ledger.get(key, ())) > executed[key]:
                raise _fail(
                    name,
                    f"{call.name}#{call.id} was skipped for cancellation in {where}, but "
                    f"the ledger shows it ran{shown}",
                )
    if following is not None and following.stop_reason != "aborted":
        raise _fail(
            name,
            f"calls of {where} were skipped for cancellation, yet the model was asked again "
            f"({render_message(following)}){shown}",
        )
    end = run.end
    if end is not None and end.reason not in ("aborted", "max_iterations"):
        raise _fail(name, f"calls of {where} were skipped for cancellation, but the run ended {end.reason!r}{shown}")
