"""The reports a user meets: whole pages for ``harness run``, ``cassettes show`` and ``fuzz``, and
the bare timelines pytest-html carries in a test's extras.

Every page is one file that needs nothing else: the stylesheet and the few lines of optional
script are inlined, no font, image or script is fetched, and it reads with scripts off.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import count
from typing import Any, Protocol

from harness.checking import CheckResult
from harness.oracle import ALL_INVARIANTS, InvariantViolation
from harness.report._cassette_lanes import StepLike, read_steps
from harness.report._env import clock, render
from harness.report._marks import as_pairs, place
from harness.report._model import Lane, Mark, ProblemShown, RecordingJudgement, Timeline
from harness.report._runs import read_trace
from harness.trace import Trace


def judge(trace: Trace) -> list[tuple[str, str]]:
    """Every invariant the run breaks (not only the first, as ``check_all`` raises it): a report
    shows all of them, each on its event."""
    found: list[tuple[str, str]] = []
    for invariant in ALL_INVARIANTS:
        try:
            invariant(trace)
        except InvariantViolation as violation:
            found.append((violation.name, violation.message))
        except Exception as exc:  # an invariant that cannot read this trace says so, the page still renders
            found.append((getattr(invariant, "__name__", "invariant"), f"could not judge the run: {exc!r}"))
    return found


def trace_timeline(
    trace: Trace,
    *,
    title: str,
    key: str = "t1",
    problems: Iterable[Any] | None = None,
    notes: Sequence[str] = (),
) -> Timeline:
    """A run as a timeline; ``problems`` (``Problem``s, violations or ``(name, message)`` pairs)
    default to what the invariants say of it."""
    root, at = read_trace(trace, key)
    pairs = judge(trace) if problems is None else [p if isinstance(p, tuple) else as_pairs([p])[0] for p in problems]
    shown = place(pairs, trace, root, at)
    return Timeline(
        key=key,
        title=title,
        lanes=[root],
        facts=_facts(trace, root),
        problems=shown,
        notes=list(notes),
        verdict="fail" if shown else "ok",
    )


def _facts(trace: Trace, root: Lane) -> list[tuple[str, str]]:
    facts = [("end reason", str(trace.reason) if trace.reason is not None else "(none: the run did not end)")]
    nested = sum(1 for e in root.walk() for _ in e.nested)
    facts.append(
        ("model requests", f"{len(trace.requests)} captured" + (f", {nested} nested run(s)" if nested else ""))
    )
    stamps = [m.timestamp for m in trace.new_messages if m.timestamp is not None]
    if stamps:
        facts.append(
            ("run's clock", f"{clock(min(stamps))} to {clock(max(stamps))} UTC ({max(stamps) - min(stamps)} ms)")
        )
    if trace.max_iterations is not None:
        facts.append(("max_iterations", str(trace.max_iterations)))
    if trace.error is not None:
        facts.append(("stream raised", trace.error))
    if trace.ledger is not None:
        facts.append(("tools executed", ", ".join(f"{e.tool_name}#{e.tool_call_id}" for e in trace.ledger) or "none"))
    facts.append(("events", str(len(trace.events))))
    return facts


def trace_report(trace: Trace, *, title: str = "harness run", problems: Iterable[Any] | None = None) -> str:
    """One run as a page."""
    return render(
        "runs.html.j2",
        kind="run",
        title=title,
        summary="",
        unusable=[],
        timelines=[trace_timeline(trace, title=title, problems=problems)],
    )


def run_report(
    results: Sequence[tuple[str, CheckResult]], *, unusable: Sequence[str] = (), title: str = "harness run"
) -> str:
    """``harness run FILE... --html``: each scenario's verdict and timeline; failures unfolded first
    in the contents, in the order they ran."""
    keys = count(1)
    timelines = []
    for label, result in results:
        notes = list(result.scenario.notes_for_run()) if hasattr(result.scenario, "notes_for_run") else []
        timelines.append(
            trace_timeline(result.trace, title=label, key=f"t{next(keys)}", problems=result.problems, notes=notes)
        )
    failed = sum(1 for t in timelines if not t.ok)
    summary = f"{len(timelines)} scenario(s): {len(timelines) - failed} passed, {failed} failed" + (
        f", {len(unusable)} could not be used" if unusable else ""
    )
    return render(
        "runs.html.j2", kind="run", title=title, summary=summary, unusable=list(unusable), timelines=timelines
    )


def cassette_report(steps: Sequence[StepLike], *, source: str, judged: RecordingJudgement | None = None) -> str:
    """``harness cassettes show CASSETTE --html``: the recorded conversation(s) as a timeline;
    ``judged``: what the wire invariants said of them (unjudged without it)."""
    lanes = read_steps(steps, "t1")
    provider = steps[0].call.provider if steps else "?"
    models = sorted({str(s.call.model) for s in steps})
    facts = [
        ("interactions", str(len(steps))),
        ("provider", provider),
        ("model", ", ".join(models) or "?"),
        ("conversations", str(len(lanes))),
    ]
    timeline = Timeline(key="t1", title=source, lanes=lanes, facts=facts, verdict="unjudged")
    if judged is not None:
        _judge_recording(timeline, judged)
    return render(
        "runs.html.j2", kind="cassette", title=f"cassette {source}", summary="", unusable=[], timelines=[timeline]
    )


def _judge_recording(timeline: Timeline, judged: RecordingJudgement) -> None:
    """Each problem on the request of the interaction it names; the verdict, and what was judged."""
    at = {e.anchor: e for lane in timeline.lanes for e in lane.walk() if e.kind == "model"}
    for number, (index, name, message) in enumerate(judged.problems, start=1):
        problem = ProblemShown(number, name, message)
        entry = at.get(f"{timeline.key}-i{index}")
        if entry is not None:
            entry.marks.append(Mark(number, name))
            problem.located = True
        timeline.problems.append(problem)
    timeline.verdict = "fail" if timeline.problems else "ok"
    said = " and ".join(f"{name} ({text})" for name, text in judged.invariants.items())
    timeline.judged_by = f"{said}, over {len(judged.conversations)} conversation(s): " + "; ".join(judged.conversations)
    timeline.facts.append(
        ("judged by", ", ".join(judged.invariants) + f" over {len(judged.conversations)} conversation(s)")
    )


def timelines_fragment(traces: Sequence[Trace], *, title: str, failed: bool = False, key: str = "h") -> str:
    """The timelines of a test's runs, without a page around them, for pytest-html's extras (its
    page carries the stylesheet once: ``stylesheet()``); unfolded when the test ``failed``."""
    timelines = [
        trace_timeline(
            trace, title=f"{title} · run {n} of {len(traces)}" if len(traces) > 1 else title, key=f"{key}-{n}"
        )
        for n, trace in enumerate(traces, start=1)
    ]
    return render("fragment.html.j2", timelines=timelines, failed=failed)


def stylesheet() -> str:
    """The timelines' ``<style>`` element, for a page that embeds fragments."""
    return render("style.html.j2")


