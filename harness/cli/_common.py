"""What every command shares: the usage-error exit status, the ``--html`` option's checks and
writing, file expansion, the campaigns' progress bar and one-line error texts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

USAGE_ERROR = 2
"""Exit status for input a command cannot use (click's own, for bad options too)."""

HTML_HELP = "Also write an HTML report here: one self-contained file (docs/reports.md)."


def html_ready(path: Path | None) -> None:
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


def write_html(path: Path, make: Callable[[], str]) -> None:
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


def expand(paths: Iterable[Path], what: str) -> list[Path]:
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


def progress_bar(console: Any) -> Any:
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


def one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def front_door_options(serves: str) -> Callable[[Any], Any]:
    """``--allow-origin`` and ``--allow-remote``, the front door's two openings (DESIGN 6, "Proxy
    safety"), worded alike on every command that listens; ``serves`` says what a remote client gets."""

    def decorate(command: Any) -> Any:
        command = click.option(
            "--allow-remote", is_flag=True, help=f"Let a --host beyond loopback serve ({serves} whoever reaches it)."
        )(command)
        return click.option(
            "--allow-origin",
            "allow_origins",
            multiple=True,
            metavar="ORIGIN",
            help="Answer web pages of this origin (http://localhost:3000); repeatable. Others are refused.",
        )(command)

    return decorate
