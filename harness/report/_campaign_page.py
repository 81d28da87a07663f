"""``harness fuzz --agent --html``: a wire campaign on a page, its failure as a timeline of requests.

A wire campaign (``harness.agents``, a layer above this one) judges what an agent of any framework
sent over the wire; what a person needs to see of a failure is that conversation: each request the
agent sent (the conversation it carried, normalized the way the invariants read it, and the tools
it offered), each reply the campaign served (text, calls, or the fault: an error status, a cut
stream, a dropped connection), the violation on the request it concerns, and the scenario file
that serves the same replies by hand. The result is read by its shape (the protocols below), as
the recorded steps are, so this package does not import the layer that makes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.report._env import render
from harness.report._model import CallShown, Entry, Lane, Mark, MessageShown, Offered, ProblemShown, Timeline


class ExchangeLike(Protocol):
    """One request of the run and what answered it (``harness.agents.Exchange``)."""

    @property
    def number(self) -> int: ...
    @property
    def request(self) -> Any: ...  # .route.provider, .route.endpoint, .streaming
    @property
    def reply(self) -> Any: ...  # a scenario ModelTurn, or None: refused beyond the request bound
    @property
    def delivered(self) -> bool: ...
    @property
    def output_items(self) -> Mapping[str, Any]: ...  # a Responses reply's items, what item_reference names
    def messages(self, items: Mapping[str, Any] | None = None) -> Sequence[Any]: ...  # Said: .role .text ...


class ViolationLike(Protocol):
    @property
    def invariant(self) -> str: ...
    @property
    def request(self) -> int: ...  # 0: the end of the run
    @property
    def message(self) -> str: ...


class DeviationLike(Protocol):
    @property
    def invariant(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def kinds(self) -> Sequence[str]: ...


class WireCampaignLike(Protocol):
    """A finished wire campaign, as ``harness.agents.run_agent_campaign`` returns it."""

    @property
    def agent(self) -> str: ...
    @property
    def stats(self) -> Any: ...  # .conversations .requests .seconds .agent_seconds .harness_seconds .rows() .declared
    @property
    def seed(self) -> int: ...
    @property
    def in_process(self) -> bool: ...
    @property
    def failure(self) -> Any: ...  # .violation .judgement (.violations .declared) .run .scenario .path
    @property
    def ok(self) -> bool: ...
    def verdicts(self, invariants: Mapping[str, str]) -> Sequence[Any]:
        """Per invariant: ``.invariant .statement .verdict .declared`` (the console's rows too)."""
        ...


@dataclass
class SpineRow:
    """A row of a seeded campaign's spine: recorded reply ``step`` of ``of`` (from 1; ``None``: a
    reply drawn once the agent left the recording), the requests it answered and the marks of
    what changed it. ``kind``: ``recorded``, ``mutated`` (replaced, or its arguments), ``fault``
    (a fault served before it), ``unreached`` (the run ended or left before it), ``drawn``."""

    kind: str
    step: int | None
    of: int
    label: str
    requests: list[int] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)
    faulted: list[int] = field(default_factory=list)
    """The requests of ``requests`` answered by the fault before the step, not by the step."""

    def badge(self, number: int) -> str:
        """The same, short enough for the request's folded line."""
        if self.step is None:
            return "drawn: off the recording"
        where = f"recorded reply {self.step} of {self.of}"
        if number in self.faulted:
            return f"fault before {where}"
        return f"{where}, mutated" if self.kind == "mutated" else where

    def said(self, number: int) -> str:
        """What answered request ``number``, as its entry on the timeline says it."""
        if self.step is None:
            return f"a drawn reply ({'; '.join(self.marks)}): the agent had left the recording"
        where = f"recorded reply {self.step} of {self.of} ({self.label})"
        if number in self.faulted:
            return f"the fault before {where}: {'; '.join(self.marks)}"
        if self.kind == "fault":
            return f"{where}, served on the retry after the fault"
        return f"{where}, {'; '.join(self.marks)}" if self.marks else where


