"""``harness cassettes drift``: a cassette recorded in a user's project, re-sent to the emulator.

The emulator is the server whose wire does or does not match the recording: the cassette is
edited to stand for a recording made when the wire was shaped otherwise (a field renamed, an event
the server did not send yet), which is what drift against a live API finds after a change.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx2
import pytest
import yaml
from click.testing import CliRunner

from harness.cli import main
from harness.emulator import Emulator
from harness.recording._tools import ConversionError, compare_replies, drift_targets
from harness.script import turn
from tests.harness.support import chat_completion, console_script, loopback_server, run_cli

pytest_plugins = ["pytester"]

CHAT_URI = "https://api.openai.com/v1/chat/completions"
SCRIPT = (turn.tool_call("weather", city="Paris"), turn.text("Sunny in Paris."))

AGENT = """
from harness.emulator import Emulator
from harness.script import turn
from openprogram import function, runtime

@function(register=False)
def weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return "sunny"

def test_agent(recorded):
    script = [turn.tool_call("weather", city="Paris"), turn.text("Sunny in Paris.")]
    with Emulator(*script) as emulator:
        backend = recorded({provider!r}, model="m-1", stream={stream!r}, upstream=emulator.base_url)
        assert runtime.exec("Weather?", tools=[weather], provider=backend) == "Sunny in Paris."
"""


@pytest.fixture(autouse=True)
def _keep_the_offline_guard() -> Iterator[None]:
    saved = socket.socket.connect, socket.socket.connect_ex, socket.socketpair
    yield
    socket.socket.connect, socket.socket.connect_ex, socket.socketpair = saved  # type: ignore[method-assign]


def _recorded(pytester: pytest.Pytester, provider: str, stream: bool) -> Path:
    pytester.makepyfile(test_agent=AGENT.format(provider=provider, stream=stream))
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once").assert_outcomes(passed=1)
    return pytester.path / "cassettes" / "test_agent" / "test_agent.yaml"


def _drift(cassette: Path) -> tuple[int, list[str]]:
    with Emulator(*SCRIPT) as emulator:
        result = CliRunner().invoke(main, ["cassettes", "drift", str(cassette), "--base-url", emulator.base_url])
    assert "Traceback" not in result.output
    return result.exit_code, [line.removeprefix(f"{cassette}: ") for line in result.output.splitlines()]


def _edit_replies(cassette: Path, edit: object) -> None:
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    for interaction in data["interactions"]:
        interaction["response"]["body"]["string"] = edit(interaction["response"]["body"]["string"])  # type: ignore[operator]
    cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


@pytest.mark.parametrize(("provider", "stream"), [("anthropic", True), ("openai", False)])
def test_a_wire_of_the_recorded_shape_shows_no_drift(pytester: pytest.Pytester, provider: str, stream: bool) -> None:
    cassette = _recorded(pytester, provider, stream)
    assert _drift(cassette) == (0, ["no drift"])


def test_a_renamed_field_is_breaking_and_named(pytester: pytest.Pytester) -> None:
    cassette = _recorded(pytester, "openai", False)
    _edit_replies(cassette, lambda body: body.replace('"finish_reason"', '"finish_cause"'))
    code, lines = _drift(cassette)
    assert code == 1
    for index in (0, 1):
        assert f"interaction {index}: breaking: field body:choices[].finish_cause is gone" in lines
        assert f"interaction {index}: benign: new field body:choices[].finish_reason" in lines


def test_an_event_the_recording_lacks_is_benign_and_named(pytester: pytest.Pytester) -> None:
    cassette = _recorded(pytester, "anthropic", True)
    _edit_replies(cassette, lambda body: re.sub(r"event: message_delta\n.*?\n\n", "", body, flags=re.DOTALL))
    code, lines = _drift(cassette)
    assert code == 0  # the server only added
    assert "interaction 0: benign: new event 'message_delta'" in lines
    assert not [line for line in lines if "breaking" in line]


def test_a_type_change_a_lost_event_and_the_status_are_breaking() -> None:
    recorded = (200, b'data: {"type": "a", "n": 1}\n\ndata: {"type": "b"}\n\n', "text/event-stream")
    live = (500, b'data: {"type": "a", "n": "1"}\n\n', "text/event-stream")
    assert compare_replies(recorded, live) == [
        ("breaking", "status 200 is now 500"),
        ("breaking", "event 'b' is no longer sent"),
        ("breaking", "field a:n was number, is now string"),
        ("breaking", "field b:type is gone"),
    ]


# ---------------------------------------------------------------------------------------------
# --live: the provider's own URL with the environment's key (here: the base-URL variable points
# at a loopback proxy in front of the emulator, which records the headers that reach it)
# ---------------------------------------------------------------------------------------------

CREDENTIAL_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "OPENPROGRAM_ALLOW_MODEL_REQUESTS",
)


def _environment(**extra: str) -> dict[str, str]:
    """The test's environment without any credential or base URL, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if k not in CREDENTIAL_VARS}, "HOME": "/nonexistent", **extra}