# -- harness fuzz --html ------------------------------------------------------------------------


class StatsLike(Protocol):
    @property
    def scenarios(self) -> int: ...
    @property
    def rounds(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def per_tool(self) -> Mapping[str, Mapping[str, int]]: ...
    def rows(self) -> list[tuple[str, int]]: ...
    def boundary_rows(self) -> list[tuple[str, int]]: ...


class CampaignLike(Protocol):
    """A finished campaign, as ``harness.campaigns``' ``run_campaign`` returns it."""

    @property
    def stats(self) -> StatsLike: ...
    @property
    def seed(self) -> int: ...
    @property
    def failure(self) -> Any: ...  # .problem, .scenario (.to_yaml()), .trace, .path, .result.problems
    @property
    def nondeterministic(self) -> Mapping[str, str]: ...
    @property
    def ok(self) -> bool: ...


@dataclass
class _Campaign:
    seed: int
    scenarios: int
    rounds: int
    seconds: float
    command: str
    ok: bool
    rows: list[tuple[str, int]]
    boundaries: list[tuple[str, int]]
    per_tool: list[tuple[str, Mapping[str, int]]]
    tool_columns: tuple[str, ...] = ("calls", "results", "error results", "raised")
    nondeterministic: list[tuple[str, str]] = field(default_factory=list)
    failure: Timeline | None = None
    scenario_yaml: str = ""
    saved: str = ""


def campaign_report(result: CampaignLike, *, command: str) -> str:
    """The campaign (what it exercised, the boundary table, the seed) and, on a violation, the
    shrunk scenario with its timeline, the oracle's objection on the event it is about."""
    stats = result.stats
    campaign = _Campaign(
        seed=result.seed,
        scenarios=stats.scenarios,
        rounds=stats.rounds,
        seconds=stats.seconds,
        command=command,
        ok=result.ok,
        rows=list(stats.rows()),
        boundaries=[] if stats.per_tool else list(stats.boundary_rows()),
        per_tool=sorted(stats.per_tool.items()),
        nondeterministic=sorted(result.nondeterministic.items()),
    )
    failure = result.failure
    if failure is not None:
        problems = getattr(getattr(failure, "result", None), "problems", None) or [failure.problem]
        campaign.failure = trace_timeline(
            failure.trace,
            title=f"minimal scenario: {failure.scenario.name or getattr(failure.path, 'name', None) or 'unnamed'}",
            problems=problems,
        )
        campaign.scenario_yaml = failure.scenario.to_yaml()
        campaign.saved = str(failure.path) if failure.path is not None else ""
    return render("campaign.html.j2", kind="campaign", title=f"harness fuzz · seed {result.seed}", c=campaign)
