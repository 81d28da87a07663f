"""What a wire campaign found and what it can honestly say: the counts of what it exercised
(:class:`AgentStats`), the minimal failure (:class:`WireFailure`), the result, the errors a
campaign raises, and the invariants' verdicts (one computation for the console and the HTML
page, so the two can never say different things).

"held" is a claim that the campaign gave an invariant chances to break and it did not; a count of
those chances goes with it. An invariant no conversation gave a chance is "not exercised"; one the
campaign stopped before reaching (it stops at its first violation) is "not reached".
"""

from __future__ import annotations

import re
import traceback
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.agents._conversation import Run
from harness.agents._invariants import INVARIANTS, Judgement, Violation, judged_by_w8, raised_line, reply_kinds
from harness.agents._replies import KINDS, TIERS, refused_kind, retry_after, tier_of
from harness.emulator import WireRequest
from harness.scenarios import Scenario

RETRIED_STATUSES = (429, 503)
HELD, VIOLATION, USAGE, INCONCLUSIVE, INTERRUPTED = 0, 1, 2, 3, 130
"""The exit codes of every wire campaign (``harness fuzz --agent`` and ``--agent-cmd``; ``agent_test``'s
failure names its own): the same meaning wherever a campaign ends."""
EXIT_MEANINGS = {
    HELD: "held",
    VIOLATION: "violation",
    USAGE: "usage error",
    INCONCLUSIVE: "inconclusive",
    INTERRUPTED: "interrupted",
}


def exercised(run: Run, kinds: tuple[str, ...] | None = None) -> set[str]:
    """The invariants this run gave a chance to break (it is counted under each, once); ``kinds``:
    its replies' kinds (:func:`reply_kinds`), when the caller has them already."""
    chances: set[str] = set()
    exchanges = run.exchanges
    if not exchanges:
        return chances
    chances.add("W3")  # a run that reached the emulator could have failed to end
    if len(exchanges) > 1:
        chances.add("W2")  # a second request could have rewritten the first one's history
    for exchange in exchanges:
        reply = exchange.reply
        if reply is None:
            continue
        if exchange.delivered and reply.calls:
            chances.add("W1")  # a call was owed a result
        if not exchange.delivered:
            chances.add("W5")  # a reply that is not whole could have been returned as one
        if reply.kind == "error" and retry_after(reply) is not None:
            chances.add("W6")  # a retry could have come too soon
        if refused_kind(reply):
            chances.add("W7")  # the refused request could have gone out again unchanged
    if run.returned is not None and not run.timed_out:
        chances.add("W4")  # a returned text to compare with the last reply's
    if judged_by_w8(run, reply_kinds(run) if kinds is None else kinds):
        chances.add("W8")  # an ending after well-formed replies only: it could have been a raise
    return chances


@dataclass(frozen=True)
class Verdict:
    """One row of the invariants' table."""

    invariant: str
    statement: str
    verdict: str
    """``VIOLATED``, ``held (exercised in N conversations)``, ``not exercised`` or ``not reached (stopped at W<n>)``."""
    declared: int = 0
    """Violations a declared deviation covered."""

    @property
    def held(self) -> bool:
        return self.verdict.startswith("held")

    @property
    def text(self) -> str:
        """The verdict as the table shows it, with the declared deviations it needed."""
        return self.verdict + (f" ({self.declared} declared deviation(s))" if self.declared else "")


def verdicts(result: AgentCampaignResult, invariants: Mapping[str, str]) -> list[Verdict]:
    """Per invariant, what ``result`` (an ``AgentCampaignResult``) can honestly say of it."""
    stats = result.stats
    failure = result.failure
    broken = failure.violation.invariant if failure is not None else None
    # one cause, one finding: every invariant the failing reply broke is violated
    also = {other.invariant for other in getattr(failure.violation, "also", ())} if failure is not None else set()
    rows = []
    for name, statement in invariants.items():
        chances = int(stats.exercised.get(name, 0))
        if name == broken or name in also:
            verdict = "VIOLATED"
        elif chances:
            verdict = f"held (exercised in {chances} conversation{'s' if chances != 1 else ''})"
        elif broken is not None:
            verdict = f"not reached (stopped at {broken})"
        else:
            verdict = "not exercised"
        rows.append(Verdict(name, statement, verdict, int(stats.declared.get(name, 0))))
    return rows


