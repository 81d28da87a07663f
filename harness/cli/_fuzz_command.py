"""``harness fuzz``: the command, its options, and our loop's campaign (``--tools``); the wire
campaign against any agent (``--agent``, ``--agent-cmd``) is ``_fuzz_agent``'s."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from harness.cli._common import HTML_HELP, html_ready, progress_bar, write_html

_STARTED = [time.perf_counter()]
"""When the command started (this module is imported with ``harness`` itself): a wire campaign's
start-up, which its summary gives apart, counts from here, the agent's own imports included. Used
once: a second command in the same process (click's test runner) starts when it is invoked."""


def command_started() -> float:
    return _STARTED.pop() if _STARTED else time.perf_counter()


# -- harness fuzz ----------------------------------------------------------------------------------


@click.command("fuzz")
@click.option(
    "--examples",
    "-n",
    default=None,
    type=click.IntRange(min=1),
    help="Scenarios to generate [default: 200; with --agent or --agent-cmd: 100 conversations].",
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
    "--agent-cmd",
    "agent_cmd",
    default=None,
    metavar='"CMD ARGS"',
    help="Fuzz an agent in any language, run as a command: one process per conversation, each provider's "
    "base URL in its environment, the prompt on stdin, its stdout the answer (docs/wire-campaigns.md).",
)
@click.option(
    "--agent-cmd-mode",
    "agent_cmd_mode",
    type=click.Choice(["process", "lines"]),
    default="process",
    show_default=True,
    help="With --agent-cmd: a process per conversation, or one long-lived process reading a JSON line per "
    "conversation on stdin and answering with one on stdout (start-up paid once).",
)
@click.option(
    "--deviation",
    "deviations",
    multiple=True,
    metavar="W<n>[:KINDS]=REASON",
    help="With --agent or --agent-cmd: a deliberate deviation of the agent from one invariant, with its "
    'reason (repeatable), e.g. --deviation W2="keeps only the last reply".',
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
    help="Model turns per scenario at most [default: 10; with --agent or --agent-cmd: 6 replies drawn per "
    "conversation].",
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
    help="With --agent or --agent-cmd: seconds a run may take before it is abandoned (W3; a command's process "
    "group is killed) [default: 20].",
)
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None, help=HTML_HELP)
@click.option(
    "--hostile",
    is_flag=True,
    help="With --agent or --agent-cmd: also serve replies no conforming provider sends (two calls sharing an id, "
    "a status the wire never uses); by default only what a provider or the network between sends.",
)
@click.option(
    "--from-cassette",
    "from_cassette",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --agent or --agent-cmd: seed the campaign with a recorded conversation (a cassette the recorded "
    "fixture or harness proxy wrote): example 0 replays it unchanged, every other example mutates it.",
)
@click.option(
    "--conversation",
    "conversation",
    type=click.IntRange(min=1),
    default=None,
    help="With --from-cassette: the cassette's conversation to seed from (from 1) [default: each in turn].",
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
    agent_cmd: str | None = None,
    agent_cmd_mode: str = "process",
    deviations: tuple[str, ...] = (),
    from_cassette: Path | None = None,
    conversation: int | None = None,
) -> None:
    """Generate adversarial model behaviour and check every run against the reference and the invariants.

    With --tools, your tools' real code runs (an @agentic_function's nested runs get a generated
    model), each scenario runs twice to catch a tool that is not deterministic, and a table says
    what each tool did. With --agent (a Python callable) or --agent-cmd (a command, in any
    language), an agent of any framework is served generated replies on the wire it speaks and
    judged by the wire invariants W1-W8. Exits 1 on a violation or a nondeterministic tool; a wire
    campaign exits 0 held, 1 violation, 2 usage, 3 inconclusive (too little was tested to say "held"),
    130 interrupted.
    """
    given = click.get_current_context().get_parameter_source
    if agent_path is not None or agent_cmd is not None:
        _refuse_with_an_agent(agent_path, agent_cmd, tools_module, given)
        wire: dict[str, Any] = {"examples": examples, "seed": seed, "save_dir": save_dir, "max_turns": max_turns}
        wire.update(html=html, hostile=hostile, time_bound=time_bound, started=command_started())
        wire.update(from_cassette=from_cassette, conversation=conversation)
        from harness.cli._fuzz_agent import fuzz_agent

        fuzz_agent(agent_path, agent_cmd, agent_cmd_mode, deviations, wire)
        return
    if conversation is not None and from_cassette is None:
        raise click.UsageError("--conversation picks a conversation of --from-cassette: give it with --from-cassette")
    wire_only = (("--hostile", hostile), ("--time-bound", time_bound is not None), ("--deviation", deviations))
    for flag, value in (*wire_only, ("--from-cassette", from_cassette is not None)):
        if value:
            raise click.UsageError(f"{flag} is for a wire campaign: give it with --agent or --agent-cmd")
    if given("agent_cmd_mode") is click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("--agent-cmd-mode says how to run --agent-cmd: give it with --agent-cmd")
    _fuzz_tools(examples or 200, seed, tools_module, save_dir, max_turns or 10, database_url, database_readonly, html)


def _refuse_with_an_agent(agent_path: str | None, agent_cmd: str | None, tools_module: str | None, given: Any) -> None:
    """Options that mean nothing to a wire campaign are said to, not ignored."""
    if agent_path is not None and agent_cmd is not None:
        raise click.UsageError("--agent and --agent-cmd name the agent twice: give one of them")
    if tools_module is not None:
        raise click.UsageError("--agent/--agent-cmd and --tools fuzz different things: give one of them")
    if agent_cmd is None and given("agent_cmd_mode") is click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("--agent-cmd-mode says how to run --agent-cmd, not a Python --agent")
    if any(given(name) is click.core.ParameterSource.COMMANDLINE for name in ("database_url", "database_readonly")):
        # a wire campaign keeps no example database (its seed is the campaign): say so, not ignore
        # it (the environment's HARNESS_EXAMPLE_DB, meant for the loop's campaigns, is let be)
        raise click.UsageError(
            "--database is for our loop's campaigns: a wire campaign (--agent) is replayed by its --seed "
            "and its saved scenarios"
        )


def _fuzz_tools(
    examples: int,
    seed: int | None,
    tools_module: str | None,
    save_dir: Path | None,
    max_turns: int,
    database_url: str | None,
    database_readonly: bool,
    html: Path | None,
) -> None:
    """Our loop's campaign: generated tools, or the ``--tools`` module's."""
    from rich.console import Console

    from harness.campaigns._loop_campaign import DEFAULT_SEED, NoToolsError, Stats, load_tools, run_campaign
    from harness.scenarios import UserImportError

    console = Console()
    html_ready(html)
    try:
        tools = load_tools(tools_module) if tools_module else None
    except (NoToolsError, UserImportError) as exc:
        raise click.UsageError(f"--tools {tools_module}: {exc}") from None
    database = _database(database_url, database_readonly)
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
    _print_loop_verdict(console, result)


def _database(database_url: str | None, read_only: bool) -> Any:
    if database_url is None:
        return None
    from harness.campaigns._profiles import ExampleDatabaseError, example_database

    try:
        return example_database(database_url, read_only=read_only)
    except ExampleDatabaseError as exc:
        raise click.UsageError(f"--database: {exc}") from None


def _print_loop_verdict(console: Any, result: Any) -> None:
    """Nondeterministic tools and the minimal failing scenario; exit 1 on either."""
    from rich.markup import escape

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
