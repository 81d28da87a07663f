"""The wire invariants W1-W6 (DESIGN section 6), judged from the requests an agent sent, and
``judge``, which runs every invariant over a run.

Nothing here looks inside the agent: each request's conversation is read per wire into
provider-neutral messages (``harness.recording._transcript``), where the Responses API keeps
the history on the server (``previous_response_id``) the stored history is put back in front,
and the replies are the ones the campaign served. A violation names its invariant, the request
it was seen at and what was wrong, in words a framework's maintainer can act on.

A framework may choose, on purpose, to do otherwise (raise on an unknown tool, answer with an
apology after a 500): it declares a :class:`Deviation` with its reason, and a violation it covers
is reported as declared instead of failing. A deviation names the reply kinds it covers, so it
is checked as declared: the same invariant broken after any other reply still fails.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.agents._conversation import WIRES_WITHOUT_IDS, Exchange, Run, carried, reply_messages, request_histories
from harness.agents._invariants._findings import (
    Deviation,
    Judgement,
    ReplyKinds,
    Violation,
    by_cause,
    declared_deviations,
    led_by,
    rendered_again,
    tier_for,
)
from harness.agents._invariants._w2_reasoning import reasoning_kept
from harness.agents._invariants._w7_refused import may_reset, refused_return, w7
from harness.agents._invariants._w8_well_formed import w8
from harness.agents._replies import refusal_of, retry_after, status_of
from harness.recording import Call, Said
from harness.scenarios import ModelTurn
from harness.wire import clip

RETRY_AFTER_STATUSES = (429, 503)


def judge(run: Run, deviations: Sequence[Deviation] = ()) -> Judgement:
    """Every invariant over one run; violations a deviation covers are set apart as declared."""
    deviations = declared_deviations(deviations)
    histories = request_histories(run.exchanges)
    kinds = ReplyKinds(run)
    found = [
        dataclasses.replace(v, tier=tier_for(v.kinds))
        for v in (
            *_w1(run.exchanges, histories, kinds),
            *_w2(run.exchanges, histories, kinds),
            *reasoning_kept(run.exchanges, histories, kinds),
            *_w3(run, kinds),
            *_w4_w5(run, kinds),
            *_w6(run.exchanges, kinds),
            *w7(run.exchanges, kinds),
            *w8(run, kinds),
        )
    ]
    failing, declared = [], []
    for violation in by_cause(found):
        deviation = next((d for d in deviations if d.covers(violation)), None)
        if deviation is None:
            failing.append(violation)
        else:
            declared.append((led_by(violation, deviation.invariant), deviation))
    return Judgement(tuple(failing), tuple(declared))


def _show(said: Said) -> str:
    if said.role == "tool":
        return f"tool result for {said.call_id or said.tool_name or '?'}: {_clip(said.text)!r}"
    calls = ", ".join(f"{c.name}#{c.id}" for c in said.calls)
    # a message with calls and no text says so: `''` read as text the framework had sent empty
    text = f"{_clip(said.text)!r}" if said.text or not calls else "(no text)"
    return f"{said.role} {text}" + (f" calling {calls}" if calls else "")


_clip = functools.partial(clip, limit=60)  # the width of a wire invariant's quoted text


def _same_call(a: Call, b: Call, ids_optional: bool = False) -> bool:
    """``a`` repeats ``b``; ``ids_optional``: ``a`` may leave ``b``'s id out (Gemini's ids are
    optional, and clients that match results by name send calls back without them)."""
    if a.name != b.name or (a.id != b.id and not (ids_optional and not a.id)):
        return False
    # argument text that was not a JSON object has no one right way to be sent back
    return a.raw is not None or b.raw is not None or a.arguments == b.arguments


def _same(a: Said, b: Said, ids_optional: bool = False) -> bool:
    a_id = "" if ids_optional and not a.call_id else a.call_id or ""
    b_id = "" if ids_optional and not a.call_id else b.call_id or ""
    if (a.role, a.text.strip(), a_id, a.is_error) != (b.role, b.text.strip(), b_id, b.is_error):
        return False
    return len(a.calls) == len(b.calls) and all(
        _same_call(x, y, ids_optional) for x, y in zip(a.calls, b.calls, strict=True)
    )


# -- the invariants ----------------------------------------------------------------------------------


def _w1(exchanges: Sequence[Exchange], histories: Sequence[tuple[Said, ...]], kinds: ReplyKinds) -> Iterable[Violation]:
    for index, exchange in enumerate(exchanges[:-1]):
        reply = carried(exchange)
        if reply is None or not exchange.delivered or not reply.calls:
            continue
        results = [m for m in histories[index + 1] if m.role == "tool"]
        calls: dict[str, list[str]] = {}
        for call in reply.calls:
            calls.setdefault(call.id or "", []).append(call.name)
        for call_id, names in calls.items():
            count = sum(1 for m in results if m.call_id == call_id)
            if count == 0:  # a wire without ids on results (Gemini): answered by name instead
                count = min(len(names), sum(1 for m in results if not m.call_id and m.tool_name in names))
            if not 1 <= count <= len(names):
                shown = f"{names[0]} (id {call_id})" + (
                    f", {len(names)} calls sharing the id" if len(names) > 1 else ""
                )
                yield Violation(
                    "W1",
                    exchange.number + 1,
                    f"reply {exchange.number} called {shown}; request {exchange.number + 1} carries "
                    f"{count} result(s) for it",
                    kinds(reply),
                    cause=exchange.number,
                )


def _w2(exchanges: Sequence[Exchange], histories: Sequence[tuple[Said, ...]], kinds: ReplyKinds) -> Iterable[Violation]:
    for index in range(1, len(exchanges)):
        previous, exchange = exchanges[index - 1], exchanges[index]
        if may_reset(previous):  # the refusal rule: the context may be reset after a refusal
            continue
        expected = histories[index - 1]
        served = carried(previous)
        if previous.delivered and served is not None:
            expected = expected + reply_messages(served)
        actual = histories[index]
        gemini = exchange.request.route.provider in WIRES_WITHOUT_IDS  # ids optional there
        for position, said in enumerate(expected):
            if position < len(actual) and _same(actual[position], said, gemini):
                continue
            origin = _origin(exchanges, histories, index, position)
            source = f"reply {origin.number}" if origin is not None else f"request {previous.number}"
            blame = kinds(origin.reply) if origin is not None else ()
            history = _History(expected, actual, gemini, _id_field(exchange))
            message = history.differs(position, source, previous.number, _carried_count(exchange))
            yield Violation("W2", exchange.number, message, blame, cause=origin.number if origin is not None else 0)
            break


@dataclass(frozen=True)
class _History:
    """What became of the history a request should have repeated (``expected``) in the one it sent
    (``actual``), said as moved, merged, dropped, duplicated or changed, call by call and message
    by message (a framework that gives a call a turn of its own has not lost it)."""

    expected: tuple[Said, ...]
    actual: tuple[Said, ...]
    ids_optional: bool
    field: str

    def differs(self, position: int, source: str, previous: int, carried: int) -> str:
        said = self.expected[position]
        if position >= len(self.actual):
            return (
                f"message {position + 1} ({source}'s), {_show(said)}, was dropped: request {previous} and its reply "
                f"had {len(self.expected)} message(s), this request carries {carried}"
                # the normalized history leaves an empty message out and joins an assistant's text and
                # calls sent apart: the count is the wire's, the difference said
                + (
                    f" ({carried - len(self.actual)} of them empty, or an assistant's calls sent apart from its text)"
                    if carried > len(self.actual)
                    else ""
                )
            )
        calls = self.calls(position)
        if calls:
            return f"message {position + 1}, {source}'s calls: {calls}"
        return self.message(position, source)

    def message(self, position: int, source: str) -> str:
        said, now = self.expected[position], self.actual[position]
        following = self.expected[position + 1] if position + 1 < len(self.expected) else None
        if following is not None and self._same(now, following):
            return f"message {position + 1} ({source}'s), {_show(said)}, was dropped"
        if position > 0 and self._same(now, self.expected[position - 1]):
            return f"message {position} ({_show(now)}) was duplicated: it is message {position + 1} too"
        if (
            following is not None
            and now.role == said.role == following.role
            and now.text.strip() == (said.text + following.text).strip()
        ):
            return f"messages {position + 1} and {position + 2} ({source}'s) were merged into one: {_show(now)}"
        if self._same(dataclasses.replace(now, text=said.text), said):  # only the text differs
            if not now.text.strip():
                return f"message {position + 1} ({source}'s), {_show(said)}, came back without its text"
            return (
                f"message {position + 1} ({source}'s), {_show(said)}, came back with its text changed: now {_show(now)}"
            )
        return f"message {position + 1} was {_show(said)} ({source}), now {_show(now)}"

    def _same(self, a: Said, b: Said) -> bool:
        return _same(a, b, self.ids_optional)

    def _find(self, call: Call, skip: int) -> int | None:
        """The message other than ``skip`` of the actual history that holds ``call``."""
        return next(
            (
                j
                for j, m in enumerate(self.actual)
                if j != skip and any(_same_call(c, call, self.ids_optional) for c in m.calls)
            ),
            None,
        )

    def calls(self, position: int) -> str:
        """Call by call, what message ``position``'s calls became (``""``: they came back as sent,
        the difference is elsewhere)."""
        expected, actual = self.expected[position], self.actual[position]
        if expected.role != "assistant" or actual.role != "assistant" or not (expected.calls or actual.calls):
            return ""
        unmatched = list(actual.calls)
        missing: list[Call] = []
        kept: list[Call] = []
        for call in expected.calls:
            twin = next((a for a in unmatched if _same_call(a, call, self.ids_optional)), None)
            if twin is None:
                missing.append(call)
            else:
                unmatched.remove(twin)
                kept.append(call)
        if not missing and not unmatched:
            return ""
        said: list[str] = []
        for extra in unmatched:
            entry = self._extra(extra, kept, missing, unmatched, position)
            if entry not in said:
                said.append(entry)
        for call in missing:
            found = self._find(call, position)
            if found is None:
                said.append(f"{_named(call, self.field)} was dropped")
            else:
                alone = all(
                    any(_same_call(c, e, self.ids_optional) for e in expected.calls) for c in self.actual[found].calls
                )
                where = "an assistant turn of its own" if alone else "another assistant message"
                said.append(f"{_named(call, self.field)} was moved to message {found + 1}, {where}")
        return "; ".join(said)

    def _extra(self, extra: Call, kept: list[Call], missing: list[Call], unmatched: list[Call], position: int) -> str:
        again = [c for c in (*kept, *missing) if _same_call(extra, c, self.ids_optional)]
        if again:
            times = 1 + sum(1 for a in unmatched if _same_call(a, again[0], self.ids_optional))
            return f"{_named(again[0], self.field)} was duplicated: sent {'twice' if times == 2 else f'{times} times'}"
        replaced = next((c for c in missing if c.id == extra.id), None)
        if replaced is not None:
            missing.remove(replaced)
            return f"{_named(replaced, self.field)} was changed: it came back as {extra.name} {_args(extra)}"
        home = next(
            (
                j
                for j, m in enumerate(self.expected)
                if j != position and any(_same_call(extra, c, self.ids_optional) for c in m.calls)
            ),
            None,
        )
        if home is not None:
            return f"{_named(extra, self.field)}, of message {home + 1}, was merged into this one"
        return f"{_named(extra, self.field)}, a call the reply never made, appeared"


def _carried_count(exchange: Exchange) -> int:
    """The messages a request carries as its wire counts them (an empty assistant message too,
    which the normalized history leaves out; a system prompt not)."""
    body = exchange.request.body if isinstance(exchange.request.body, Mapping) else {}
    for key in ("messages", "contents", "input"):
        value = body.get(key)
        if isinstance(value, list):
            return sum(1 for m in value if not (isinstance(m, Mapping) and m.get("role") in ("system", "developer")))
        if isinstance(value, str):
            return 1
    return 0


def _origin(
    exchanges: Sequence[Exchange], histories: Sequence[tuple[Said, ...]], index: int, position: int
) -> Exchange | None:
    """The exchange whose reply put message ``position`` of request ``index - 1``'s history and
    reply there (``None``: the agent's own, a prompt or a result): the reply a violation that
    concerns it was caused by, what a deviation's ``kinds`` is matched against."""
    for j in range(index - 1, -1, -1):
        start = len(histories[j])
        if position < start:
            continue
        reply = exchanges[j].reply
        added = len(reply_messages(reply)) if reply is not None and exchanges[j].delivered else 0
        return exchanges[j] if position < start + added else None
    return None


def _id_field(exchange: Exchange) -> str:
    """The wire's own name for a call's id, as a maintainer of that wire's client would search it."""
    route = exchange.request.route
    if route.provider == "openai":
        return "call_id" if route.endpoint == "responses" else "tool_calls[].id"
    return {"anthropic": "tool_use id", "gemini": "functionCall.id", "bedrock": "toolUseId"}.get(route.provider, "id")


def _named(call: Call, field: str) -> str:
    return f"{field} {call.id or '(none)'} ({call.name} {_args(call)})"


def _args(call: Call) -> str:
    return clip(call.raw if call.raw is not None else json.dumps(call.arguments, sort_keys=True), 40)


def _w3(run: Run, kinds: ReplyKinds) -> Iterable[Violation]:
    beyond = next((e for e in run.exchanges if e.reply is None), None)
    if beyond is not None:
        yield Violation(
            "W3",
            beyond.number,
            f"the run sent request {beyond.number}, beyond its bound of {run.request_bound} requests"
            + _repeated(run.replies, kinds),
            kinds(*run.replies),
        )
    if run.timed_out:
        stalled = _stalled(run)
        yield Violation(
            "W3",
            stalled.number if stalled else 0,
            f"the run had not ended {run.time_bound:g}s after it started"
            + (f": {_stall(stalled, run.time_bound)}" if stalled else ""),
            kinds(*run.replies),
            measured=f"{len(run.exchanges)} request(s) sent by then",
            cause=stalled.number if stalled else 0,
        )


def _stalled(run: Run) -> Exchange | None:
    """The run's last exchange, when its reply was a stream that stalled (open, silent)."""
    last = run.exchanges[-1] if run.exchanges else None
    return last if last is not None and last.reply is not None and "stall" in dict(last.reply.wire) else None


def _stall(exchange: Exchange, time_bound: float) -> str:
    """What a run waiting on a stalled stream was waiting for, in the wire's terms."""
    where = (
        (_ending(exchange) or "the stream stalled")
        if exchange.request.streaming
        else "the reply stalled after its status and headers, before its body"
    )
    return (
        f"{where} (no bytes, connection open); the run was still waiting at the time bound "
        f"({time_bound:g} s): the client has no read timeout below the time bound"
    )


def _repeated(replies: Sequence[ModelTurn], kinds: ReplyKinds) -> str:
    """What the run's last requests were answered with: a reply served again on every request (a
    scenario's last turn is, and so is a plan's final answer) said as such, with how many times,
    since a framework that retries a failing reply until its own step limit never ends on it."""
    if not replies:
        return " (no reply was served)"
    last = replies[-1]
    times = 0
    for reply in reversed(replies):
        if reply != last:
            break
        times += 1
    (kind,) = kinds(last)
    if times < 2:
        return f" (the last reply served was {_a(kind)})"
    return (
        f": its last {times} requests were each answered with the same reply, {_a(kind)}, served again "
        f"on every request after reply {len(replies) - times + 1}"
        + ("" if is_whole(last) else "; a run that retries a failing reply until its own step limit never ends on it")
    )


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def is_whole(reply: ModelTurn) -> bool:
    """Whether a reply reaches a streaming agent whole (see ``Exchange.delivered``)."""
    faults = {name for name, _ in reply.wire}
    if reply.kind in ("error", "raise", "aborted", "hang_up"):
        return False
    return not ({"error_event", "malformed_chunk", "bad_checksum", "cut_mid_event", "stall"} & faults)


def _failure(exchange: Exchange) -> str:
    """How a reply that was not delivered whole ended, in its wire's terms: the error status, the
    in-band error event, the broken chunk, or where the body ended (cleanly after which event, as
    a proxy closing it leaves it, or reset mid-chunk, as the network does)."""
    reply = exchange.reply
    assert reply is not None
    if reply.kind == "error":
        return f"an HTTP {status_of(reply)}"
    faults = dict(reply.wire)
    if "error_event" in faults:
        if not exchange.request.streaming:
            return f"an HTTP {faults['error_event']} (the in-band error of a reply that is not streamed)"
        return f"a stream that ended in the provider's in-band error event (of HTTP {faults['error_event']}'s type)"
    if "malformed_chunk" in faults:
        return "a stream with a chunk whose JSON is broken"
    if "bad_checksum" in faults:
        return "a stream with a corrupted chunk (a wrong checksum, or broken JSON where there is none)"
    ending = _ending(exchange)
    if "stall" in faults:
        return f"a stream that stalled, open and silent ({ending or 'the stream stalled'}), until the client gave up"
    if "cut_mid_event" in faults:
        return f"a stream cut inside an event ({ending or 'the body ended cleanly inside its last event'})"
    if reply.kind == "raise":
        return f"a stream reset mid-chunk ({ending or 'the connection was reset mid-chunk'})"
    return f"a stream cut before its stop reason ({ending or 'the body ended cleanly after an event'})"


def _ending(exchange: Exchange) -> str:
    """Where the served bytes ended, rendered again from the reply for the request that got it (the
    same events; only ids may differ): which event came last, on this wire."""
    from harness.emulator import ending

    delivery = rendered_again(exchange)
    return ending(delivery) if delivery is not None else ""


def _w4_w5(run: Run, kinds: ReplyKinds) -> Iterable[Violation]:
    if run.returned is None or run.raised is not None or run.timed_out:
        return
    if not run.exchanges:
        yield Violation("W4", 0, f"the run returned {_clip(run.returned)!r} without asking the model anything")
        return
    last = run.exchanges[-1]
    if last.reply is None:
        return  # refused beyond the request bound: W3 says so
    if not last.delivered:
        yield Violation(
            "W5",
            last.number,
            f"the reply was {_failure(last)}, and the run returned {_clip(run.returned)!r} as a complete answer",
            kinds(last.reply),
            cause=last.number,
        )
        return
    if refusal_of(last.reply):  # the refusal rule: the agent words it, but hides nothing
        yield from refused_return(run, last, kinds)
        return
    said = last.reply.text or ""
    if run.returned.strip() != said.strip():
        # the replies whose text the return holds besides the last one's led to it: what a
        # deviation for, say, an agent that joins every reply's text is declared against
        returned = run.returned.strip()
        earlier = [
            e.reply
            for e in run.exchanges[:-1]
            if e.reply is not None and e.reply.text and e.reply.text.strip() and e.reply.text.strip() in returned
        ]
        yield Violation(
            "W4",
            last.number,
            f"the run returned {_clip(run.returned)!r}; the last reply said {_clip(said)!r}",
            kinds(*earlier) if earlier else kinds(last.reply),
            cause=last.number,
        )


def _w6(exchanges: Sequence[Exchange], kinds: ReplyKinds) -> Iterable[Violation]:
    for index, exchange in enumerate(exchanges[:-1]):
        reply = exchange.reply
        if reply is None or reply.kind != "error" or status_of(reply) not in RETRY_AFTER_STATUSES:
            continue
        wait = retry_after(reply)
        if wait is None:
            continue
        following = exchanges[index + 1]
        gap = following.arrived - exchange.answered
        if gap < wait:
            yield Violation(
                "W6",
                following.number,
                f"the retry of request {exchange.number}, whose HTTP {status_of(reply)} asked for "
                f"Retry-After: {wait:g} (seconds), came sooner",
                kinds(reply),
                measured=f"it came {gap:.3f}s after the {status_of(reply)}, {wait:g}s asked",
                cause=exchange.number,
            )