@dataclass
class AgentStats:
    """What a wire campaign exercised, so a green campaign also says how much ground it covered."""

    conversations: int = 0
    requests: int = 0
    seconds: float = 0.0
    kinds: Counter[str] = field(default_factory=Counter)
    endings: Counter[str] = field(default_factory=Counter)
    wires: Counter[str] = field(default_factory=Counter)
    declared: Counter[str] = field(default_factory=Counter)
    """Violations a declared deviation covered, per invariant."""
    agent_seconds: float = 0.0
    """Time the agent's runs took, less the harness's choosing of replies: the framework and the wire."""

    first_error: str | None = None
    """How the first run that sent no request ended: a campaign that reached nothing says why."""
    first_raised: Run | None = None
    """That run, whole: its traceback and what it printed are shown when nothing was tested."""
    exercised: Counter[str] = field(default_factory=Counter)
    """Conversations that gave each invariant a chance to break (``_verdicts``)."""
    late: int = 0
    """Requests that arrived from runs the campaign had abandoned (refused, never judged)."""
    unnamed: int = 0
    """Requests whose path named no conversation (a client that drops its base URL's path)."""
    left_behind: int = 0
    """Abandoned runs still running when the verdict was given."""
    bypassed: int = 0
    """Conversations in process whose requests came over loopback: the agent ignored its ``http_client``."""
    reached: int = 0
    """Conversations that reached a judged reply (a request of theirs was served one): what was tested."""
    stale: list[tuple[int, int]] = field(default_factory=list)
    """(named, running) per request that came under the base URL of a conversation already ended
    while another one ran: state the agent keeps across conversations (``WireEmulator.stale``)."""
    raised: dict[str, Raised] = field(default_factory=dict)
    """Every distinct exception the runs raised, by where it was raised (:func:`raised_key`)."""
    startup_seconds: float = 0.0
    """Wall time before the first conversation: the command's start, the agent's imports, the emulator."""
    shrinking_seconds: float = 0.0
    """Wall time spent shrinking a failure (Hypothesis's shrinker, then whole replies removed)."""
    phase: str = "exploring"
    """What the campaign is doing now (``exploring``, ``shrinking``): what its progress shows."""
    shrink_runs: int = 0
    """Runs of the agent spent shrinking so far."""
    offered: tuple[str, ...] = ()
    """The kinds the campaign's tiers allow: each one is counted, served or not (``served_rows``)."""

    def add(self, run: Run, judgement: Judgement) -> None:
        if not run.exchanges and run.raised is not None and self.first_error is None:
            self.first_error = f"{type(run.raised).__name__}: {run.raised}"
            self.first_raised = run
        if run.raised is not None:
            self.add_raised(run.raised)
        self.reached += any(exchange.reply is not None for exchange in run.exchanges)
        served = reply_kinds(run)  # arguments that fail their schema told from a valid call
        self.exercised.update(exercised(run, served))
        self.conversations += 1
        self.agent_seconds += run.seconds - run.choosing
        self.requests += len(run.exchanges)
        self.kinds.update(served)
        self.endings[run.ended] += 1
        if run.exchanges:
            self.wires[wire_of(run.exchanges[0].request)] += 1
        self.declared.update(v.invariant for v, _ in judgement.declared)

    def add_raised(self, raised: BaseException) -> None:
        """Count what a run raised; the first of each distinct exception keeps its traceback."""
        key = raised_key(raised)
        if key in self.raised:
            self.raised[key].count += 1
            return
        from harness.agents._first_failure import agent_traceback

        # an agent run as a command: its exit, less the conversation (W8's message names it the same way)
        self.raised[key] = Raised(raised_line(raised), self.conversations + 1, agent_traceback(raised))

    def served_rows(self) -> list[tuple[str, int]]:
        """What was served, per tier and kind (DESIGN 6, "green means tested"): each tier's total,
        then its kinds, the campaign's own kinds listed even when none was served (a header saying
        ``--hostile`` over nothing of the ``invalid`` tier misled)."""
        served = {kind: 0 for kind in self.offered} | dict(self.kinds)
        rows: list[tuple[str, int]] = []
        for tier in TIERS:
            mine = [kind for kind in KINDS if kind in served and tier_of(kind) == tier]
            if mine:
                rows.append((f"replies of the {tier} tier", sum(served[kind] for kind in mine)))
                rows += [(f"replies ({tier}): {kind}", served[kind]) for kind in mine]
        return rows

    @property
    def harness_seconds(self) -> float:
        """Everything else: drawing, judging, Hypothesis itself (shrinking excluded)."""
        return max(0.0, self.seconds - self.agent_seconds)

    @property
    def wall_seconds(self) -> float:
        """Wall-clock time of the whole campaign: start-up, exploring and shrinking."""
        return self.startup_seconds + self.seconds + self.shrinking_seconds

    def rows(self) -> list[tuple[str, int]]:
        rows = [(f"runs that {ending}", count) for ending, count in sorted(self.endings.items())]
        rows += self.served_rows()
        rows += [(f"runs on {wire}", count) for wire, count in sorted(self.wires.items())]
        if self.late:
            rows.append(("requests from runs the campaign had abandoned (refused, not judged)", self.late))
        if self.stale:
            rows.append(("requests under an ended conversation's base URL (refused, not judged)", len(self.stale)))
        if self.left_behind:
            rows.append(("abandoned runs still running at the verdict", self.left_behind))
        return rows

    def notes(self) -> list[str]:
        """What a reader must know to trust the verdict: runs left behind, late requests, isolation
        that a client defeated, an ``http_client`` ignored."""
        said = []
        if self.late:
            said.append(
                f"{self.late} request(s) arrived from runs the campaign had abandoned: refused and counted, "
                "not judged as another conversation's"
            )
        if self.left_behind:
            said.append(f"{self.left_behind} abandoned run(s) were still running at the verdict: left behind")
        if self.unnamed:
            said.append(
                f"{self.unnamed} request(s) did not carry their conversation's base URL path (the client drops "
                "base_url's path): each was judged in the conversation running when it arrived"
            )
        if self.bypassed:
            said.append(
                f"the agent ignored the http_client it was given in {self.bypassed} conversation(s) (a framework "
                "that takes only an httpx client?): its own client was served on loopback instead"
            )
        return said


