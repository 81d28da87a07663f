"""``harness fuzz``: our loop's campaign (``--tools``) and the wire campaign against any agent (``--agent``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from harness.cli._common import HTML_HELP, html_ready, progress_bar, write_html

# -- harness fuzz ----------------------------------------------------------------------------------


@click.command("fuzz")
@click.option(
    "--examples",
    "-n",
    default=None,
    type=click.IntRange(min=1),
    help="Scenarios to generate [default: 200; with --agent: 100 conversations].",
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=None, help="Another campaign (printed at the start) [default: 21]."
)
@click.option("--tools", "tools_module", default=None, help="package.module whose @function tools to fuzz with.")
@click.option(
    "--agent",
    "agent_path",
    default=None,
    metavar="MODULE:CALLABLE",
    help="Fuzz an agent of any framework through the wire: agent(prompt, *, base_url, api_key) "
    "(docs/wire-campaigns.md).",
)
@click.option(
    "--save-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to save a shrunk failure [default: $HARNESS_SCENARIO_DIR or cassettes/scenarios].",
)
@click.option(
    "--max-turns",
    default=None,
    type=click.IntRange(min=1),
    help="Model turns per scenario at most [default: 10; with --agent: 6 replies drawn per conversation].",
)
@click.option(
    "--database",
    "database_url",
    envvar="HARNESS_EXAMPLE_DB",
    default=None,
    metavar="URL",
    help="Shared Hypothesis example database, replayed first: redis://HOST:PORT/DB or a directory "
    "[default: $HARNESS_EXAMPLE_DB, else none].",
)
@click.option(
    "--database-readonly",
    is_flag=True,
    envvar="HARNESS_EXAMPLE_DB_READONLY",
    help="Only read the shared database; this campaign's finds go to .hypothesis/examples.",
)
@click.option(
    "--time-bound",
    "time_bound",
    default=None,
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="With --agent: seconds a run may take before it is abandoned (W3) [default: 20].",
)
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None, help=HTML_HELP)
@click.option(
    "--hostile",
    is_flag=True,
    help="With --agent: also serve replies no conforming provider sends (two calls sharing an id, a status "
    "the wire never uses); by default only what a provider or the network between sends.",
)
def fuzz_command(
    examples: int | None,
    seed: int | None,
    tools_module: str | None,
    save_dir: Path | None,
    max_turns: int | None,
    database_url: str | None = None,
    database_readonly: bool = False,
    html: Path | None = None,
    agent_path: str | None = None,
    hostile: bool = False,
    time_bound: float | None = None,
) -> None:
    """Generate adversarial model behaviour and check every run against the reference and the invariants.

    With --tools, your tools' real code runs (an @agentic_function's nested runs get a generated
    model), each scenario runs twice to catch a tool that is not deterministic, and a table says
    what each tool did. With --agent, an agent of any framework is served generated replies on
    the wire it speaks and judged by the wire invariants W1-W6. Exits 1 on a violation or a
    nondeterministic tool.
    """
    if agent_path is not None:
        if tools_module is not None:
            raise click.UsageError("--agent and --tools fuzz different things: give one of them")
        given = click.get_current_context().get_parameter_source
        if any(given(name) is click.core.ParameterSource.COMMANDLINE for name in ("database_url", "database_readonly")):
            # a wire campaign keeps no example database (its seed is the campaign): say so, not ignore
            # it (the environment's HARNESS_EXAMPLE_DB, meant for the loop's campaigns, is let be)
            raise click.UsageError(
                "--database is for our loop's campaigns: a wire campaign (--agent) is replayed by its --seed "
                "and its saved scenarios"
            )
        _fuzz_agent(agent_path, examples, seed, save_dir, max_turns, html, hostile, time_bound)
        return
    if hostile:
        raise click.UsageError("--hostile is for a wire campaign: give it with --agent MODULE:CALLABLE")
    if time_bound is not None:
        raise click.UsageError("--time-bound bounds an agent's runs: it goes with --agent")
    examples = examples or 200
    max_turns = max_turns or 10
    from rich.console import Console
    from rich.markup import escape

    from harness.campaigns._loop_campaign import DEFAULT_SEED, NoToolsError, Stats, load_tools, run_campaign
    from harness.scenarios import UserImportError

    console = Console()
    html_ready(html)
    try:
        tools = load_tools(tools_module) if tools_module else None
    except (NoToolsError, UserImportError) as exc:
        raise click.UsageError(f"--tools {tools_module}: {exc}") from None
    database = None
    if database_url is not None:
        from harness.campaigns._profiles import ExampleDatabaseError, example_database

        try:
            database = example_database(database_url, read_only=database_readonly)
        except ExampleDatabaseError as exc:
            raise click.UsageError(f"--database: {exc}") from None
    chosen = seed if seed is not None else DEFAULT_SEED
    target = f"{len(tools)} tool(s) from {tools_module}" if tools else "generated tools"
    console.print(f"harness fuzz: {examples} scenarios, seed {chosen}, {target}", markup=False, highlight=False)
    with progress_bar(console) as progress:
        task = progress.add_task("checking", total=examples)

        def advance(stats: Stats) -> None:
            progress.update(task, completed=min(stats.scenarios, examples))

        result = run_campaign(
            examples, chosen, tools=tools, save_dir=save_dir, max_turns=max_turns, on_example=advance, database=database
        )
    _print_summary(console, result)
    if html is not None:
        from harness.report import campaign_report

        command = f"harness fuzz --seed {chosen} --examples {examples}" + (f" --tools {tools_module}" if tools else "")
        write_html(html, lambda: campaign_report(result, command=command))
    if result.nondeterministic:
        console.print("\n[bold red]NONDETERMINISTIC TOOL(S)[/]")
        for name, detail in sorted(result.nondeterministic.items()):
            console.print(
                f"{name}: two runs of one scenario gave different ledgers for it: {detail}",
                markup=False,
                highlight=False,
            )
        console.print(
            "(the harness replays scenarios to reproduce failures: a tool must give the same result for the "
            "same arguments, or be fuzzed against a fake)",
            markup=False,
            highlight=False,
        )
    if result.failure is not None:
        failure = result.failure
        console.print(f"\n[bold red]VIOLATION[/] {escape(f'[{failure.problem.name}]')}")
        console.print(failure.problem.message, markup=False, highlight=False)
        console.print("\nminimal scenario:", style="bold")
        console.print(failure.scenario.to_yaml(), markup=False, highlight=False)
        console.print("trace:", style="bold")
        console.print(failure.trace.render(), markup=False, highlight=False)
        if failure.path is not None:
            console.print(f"\nsaved as {failure.path} (replay: harness run {failure.path} --show)")
    if result.failure is not None or result.nondeterministic:
        raise SystemExit(1)
    console.print("[bold green]no violation[/]")


def _print_summary(console: Any, result: Any) -> None:
    from rich.table import Table

    stats = result.stats
    rate = stats.scenarios / stats.seconds if stats.seconds else 0.0
    console.print(
        f"{stats.scenarios} scenarios, {stats.rounds} model rounds, {stats.seconds:.1f}s ({rate:.0f} scenarios/s), "
        f"seed {result.seed}",
        markup=False,
        highlight=False,
    )
    table = Table(title="exercised (over all scenarios)", show_header=True)
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, count in stats.rows():
        table.add_row(label, str(count))
    console.print(table)
    if not stats.per_tool:  # the loop's boundaries (a campaign over your tools is about the tools)
        reached = Table(title="loop boundaries reached (scenarios)", show_header=True)
        reached.add_column("boundary")
        reached.add_column("scenarios", justify="right")
        for label, count in stats.boundary_rows():
            reached.add_row(label, str(count) if count else "[bold red]NOT REACHED[/]")
        console.print(reached)
    if stats.per_tool:
        tools = Table(title="your tools (top-level executions, all scenarios)", show_header=True)
        for column in ("tool", "calls", "results", "error results", "raised"):
            tools.add_column(column, justify="left" if column == "tool" else "right")
        for name, counts in sorted(stats.per_tool.items()):
            tools.add_row(name, *(str(counts[k]) for k in ("calls", "results", "error results", "raised")))
        console.print(tools)


def _fuzz_agent(
    path: str,
    examples: int | None,
    seed: int | None,
    save_dir: Path | None,
    max_turns: int | None,
    html: Path | None = None,
    hostile: bool = False,
    time_bound: float | None = None,
) -> None:
    """``harness fuzz --agent``: the wire campaign, its summary, its verdict (exit 1 on a violation).

    A run that cannot be cancelled is abandoned at its time bound, and may still be running at the
    verdict (a thread of its own executor, say, which the interpreter would join at exit): then the
    command says so and ends the process itself, so it always exits."""
    import sys

    from rich.console import Console

    from harness.agents._campaign import (
        DEFAULT_EXAMPLES,
        DEFAULT_MAX_REPLIES,
        DEFAULT_TIME_BOUND,
        AgentStats,
        UnsteadyAgentError,
        run_agent_campaign,
    )
    from harness.campaigns import DEFAULT_SEED
    from harness.scenarios import UserImportError, import_user_object

    try:
        agent = import_user_object(path)
    except UserImportError as exc:
        raise click.UsageError(f"--agent {path}: {exc}") from None
    if not callable(agent):
        raise click.UsageError(f"--agent {path}: {type(agent).__name__} is not callable")
    _check_agent(path, agent)
    _check_save_dir(save_dir)
    html_ready(html)
    console = Console(file=sys.stdout)  # bound now: the agent's writes during the campaign go to its runs' logs
    examples = examples or DEFAULT_EXAMPLES
    chosen = seed if seed is not None else DEFAULT_SEED
    tiers = "provider, network, invalid (--hostile)" if hostile else "provider, network"
    bound = time_bound or DEFAULT_TIME_BOUND
    console.print(
        f"harness fuzz: {examples} conversations, seed {chosen}, agent {path}, replies of the tiers {tiers}",
        markup=False,
        highlight=False,
    )
    with progress_bar(console) as progress:
        task = progress.add_task("conversing", total=examples)

        def advance(stats: AgentStats) -> None:
            progress.update(task, completed=min(stats.conversations, examples))

        try:
            result = run_agent_campaign(
                agent,
                examples,
                chosen,
                max_replies=max_turns or DEFAULT_MAX_REPLIES,
                time_bound=bound,
                save_dir=save_dir,
                on_example=advance,
                name=path,
                hostile=hostile,
            )
        except UnsteadyAgentError as exc:
            console.print(f"[bold red]UNSTEADY AGENT[/] {exc}", highlight=False)
            raise SystemExit(1) from None
    code = _print_wire_verdict(
        console, result, agent, path, html, examples, max_turns or DEFAULT_MAX_REPLIES, bound, hostile
    )
    if result.stats.left_behind:  # their threads would keep the interpreter alive: leave them, exit now
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if code:
        raise SystemExit(code)


def _print_wire_verdict(
    console: Any,
    result: Any,
    agent: Any,
    path: str,
    html: Path | None,
    examples: int,
    max_turns: int,
    bound: float,
    hostile: bool = False,
) -> int:
    """The campaign's summary and verdict; returns the exit code."""
    from rich.table import Table

    from harness.agents import INVARIANTS
    from harness.agents._agent_output import shown
    from harness.agents._campaign import deviations_of, found_by, nothing_tested
    from harness.agents._first_failure import agent_traceback

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
    for deviation in deviations_of(agent):
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
    if html is not None:
        command = found_by(path, result.seed, examples, max_turns, hostile, bound)
        _write_wire_report(html, result, command, deviations_of(agent))
    if result.failure is None and not stats.requests:
        console.print("[bold red]NOTHING TESTED[/]", highlight=False)
        console.print(nothing_tested(stats), markup=False, highlight=False)
        return 1
    if result.failure is None:
        console.print("[bold green]no violation[/]")
        return 0
    failure = result.failure
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
    return 1


def _check_agent(path: str, agent: Any) -> None:
    """Refuse, as a usage error, an agent no run could call or a declaration no judgement could use:
    otherwise every run would raise the same ``TypeError`` and the campaign test nothing."""
    from harness.agents._conversation import check_signature
    from harness.agents._invariants import declared_deviations

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
    from harness.agents._agent_output import shown
    from harness.agents._campaign import nothing_tested
    from harness.agents._conversation import as_recorded
    from harness.agents._first_failure import agent_traceback
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
