"""The ``harness`` command: every subcommand, each importing what it drives only when it runs.

The command groups with options of their own live beside this facade (``_cassettes_command``, ``_fuzz_command``,
``_emulate``; what they share in ``_common``). So ``harness --help`` stays fast, an optional extra
that is missing only breaks the command that needs it, and the packages the commands drive know
nothing of click.

What a user meets is part of the contract (DESIGN section 4): input a command cannot use (a
missing file or module, a module that raises on import, a malformed scenario, ``--examples 0``)
is a usage error with exit status 2, never a traceback; user modules are imported from the
current directory, as ``python -m`` would; and an error of the harness itself is one line
saying so, not a bare ``AttributeError``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from harness.cli._cassettes_command import cassettes_group
from harness.cli._common import HTML_HELP, USAGE_ERROR, expand, html_ready, write_html
from harness.cli._emulate import emulate_command
from harness.cli._fuzz_command import fuzz_command
from harness.cli._proxy import proxy_command

__all__ = [
    "cassettes_group",
    "conformance_command",
    "demo_command",
    "emulate_command",
    "fuzz_command",
    "main",
    "proxy_command",
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
    "proxy": "Record and replay any process's model calls through one loopback port.",
}


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
        except KeyboardInterrupt:  # Ctrl-C: 130 as a shell says it (click's own Abort would exit 1, a violation)
            click.echo("harness: interrupted", err=True)
            raise SystemExit(INTERRUPTED) from None
        except ImportError as exc:  # an optional piece not installed: the extra that brings it, in one line
            raise _MissingPiece(missing_piece(exc)) from None
        except Exception as exc:  # a bug of ours: one line that says so, never a traceback
            raise click.ClickException(
                f"internal error: {type(exc).__name__}: {exc} (this is a bug in the harness; please report it)"
            ) from None


INTERRUPTED = 130
"""Exit status of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it."""

_EXTRAS = {
    "google": "gemini",
    "boto3": "bedrock",
    "botocore": "bedrock",
    "jinja2": "report",
    "markupsafe": "report",
    "redis": "distributed",
    "hypofuzz": "fuzzing",
}
_BASE = {"starlette", "uvicorn", "openai", "anthropic", "httpx2", "rich", "click", "pydantic", "yaml", "vcr"}


class _MissingPiece(click.ClickException):
    """A module the command needs is not installed: the user's to fix, so a usage error (exit 2)."""

    exit_code = 2


def missing_piece(exc: ImportError) -> str:
    """One line naming what is missing and the install that brings it: never "a bug in the harness"."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return " ".join(str(exc).split())  # the optional backends' and the report's own errors name their extra
    top = exc.name.split(".")[0]
    if top in _EXTRAS:
        extra = _EXTRAS[top]
        return f'{exc.name} is not installed: it comes with the "{extra}" extra (pip install -e ".[{extra}]")'
    if top in _BASE:
        return f"{exc.name} is not installed, though openprogram needs it: reinstall it (pip install -e .)"
    return f"{exc.name} is not installed (No module named {exc.name!r}): install it where harness runs"


@click.group(cls=_LazyGroup)
@click.version_option(package_name="openprogram")
def main() -> None:
    """Deterministic simulation and record-replay testing for tool-calling agents."""


# -- harness run FILE... -------------------------------------------------------------------------


@click.command("run")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=True, path_type=Path))
@click.option("--show", is_flag=True, help="Print each run's trace as a readable timeline.")
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None, help=HTML_HELP)
def run_command(files: tuple[Path, ...], show: bool, html: Path | None = None) -> None:
    """Run scenario YAML files against the loop; check the reference model and the invariants.

    A directory runs every *.yaml / *.yml file under it. Each file is reported, then a summary.
    Exits 1 if any scenario shows a violation, 2 if any file could not be used (malformed, or a
    python: tool that cannot be imported), else 0.
    """
    from harness.checking import check
    from harness.scenarios import Scenario, ScenarioError

    paths = expand(files, "scenario")
    html_ready(html)
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

        write_html(html, lambda: run_report(checked, unusable=errors))
    if failed or unusable:
        parts = [f"{passed} passed", f"{failed} failed"] + ([f"{unusable} could not be used"] if unusable else [])
        click.echo(f"{len(paths)} scenario(s): {', '.join(parts)}")
        raise SystemExit(USAGE_ERROR if unusable else 1)
    click.echo(f"all {len(paths)} scenario(s) passed")


# -- harness schema ------------------------------------------------------------------------------


@click.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of scenario files; point an editor at it (docs/scenarios.md)."""
    from harness.scenarios import json_schema

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

    status = report(expand(files, "cassette"), as_json=as_json)
    if status:
        click.get_current_context().exit(status)


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
    "proxy": proxy_command,
}


if __name__ == "__main__":  # pragma: no cover
    main()
