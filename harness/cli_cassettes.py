"""``harness cassettes``: show, lint and convert vcrpy cassettes (registered by ``harness.cli``).

Kept apart from ``harness.cli`` so that module stays a screenful per command; the commands here
are as thin as the others: each imports the module it drives when it runs (``cassette_tools``,
``cassette_lint``), and input it cannot use is a one-line usage error with exit status 2.
"""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["USAGE_ERROR"]  # the commands are harness.cli's (harness.cli.cassettes_group)

USAGE_ERROR = 2
"""Exit status for input a command cannot use (the same as every ``harness`` command's)."""


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
def show_command(cassette: Path, width: int) -> None:
    """Print a recorded conversation as a timeline: per interaction the endpoint, model, the
    request's new messages and the reply (text, tool calls, stop reason, usage; streams decoded)."""
    from harness.cassette_tools import ConversionError, render_timeline

    try:
        click.echo(render_timeline(_cassette(cassette), width=width))
    except ConversionError as exc:
        raise click.UsageError(_one_line(exc)) from None


@cassettes_group.command("to-scenario", short_help="Turn a cassette into a scenario file for harness run.")
@click.argument("cassette", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
def to_scenario_command(cassette: Path, output: Path | None) -> None:
    """Turn the recorded model turns into a scenario file that `harness run` replays through the
    scripted model: prompts from the first request, tools and their results from the requests,
    turns from the replies. Notes on what was left out go to stderr."""
    from harness.cassette_tools import ConversionError, to_scenario
    from harness.scenario import Scenario, ScenarioError

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
@click.argument("directory", required=False, default="cassettes", type=click.Path(path_type=Path))
@click.option(
    "--tests",
    "tests_dir",
    default="tests",
    show_default=True,
    type=click.Path(path_type=Path),
    help="Where the tests that use the cassettes live (for the unused/orphaned check).",
)
@click.option("--no-usage", is_flag=True, help="Skip the unused/orphaned check (cassettes of another layout).")
def lint_command(directory: Path, tests_dir: Path, no_usage: bool) -> None:
    """Check every cassette under DIRECTORY (default cassettes/, scenarios/ left out): it parses and
    each request routes to a provider; no credential header, key= parameter, credential-looking
    value or environment secret is in it; a test uses it. One line per finding; exits 1 on any."""
    from harness.cassette_lint import lint

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


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