@dataclass
class Spine:
    """A seeded campaign's recorded conversation, as the spine its failure is drawn on
    (``harness.agents``' ``SeededCampaign.spine()``): ``left``, the replies drawn off it."""

    headline: str
    rows: list[SpineRow]
    left: int = 0


SHOWN_EXCEPTIONS = 10
"""Distinct exceptions shown with their traceback, as the console shows them (its heading counts the rest)."""

ToolsOf = Callable[[Any], Sequence[Any]]
"""A request -> the tools it offered (``.name``, ``.description``, ``.parameters``): reading a
wire's menu is the recording package's work, which the caller has and this package must not import."""


@dataclass
class _Verdict:
    name: str
    text: str
    verdict: str
    declared: int = 0

    @property
    def css(self) -> str:
        return "verdict-fail" if self.verdict == "VIOLATED" else "verdict-ok" if self.verdict.startswith("held") else ""


@dataclass
class _WireCampaign:
    agent: str
    seed: int
    conversations: int
    requests: int
    seconds: float
    agent_seconds: float
    harness_seconds: float
    serving: str
    command: str
    ok: bool
    headline: str
    rows: list[tuple[str, int]]
    verdicts: list[_Verdict]
    deviations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nothing_tested: str = ""
    inconclusive: list[str] = field(default_factory=list)
    """Why the campaign could not say "held" (exit 3), each reason with its fix: the console's."""
    exceptions: list[tuple[str, str]] = field(default_factory=list)
    """Each distinct exception the runs raised: its headline and its traceback (the agent's frames)."""
    raised_heading: str = ""
    exit_code: int = 0
    wall_seconds: float = 0.0
    startup_seconds: float = 0.0
    shrinking_seconds: float = 0.0
    output: str = ""
    """What the agent printed, logged and warned in the failing (or first) conversation."""
    raised: str = ""
    """The failing conversation's traceback, the agent's frames."""
    violation: str = ""
    saved: str = ""
    serve: str = ""
    scenario_yaml: str = ""
    failure: Timeline | None = None
    spine: Spine | None = None


def wire_campaign_report(
    result: WireCampaignLike,
    *,
    command: str,
    invariants: Mapping[str, str],
    deviations: Sequence[DeviationLike] = (),
    tools_of: ToolsOf | None = None,
    nothing_tested: str = "",
    output: str = "",
    raised: str = "",
    raised_heading: str = "",
    spine: Spine | None = None,
) -> str:
    """The campaign (what it exercised, the invariants' verdicts, the time split) and, on a
    violation, the shrunk conversation as a timeline with the violation on its request.

    ``invariants``: name -> statement (``harness.agents.INVARIANTS``); ``deviations``: what the
    agent declared; ``tools_of``: how to read a request's menu (the tools are left out without it).
    The verdicts are the result's own (``result.verdicts``), the ones the console prints.
    ``nothing_tested``: why no run reached the emulator (the first run's traceback and hints);
    ``output``: the agent's output in the conversation shown; ``raised``: its traceback;
    ``raised_heading``: the console's heading over the distinct exceptions the runs raised;
    ``spine``: a seeded campaign's recording, the failure drawn on it."""
    failure = result.failure
    campaign = _campaign(result, command, invariants, deviations, output, raised)
    campaign.raised_heading, campaign.spine = raised_heading, spine
    if failure is None and result.stats.requests == 0:
        campaign.nothing_tested = (
            nothing_tested or f"no run sent a request to the emulator ({result.stats.first_error})"
        )
    if failure is not None:
        _show_failure(campaign, failure, tools_of)
        if spine is not None and campaign.failure is not None:
            _on_the_spine(campaign.failure, spine)
    return render(
        "wire_campaign.html.j2", kind="wire-campaign", title=f"harness fuzz --agent · seed {result.seed}", c=campaign
    )


