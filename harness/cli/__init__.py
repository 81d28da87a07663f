"""The ``harness`` command: every subcommand, each importing what it drives only when it runs.

So ``harness --help`` stays fast, an optional extra that is missing only breaks the command that
needs it, and the modules the commands drive (``runner``, ``check``, ``fuzz``, ``conformance``,
``demo``, ``cassette_tools``, ``cassette_lint``) know nothing of click.

What a user meets is part of the contract (DESIGN section 4): input a command cannot use (a
missing file or module, a module that raises on import, a malformed scenario, ``--examples 0``)
is a usage error with exit status 2, never a traceback; user modules are imported from the
current directory, as ``python -m`` would; and an error of the harness itself is one line
saying so, not a bare ``AttributeError``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

__all__ = [
    "cassettes_group",
    "conformance_command",
    "demo_command",
    "emulate_command",
    "fuzz_command",
    "main",
    "run_command",
    "schema_command",
]

_HELP = {
    "demo": "Run the example agent on the scripted backend and print its trace.",
    "run": "Run scenario YAML files and check them against the reference.",
    "fuzz": "Generate adversarial model behaviour and check every invariant.",
    "conformance": "Replay recorded provider cassettes through the real backends.",
    "cassettes": "Show, lint and convert recorded cassettes (show, lint, to-scenario).",
    "schema": "Print the JSON Schema of scenario files, for editors.",
    "emulate": "Serve a scenario's turns on every provider's wire, on a loopback port.",
}

USAGE_ERROR = 2
"""Exit status for input a command cannot use (click's own, for bad options too)."""


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_HELP)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return _HERE.get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, _HELP[name]) for name in sorted(_HELP)])

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:  # the reader went away (`harness run ... | head`): click exits quietly
            raise
        except Exception as exc:  # a bug of ours: one line that says so, never a traceback
            raise click.ClickException(
                f"internal error: {type(exc).__name__}: {exc} (this is a bug in the harness; please report it)"
            ) from None


@click.group(cls=_LazyGroup)
@click.version_option(package_name="openprogram")
def main() -> None:
    """Deterministic simulation and record-replay testing for tool-calling agents."""


_HTML_HELP = "Also write an HTML report here: one self-contained file (docs/reports.md)."


def _html_ready(path: Path | None) -> None:
    """Before the work: a report that cannot be written is said at once, not after a campaign."""
    if path is None:
        return
    from harness.report import MissingReportExtra, stylesheet

    try:
        stylesheet()
    except MissingReportExtra as exc:
        raise click.UsageError(f"--html: {exc}") from None
    if not path.parent.is_dir():
        raise click.UsageError(f"--html {path}: cannot write: no such directory {path.parent}")


def _write_html(path: Path, make: Callable[[], str]) -> None:
    """Render a report and write it; a missing ``report`` extra or an unwritable path is the
    user's to fix (a usage error), not a traceback."""
    from harness.report import MissingReportExtra

    try:
        text = make()
    except MissingReportExtra as exc:
        raise click.UsageError(f"--html: {exc}") from None
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.UsageError(f"--html {path}: cannot write: {exc.strerror or exc}") from None
    click.echo(f"wrote {path} ({len(text.encode('utf-8')) // 1024 or 1} KiB)", err=True)


def _expand(paths: Iterable[Path], what: str) -> list[Path]:
    """Files as given; a directory as every *.yaml / *.yml under it (sorted, recursively)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
            if not found:
                raise click.UsageError(f"no {what} files (*.yaml, *.yml) in {path}")
            out.extend(found)
        else:
            out.append(path)
    return out


# -- harness run FILE... -------------------------------------------------------------------------


@click.command("run")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=True, path_type=Path))
@click.option("--show", is_flag=True, help="Print each run's trace as a readable timeline.")
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None, help=_HTML_HELP)
def run_command(files: tuple[Path, ...], show: bool, html: Path | None = None) -> None:
    """Run scenario YAML files against the loop; check the reference model and the invariants.

    A directory runs every *.yaml / *.yml file under it. Each file is reported, then a summary.
    Exits 1 if any scenario shows a violation, 2 if any file could not be used (malformed, or a
    python: tool that cannot be imported), else 0.
    """
    from harness.checking._check import check
    from harness.scenarios._scenario import Scenario, ScenarioError

    paths = _expand(files, "scenario")
    _html_ready(html)
    failed = unusable = 0
    checked: list[tuple[str, Any]] = []
    errors: list[str] = []
    for path in paths:
        try:
            scenario = Scenario.from_yaml(path)
            result = check(scenario)
        except ScenarioError as exc:
            click.echo(f"ERROR {exc}")
            errors.append(str(exc))
            unusable += 1
            continue
        checked.append((str(path), result))
        status = "ok  " if result.ok else "FAIL"
        click.echo(f"{status} {path} (reason={result.trace.reason}, requests={len(result.trace.requests)})")
        for note in scenario.notes_for_run():
            click.echo(f"  note: {note}")
        for problem in result.problems:
            click.echo(f"  violation [{problem.name}]:")
            click.echo("    " + problem.message.replace("\n", "\n    "))
        if show:
            click.echo("    " + result.trace.render().replace("\n", "\n    "))
        failed += not result.ok
    passed = len(paths) - failed - unusable
    if html is not None:
        from harness.report import run_report

        _write_html(html, lambda: run_report(checked, unusable=errors))
    if failed or unusable:
        parts = [f"{passed} passed", f"{failed} failed"] + ([f"{unusable} could not be used"] if unusable else [])
        click.echo(f"{len(paths)} scenario(s): {', '.join(parts)}")
        raise SystemExit(USAGE_ERROR if unusable else 1)
    click.echo(f"all {len(paths)} scenario(s) passed")


# -- harness schema ------------------------------------------------------------------------------


@click.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of scenario files; point an editor at it (docs/scenarios.md)."""
    from harness.scenarios._scenario import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


