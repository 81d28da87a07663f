"""Keys in the shapes a first pass missed (issue 27), each met where a user meets it.

- a password in a URL (``http://user:KEY@gateway/v1``) and a key in any query parameter of the
  vocabulary (Azure's ``?api-key=``): ``harness cassettes lint`` names both, and the recorder
  removes both;
- a key echoed by a streamed reply whose choices (``n=2``) or parallel calls interleave their
  deltas: joined per choice and per call, it is found;
- a key inside ``Basic base64(user:key)``: the ``recorded`` fixture refuses to write it;
- ``harness cassettes drift --base-url`` sends no recorded credential (header, query or userinfo);
- a cassette that is a symbolic link stays one when re-recorded, and its target gets the recording.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import yaml

from harness.recording._scrub import find_hidden_credentials, scrub_uri
from harness.wire import CREDENTIAL_QUERY_PARAMS
from tests.harness.support import chat_completion, loopback_server, run_cli

pytest_plugins = ["pytester"]

KEY = "sk-proj-issue27-secret-0000000000000000"
CHAT_URI = "https://api.openai.com/v1/chat/completions"


@pytest.fixture(autouse=True)
def _keep_the_offline_guard() -> Iterator[None]:
    saved = socket.socket.connect, socket.socket.connect_ex, socket.socketpair
    yield
    socket.socket.connect, socket.socket.connect_ex, socket.socketpair = saved  # type: ignore[method-assign]


def _cassette(path: Path, uri: str = CHAT_URI, *, headers: dict[str, list[str]] | None = None, reply: str = "") -> Path:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Weather?"}]})
    interaction = {
        "request": {"method": "POST", "uri": uri, "body": body, "headers": headers or {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["text/event-stream" if reply.startswith("data:") else "application/json"]},
            "body": {"string": reply or chat_completion("Sunny.")},
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}), encoding="utf-8")
    return path


def _lint(folder: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``harness cassettes lint`` in this process (click's runner, ``env`` its whole environment);
    the console script's own run of lint is in test_cassettes_cli.py."""
    environment = {k: v for k, v in os.environ.items() if k != "MY_SERVICE_TOKEN"} | (env or {})
    return run_cli("cassettes", "lint", "--no-usage", str(folder), env=environment)


# ---------------------------------------------------------------------------------------------
# URL userinfo and query parameters
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CREDENTIAL_QUERY_PARAMS))
def test_lint_names_a_key_in_any_query_parameter_of_the_vocabulary(tmp_path: Path, name: str) -> None:
    _cassette(tmp_path / "c.yaml", f"{CHAT_URI}?api-version=2024-10-21&{name}={KEY}")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"the request URI has a {name}= query parameter (a credential)" in result.stdout
    assert KEY not in result.stdout + result.stderr


def test_lint_names_a_password_in_the_url(tmp_path: Path) -> None:
    _cassette(tmp_path / "c.yaml", f"http://gateway-user:{KEY}@gateway.internal:8080/v1/chat/completions")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the request URI names a user or password before its host (a credential)" in result.stdout
    assert KEY not in result.stdout + result.stderr


def test_the_recorder_drops_userinfo_and_every_credential_query_parameter() -> None:
    uri = f"http://u:{KEY}@gateway.internal/v1/chat/completions?api-version=1&api-key={KEY}&X-Goog-Api-Key={KEY}"
    assert scrub_uri(uri) == "http://gateway.internal/v1/chat/completions?api-version=1"


# ---------------------------------------------------------------------------------------------
# Interleaved streamed choices and parallel calls
# ---------------------------------------------------------------------------------------------


def _interleaved(pieces: list[str], *, calls: bool) -> str:
    """Two choices (or two calls of one choice) streaming at once: choice/call 0 says "hello", 1
    says the key in pieces; every event's list holds its one entry at position 0."""
    events = []
    for decoy, piece in zip(["hel", "lo", " th", "ere"], pieces, strict=False):
        for index, text in ((0, decoy), (1, piece)):
            if calls:
                delta = {"tool_calls": [{"index": index, "function": {"arguments": text}}]}
                events.append({"choices": [{"index": 0, "delta": delta}]})
            else:
                events.append({"choices": [{"index": index, "delta": {"content": text}}]})
    return "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"


@pytest.mark.parametrize("calls", [False, True], ids=["n=2 choices", "parallel calls"])
def test_a_key_split_across_interleaved_deltas_is_found_by_lint(tmp_path: Path, calls: bool) -> None:
    pieces = [KEY[:10], KEY[10:20], KEY[20:30], KEY[30:]]
    _cassette(tmp_path / "c.yaml", reply=_interleaved(pieces, calls=calls))
    assert KEY not in (tmp_path / "c.yaml").read_text(encoding="utf-8")
    result = _lint(tmp_path, {"MY_SERVICE_TOKEN": KEY})
    assert result.returncode == 1, result.stdout + result.stderr
    field = "choices[0].delta.tool_calls[1].function.arguments" if calls else "choices[1].delta.content"
    assert f"holds the value of MY_SERVICE_TOKEN in interactions[0].response.body.string: {field}" in result.stdout
    assert KEY not in result.stdout + result.stderr


