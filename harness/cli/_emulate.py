"""``harness emulate``: the emulator served on a loopback port until stopped."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click

from harness.cli._common import USAGE_ERROR, front_door_options

# -- harness emulate --script FILE ----------------------------------------------------------------


class _Refused(click.ClickException):
    """Input the command cannot use, said in one line (``Error: ...``) with the usage-error status:
    a script that cannot be read is the user's to fix, and the reason must not drown in usage text."""

    exit_code = USAGE_ERROR


@click.command("emulate")
@click.option("--script", "script", required=True, type=click.Path(path_type=Path), help="A scenario YAML file.")
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
@click.option(
    "--after-last",
    type=click.Choice(["error", "repeat"]),
    default=None,
    help="A request beyond the script: error (a 400 in the provider's envelope) or repeat (the last "
    "turn again). Default: the file's meta.emulate.after_last, else error.",
)
@click.option(
    "--journal",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write every request received to this file, one JSON line each, flushed as it is answered.",
)
@front_door_options("to")
def emulate_command(
    script: Path,
    host: str,
    port: int,
    after_last: Literal["error", "repeat"] | None,
    journal: Path | None,
    allow_origins: tuple[str, ...],
    allow_remote: bool,
) -> None:
    """Serve the turns of a scenario file on every provider's real paths until stopped.

    Prints the base URL alone on stdout, and on stderr what each client takes: OpenAI
    clients BASE/v1; Anthropic, google-genai (http_options.base_url) and boto3 (endpoint_url)
    BASE; LiteLLM's gemini/ models BASE/v1beta. Each request gets the next turn.
    GET BASE/_emulator/requests shows the requests received; POST BASE/_emulator/reset starts
    the script over. Stops on Ctrl-C or SIGTERM. Only requests addressed to it are answered: a
    Host other than 127.0.0.1, localhost or [::1] with its port, or a web page's request (Origin,
    Sec-Fetch-Site) not named by --allow-origin, gets a 403.
    """
    from harness.cli._proxy import front_door
    from harness.emulator import Emulator, is_loopback, remote_warning, serve
    from harness.scenarios import ScenarioError

    door = front_door("emulate", host, allow_origins, allow_remote)
    try:
        emulator = Emulator.from_file(script, host=host, port=port, after_last=after_last, journal=journal)
    except ScenarioError as exc:
        raise _Refused(f"--script {exc}") from None
    except OSError as exc:
        raise _Refused(f"--journal {journal}: cannot write: {exc.strerror or exc}") from None
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        emulator.close_journal()
        raise _Refused(
            f"the emulator needs the 'emulator' extra (starlette, uvicorn): {exc.name or exc} is missing; "
            'install it with pip install -e ".[emulator]" from the checkout'
        ) from None
    emulator.door = door
    if allow_remote and not is_loopback(host):
        click.echo(remote_warning(host, port, "emulate"), err=True)
    try:
        serve(emulator)
    except OSError as exc:
        raise _Refused(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
