"""``harness cassettes``: show, to-scenario, lint and drift, each a thin shell over ``harness.recording``."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli._common import HTML_HELP, expand, html_ready, one_line, write_html

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
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None, help=HTML_HELP)
def show_command(cassette: Path, width: int, html: Path | None = None) -> None:
    """Print a recorded conversation as a timeline: per interaction the endpoint, model, the
    request's new messages and the reply (text, tool calls, stop reason, usage; streams decoded)."""
    from harness.recording._tools import ConversionError, read_steps, render_timeline

    html_ready(html)
    try:
        click.echo(render_timeline(_cassette(cassette), width=width))
        steps = read_steps(cassette) if html is not None else []
    except ConversionError as exc:
        raise click.UsageError(one_line(exc)) from None
    click.echo(f"seed a wire campaign with it: harness fuzz --agent MODULE:CALLABLE --from-cassette {cassette}")
    if html is not None:
        from harness.agents import judge_recording
        from harness.report import cassette_report

        write_html(html, lambda: cassette_report(steps, source=str(cassette), judged=judge_recording(steps)))


@cassettes_group.command("to-scenario", short_help="Turn a cassette into a scenario file for harness run.")
@click.argument("cassette", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here, not to stdout.")
def to_scenario_command(cassette: Path, output: Path | None) -> None:
    """Turn the recorded model turns into a scenario file that `harness run` replays through the
    scripted model: prompts from the first request, tools and their results from the requests,
    turns from the replies. Notes on what was left out go to stderr."""
    from harness.recording._tools import ConversionError, to_scenario
    from harness.scenarios import Scenario, ScenarioError

    try:
        data, notes = to_scenario(_cassette(cassette))
        text = Scenario.from_data(data).to_yaml()
    except (ConversionError, ScenarioError) as exc:
        raise click.UsageError(f"cannot convert {cassette}: {one_line(exc)}") from None
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
@click.option(
    "--max-age",
    "max_age",
    default=None,
    metavar="AGE",
    help="Also report cassettes recorded longer ago than AGE ('90d', '12w', seconds), or not dated.",
)
def lint_command(directory: Path | None, tests_dir: Path, no_usage: bool, max_age: str | None = None) -> None:
    """Check every cassette under DIRECTORY (default cassettes/, else pytest-recording's
    tests/cassettes/; scenarios/ left out): it parses and each request routes to a provider; no
    credential header, key= parameter, credential-looking value or environment secret is in it; no
    body contradicts its Content-Encoding and no interaction repeats an earlier one; a test uses
    it. One line per finding; exits 1 on any."""
    from harness.recording import lint
    from harness.recording._age import parse_max_age

    try:
        limit = parse_max_age(int(max_age) if max_age and max_age.isdigit() else max_age) if max_age else None
    except ValueError as exc:
        raise click.UsageError(f"--max-age: {exc}") from None
    if directory is None:
        found = [path for path in (Path("cassettes"), Path("tests") / "cassettes") if path.is_dir()]
        if not found:
            raise click.UsageError("no cassettes/ nor tests/cassettes/ here: name the folder to lint")
        directory = found[0]
    if not directory.is_dir():
        raise click.UsageError(f"{directory}: no such directory")
    if not no_usage and not tests_dir.is_dir():
        source = click.get_current_context().get_parameter_source("tests_dir")
        if source is not click.core.ParameterSource.DEFAULT:
            raise click.UsageError(f"--tests {tests_dir}: no such directory (or pass --no-usage)")
        tests_dir = directory.parent  # pytest-recording's flat layout: test modules beside their cassettes/
    findings, checked = lint(directory, None if no_usage else tests_dir, max_age=limit)
    for finding in findings:
        click.echo(str(finding))
    noun = "cassette" if checked == 1 else "cassettes"
    if findings:
        click.echo(f"{len(findings)} finding(s) in {checked} {noun}")
        raise SystemExit(1)
    click.echo(f"{checked} {noun}, no findings")


@cassettes_group.command("drift", short_help="Re-send recorded requests; report how the replies' shape changed.")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--base-url", help="The server to ask, with placeholder keys: the emulator, a proxy, any URL.")
@click.option(
    "--live",
    is_flag=True,
    help="Ask the provider itself (its base-URL variable, the recorded host, or its default URL) with the"
    " environment's key (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, AWS credentials).",
)
def drift_command(files: tuple[Path, ...], base_url: str | None, live: bool) -> None:
    """Send each recorded request of each cassette again (to --base-url, or --live to the provider)
    and compare the reply's structure (fields, their types, the sequence of stream events) with
    the recorded one; values are not compared. One line per difference, benign (something added)
    or breaking; exits 1 on a breaking one. Nothing is sent until every file is read and every
    credential found."""
    from harness.recording._tools import ConversionError, drift_targets, send_for_drift

    if (base_url is None) == (not live):
        raise click.UsageError("give exactly one of --base-url URL and --live")
    try:
        plans = [(path, drift_targets(path, base_url, live=live)) for path in expand(files, "cassette")]
    except ConversionError as exc:
        raise click.UsageError(one_line(exc)) from None
    breaking = 0
    for path, targets in plans:
        try:
            found = send_for_drift(targets)
        except ConversionError as exc:
            raise click.UsageError(one_line(exc)) from None
        for difference in found:
            click.echo(f"{path}: {difference}")
        breaking += sum(difference.severity == "breaking" for difference in found)
        if not found:
            click.echo(f"{path}: no drift")
    if breaking:
        raise SystemExit(1)
