"""The ``harness`` command: every subcommand, each importing what it drives only when it runs.

So ``harness --help`` stays fast, an optional extra that is missing only breaks the command that
needs it, and the modules the commands drive (``runner``, ``check``, ``fuzz``, ``demo``) know
nothing of click. ``conformance`` is defined beside the backends it replays and looked up lazily.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import click

_HELP = {
    "demo": "Run the example agent on the scripted backend and print its trace.",
    "run": "Run scenario YAML files and check them against the reference.",
    "fuzz": "Generate adversarial model behaviour and check every invariant.",
    "conformance": "Replay recorded provider cassettes through the real backends.",
    "schema": "Print the JSON Schema of scenario files, for editors.",
}
_ELSEWHERE = {"conformance": ("harness.conformance", "conformance_command")}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_HELP)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in _ELSEWHERE:
            module, attribute = _ELSEWHERE[name]
            return getattr(importlib.import_module(module), attribute)
        return _HERE.get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, _HELP[name]) for name in sorted(_HELP)])


@click.group(cls=_LazyGroup)
@click.version_option(package_name="openprogram")
def main() -> None:
    """Deterministic simulation and record-replay testing for tool-calling agents."""


# -- harness run FILE... -------------------------------------------------------------------------


@click.command("run")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=True, path_type=Path))
@click.option("--show", is_flag=True, help="Print each run's trace as a readable timeline.")
def run_command(files: tuple[Path, ...], show: bool) -> None:
    """Run scenario YAML files against the loop; check the reference model and the invariants.

    A directory runs every *.yaml file in it. Exits 1 if any scenario shows a violation.
    """
    from harness.check import check, invariants_available
    from harness.scenario import Scenario, ScenarioError

    paths: list[Path] = []
    for path in files:
        paths.extend(sorted(path.glob("*.y*ml")) if path.is_dir() else [path])
    if not invariants_available():
        click.echo("note: harness.invariants is not available; checking against the reference model only", err=True)
    failed = 0
    for path in paths:
        try:
            result = check(Scenario.from_yaml(path))
        except ScenarioError as exc:
            click.echo(f"ERROR {exc}")
            failed += 1
            continue
        status = "ok  " if result.ok else "FAIL"
        click.echo(f"{status} {path} (reason={result.trace.reason}, requests={len(result.trace.requests)})")
        for problem in result.problems:
            click.echo(f"  violation [{problem.name}]:")
            click.echo("    " + problem.message.replace("\n", "\n    "))
        if show:
            click.echo("    " + result.trace.render().replace("\n", "\n    "))
        failed += not result.ok
    if failed:
        click.echo(f"{failed} of {len(paths)} scenario(s) failed")
        raise SystemExit(1)
    click.echo(f"all {len(paths)} scenario(s) passed")


# -- harness schema ------------------------------------------------------------------------------


@click.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of scenario files; point an editor at it (docs/scenarios.md)."""
    from harness.scenario import json_schema

    click.echo(json.dumps(json_schema(), indent=2))


# -- harness fuzz ----------------------------------------------------------------------------------


@click.command("fuzz")
@click.option("--examples", "-n", default=200, show_default=True, help="Scenarios to generate.")
@click.option("--seed", type=int, default=None, help="Reproduce a campaign (printed at the start).")
@click.option("--tools", "tools_module", default=None, help="package.module whose @function tools to fuzz with.")
@click.option(
    "--save-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to save a shrunk failure [default: $HARNESS_SCENARIO_DIR or cassettes/scenarios].",
)
@click.option("--max-turns", default=10, show_default=True, help="Model turns per scenario at most.")
def fuzz_command(
    examples: int, seed: int | None, tools_module: str | None, save_dir: Path | None, max_turns: int
) -> None:
    """Generate adversarial model behaviour and check every run against the reference and the invariants."""
    import random

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from harness.fuzz import NoToolsError, Stats, load_tools, run_campaign

    console = Console()
    try:
        tools = load_tools(tools_module) if tools_module else None
    except NoToolsError as exc:
        raise click.UsageError(str(exc)) from None
    chosen = seed if seed is not None else random.randrange(2**32)
    target = f"{len(tools)} tool(s) from {tools_module}" if tools else "generated tools"
    console.print(f"harness fuzz: {examples} scenarios, seed {chosen}, {target}")
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("checking", total=examples)

        def advance(stats: Stats) -> None:
            progress.update(task, completed=min(stats.scenarios, examples))

        result = run_campaign(examples, chosen, tools=tools, save_dir=save_dir, max_turns=max_turns, on_example=advance)
    _print_summary(console, result)
    if result.failure is not None:
        failure = result.failure
        console.print(f"\n[bold red]VIOLATION[/] [{failure.problem.name}]")
        console.print(failure.problem.message, markup=False, highlight=False)
        console.print("\nminimal scenario:", style="bold")
        console.print(failure.scenario.to_yaml(), markup=False, highlight=False)
        console.print("trace:", style="bold")
        console.print(failure.trace.render(), markup=False, highlight=False)
        if failure.path is not None:
            console.print(f"\nsaved as {failure.path} (replay: harness run {failure.path} --show)")
        raise SystemExit(1)
    console.print("[bold green]no violation[/]")


def _print_summary(console: Any, result: Any) -> None:
    from rich.table import Table

    stats = result.stats
    rate = stats.scenarios / stats.seconds if stats.seconds else 0.0
    console.print(
        f"{stats.scenarios} scenarios, {stats.rounds} model rounds, {stats.seconds:.1f}s ({rate:.0f} scenarios/s), "
        f"seed {result.seed}"
    )
    table = Table(title="exercised", show_header=True)
    table.add_column("what")
    table.add_column("count", justify="right")
    for reason, count in sorted(stats.reasons.items()):
        table.add_row(f"end reason {reason}", str(count))
    for kind, count in sorted(stats.kinds.items()):
        table.add_row(kind, str(count))
    console.print(table)


# -- harness demo ----------------------------------------------------------------------------------


@click.command("demo")
def demo_command() -> None:
    """Run the example agent on the scripted backend and print its event trace."""
    from harness.demo import run_demo

    answer, rendered = run_demo()
    click.echo(rendered)
    click.echo("")
    click.echo(f"answer: {answer}")


_HERE: dict[str, click.Command] = {
    "demo": demo_command,
    "run": run_command,
    "fuzz": fuzz_command,
    "schema": schema_command,
}


def run(*args: Any) -> None:  # pragma: no cover - convenience for `python -m harness.cli`
    main(*args)


if __name__ == "__main__":  # pragma: no cover
    main()