def _campaign(
    result: WireCampaignLike,
    command: str,
    invariants: Mapping[str, str],
    deviations: Sequence[DeviationLike],
    output: str,
    raised: str,
) -> _WireCampaign:
    """The page's summary of a campaign: what it exercised, the verdicts, the time split."""
    stats = result.stats
    verdicts = [_Verdict(v.invariant, v.statement, v.verdict, int(v.declared)) for v in result.verdicts(invariants)]
    headline = getattr(result, "headline", None) or (
        "no violation" if result.ok else "VIOLATION" if result.failure is not None else "NOTHING TESTED"
    )
    return _WireCampaign(
        agent=result.agent,
        seed=result.seed,
        conversations=stats.conversations,
        requests=stats.requests,
        seconds=stats.seconds,
        agent_seconds=stats.agent_seconds,
        harness_seconds=stats.harness_seconds,
        serving="in process" if result.in_process else "on loopback",
        command=command,
        ok=result.ok,
        headline=headline,
        rows=list(stats.rows()),
        verdicts=verdicts,
        deviations=[f"{d.invariant} after {', '.join(d.kinds) or 'any reply'}: {d.reason}" for d in deviations],
        notes=list(getattr(stats, "notes", list)()),
        output=output,
        raised=raised,
        inconclusive=list(getattr(result, "inconclusive", ())),
        exceptions=[(r.headline, r.traceback) for r in list(getattr(stats, "raised", {}).values())[:SHOWN_EXCEPTIONS]],
        exit_code=int(getattr(result, "exit_code", 0 if result.ok else 1)),
        wall_seconds=float(getattr(stats, "wall_seconds", stats.seconds)),
        startup_seconds=float(getattr(stats, "startup_seconds", 0.0)),
        shrinking_seconds=float(getattr(stats, "shrinking_seconds", 0.0)),
    )


def _show_failure(campaign: _WireCampaign, failure: Any, tools_of: ToolsOf | None) -> None:
    """The violation, the shrunk conversation as a timeline, and the scenario file that replays it."""
    campaign.violation = _said(failure.violation)
    campaign.scenario_yaml = failure.scenario.to_yaml()
    if failure.path is not None:
        campaign.saved = str(failure.path)
        campaign.serve = f"harness emulate --script {failure.path}"
    campaign.failure = wire_timeline(
        failure.run,
        title=f"the shrunk conversation: {len(failure.scenario.turns)} reply(ies), {len(failure.run.exchanges)} "
        "request(s)",
        violations=failure.judgement.violations,
        declared=failure.judgement.declared,
        tools_of=tools_of,
    )


def _on_the_spine(timeline: Timeline, spine: Spine) -> None:
    """Each request of the failure says which recorded step answered it, and how it was changed."""
    entries = {entry.anchor: entry for lane in timeline.lanes for entry in lane.entries}
    for row in spine.rows:
        for number in row.requests:
            entry = entries.get(f"{timeline.key}-w{number}")
            if entry is not None:
                entry.options = {"served": row.said(number), **entry.options}
                entry.label = row.badge(number)


