"""``harness fuzz --agent MODULE:CALLABLE`` and ``--agent-cmd "CMD ARGS"``: the wire campaign
against any agent, its progress, its summary, its verdict and its page.

Exit codes, the same for both (DESIGN 6, "Green means tested"): 0 held, 1 violation, 2 usage,
3 inconclusive (too few conversations reached a judged reply, state shared across conversations,
an agent that does not do the same thing twice), 130 interrupted (Ctrl-C).

The agent is checked before any run (a callable no run could call, a command that cannot start,
a declaration no judgement could use: a usage error, exit 2), so a campaign never runs a hundred
conversations that all raise the same mistake.

``--from-cassette FILE [--conversation N]`` seeds the campaign with a recorded conversation
(``harness.agents.run_seeded_campaign``): the summary and verdict are the same, per conversation,
with what the seed adds around them (example 0 was the recording unchanged, how many mutated
examples ran, the finding's mutations named by their recorded steps); the exit code is the worst
over the conversations.

Imported only when a wire campaign runs (``fuzz_command`` imports it then): ``harness --help`` and
``harness fuzz --tools`` pay nothing for the agents layer.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from harness.agents._agent_output import shown
from harness.agents._campaign import DEFAULT_EXAMPLES, DEFAULT_MAX_REPLIES, found_by, run_agent_campaign
from harness.agents._campaign_result import INCONCLUSIVE, INTERRUPTED, VIOLATION, AgentStats, UnsteadyAgentError
from harness.agents._conversation import DEFAULT_TIME_BOUND, as_recorded, check_signature
from harness.agents._first_failure import agent_traceback, nothing_tested
from harness.agents._invariants import declared_deviations, deviations_of
from harness.agents._process_agent import AgentCommandError, ProcessAgent, end_every_group
from harness.cli._common import USAGE_ERROR, html_ready, write_html

PLAIN_EVERY = 10.0
"""Seconds between two plain progress lines (not a terminal: CI, a pipe), besides each tenth done."""
SHOWN_EXCEPTIONS = 10
"""Distinct exceptions shown with their traceback; past them, counted."""


@dataclass(frozen=True)
class WireOptions:
    """What the command line says about a wire campaign, its defaults filled in."""

    examples: int
    seed: int
    max_turns: int
    time_bound: float
    hostile: bool
    save_dir: Path | None
    html: Path | None
    deviations: tuple[Any, ...]
    started: float
    """``time.perf_counter()`` when the command started: the summary's start-up counts from it."""


def fuzz_agent(
    path: str | None,
    command: str | None,
    mode: str,
    deviations: tuple[str, ...],
    options: dict[str, Any],
) -> None:
    """The wire campaign against ``--agent`` (``path``) or ``--agent-cmd`` (``command``).

    A run that cannot be cancelled is abandoned at its time bound, and may still be running at the
    verdict (a thread of its own executor, say, which the interpreter would join at exit): then the
    command says so and ends the process itself, so it always exits. An agent run as a command
    never is: its process group is killed at its bound."""
    from rich.console import Console

    cassette = options.get("from_cassette")
    if cassette is None and options.get("conversation") is not None:
        raise click.UsageError("--conversation picks a conversation of --from-cassette: give it with --from-cassette")
    seeds = _seeds(cassette, options.get("conversation")) if cassette is not None else None
    agent, name = _command_agent(command, mode) if command is not None else _python_agent(str(path))
    if command is not None:
        _end_groups_when_stopped()
    chosen = _options(agent, name, deviations, options)
    html_ready(chosen.html)
    console = Console(file=sys.stdout)  # bound now: the agent's writes during the campaign go to its runs' logs
    tiers = "provider, network, invalid (--hostile)" if chosen.hostile else "provider, network"
    if cassette is not None and seeds is not None:
        code = fuzz_seeded(console, agent, name, chosen, cassette, options.get("conversation"), tiers)
        raise SystemExit(code) if code else SystemExit(0)
    console.print(
        f"harness fuzz: {chosen.examples} conversations, seed {chosen.seed}, agent {name}, "
        f"replies of the tiers {tiers}",
        markup=False,
        highlight=False,
    )
    try:
        result = _campaign(console, agent, name, chosen)
    except KeyboardInterrupt:  # Ctrl-C: 130, as a shell says it, never 1 (a violation)
        _interrupted()
    code = _print_wire_verdict(console, result, agent, chosen)
    if result.stats.left_behind:  # their threads would keep the interpreter alive: leave them, exit now
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if code:
        raise SystemExit(code)