@dataclass
class Raised:
    """One distinct exception of a campaign's runs: how often, first where, and its traceback
    trimmed to the agent's frames (an agent run as a process: its exit and its stderr)."""

    name: str
    first: int
    """The conversation (from 1) that raised it first."""
    traceback: str
    count: int = 1

    @property
    def headline(self) -> str:
        times = f"{self.count} run{'s' if self.count != 1 else ''}"
        return f"{self.name}: raised in {times} (first in conversation {self.first})"


def raised_key(raised: BaseException) -> str:
    """What tells two exceptions apart: the type and the line that raised it (a process agent's:
    its exit and its stderr's last line), not the message, whose ids and numbers vary per run."""
    told = getattr(raised, "wire_told", None)
    if isinstance(told, str):
        last = [line for line in told.splitlines() if line.strip()][-1:]
        return re.sub(r"\d+", "N", f"{getattr(raised, 'summary', '')} {' '.join(last)}")
    frames = traceback.extract_tb(raised.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(raised).__module__}.{type(raised).__qualname__} {where}"


def wire_of(request: WireRequest) -> str:
    """``openai chat.completions (streamed)``: the wire a request spoke (``on azure``: under another
    service's paths, :attr:`harness.wire.Route.surface`)."""
    route = request.route
    surface = f" on {route.surface}" if route.surface else ""
    return f"{route.provider} {route.endpoint}{surface}" + (" (streamed)" if request.streaming else "")


