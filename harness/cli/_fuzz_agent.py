"""``harness fuzz --agent MODULE:CALLABLE`` and ``--agent-cmd "CMD ARGS"``: the wire campaign
against any agent, its summary, its verdict and its page (exit 1 on a violation).

The agent is checked before any run (a callable no run could call, a command that cannot start,
a declaration no judgement could use: a usage error, exit 2), so a campaign never runs a hundred
conversations that all raise the same mistake.

Imported only when a wire campaign runs (``fuzz_command`` imports it then): ``harness --help`` and
``harness fuzz --tools`` pay nothing for the agents layer.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from harness.agents._agent_output import shown
from harness.agents._campaign import DEFAULT_EXAMPLES, DEFAULT_MAX_REPLIES, found_by, run_agent_campaign
from harness.agents._campaign_result import AgentStats, UnsteadyAgentError
from harness.agents._conversation import DEFAULT_TIME_BOUND, as_recorded, check_signature
from harness.agents._first_failure import agent_traceback, nothing_tested
from harness.agents._process_agent import AgentCommandError, ProcessAgent, end_every_group
from harness.agents._wire_invariants import declared_deviations, deviations_of
from harness.cli._common import USAGE_ERROR, html_ready, progress_bar, write_html


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

    agent, name = _command_agent(command, mode) if command is not None else _python_agent(str(path))
    if command is not None:
        _end_groups_when_stopped()
    chosen = _options(agent, name, deviations, options)
    html_ready(chosen.html)
    console = Console(file=sys.stdout)  # bound now: the agent's writes during the campaign go to its runs' logs
    tiers = "provider, network, invalid (--hostile)" if chosen.hostile else "provider, network"
    console.print(
        f"harness fuzz: {chosen.examples} conversations, seed {chosen.seed}, agent {name}, "
        f"replies of the tiers {tiers}",
        markup=False,
        highlight=False,
    )
    result = _campaign(console, agent, name, chosen)
    code = _print_wire_verdict(console, result, agent, chosen)
    if result.stats.left_behind:  # their threads would keep the interpreter alive: leave them, exit now
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if code:
        raise SystemExit(code)


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
    Then the signal's own default ends the command, so its caller sees the status it expects."""

    def stop(signum: int, _frame: Any) -> None:
        killed = end_every_group()
        name = signal.Signals(signum).name
        sys.stderr.write(f"harness fuzz: stopped by {name}; killed {killed} agent process group(s)\n")
        sys.stderr.flush()
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

    with progress_bar(console) as progress:
        task = progress.add_task("conversing", total=chosen.examples)

        def advance(stats: AgentStats) -> None:
            progress.update(task, completed=min(stats.conversations, chosen.examples))

        try:
            return run_agent_campaign(
                agent,
                chosen.examples,
                chosen.seed,
                deviations=chosen.deviations,
                max_replies=chosen.max_turns,
                time_bound=chosen.time_bound,
                save_dir=chosen.save_dir,
                on_example=advance,
                name=name,
                hostile=chosen.hostile,
            )
        except UnsteadyAgentError as exc:
            console.print(f"[bold red]UNSTEADY AGENT[/] {exc}", highlight=False)
            raise SystemExit(1) from None


def _print_wire_verdict(console: Any, result: Any, agent: Any, chosen: WireOptions) -> int:
    """The campaign's summary and verdict; returns the exit code."""

    stats = result.stats
    _print_wire_summary(console, result, chosen)
    if chosen.html is not None:
        command = found_by(
            result.agent, result.seed, chosen.examples, chosen.max_turns, chosen.hostile, chosen.time_bound, agent=agent
        )
        _write_wire_report(chosen.html, result, command, chosen.deviations)
    if result.failure is None and not stats.requests:
        console.print("[bold red]NOTHING TESTED[/]", highlight=False)
        console.print(nothing_tested(stats), markup=False, highlight=False)
        return 1
    if result.failure is None:
        console.print("[bold green]no violation[/]")
        return 0
    _print_failure(console, result.failure)
    return 1


def _print_wire_summary(console: Any, result: Any, chosen: WireOptions) -> None:
    """What the campaign exercised, the invariants' table, the declarations and the notes."""
    from rich.table import Table

    from harness.agents import INVARIANTS

    stats = result.stats
    rate = stats.conversations / stats.seconds if stats.seconds else 0.0
    console.print(
        f"{stats.conversations} conversations, {stats.requests} requests, {stats.seconds:.1f}s ({rate:.0f}/s; "
        f"the agent {stats.agent_seconds:.1f}s, the harness {stats.harness_seconds:.1f}s), "
        f"{'in process' if result.in_process else 'on loopback'}, seed {result.seed}",
        markup=False,
        highlight=False,
    )
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


def _write_wire_report(html: Path, result: Any, command: str, deviations: Any) -> None:
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
        ),
    )