# -- harness conformance FILE... -------------------------------------------------------------------


@click.command("conformance")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per file, one per line.")
def conformance_command(files: tuple[Path, ...], as_json: bool) -> None:
    """Replay provider cassettes (vcrpy YAML) through the backends and print what they read.

    A directory replays every *.yaml / *.yml file under it. A file that cannot be replayed is
    reported (with --json also as {"file", "error"}) and the others still run; exits 1 then.
    """
    from harness.recording._conformance import report

    status = report(_expand(files, "cassette"), as_json=as_json)
    if status:
        click.get_current_context().exit(status)


# -- harness cassettes show | lint | to-scenario ----------------------------------------------------


@click.group("cassettes")
def cassettes_group() -> None:
    """Read recorded cassettes: a timeline (show), checks (lint), a scenario file (to-scenario)."""


def _cassette(path: Path) -> Path:
    if not path.is_file():
        raise click.UsageError(f"{path}: no such cassette file")
    return path


@cassettes_group.command("show", short_help="Print a recorded conversation as a timeline.")
@click.argument("cassette", type=click.Path(path_type=Path))
@click.option("--width", default=100, show_default=True, type=click.IntRange(min=20), help="Clip texts to this.")
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None, help=_HTML_HELP)
def show_command(cassette: Path, width: int, html: Path | None = None) -> None:
    """Print a recorded conversation as a timeline: per interaction the endpoint, model, the
    request's new messages and the reply (text, tool calls, stop reason, usage; streams decoded)."""
    from harness.recording._tools import ConversionError, read_steps, render_timeline

    _html_ready(html)
    try:
        click.echo(render_timeline(_cassette(cassette), width=width))
        steps = read_steps(cassette) if html is not None else []
    except ConversionError as exc:
        raise click.UsageError(_one_line(exc)) from None
    if html is not None:
        from harness.report import cassette_report

        _write_html(html, lambda: cassette_report(steps, source=str(cassette)))