@dataclass
class WireFailure:
    """The minimal violating run, its scenario and where it was saved."""

    violation: Violation
    judgement: Judgement
    run: Run
    scenario: Scenario
    path: Path | None = None


@dataclass
class AgentCampaignResult:
    agent: str
    stats: AgentStats
    seed: int
    in_process: bool
    failure: WireFailure | None = None

    @property
    def ok(self) -> bool:
        """No violation, and the campaign tested what it claims: green means tested."""
        return self.failure is None and not self.inconclusive

    @property
    def inconclusive(self) -> list[str]:
        """Why the campaign cannot say "held" (empty: it can): fewer than half its conversations
        reached a judged reply, or a request came under an ended conversation's base URL (DESIGN 6,
        "Green means tested"). A violation is a verdict whatever else happened."""
        if self.failure is not None:
            return []
        return inconclusive(self.stats)

    @property
    def exit_code(self) -> int:
        """0 held, 1 violation, 3 inconclusive (2 usage and 130 interrupted are the command's)."""
        return VIOLATION if self.failure is not None else INCONCLUSIVE if self.inconclusive else HELD

    @property
    def headline(self) -> str:
        """The verdict in a word or two, the console's and the page's."""
        if self.failure is not None:
            return "VIOLATION"
        if not self.stats.requests:
            return "INCONCLUSIVE: NOTHING TESTED"
        return "INCONCLUSIVE" if self.inconclusive else "no violation"

    def verdicts(self, invariants: Mapping[str, str] = INVARIANTS) -> list[Verdict]:
        """Per invariant, what the campaign can honestly say (the console's table and the HTML's)."""
        return verdicts(self, invariants)


def inconclusive(stats: AgentStats) -> list[str]:
    """Why ``stats`` cannot support a green verdict, each reason with what to do about it."""
    reasons = []
    if stats.stale:
        named, running = stats.stale[0]
        reasons.append(
            f"{len(stats.stale)} request(s) came under the base URL of a conversation that had already ended (the "
            f"first: conversation {named}'s, while conversation {running} ran): the agent shares state across "
            "conversations, such as a model client cached without its base URL. Build the client in each "
            "conversation from the base_url it is given (or key the cache by base_url): each conversation must "
            "reach the emulator under its own base URL to be judged"
        )
    if stats.reached * 2 < stats.conversations or not stats.conversations:
        raised = sum(r.count for r in stats.raised.values())
        reasons.append(
            f"only {stats.reached} of {stats.conversations} conversation(s) reached a judged reply (fewer than "
            f"half); {raised} run(s) raised (each distinct exception is shown with its traceback)"
        )
    return reasons


class UnsteadyAgentError(RuntimeError):
    """Hypothesis saw the agent answer the same replies with different requests: a campaign over
    it can neither shrink nor reproduce anything, and says so instead of reporting noise."""


class WireViolationError(AssertionError):
    """A run broke a wire invariant; carries the run, and (once shrunk) its scenario and file."""

    def __init__(self, judgement: Judgement, run: Run, scenario: Scenario, notes: str = "") -> None:
        self.judgement, self.run, self.scenario = judgement, run, scenario
        shown = "\n".join(str(v) for v in judgement.violations)
        said = f"{shown}{notes}\n\nthe replies as a scenario (harness emulate --script FILE):\n{scenario.to_yaml()}"
        if run.log:
            from harness.agents._agent_output import shown as output

            said += f"\nthe agent's output in this conversation:\n{output(run.log)}\n"
        super().__init__(said)