def _seeds(cassette: Path, conversation: int | None) -> Any:
    """The cassette's conversations, read before the agent is: a file no campaign can be seeded
    from is one line on stderr and exit 2."""
    from harness.agents import SeedError, chosen_seeds

    try:
        return chosen_seeds(cassette, conversation)
    except SeedError as exc:
        click.echo(f"harness fuzz: {exc}", err=True)
        raise SystemExit(USAGE_ERROR) from None


def _interrupted() -> None:
    """End the interrupted campaign at once with 130: what the agent started is killed, and no
    thread it left running (an executor's, which the interpreter would join) can hold the exit."""
    killed = end_every_group()
    said = f"; killed {killed} agent process group(s)" if killed else ""
    sys.stderr.write(f"harness fuzz: interrupted (exit {INTERRUPTED}){said}\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(INTERRUPTED)


def _python_agent(path: str) -> tuple[Any, str]:
    from harness.scenarios import UserImportError, import_user_object

    try:
        agent = import_user_object(path)
    except UserImportError as exc:
        raise click.UsageError(f"--agent {path}: {exc}") from None
    if not callable(agent):
        raise click.UsageError(f"--agent {path}: {type(agent).__name__} is not callable")
    _check_agent(path, agent)
    return agent, path


def _command_agent(command: str, mode: str) -> tuple[Any, str]:
    """The command as an agent, or one line on stderr and exit 2: nothing runs a command that cannot start."""

    try:
        agent = ProcessAgent(command, mode=mode)
    except AgentCommandError as exc:
        click.echo(f"harness fuzz: --agent-cmd {command!r}: {exc}", err=True)
        raise SystemExit(USAGE_ERROR) from None
    return agent, agent.command


def _end_groups_when_stopped() -> None:
    """SIGTERM, SIGHUP or Ctrl-C to the command kills the agent's process groups first: each leads a
    session of its own, so neither the terminal's signal nor this process's death would reach them.
    Then SIGTERM's and SIGHUP's own default ends the command, so its caller sees the status it
    expects; Ctrl-C (SIGINT) ends it as interrupted, exit 130, as a shell reports it."""

    def stop(signum: int, _frame: Any) -> None:
        killed = end_every_group()
        name = signal.Signals(signum).name
        sys.stderr.write(f"harness fuzz: stopped by {name}; killed {killed} agent process group(s)\n")
        sys.stderr.flush()
        if signum == signal.SIGINT:  # Ctrl-C: the campaign ends as interrupted, exit 130 (not 1, a violation)
            raise KeyboardInterrupt
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, stop)


def _options(agent: Any, name: str, deviations: tuple[str, ...], given: dict[str, Any]) -> WireOptions:
    from harness.campaigns import DEFAULT_SEED

    _check_save_dir(given["save_dir"])
    declared = deviations_of(agent) + tuple(parse_deviation(text) for text in deviations)
    return WireOptions(
        examples=given["examples"] or DEFAULT_EXAMPLES,
        seed=given["seed"] if given["seed"] is not None else DEFAULT_SEED,
        max_turns=given["max_turns"] or DEFAULT_MAX_REPLIES,
        time_bound=given["time_bound"] or DEFAULT_TIME_BOUND,
        hostile=given["hostile"],
        save_dir=given["save_dir"],
        html=given["html"],
        deviations=declared,
        started=given.get("started") or time.perf_counter(),
    )


def parse_deviation(text: str) -> Any:
    """``W2=reason`` or ``W5:cut_stream,reset=reason`` as a :class:`~harness.agents.Deviation`,
    or a usage error saying what is wrong with it."""
    from harness.agents import Deviation

    head, equals, reason = text.partition("=")
    invariant, _, kinds = head.partition(":")
    if not equals or not reason.strip():
        raise click.UsageError(
            f'--deviation {text!r}: write INVARIANT=REASON, e.g. --deviation W2="the framework keeps only the '
            'last reply" (or W5:cut_stream=REASON for some reply kinds)'
        )
    try:
        return Deviation(invariant.strip(), reason.strip(), tuple(k.strip() for k in kinds.split(",") if k.strip()))
    except ValueError as exc:
        raise click.UsageError(f"--deviation {text!r}: {exc}") from None


