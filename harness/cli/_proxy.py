"""``harness proxy``: record and replay any process's model traffic through one loopback port."""

from __future__ import annotations

import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from harness.cli._common import USAGE_ERROR

RECORD_MODES = ("once", "new_episodes", "none", "all", "rewrite")

SETTINGS: tuple[tuple[str, str, str], ...] = (
    ("OPENAI_BASE_URL", "/v1", "openai (Python, JS) and what builds on it: base_url / baseURL"),
    ("ANTHROPIC_BASE_URL", "", "anthropic (Python), @anthropic-ai/sdk (JS), the AI SDK: base_url / baseURL"),
    (
        "GOOGLE_GEMINI_BASE_URL",
        "",
        "google-genai (Python), @google/genai (JS): http_options.base_url / httpOptions.baseUrl",
    ),
    ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "", "boto3, @aws-sdk/client-bedrock-runtime: endpoint_url / endpoint"),
    ("AZURE_OPENAI_ENDPOINT", "", "AzureOpenAI(azure_endpoint=...) (also give harness proxy --upstream YOUR_RESOURCE)"),
    ("OPENAI_BASE_URL", "/openai/v1", "Azure OpenAI's v1 API and Groq: OpenAI(base_url=...)"),
    ("OPENAI_BASE_URL", "/api/v1", "OpenRouter: OpenAI(base_url=...)"),
    ("ANTHROPIC_VERTEX_BASE_URL", "/v1", "AnthropicVertex (Claude on Vertex AI): base_url"),
    ("ANTHROPIC_BEDROCK_BASE_URL", "", "AnthropicBedrock (Claude on Bedrock InvokeModel): base_url"),
    ("OLLAMA_HOST", "", "ollama (Python, JS): Client(host=...)"),
)
"""What each SDK reads to reach the proxy at BASE: (variable, suffix to BASE, who and the setting in code)."""


class _Refused(click.ClickException):
    """Input the command cannot use, in one line (``Error: ...``), exit status 2."""

    exit_code = USAGE_ERROR


class _OneLineCommand(click.Command):
    """A bad option is one line saying what was wrong, not the usage text around it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _Refused(f"{exc.format_message()} (see harness proxy --help)") from None


def client_settings(base_url: str) -> str:
    """The lines printed under the base URL (stderr): each SDK's variable, and how to pick a cassette."""
    lines = [f"  {variable}={base_url}{suffix}    # {who}" for variable, suffix, who in SETTINGS]
    lines.append(
        f"  one cassette per test: the header X-Harness-Cassette: NAME, or the base URL {base_url}/cassette/NAME"
        " (+ /v1 for OpenAI)"
    )
    return "\n".join(lines)


def front_door(command: str, host: str, origins: tuple[str, ...], allow_remote: bool) -> Any:
    """The ``FrontDoor`` of ``--allow-origin`` and ``--allow-remote``; a ``--host`` beyond loopback
    without ``--allow-remote`` is refused (it would replay, record and forward for anyone)."""
    from harness.emulator import FrontDoor, is_loopback

    if not is_loopback(host) and not allow_remote:
        raise _Refused(
            f"--host {host} listens beyond this machine: whoever reaches it would be served"
            f"{' and forwarded with its keys and credentials' if command == 'proxy' else ''}; add --allow-remote"
            " to mean it (docs/record-replay.md, threat model), or listen on 127.0.0.1"
        )
    try:
        return FrontDoor.of(origins, allow_remote=allow_remote)
    except ValueError as exc:
        raise _Refused(str(exc)) from None


def _say_what_remote_exposes(host: str, port: int, allow_remote: bool) -> None:
    """Before serving beyond loopback (``--allow-remote``): what that exposes, on stderr."""
    from harness.emulator import is_loopback, remote_warning

    if allow_remote and not is_loopback(host):
        click.echo(remote_warning(host, port, "proxy"), err=True)


_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def _size(value: str) -> int:
    """``--max-body``: bytes, or a number with K, M or G (binary: KiB, MiB, GiB; a trailing B or iB allowed)."""
    match = re.fullmatch(r"\s*(\d+)\s*([kmg]?)(?:i?b)?\s*", value.lower())
    if match is None or int(match.group(1)) == 0:
        raise _Refused(f"--max-body {value!r} is not a size: say a number of bytes, or one with K, M or G (32M)")
    return int(match.group(1)) * _UNITS[match.group(2)]


def _upstream(value: str | None) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        from harness.wire import scrub_url

        shown = scrub_url(value)  # a gateway's key in its userinfo or query is never printed
        raise _Refused(f"--upstream {shown!r} is not an http(s) URL (say http://127.0.0.1:8765 for harness emulate)")
    return value