def wire_timeline(
    run: Any,
    *,
    title: str,
    violations: Sequence[ViolationLike] = (),
    declared: Sequence[tuple[ViolationLike, DeviationLike]] = (),
    tools_of: ToolsOf | None = None,
    key: str = "t1",
) -> Timeline:
    """One run of an agent on the wire: the prompt, each request with the reply served, the end;
    each violation marks the request it names (request 0: the run's end)."""
    lane = Lane("the agent's requests, and the replies served")
    lane.entries.append(Entry("user", f"{key}-prompt", label="prompt", text=run.prompt))
    by_number: dict[int, Entry] = {}
    menu: tuple[tuple[str, ...], int] | None = None
    items: dict[str, Any] = {}  # what a later Responses request's item_reference names, read as the judge reads it
    for exchange in run.exchanges:
        entry = _request(exchange, key, tools_of, items)
        if exchange.delivered:
            items.update(exchange.output_items)
        names = tuple(o.name for o in entry.tools)
        if menu is not None and menu[0] == names:
            entry.tools_same_as = menu[1]
        elif names:
            menu = (names, exchange.number)
        by_number[exchange.number] = entry
        lane.entries.append(entry)
    ending, text = _ending(run)
    lane.reason = ending
    end = Entry("end", f"{key}-end", label=ending, text=text)
    lane.entries.append(end)
    problems = _placed(violations, by_number, end)
    notes = [f"declared deviation: {_said(v)} ({d.reason})" for v, d in declared]
    facts = [
        ("wire", _wire(run.exchanges[0].request) if run.exchanges else "(no request reached the emulator)"),
        ("requests", f"{len(run.exchanges)} (bound {run.request_bound})"),
        ("ended", ending),
        ("wall time", f"{run.seconds * 1000:.0f} ms"),
    ]
    return Timeline(
        key=key,
        title=title,
        lanes=[lane],
        facts=facts,
        problems=problems,
        notes=notes,
        verdict="fail" if problems else "ok",
        judged_by="the wire invariants over the requests this run sent and the replies it was served",
    )


def _placed(violations: Sequence[ViolationLike], by_number: Mapping[int, Entry], end: Entry) -> list[ProblemShown]:
    """Each violation numbered, and marked on the request it names (request 0: the run's end)."""
    problems = []
    # one finding per cause: each invariant the causing reply broke is marked where it broke
    each = [v for finding in violations for v in (finding, *getattr(finding, "also", ()))]
    for number, violation in enumerate(each, start=1):
        target = by_number.get(violation.request) if violation.request else end
        problem = ProblemShown(number, violation.invariant, _said(violation))
        if target is not None:
            target.marks.append(Mark(number, violation.invariant))
            problem.located = True
        problems.append(problem)
    return problems


def _said(violation: ViolationLike) -> str:
    where = f"request {violation.request}" if violation.request else "the end of the run"
    measured = getattr(violation, "measured", "")  # what a clock measured: shown, never in the saved file
    tier = getattr(violation, "tier", "")  # who could have sent what caused it (DESIGN 6, realism)
    also = "".join(
        f"; the same reply also broke {other.invariant} at request {other.request}: {other.message}"
        for other in getattr(violation, "also", ())
    )
    return (
        f"{violation.invariant} at {where}: {violation.message}"
        + (f" ({measured})" if measured else "")
        + also
        + (f" [tier: {tier}]" if tier else "")
    )


def _wire(request: Any) -> str:
    route = request.route
    return f"{route.provider} {route.endpoint}" + (" (streamed)" if request.streaming else "")


def _call(call: Any) -> CallShown:
    """A call served (``args``) or sent back (``arguments``), its argument text when not JSON."""
    arguments = getattr(call, "args", None)
    if arguments is None:
        arguments = getattr(call, "arguments", None)
    return CallShown(call.id or "-", call.name, dict(arguments or {}), call.raw)


def _message(said: Any) -> MessageShown:
    return MessageShown(
        role=said.role,
        text=said.text,
        calls=[_call(c) for c in said.calls],
        call_id=said.call_id or said.tool_name,
        is_error=said.is_error,
    )


def _request(exchange: ExchangeLike, key: str, tools_of: ToolsOf | None, items: Mapping[str, Any]) -> Entry:
    request = exchange.request
    entry = Entry("model", f"{key}-w{exchange.number}", number=exchange.number)
    entry.options = {"wire": _wire(request)}
    try:
        entry.messages = [_message(m) for m in exchange.messages(items)]
    except Exception as exc:  # a request its wire's reader cannot read is shown, saying so
        entry.options["messages"] = f"could not be read: {exc}"
    entry.history = len(entry.messages)
    if tools_of is not None:
        try:
            entry.tools = [Offered(t.name, t.description or "", dict(t.parameters)) for t in tools_of(request)]
        except Exception as exc:
            entry.options["tools"] = f"could not be read: {exc}"
    reply = exchange.reply
    if reply is None:
        entry.stop_reason = "refused"
        entry.fault = "HTTP 400: the request came after the run's request bound, so it was refused"
        return entry
    entry.text = reply.text or ""
    entry.thinking = [reply.thinking] if reply.thinking else []
    entry.calls = [_call(c) for c in reply.calls]
    entry.stop_reason, entry.fault = _outcome(reply, request.streaming)
    return entry