def _campaign(console: Any, agent: Any, name: str, chosen: WireOptions) -> Any:
    """Run the campaign with its progress shown: a live bar on a terminal, plain lines otherwise."""
    with _Progress(console, chosen.examples) as progress:
        try:
            return run_agent_campaign(
                agent,
                chosen.examples,
                chosen.seed,
                deviations=chosen.deviations,
                max_replies=chosen.max_turns,
                time_bound=chosen.time_bound,
                save_dir=chosen.save_dir,
                on_example=progress.update,
                name=name,
                hostile=chosen.hostile,
                started=chosen.started,
            )
        except UnsteadyAgentError as exc:
            progress.close()
            console.print(f"[bold yellow]INCONCLUSIVE: UNSTEADY AGENT[/] (exit {INCONCLUSIVE})", highlight=False)
            console.print(str(exc), markup=False, highlight=False)
            raise SystemExit(INCONCLUSIVE) from None


def pace(conversations: int, seconds: float) -> str:
    """``2.5/s`` or ``4.7 s each``: never a rate rounded to ``0/s``."""
    if not conversations or seconds <= 0:
        return "no conversation done yet"
    rate = conversations / seconds
    return f"{rate:.1f} conversations/s" if rate >= 1 else f"{seconds / conversations:.1f} s per conversation"