@click.command("proxy", cls=_OneLineCommand)
@click.option(
    "--cassette",
    required=True,
    type=click.Path(path_type=Path),
    help="A cassette file (.yaml), or a directory of them, one per X-Harness-Cassette name.",
)
@click.option(
    "--record-mode",
    type=click.Choice(RECORD_MODES),
    default="once",
    show_default=True,
    help="The recorded fixture's: none replays only; once records a cassette that is not there; "
    "new_episodes adds what a cassette lacks; all and rewrite record everything anew.",
)
@click.option(
    "--upstream", default=None, help="Record from this server (harness emulate, a gateway), not the provider."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to listen on.")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535), help="0 picks a free port.")
@click.option("--max-age", default=None, help="How old a cassette may get ('30d', '12h'), as the fixture's max_age.")
@click.option("--max-age-action", type=click.Choice(["warn", "fail", "rerecord"]), default=None, help="Past --max-age.")
@click.option("--allow-unused", is_flag=True, help="Recorded interactions no request used do not fail the run.")
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="ORIGIN",
    help="Answer web pages of this origin (http://localhost:3000); repeatable. Others are refused.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Let a --host beyond loopback serve (replays and forwards to whoever reaches it).",
)
@click.option(
    "--max-body",
    default=None,
    metavar="SIZE",
    help="The largest request body taken, in bytes or with K, M, G (KiB...); larger is a 413. [default: 100M]",
)
def proxy_command(
    cassette: Path,
    record_mode: str,
    upstream: str | None,
    host: str,
    port: int,
    max_age: str | None,
    max_age_action: str | None,
    allow_unused: bool,
    allow_origins: tuple[str, ...],
    allow_remote: bool,
    max_body: str | None,
) -> None:
    """Record and replay any process's model calls: every provider's wire on one loopback port.

    Prints the base URL alone on stdout, and on stderr each SDK's variable for it
    (OPENAI_BASE_URL=BASE/v1, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL,
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME=BASE). A request the cassette holds is replayed, streams
    event by event; one it lacks is recorded from the provider (or --upstream) where the record
    mode allows, else answered 400 in the provider's envelope naming the first difference. On
    Ctrl-C or SIGTERM it writes what it recorded and exits 1 naming every request it could not
    answer and every recorded interaction nothing used, else 0.
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise _Refused(
            f"the proxy needs the 'emulator' extra (starlette, uvicorn): {exc.name or exc} is missing; "
            'install it with pip install -e ".[emulator]" from the checkout'
        ) from None
    from harness.proxy import Proxy, ProxyError
    from harness.recording import RecordingError

    options = _proxy_options(host, allow_origins, allow_remote, max_body, allow_unused, max_age, max_age_action)
    if cassette.exists() and not cassette.is_dir() and cassette.suffix.lower() not in (".yaml", ".yml"):
        raise _Refused(f"--cassette {cassette}: a cassette file ends in .yaml or .yml (or name a directory)")
    try:
        proxy = Proxy(cassette, mode=record_mode, upstream=_upstream(upstream), host=host, port=port, **options)
        proxy.open_default()
        proxy.start()
    except (ProxyError, RecordingError) as exc:
        raise _Refused(str(exc).splitlines()[0]) from None
    for note in proxy.cassettes.notes:
        click.echo(f"harness proxy: {note}", err=True)
    _say_what_remote_exposes(host, proxy.port, allow_remote)
    status = _serve(proxy, len(proxy.cassettes.notes))
    if status:
        sys.exit(status)


def _proxy_options(
    host: str,
    allow_origins: tuple[str, ...],
    allow_remote: bool,
    max_body: str | None,
    allow_unused: bool,
    max_age: str | None,
    max_age_action: str | None,
) -> dict[str, Any]:
    """``Proxy``'s keywords from the command's options (whom it answers, the body limit, the fixture's config)."""
    config: dict[str, Any] = {"allow_unused": allow_unused}
    if max_age is not None:
        config["max_age"] = max_age
    if max_age_action is not None:
        config["max_age_action"] = max_age_action
    options = {"config": config, "door": front_door("proxy", host, allow_origins, allow_remote)}
    if max_body is not None:
        options["max_body"] = _size(max_body)
    return options


def _serve(proxy: Any, shown: int) -> int:
    """Wait for Ctrl-C or SIGTERM, then write the cassettes and report; the exit status."""
    previous = None
    if threading.current_thread() is threading.main_thread():  # SIGTERM (kill, docker stop) ends it as Ctrl-C does
        previous = signal.signal(signal.SIGTERM, _interrupt)
        if hasattr(signal, "SIGXFSZ"):  # a file size limit is one cassette's error (EFBIG), not the end of the run
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        click.echo(proxy.base_url)
        sys.stdout.flush()
        click.echo(client_settings(proxy.base_url), err=True)
        while proxy.serving:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut the writing short
        outcome = proxy.finish()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    for note in outcome.notes[shown:]:
        click.echo(f"harness proxy: {note}", err=True)
    for written in outcome.written:
        click.echo(f"harness proxy: wrote {written}", err=True)
    if not outcome.problems:
        click.echo(
            f"harness proxy: {proxy.served} request(s) answered; none unmatched, no recorded interaction unused",
            err=True,
        )
        return 0
    click.echo(f"harness proxy: {len(outcome.problems)} problem(s):", err=True)
    for problem in outcome.problems:
        click.echo("  - " + problem.replace("\n", "\n    "), err=True)
    return 1


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