@cassettes_group.command("to-scenario", short_help="Turn a cassette into a scenario file for harness run.")
@click.argument("cassette", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
def to_scenario_command(cassette: Path, output: Path | None) -> None:
    """Turn the recorded model turns into a scenario file that `harness run` replays through the
    scripted model: prompts from the first request, tools and their results from the requests,
    turns from the replies. Notes on what was left out go to stderr."""
    from harness.recording._tools import ConversionError, to_scenario
    from harness.scenarios._scenario import Scenario, ScenarioError

    try:
        data, notes = to_scenario(_cassette(cassette))
        text = Scenario.from_data(data).to_yaml()
    except (ConversionError, ScenarioError) as exc:
        raise click.UsageError(f"cannot convert {cassette}: {_one_line(exc)}") from None
    header = f"# harness cassettes to-scenario {cassette}\n"
    for note in notes:
        click.echo(f"note: {note}", err=True)
    if output is None:
        click.echo(header + text, nl=False)
        return
    try:
        output.write_text(header + text, encoding="utf-8")
    except OSError as exc:
        raise click.UsageError(f"-o {output}: cannot write: {exc.strerror or exc}") from None
    click.echo(f"wrote {output} ({len(data['turns'])} turn(s)); replay it with: harness run {output}")


@cassettes_group.command("lint", short_help="Check format, secrets and unused cassettes.")
@click.argument("directory", required=False, type=click.Path(path_type=Path))
@click.option(
    "--tests",
    "tests_dir",
    default="tests",
    show_default=True,
    type=click.Path(path_type=Path),
    help="Where the tests that use the cassettes live (for the unused/orphaned check).",
)
@click.option("--no-usage", is_flag=True, help="Skip the unused/orphaned check (cassettes of another layout).")
def lint_command(directory: Path | None, tests_dir: Path, no_usage: bool) -> None:
    """Check every cassette under DIRECTORY (default cassettes/, else pytest-recording's
    tests/cassettes/; scenarios/ left out): it parses and each request routes to a provider; no
    credential header, key= parameter, credential-looking value or environment secret is in it; a
    test uses it. One line per finding; exits 1 on any."""
    from harness.recording._lint import lint

    if directory is None:
        found = [path for path in (Path("cassettes"), Path("tests") / "cassettes") if path.is_dir()]
        if not found:
            raise click.UsageError("no cassettes/ nor tests/cassettes/ here: name the folder to lint")
        directory = found[0]
    if not directory.is_dir():
        raise click.UsageError(f"{directory}: no such directory")
    if not no_usage and not tests_dir.is_dir():
        raise click.UsageError(f"--tests {tests_dir}: no such directory (or pass --no-usage)")
    findings, checked = lint(directory, None if no_usage else tests_dir)
    for finding in findings:
        click.echo(str(finding))
    noun = "cassette" if checked == 1 else "cassettes"
    if findings:
        click.echo(f"{len(findings)} finding(s) in {checked} {noun}")
        raise SystemExit(1)
    click.echo(f"{checked} {noun}, no findings")


@cassettes_group.command("drift", short_help="Re-send recorded requests; report how the replies' shape changed.")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--base-url", required=True, help="The server to ask: the emulator, a proxy, or the provider's own URL.")
def drift_command(files: tuple[Path, ...], base_url: str) -> None:
    """Send each recorded request of each cassette to BASE_URL and compare the reply's structure
    (fields, their types, the sequence of stream events) with the recorded one; values are not
    compared. One line per difference, benign (something added) or breaking; exits 1 on a breaking one."""
    from harness.recording._tools import ConversionError, drift

    breaking = 0
    for path in _expand(files, "cassette"):
        try:
            found = drift(path, base_url)
        except ConversionError as exc:
            raise click.UsageError(_one_line(exc)) from None
        for difference in found:
            click.echo(f"{path}: {difference}")
        breaking += sum(difference.severity == "breaking" for difference in found)
        if not found:
            click.echo(f"{path}: no drift")
    if breaking:
        raise SystemExit(1)


def _progress(console: Any) -> Any:
    """The campaigns' progress bar (rich), gone when the campaign ends so the summary stands alone."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


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
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None, help=_HTML_HELP)
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
        if html is not None:
            raise click.UsageError("--html reports our own loop's campaign; with --agent it is not available yet")
        _fuzz_agent(agent_path, examples, seed, save_dir, max_turns)
        return
    examples = examples or 200
    max_turns = max_turns or 10
    from rich.console import Console
    from rich.markup import escape

    from harness.campaigns._fuzz import DEFAULT_SEED, NoToolsError, Stats, load_tools, run_campaign
    from harness.scenarios._parts import UserImportError

    console = Console()
    _html_ready(html)
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
    with _progress(console) as progress:
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
        _write_html(html, lambda: campaign_report(result, command=command))
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
    path: str, examples: int | None, seed: int | None, save_dir: Path | None, max_turns: int | None
) -> None:
    """``harness fuzz --agent``: the wire campaign, its summary, its verdict (exit 1 on a violation)."""
    from rich.console import Console
    from rich.table import Table

    from harness.agents._campaign import (
        DEFAULT_EXAMPLES,
        DEFAULT_MAX_REPLIES,
        AgentStats,
        UnsteadyAgentError,
        deviations_of,
        run_agent_campaign,
    )
    from harness.agents._invariants import INVARIANTS
    from harness.campaigns._fuzz import DEFAULT_SEED
    from harness.scenarios._parts import UserImportError, import_user_object

    try:
        agent = import_user_object(path)
    except UserImportError as exc:
        raise click.UsageError(f"--agent {path}: {exc}") from None
    if not callable(agent):
        raise click.UsageError(f"--agent {path}: {type(agent).__name__} is not callable")
    console = Console()
    examples = examples or DEFAULT_EXAMPLES
    chosen = seed if seed is not None else DEFAULT_SEED
    console.print(f"harness fuzz: {examples} conversations, seed {chosen}, agent {path}", markup=False, highlight=False)
    with _progress(console) as progress:
        task = progress.add_task("conversing", total=examples)

        def advance(stats: AgentStats) -> None:
            progress.update(task, completed=min(stats.conversations, examples))

        try:
            result = run_agent_campaign(
                agent,
                examples,
                chosen,
                max_replies=max_turns or DEFAULT_MAX_REPLIES,
                save_dir=save_dir,
                on_example=advance,
            )
        except UnsteadyAgentError as exc:
            console.print(f"[bold red]UNSTEADY AGENT[/] {exc}", highlight=False)
            raise SystemExit(1) from None
    stats = result.stats
    rate = stats.conversations / stats.seconds if stats.seconds else 0.0
    console.print(
        f"{stats.conversations} conversations, {stats.requests} requests, {stats.seconds:.1f}s ({rate:.0f}/s; "
        f"the agent {stats.agent_seconds:.1f}s, the harness {stats.harness_seconds:.1f}s), "
        f"{'in process' if result.in_process else 'on loopback'}, seed {result.seed}",
        markup=False,
        highlight=False,
    )
    table = Table(title="exercised (over all conversations)")
    table.add_column("what")
    table.add_column("count", justify="right")
    for label, count in stats.rows():
        table.add_row(label, str(count))
    console.print(table)
    verdicts = Table(title="wire invariants")
    for column in ("invariant", "verdict"):
        verdicts.add_column(column)
    broken = result.failure.violation.invariant if result.failure else None
    for name, text in INVARIANTS.items():
        verdict = "VIOLATED" if name == broken else "held"
        if stats.declared[name]:
            verdict += f" ({stats.declared[name]} declared deviation(s))"
        verdicts.add_row(f"{name} {text}", verdict)
    console.print(verdicts)
    for deviation in deviations_of(agent):
        console.print(
            f"declared: {deviation.invariant} after {', '.join(deviation.kinds) or 'any reply'}: {deviation.reason}",
            markup=False,
            highlight=False,
        )
    if result.failure is None and not stats.requests:
        console.print(
            f"[bold red]NOTHING TESTED[/] no run sent a request to the emulator (the first one raised "
            f"{stats.first_error}): does the agent build its client on base_url (OpenAI clients: base_url + '/v1')?",
            highlight=False,
        )
        raise SystemExit(1)
    if result.failure is None:
        console.print("[bold green]no violation[/]")
        return
    failure = result.failure
    console.print(f"\n[bold red]VIOLATION[/] {failure.violation.invariant}")
    console.print(str(failure.violation), markup=False, highlight=False)
    console.print("\nminimal scenario:", style="bold")
    console.print(failure.scenario.to_yaml(), markup=False, highlight=False)
    if failure.path is not None:
        console.print(f"saved as {failure.path} (serve it: harness emulate --script {failure.path})")
    raise SystemExit(1)


# -- harness emulate --script FILE ----------------------------------------------------------------


@click.command("emulate")
@click.option("--script", "script", required=True, type=click.Path(path_type=Path), help="A scenario YAML file.")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
def emulate_command(script: Path, host: str, port: int) -> None:
    """Serve the turns of a scenario file on every provider's real paths until stopped.

    Prints the base URL first. OpenAI clients take BASE/v1; Anthropic, google-genai
    (http_options.base_url) and boto3 (endpoint_url) take BASE. Each request gets the next turn.
    """
    from harness.scenarios._scenario import Scenario, ScenarioError

    if not script.is_file():
        raise click.UsageError(f"--script {script}: no such file")
    try:
        Scenario.from_yaml(script)
    except ScenarioError as exc:
        raise click.UsageError(f"--script {script}: {exc}") from None
    try:
        from harness.emulator._server import serve
    except ImportError as exc:
        raise click.UsageError(
            f"the emulator needs the 'emulator' extra (starlette, uvicorn): {exc.name or exc} is missing; "
            'install it with pip install -e ".[emulator]" from the checkout'
        ) from None
    try:
        serve(script, host=host, port=port)
    except OSError as exc:
        raise click.UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


# -- harness demo ----------------------------------------------------------------------------------


@click.command("demo")
def demo_command() -> None:
    """Run the example agent on the scripted backend and print its event trace."""
    from harness.cli._demo import run_demo

    answer, rendered = run_demo()
    click.echo(rendered)
    click.echo("")
    click.echo(f"answer: {answer}")


_HERE: dict[str, click.Command] = {
    "cassettes": cassettes_group,
    "conformance": conformance_command,
    "demo": demo_command,
    "run": run_command,
    "fuzz": fuzz_command,
    "schema": schema_command,
    "emulate": emulate_command,
}


if __name__ == "__main__":  # pragma: no cover
    main()
