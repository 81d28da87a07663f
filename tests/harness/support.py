"""Pieces several harness test files build a user's world from: a recorded chat completion, the
conftest fixture that notes (and refuses) every public host a user's test tries to reach, and the
installed ``harness`` command (run, or serving ``harness emulate`` in a process of its own)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def console_script() -> str:
    """This venv's installed ``harness`` (next to this Python), not whatever PATH finds first."""
    found = shutil.which("harness", path=str(Path(sys.executable).parent))
    assert found is not None, "the harness console script is not installed next to this Python"
    return found


def run_cli(
    *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` run in this process through click's ``CliRunner`` (no interpreter to start,
    no SDK to import again), its result shaped as ``subprocess.run``'s: the exit code, stdout and
    stderr apart, and a crash's traceback in stderr as the console script would print it. ``env``
    is the whole environment of the run, as ``subprocess.run``'s; ``cwd`` its working directory."""
    import contextlib
    import os
    import traceback

    from click.testing import CliRunner

    from harness.cli import main

    overrides: dict[str, str | None] = {}
    if env is not None:
        overrides = {name: None for name in os.environ if name not in env}
        overrides.update(env)
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        result = CliRunner().invoke(main, [str(arg) for arg in args], env=overrides)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["harness", *map(str, args)], result.exit_code, result.stdout, stderr)


def start_emulate(script: Path) -> subprocess.Popen[str]:
    """``harness emulate --script SCRIPT --port 0`` in a process of its own, its output piped."""
    command = [console_script(), "emulate", "--script", str(script), "--port", "0"]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@contextmanager
def emulate_process(script: Path) -> Iterator[str]:
    """:func:`start_emulate`, yielding the base URL it prints first; once the test is done it
    stops the process and checks it ended without a traceback."""
    process = start_emulate(script)
    try:
        assert process.stdout is not None
        base = process.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:"), base
        yield base
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=20)
    assert "Traceback" not in errors, errors


def chat_completion(content: str | None, calls: list[dict[str, Any]] | None = None, finish: str = "stop") -> str:
    """The JSON text of one OpenAI chat completion, as a cassette stores its response body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )


ATTEMPTS_FIXTURE = '''
import socket

import pytest


@pytest.fixture
def attempts(monkeypatch):
    """The public hosts the test tried to reach (each lookup is refused after it is noted)."""
    tried = []
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if name not in ("127.0.0.1", "localhost"):
            tried.append(name)
            raise OSError(f"this test is offline: {name}")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return tried
'''
"""A user's ``conftest.py`` source giving the ``attempts`` fixture: "no connection was attempted"
told apart from "the connection failed", since a backend must resolve its host to connect."""


def failure_sections(output: str) -> list[str]:
    """The report of each failed test in a pytest session's output, in the order the tests ran (the
    ``____ name ____`` sections under FAILURES), so a session of several tests with one name (one
    module per provider) still says which failed how."""
    import re

    block = re.search(r"^=+ FAILURES =+$(.*?)(?=^=+ .* =+$|\Z)", output, re.MULTILINE | re.DOTALL)
    return re.split(r"^_{3,} .+ _{3,}$", block.group(1), flags=re.MULTILINE)[1:] if block else []


def run_in_process(pytester: Any, *args: str, **env: str) -> Any:
    """A user's pytest session run in this process (``-rN``: no short summary repeating each
    message), with ``env`` set for it alone and put back after."""
    import os

    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        return pytester.runpytest("-p", "no:cacheprovider", "-q", "-rN", *args)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def loopback_server(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on a free loopback port for the block; yields its root URL. The tests'
    own stand-in for a provider or gateway (drift's target, a recording's upstream). It polls for
    shutdown every 50 ms, not ``serve_forever``'s 500: leaving the block waited ~0.25 s for it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