_WIRE_FAULTS = {
    "error_event": ("error event", "the provider's in-band error event (its status {value}) after the content"),
    "malformed_chunk": ("malformed", "a chunk whose JSON is broken"),
    "bad_checksum": ("malformed", "an event-stream frame with a bad checksum"),
    "cut_mid_event": ("cut", "the stream cut inside an event"),
    "truncate": ("cut", "the stream cut before its stop reason"),
    "drop_mid_stream": ("dropped", "the connection dropped after {value} chunk(s)"),
    "unknown_event": ("stop", "an event of a type the SDK does not know, among the others"),
    "slow": ("stop", "each chunk {value} s late"),
    "gzip": ("stop", "the body gzip-compressed"),
    "unknown_fields": ("stop", "fields the SDK does not know in every event"),
    "interleaved": ("stop", "the calls streamed apart (deltas alternating by index, one call a chunk)"),
    "split": ("stop", "the body's bytes re-cut into pieces of {value} bytes, as TCP may deliver them"),
    "slow_first_byte": ("stop", "the status and headers {value} s late"),
    "stall": ("stalled", "the stream stalled after {value} event(s), open and silent"),
    "refusal": ("refusal", "the reply as the model's refusal"),
    "content_filter": ("filtered", "the reply withheld by the provider's content filter"),
    "redacted_thinking": ("stop", "Anthropic's redacted (encrypted) thinking before the reply"),
}
"""A scenario turn's ``wire:`` faults -> the stop a reader sees and what was served (a reply that is
not streamed gets most of them whole, or as the HTTP error an in-band error stands for)."""


def _outcome(reply: Any, streaming: bool) -> tuple[str, str | None]:
    """The stop reason a reader sees, and the fault served instead of a clean reply (if any)."""
    wire = dict(reply.wire)
    faults = [(n, v) for n, v in reply.wire if n in _WIRE_FAULTS]
    if faults and reply.kind == "reply":
        stop, _ = _WIRE_FAULTS[faults[0][0]]
        said = "; ".join(_WIRE_FAULTS[n][1].format(value=v) for n, v in faults)
        return stop, said + ("" if streaming else " (asked for on a stream; this request was not streamed)")
    if reply.kind == "error":
        status = wire.get("status", 500)
        after = wire.get("retry_after")
        return f"HTTP {status}", f"error status {status}" + (f", Retry-After: {after:g} s" if after else "") + (
            f" ({reply.message})" if reply.message else ""
        )
    if reply.kind == "aborted":
        return "aborted", f"aborted ({reply.message})"
    if reply.kind == "raise":
        return "dropped", "the connection was dropped mid-reply" + (f" ({reply.message})" if reply.message else "")
    if reply.kind == "hang_up":
        if streaming:
            return "cut", "the stream was cut before its stop reason"
        return "stop", None  # not streamed: the reply arrives whole
    if reply.stop == "length":
        return "length", None
    return ("tool calls" if reply.calls else "stop"), None


def _ending(run: Any) -> tuple[str, str]:
    if run.timed_out:
        return "did not end", f"the run was still going {run.time_bound:g} s after it started"
    if run.raised is not None:
        return f"raised {type(run.raised).__name__}", f"the agent raised {type(run.raised).__name__}: {run.raised}"
    return "returned", f"the agent returned {run.returned!r}"