def test_the_joined_pieces_are_named_by_their_choice_not_their_position() -> None:
    pieces = [KEY[:10], KEY[10:20], KEY[20:30], KEY[30:]]
    data = {"interactions": [{"response": {"headers": {}, "body": {"string": _interleaved(pieces, calls=False)}}}]}
    [finding] = find_hidden_credentials(data, {"MY_SERVICE_TOKEN": KEY})
    assert finding.where.endswith("choices[1].delta.content (split across events 1 to 7)")


# ---------------------------------------------------------------------------------------------
# Basic base64(user:key)
# ---------------------------------------------------------------------------------------------

ECHO = """
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

def test_echo(recorded):
    with Emulator(turn.text({text!r})) as emulator:
        backend = recorded("openai", "chat.completions", model="m-1", upstream=emulator.base_url)
        runtime.exec("hi", provider=backend, tools=[])
"""


@pytest.mark.parametrize("user", ["gateway", "u", "ab"])  # each start of the key modulo 3 in base64
def test_the_recorded_fixture_refuses_a_key_inside_basic_base64(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, user: str
) -> None:
    basic = "Basic " + base64.b64encode(f"{user}:{KEY}".encode()).decode()
    pytester.makepyfile(test_echo=ECHO.format(text=f"use the header Authorization: {basic}"))
    monkeypatch.setenv("MY_SERVICE_TOKEN", KEY)
    result = pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once")
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    assert "not written, it would hold a credential from the environment" in output
    assert "the value of MY_SERVICE_TOKEN in interactions[0].response.body.string" in output
    assert not (pytester.path / "cassettes" / "test_echo" / "test_echo.yaml").exists()


# ---------------------------------------------------------------------------------------------
# drift sends no recorded credential
# ---------------------------------------------------------------------------------------------


@contextmanager
def _listening() -> Iterator[tuple[str, list[str]]]:
    """A loopback server answering every POST with a chat completion; ``seen`` gets each request
    as received: request line, headers and body."""
    seen: list[str] = []

    class Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append(f"{self.requestline}\n{self.headers}\n{body.decode('utf-8', 'replace')}")
            reply = chat_completion("Sunny.").encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *_: object) -> None:
            pass

    with loopback_server(Answer) as root:
        yield root, seen


def test_drift_sends_no_recorded_credential_to_the_base_url(tmp_path: Path) -> None:
    uri = f"https://user:{KEY}-1@api.openai.com/v1/chat/completions?key={KEY}-2&api_key={KEY}-3&api-key={KEY}-4&n=1"
    headers = {"authorization": [f"Bearer {KEY}-5"], "x-api-key": [f"{KEY}-6"], "api-key": [f"{KEY}-7"]}
    cassette = _cassette(tmp_path / "c.yaml", uri, headers=headers)
    with _listening() as (base_url, seen):
        # in process: the console script's own drift runs are in test_drift.py
        result = run_cli("cassettes", "drift", "--base-url", base_url, str(cassette))
    assert result.returncode == 0, result.stdout + result.stderr
    [received] = seen
    assert KEY not in received
    assert received.startswith("POST /v1/chat/completions?n=1 HTTP/1.1")
    assert "Bearer test" in received  # the placeholder a server expects in place of a key


# ---------------------------------------------------------------------------------------------
# a cassette shared through a symbolic link
# ---------------------------------------------------------------------------------------------

AGENT = """
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

def test_agent(recorded):
    with Emulator(turn.text({text!r})) as emulator:
        backend = recorded("openai", "chat.completions", model="m-1", upstream=emulator.base_url)
        assert runtime.exec("hi", provider=backend, tools=[]) == {text!r}
"""


def test_rewrite_through_a_symlinked_cassette_keeps_the_link_and_updates_its_target(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=AGENT.format(text="first"))
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once").assert_outcomes(passed=1)
    folder = pytester.path / "cassettes" / "test_agent"
    shared = pytester.path / "shared" / "agent.yaml"
    shared.parent.mkdir()
    (folder / "test_agent.yaml").rename(shared)
    (folder / "test_agent.yaml").symlink_to(os.path.relpath(shared, folder))

    pytester.makepyfile(test_agent=AGENT.format(text="second"))
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=rewrite").assert_outcomes(passed=1)
    link = folder / "test_agent.yaml"
    assert link.is_symlink()
    assert "second" in shared.read_text(encoding="utf-8")
    assert [p.name for p in shared.parent.iterdir()] == ["agent.yaml"]  # no temporary left beside it
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=none").assert_outcomes(passed=1)