class _Progress:
    """Conversations done of the total, the phase (exploring, shrinking) and the pace, while the
    campaign runs: rich's live bar on a terminal; on anything else (CI, a pipe) a plain line on
    stderr at each tenth done, every :data:`PLAIN_EVERY` seconds and at each change of phase, so a
    slow campaign is never silent for minutes and a log keeps what it said."""

    def __init__(self, console: Any, total: int) -> None:
        self.console, self.total = console, total
        self.live = console.is_terminal
        self.started = time.perf_counter()
        self.said_at, self.said_done, self.said_phase = self.started, 0, "exploring"
        self.stream = sys.stderr  # bound now: the agent's writes during the campaign go to its runs' logs
        self.bar: Any = None

    def __enter__(self) -> _Progress:
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(
                TextColumn("[progress.description]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[pace]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task("exploring", total=self.total, pace="")
        else:
            self._say(f"exploring: 0/{self.total} conversations")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def update(self, stats: AgentStats) -> None:
        done = min(stats.conversations, self.total)
        said = pace(stats.conversations, stats.seconds)
        if stats.phase == "shrinking":
            said = f"shrinking a failure: {stats.shrink_runs} run(s)"
        if self.bar is not None:
            self.bar.update(self.task, completed=done, description=stats.phase, pace=said)
            return
        now = time.perf_counter()
        tenth = max(1, self.total // 10)
        if (
            stats.phase != self.said_phase
            or done // tenth > self.said_done // tenth
            or now - self.said_at >= PLAIN_EVERY
        ):
            self.said_at, self.said_done, self.said_phase = now, done, stats.phase
            self._say(f"{stats.phase}: {done}/{self.total} conversations, {said}")

    def _say(self, text: str) -> None:
        elapsed = time.perf_counter() - self.started
        self.stream.write(f"harness fuzz: {text} ({elapsed:.0f}s)\n")
        self.stream.flush()


def _print_wire_verdict(console: Any, result: Any, agent: Any, chosen: WireOptions) -> int:
    """The campaign's summary and verdict; returns the exit code (the result's: 0, 1 or 3)."""

    stats = result.stats
    _print_wire_summary(console, result, chosen)
    if chosen.html is not None:
        command = found_by(
            result.agent, result.seed, chosen.examples, chosen.max_turns, chosen.hostile, chosen.time_bound, agent=agent
        )
        _write_wire_report(chosen.html, result, command, chosen.deviations)
    if result.failure is not None:
        _print_failure(console, result.failure)
    elif result.inconclusive:
        console.print(f"\n[bold yellow]{result.headline}[/] (exit {result.exit_code})", highlight=False)
        for reason in result.inconclusive:
            console.print(f"- {reason}", markup=False, highlight=False)
        if not stats.requests:
            console.print("\n" + nothing_tested(stats), markup=False, highlight=False)
    else:
        console.print("[bold green]no violation[/]")
    return int(result.exit_code)


def _print_wire_summary(console: Any, result: Any, chosen: WireOptions) -> None:
    """What the campaign exercised, the invariants' table, the declarations, the notes and the
    exceptions the runs raised."""
    from rich.table import Table

    from harness.agents import INVARIANTS

    stats = result.stats
    console.print(
        f"{stats.conversations} conversations, {stats.requests} requests, {stats.reached} conversation(s) reached a "
        f"judged reply, {'in process' if result.in_process else 'on loopback'}, seed {result.seed}",
        markup=False,
        highlight=False,
    )
    console.print(wall_time(stats), markup=False, highlight=False)
    if stats.rows():  # none when no conversation ran: no empty table
        table = Table(title="exercised (over all conversations)")
        table.add_column("what")
        table.add_column("count", justify="right")
        for label, count in stats.rows():
            table.add_row(label, str(count))
        console.print(table)
    table = Table(title="wire invariants")
    for column in ("invariant", "verdict"):
        table.add_column(column)
    for verdict in result.verdicts(INVARIANTS):
        table.add_row(f"{verdict.invariant} {verdict.statement}", verdict.text)
    console.print(table)
    for deviation in chosen.deviations:
        # a declaration nothing needed in this campaign is said as such: it may be stale
        met = stats.declared[deviation.invariant]
        console.print(
            f"declared: {deviation.invariant} after {', '.join(deviation.kinds) or 'any reply'}: {deviation.reason} "
            + (f"(covered {met} violation(s))" if met else f"(not met in {stats.conversations} conversations)"),
            markup=False,
            highlight=False,
        )
    for note in stats.notes():
        console.print(f"note: {note}", markup=False, highlight=False)
    if stats.raised and (stats.requests or len(stats.raised) > 1):  # else the verdict shows the one there is
        console.print(f"\n{raised_heading(stats)}", style="bold", highlight=False)
        for shown_raised in list(stats.raised.values())[:SHOWN_EXCEPTIONS]:
            console.print(f"\n{shown_raised.headline}", style="bold", markup=False, highlight=False)
            console.print(shown_raised.traceback, markup=False, highlight=False)


def raised_heading(stats: AgentStats) -> str:
    """How many runs raised, and how many distinct exceptions (the console's and the page's heading)."""
    runs = sum(r.count for r in stats.raised.values())
    more = len(stats.raised) - SHOWN_EXCEPTIONS
    return (
        f"the runs raised {len(stats.raised)} distinct exception(s), in {runs} run(s); each with the agent's frames"
        + (f" (the first {SHOWN_EXCEPTIONS} shown, {more} more)" if more > 0 else "")
        + ":"
    )


def wall_time(stats: AgentStats) -> str:
    """Wall-clock time, start-up, exploring and shrinking apart, with the exploring pace."""
    shrinking = f", shrinking {stats.shrinking_seconds:.1f}s ({stats.shrink_runs} runs)" if stats.shrink_runs else ""
    return (
        f"wall time {stats.wall_seconds:.1f}s: start-up {stats.startup_seconds:.1f}s, exploring {stats.seconds:.1f}s "
        f"({pace(stats.conversations, stats.seconds)}; the agent {stats.agent_seconds:.1f}s, the harness "
        f"{stats.harness_seconds:.1f}s){shrinking}"
    )


def _print_failure(console: Any, failure: Any) -> None:

    console.print(f"\n[bold red]VIOLATION[/] {failure.violation.invariant}")
    console.print(str(failure.violation), markup=False, highlight=False)
    console.print("\nminimal scenario:", style="bold")
    console.print(failure.scenario.to_yaml(), markup=False, highlight=False)
    if failure.run.raised is not None:
        console.print("the run raised:", style="bold")
        console.print(agent_traceback(failure.run.raised), markup=False, highlight=False)
    if failure.run.log:
        console.print("\nthe agent's output in this conversation:", style="bold")
        console.print(shown(failure.run.log), markup=False, highlight=False)
    if failure.path is not None:
        console.print(f"saved as {failure.path} (serve it: harness emulate --script {failure.path})")


def _check_agent(path: str, agent: Any) -> None:
    """Refuse, as a usage error, an agent no run could call or a declaration no judgement could use:
    otherwise every run would raise the same ``TypeError`` and the campaign test nothing."""

    try:
        check_signature(agent)
    except TypeError as exc:
        raise click.UsageError(f"--agent {path}: {exc}") from None
    try:
        declared_deviations(getattr(agent, "wire_deviations", None))
    except TypeError as exc:
        raise click.UsageError(f"--agent {path}: {exc}") from None


def _check_save_dir(save_dir: Path | None) -> None:
    """Refuse a scenario directory that cannot be written before the campaign, not after it: a
    failure found and shrunk, then lost to a save that cannot happen, is the worst way to fail.
    Nothing is created here (a clean campaign leaves no directory behind)."""
    from harness.checking import scenario_dir

    target = scenario_dir(save_dir)
    said = (
        "--save-dir"
        if save_dir is not None
        else "the scenario directory ($HARNESS_SCENARIO_DIR or cassettes/scenarios)"
    )
    existing = target
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise click.UsageError(f"{said} {target}: {existing} is a file, so the scenario cannot be saved under it")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise click.UsageError(f"{said} {target}: {existing} is not writable, so a scenario cannot be saved there")


def _write_wire_report(html: Path, result: Any, command: str, deviations: Any, spine: Any = None) -> None:
    """``--agent --html``: the report package sits below ``harness.agents`` (pyproject's
    import-linter layers) and cannot read a request's menu or a traceback, so it is handed the
    agents layer's readers, the ones the console used."""
    from harness.agents import INVARIANTS
    from harness.report import wire_campaign_report

    stats, failure = result.stats, result.failure
    run = failure.run if failure is not None else stats.first_raised
    write_html(
        html,
        lambda: wire_campaign_report(
            result,
            command=command,
            invariants=INVARIANTS,
            deviations=deviations,
            tools_of=lambda request: as_recorded(request).tools,
            nothing_tested=nothing_tested(stats) if failure is None and not stats.requests else "",
            output=shown(run.log) if run is not None and run.log else "",
            raised=agent_traceback(run.raised) if failure is not None and run.raised is not None else "",
            raised_heading=raised_heading(stats) if stats.raised else "",
            spine=spine,
        ),
    )


def fuzz_seeded(
    console: Any, agent: Any, name: str, chosen: WireOptions, cassette: Path, conversation: int | None, tiers: str
) -> int:
    """Run and report the seeded campaign; returns the exit code."""
    which = f"conversation {conversation}" if conversation is not None else "each conversation in turn"
    say(
        console,
        f"harness fuzz: seeded by {cassette} ({which}), {chosen.examples} examples per conversation "
        f"(example 0 the recording unchanged), seed {chosen.seed}, agent {name}, replies of the tiers {tiers}",
    )
    try:
        with _Progress(console, chosen.examples) as progress:
            from harness.agents import run_seeded_campaign

            found = run_seeded_campaign(
                agent,
                cassette,
                conversation=conversation,
                examples=chosen.examples,
                seed=chosen.seed,
                deviations=chosen.deviations,
                max_replies=chosen.max_turns,
                time_bound=chosen.time_bound,
                save_dir=chosen.save_dir,
                on_example=progress.update,
                name=name,
                hostile=chosen.hostile,
                target=getattr(agent, "wire_target", None),
            )
    except KeyboardInterrupt:
        _interrupted()
    except UnsteadyAgentError as exc:
        console.print(f"[bold yellow]INCONCLUSIVE: UNSTEADY AGENT[/] (exit {INCONCLUSIVE})", highlight=False)
        say(console, str(exc))
        return INCONCLUSIVE
    codes = [_report(console, campaign, agent, chosen, len(found)) for campaign in found]
    return VIOLATION if VIOLATION in codes else max(codes, default=0)


def _report(console: Any, campaign: Any, agent: Any, chosen: WireOptions, conversations: int) -> int:
    """One conversation's summary, verdict, finding and page (``--html``: one page per conversation
    when the cassette holds several, ``NAME-conversation-N.html``)."""
    console.print()
    say(console, campaign.headline())
    code = _print_wire_verdict(console, campaign.result, agent, dataclasses.replace(chosen, html=None))
    if chosen.html is not None:
        page = chosen.html
        if conversations > 1:
            page = page.with_name(f"{page.stem}-conversation-{campaign.seed.number}{page.suffix}")
        _write_wire_report(page, campaign.result, campaign.command, chosen.deviations, campaign.spine())
        say(console, f"page: {page}")
    finding = campaign.finding()
    if finding is not None:
        say(console, f"finding: {finding}")
    return code


def say(console: Any, text: str) -> None:
    console.print(text, markup=False, highlight=False)