def _harness_drift(*args: str, env: dict[str, str], process: bool = False) -> subprocess.CompletedProcess[str]:
    """``harness cassettes drift ARGS`` with ``env`` as its whole environment: in this process
    (click's runner), or with ``process`` through the installed console script, as one case of
    each test here does (a fresh interpreter costs ~3 CPU s: the others need none)."""
    if not process:
        return run_cli("cassettes", "drift", *args, env=env)
    command = [console_script(), "cassettes", "drift", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


@contextmanager
def _recording_proxy(upstream: str) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A loopback server that notes each request's headers and forwards it to ``upstream``."""
    seen: list[dict[str, str]] = []

    class Forward(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append({**{name.lower(): value for name, value in self.headers.items()}, ":path": self.path})
            seen[-1][":body"] = body.decode("utf-8")
            headers = {"content-type": self.headers.get("content-type") or "application/json"}
            reply = httpx2.post(upstream + self.path, content=body, headers=headers, timeout=30)
            self.send_response(reply.status_code)
            self.send_header("content-type", reply.headers.get("content-type", "application/json"))
            self.send_header("content-length", str(len(reply.content)))
            self.end_headers()
            self.wfile.write(reply.content)

        def log_message(self, *_: object) -> None:
            pass

    with loopback_server(Forward) as root:
        yield root, seen


LIVE_CASES = [
    ("openai", False, {"OPENAI_API_KEY": "sk-drift-live-1"}, "OPENAI_BASE_URL", "/v1"),
    ("anthropic", True, {"ANTHROPIC_API_KEY": "sk-ant-drift-live-2"}, "ANTHROPIC_BASE_URL", ""),
    ("gemini", True, {"GEMINI_API_KEY": "AIza-drift-live-3"}, "GOOGLE_GEMINI_BASE_URL", ""),
    (
        "bedrock",
        False,
        {"AWS_ACCESS_KEY_ID": "AKIADRIFTLIVE0000004", "AWS_SECRET_ACCESS_KEY": "drift/live/secret"},
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "",
    ),
]


@pytest.mark.parametrize(("provider", "stream", "keys", "base_url_var", "suffix"), LIVE_CASES)
def test_live_drift_sends_the_environments_key_to_the_providers_base_url(
    pytester: pytest.Pytester, provider: str, stream: bool, keys: dict[str, str], base_url_var: str, suffix: str
) -> None:
    cassette = _recorded(pytester, provider, stream)
    with Emulator(*SCRIPT) as emulator, _recording_proxy(emulator.base_url) as (proxy, seen):
        env = _environment(**keys, **{base_url_var: proxy + suffix})
        result = _harness_drift(str(cassette), "--live", env=env, process=provider == "openai")
    assert (result.returncode, result.stdout) == (0, f"{cassette}: no drift\n"), result.stderr
    assert len(seen) == 2  # both recorded requests, each with the key as the provider's SDK sends it
    for headers in seen:
        if provider == "openai":
            assert headers["authorization"] == "Bearer sk-drift-live-1"
        elif provider == "anthropic":
            assert headers["x-api-key"] == "sk-ant-drift-live-2"
        elif provider == "gemini":
            assert headers["x-goog-api-key"] == "AIza-drift-live-3"
        else:
            scope = "Credential=AKIADRIFTLIVE0000004/"
            assert headers["authorization"].startswith(f"AWS4-HMAC-SHA256 {scope}"), headers
            assert "/us-east-1/bedrock/aws4_request" in headers["authorization"]
            assert headers["authorization"] == _sigv4_as_received(proxy, headers, keys)  # AWS would accept it


def _sigv4_as_received(server: str, received: dict[str, str], keys: dict[str, str]) -> str:
    """The SigV4 authorization botocore computes for the request as the server received it, at its
    x-amz-date: equal to the one sent only when what was signed (path, host, body, headers) arrived."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    from freezegun import freeze_time

    signed = received["authorization"].partition("SignedHeaders=")[2].partition(",")[0].split(";")
    headers = {name: received[name] for name in signed if name not in ("host", "x-amz-date")}
    request = AWSRequest("POST", server + received[":path"], data=received[":body"].encode(), headers=headers)
    with freeze_time(received["x-amz-date"]):
        SigV4Auth(
            Credentials(keys["AWS_ACCESS_KEY_ID"], keys["AWS_SECRET_ACCESS_KEY"]), "bedrock", "us-east-1"
        ).add_auth(request)
    return str(request.headers["Authorization"])


def _chat_cassette(tmp_path: Path) -> Path:
    reply = chat_completion("Sunny.")
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Weather?"}]})
    interaction = {
        "request": {"method": "POST", "uri": CHAT_URI, "body": body, "headers": {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": reply},
        },
    }
    path = tmp_path / "chat.yaml"
    path.write_text(yaml.safe_dump({"interactions": [interaction], "version": 1}), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--live"], {}, "--live needs OPENAI_API_KEY in the environment (the openai credentials)"),
        (["--live"], {"OPENAI_API_KEY": "k", "OPENPROGRAM_ALLOW_MODEL_REQUESTS": "0"}, "turns them off"),
        (["--live", "--base-url", "http://127.0.0.1:9"], {}, "give exactly one of --base-url URL and --live"),
        ([], {}, "give exactly one of --base-url URL and --live"),
    ],
)
def test_live_drift_refuses_before_sending_when_the_key_is_missing(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    result = _harness_drift(str(_chat_cassette(tmp_path)), *args, env=_environment(**env), process=not env and not args)
    assert result.returncode == 2, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert result.stdout == ""


def _at(tmp_path: Path, uri: str) -> Path:
    path = _chat_cassette(tmp_path)
    path.write_text(path.read_text(encoding="utf-8").replace(CHAT_URI, uri), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("uri", "base_url", "env", "url"),
    [
        (CHAT_URI, None, {}, CHAT_URI),  # the provider's host, as recorded
        ("http://127.0.0.1:5/gw/v1/chat/completions", None, {}, CHAT_URI),  # recorded elsewhere: the SDK's default
        (CHAT_URI, None, {"OPENAI_BASE_URL": "http://proxy:8/v1"}, "http://proxy:8/v1/chat/completions"),
        ("http://127.0.0.1:5/gw/v1/chat/completions", "http://e:9/", {}, "http://e:9/v1/chat/completions"),
        (
            "http://127.0.0.1:5/model/m-1/converse",
            None,
            {"AWS_REGION": "eu-west-3"},
            "https://bedrock-runtime.eu-west-3.amazonaws.com/model/m-1/converse",
        ),
        (
            "http://127.0.0.1:5/v1/publishers/google/models/g:generateContent",
            None,
            {},
            "https://aiplatform.googleapis.com/v1/publishers/google/models/g:generateContent",
        ),
    ],
)
def test_a_request_goes_to_the_base_url_variable_the_recorded_host_or_the_providers_default(
    tmp_path: Path, uri: str, base_url: str | None, env: dict[str, str], url: str
) -> None:
    keys = {"OPENAI_API_KEY": "k", "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s", "GEMINI_API_KEY": "g"}
    (target,) = drift_targets(_at(tmp_path, uri), base_url, live=base_url is None, environ={**keys, **env})
    assert target.url == url


@pytest.mark.parametrize(
    ("uri", "env", "message"),
    [
        ("http://127.0.0.1:5/model/m-1/converse", {"AWS_PROFILE": "p"}, "--live needs AWS_REGION"),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m-1/converse",
            {},
            "--live needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE in the environment",
        ),
        (
            "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent",
            {},
            "--live needs GEMINI_API_KEY, or GOOGLE_API_KEY in the environment",
        ),
        (
            "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/publishers/google/models/g:generateContent",
            {"GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/credentials.json"},
            "--live needs Google's default credentials for a Vertex project (GOOGLE_APPLICATION_CREDENTIALS",
        ),
    ],
)
def test_each_providers_missing_credential_is_named_before_anything_is_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri: str, env: dict[str, str], message: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # google.auth reads the process environment
    with pytest.raises(ConversionError) as caught:
        drift_targets(_at(tmp_path, uri), live=True, environ=env)
    assert message in str(caught.value)
