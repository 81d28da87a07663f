"""Secrets in the bodies a scan of the file's text cannot read, as a user's project meets them.

A credential that a streamed reply carries in pieces, one per delta:

The emulator streams text in 8-character deltas, so a reply that echoes a key stores it as
``"SENTINEL"``, ``"-echoed-"``, ... in consecutive SSE ``data:`` events or AWS event-stream
frames: no line of the cassette holds it. The recorder must still refuse to write it, and
``harness cassettes lint`` must still find it in a cassette recorded while the key was unknown.
The emulator's Gemini stream (``alt=sse``) cuts text at spaces, so a key without one arrives
whole and the whole-value scan holds; a passphrase arrives in pieces, and the recorder refuses it.
For lint, a cassette is also written as Gemini streams it: CRLF events, headers stripped, gzip bytes.
The same for a key whole inside a binary (``!!binary``) body, and AWS account ids in ARNs inside
the bytes of a freshly recorded reply, which are scrubbed and still replay (event-stream CRCs).
"""

from __future__ import annotations

import gzip
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.cli import main
from harness.recording import _cassette as cassettes
from harness.recording._vcr import event_chunks

pytest_plugins = ["pytester"]

SECRET = "SENTINEL-echoed-secret-4242"  # longer than one delta, shaped like no known key (no pattern finds it)

TEXT = f'turn.text("the key is {SECRET} as asked")'
TOOL_INPUT = f'turn.tool_call("lookup", token="{SECRET}")'  # Bedrock cuts text at spaces only, arguments anywhere

STREAMED = [
    ("openai", "chat.completions", TEXT, "(split across events "),
    ("anthropic", "messages", TEXT, "(split across events "),
    ("bedrock", "converse-stream", TOOL_INPUT, "(split across events "),
    ("bedrock", "converse-stream", TEXT, "response.body.string (binary)"),  # whole, in one frame
]

ECHO = """
from harness.emulator import Emulator
from harness.script import turn
from openprogram import function, runtime

@function(register=False)
def lookup(token: str) -> str:
    \"\"\"Look a token up.\"\"\"
    return "found"

def test_echo(recorded):
    with Emulator({script}) as emulator:
        backend = recorded({provider!r}, {endpoint!r}, model="m-1", stream=True, upstream=emulator.base_url)
        runtime.exec("hi", provider=backend, tools=[lookup], max_iterations=1)  # one request: no echo back
"""


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("MY_SERVICE_TOKEN", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    saved = socket.socket.connect, socket.socket.connect_ex, socket.socketpair
    yield
    socket.socket.connect, socket.socket.connect_ex, socket.socketpair = saved  # type: ignore[method-assign]


@pytest.mark.parametrize(
    ("provider", "endpoint", "script", "where"), STREAMED, ids=["openai", "anthropic", "bedrock", "bedrock-binary"]
)
def test_a_key_split_across_stream_events_is_refused_and_found_by_lint(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, provider: str, endpoint: str, script: str, where: str
) -> None:
    pytester.makepyfile(test_echo=ECHO.format(script=script, provider=provider, endpoint=endpoint))
    cassette = pytester.path / "cassettes" / "test_echo" / "test_echo.yaml"

    # recorded while the value was no credential of the environment: written, and split on disk
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once").assert_outcomes(passed=1)
    stored = cassette.read_bytes()
    assert SECRET.encode() not in stored  # no line (nor binary body) holds it whole
    events = [event for i in cassettes.load(cassette) for event in _events(i.response)]
    assert len(events) > 3
    assert "MY_SERVICE_TOKEN" not in os.environ

    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    result = CliRunner().invoke(main, ["cassettes", "lint", "--no-usage", "cassettes"])
    assert result.exit_code == 1, result.output
    assert "holds the value of MY_SERVICE_TOKEN in interactions[0].response.body.string" in result.output
    assert where in result.output
    assert SECRET not in result.output

    # with the value a credential of the environment, the recorder refuses to write it
    refused = pytester.runpytest("-p", "no:cacheprovider", "--record-mode=rewrite")
    refused.assert_outcomes(passed=1, errors=1)
    output = refused.stdout.str()
    assert "not written, it would hold a credential from the environment" in output
    assert "the value of MY_SERVICE_TOKEN in interactions[0].response.body.string" in output
    assert where in output
    assert cassette.read_bytes() == stored


def _events(response: cassettes.Response) -> list[bytes]:
    return event_chunks(response.body.data, response.headers.get("content-type"))


def test_the_pieces_are_named_by_field_and_events_in_the_message() -> None:
    from harness.recording._scrub import find_hidden_credentials

    pieces = ["SENTINEL", "-echoed-", "secret-4", "242"]
    body = "".join(
        f'data: {{"choices": [{{"index": 0, "delta": {{"content": "{piece}"}}}}]}}\n\n' for piece in ["hi ", *pieces]
    )
    data = {
        "interactions": [{"request": {}, "response": {"headers": {}, "body": {"string": body + "data: [DONE]\n\n"}}}]
    }
    [finding] = find_hidden_credentials(data, {"MY_SERVICE_TOKEN": SECRET})
    assert str(finding) == (
        "the value of MY_SERVICE_TOKEN in interactions[0].response.body.string: "
        "choices[0].delta.content (split across events 1 to 4)"
    )


ARN = "arn:aws:bedrock:us-east-1:123456789012:guardrail/g1"

ARN_TEST = f"""
import os
from pathlib import Path
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

def test_arn(recorded):
    with Emulator(turn.text("guarded by {ARN} today")) as emulator:
        upstream = emulator.base_url if recorded.records else None
        backend = recorded("bedrock", {{endpoint!r}}, model="m-1", stream={{stream!r}}, upstream=upstream)
        Path(os.environ["ARN_OUT"]).write_text(runtime.exec("hi", provider=backend, tools=[]), encoding="utf-8")
"""


@pytest.mark.parametrize(("endpoint", "stream"), [("converse", False), ("converse-stream", True)])
def test_an_account_id_in_a_bedrock_reply_is_zeroed_and_the_reply_still_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, endpoint: str, stream: bool
) -> None:
    pytester.makepyfile(test_arn=ARN_TEST.format(endpoint=endpoint, stream=stream))
    out = pytester.path / "out.txt"
    monkeypatch.setenv("ARN_OUT", str(out))
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once").assert_outcomes(passed=1)
    recorded_text = out.read_text(encoding="utf-8")
    [interaction] = cassettes.load(pytester.path / "cassettes" / "test_arn" / "test_arn.yaml")
    assert b"123456789012" not in interaction.response.body.data
    assert b"arn:aws:bedrock:us-east-1:000000000000:guardrail/g1" in interaction.response.body.data

    out.unlink()
    pytester.runpytest("-p", "no:cacheprovider", "--block-network").assert_outcomes(passed=1)  # CRCs still hold
    assert (
        out.read_text(encoding="utf-8")
        == recorded_text
        == "guarded by " + ARN.replace("123456789012", "0" * 12) + " today"
    )


# ---------------------------------------------------------------------------------------------
# Gemini's alt=sse stream (lint): the emulator sends a Gemini text whole, so the cassette is
# written here as Gemini streams it, a key split across its text parts
# ---------------------------------------------------------------------------------------------

GEMINI_KEY = "AIza" + "SyDriftLintSplitKey0123456789abcdef"  # the shape of a Google API key, valid nowhere
GEMINI_STREAM = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"


def _gemini_stream(pieces: list[str], separator: str) -> bytes:
    events = []
    for number, piece in enumerate(pieces):
        candidate: dict = {"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}
        if number == len(pieces) - 1:
            candidate["finishReason"] = "STOP"
        events.append(
            "data: " + json.dumps({"candidates": [candidate], "modelVersion": "gemini-2.0-flash"}) + separator
        )
    return "".join(events).encode()


@pytest.mark.parametrize("stored", ["as sent (CRLF)", "LF", "headers stripped", "gzip bytes"])
def test_lint_finds_a_key_split_across_gemini_sse_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored: str
) -> None:
    pieces = ["your key is " + GEMINI_KEY[:10], GEMINI_KEY[10:25], GEMINI_KEY[25:] + ", keep it safe"]
    body: bytes = _gemini_stream(pieces, "\n\n" if stored == "LF" else "\r\n\r\n")
    headers: dict = {"Content-Type": ["text/event-stream"]}
    if stored == "headers stripped":  # as openinference records
        headers = {}
    if stored == "gzip bytes":  # as a recorder that kept content-encoding: gzip stores it (!!binary)
        body, headers = gzip.compress(body), {**headers, "Content-Encoding": ["gzip"]}
    request = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    interaction = {
        "request": {"method": "POST", "uri": GEMINI_STREAM, "body": json.dumps(request), "headers": {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": headers,
            "body": {"string": body if stored == "gzip bytes" else body.decode()},
        },
    }
    folder = tmp_path / "cassettes" / "test_gemini"
    folder.mkdir(parents=True)
    text = yaml.dump({"interactions": [interaction], "version": 1})  # bytes as !!binary, as vcrpy writes them
    (folder / "test_echo.yaml").write_text(text, encoding="utf-8")
    assert GEMINI_KEY not in text

    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    result = CliRunner().invoke(main, ["cassettes", "lint", "--no-usage", str(tmp_path / "cassettes")])

    assert result.exit_code == 1, result.output
    assert (
        "holds the value of GEMINI_API_KEY in interactions[0].response.body.string: "
        "candidates[0].content.parts[0].text (split across events 0 to 2)"
    ) in result.output
    assert GEMINI_KEY not in result.output


PASSPHRASE = "SENTINEL echoed passphrase of the service 4242"  # a secret with spaces: Gemini streams it in words
GEMINI_TEXT = f'turn.text("the phrase is {PASSPHRASE} as asked")'


def test_a_passphrase_split_across_geminis_sse_events_is_refused_by_the_recorder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Gemini's stream (alt=sse) cuts text at spaces, so a key without one arrives whole; a
    # passphrase (a *_TOKEN or *_PASSWORD with spaces) arrives in pieces, one per data: event
    pytester.makepyfile(test_echo=ECHO.format(script=GEMINI_TEXT, provider="gemini", endpoint="streamGenerateContent"))
    cassette = pytester.path / "cassettes" / "test_echo" / "test_echo.yaml"
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once").assert_outcomes(passed=1)
    stored = cassette.read_bytes()
    assert b"alt=sse" in stored and PASSPHRASE.encode() not in stored  # split on disk, across events
    [interaction] = cassettes.load(cassette)
    assert len(_events(interaction.response)) > 2

    monkeypatch.setenv("MY_SERVICE_TOKEN", PASSPHRASE)
    refused = pytester.runpytest("-p", "no:cacheprovider", "--record-mode=rewrite")
    refused.assert_outcomes(passed=1, errors=1)
    output = refused.stdout.str()
    assert "not written, it would hold a credential from the environment" in output
    assert (
        "the value of MY_SERVICE_TOKEN in interactions[0].response.body.string: "
        "candidates[0].content.parts[0].text (split across events "
    ) in output
    assert PASSPHRASE not in output
    assert cassette.read_bytes() == stored


MARKED_ECHO = f"""
import openai, pytest
from harness.emulator import Emulator
from harness.script import turn

@pytest.mark.vcr
def test_marked():
    with Emulator({TEXT}) as emulator:
        client = openai.OpenAI(base_url=emulator.base_url + "/v1", api_key="k", max_retries=0)
        stream = client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}], stream=True)
        list(stream)
"""


def test_under_the_plain_vcr_marker_a_split_key_is_refused_in_one_message_not_a_traceback(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the traceback of vcrpy's save printed the persister's arguments: the cassette's own bodies
    pytester.makepyfile(test_marked=MARKED_ECHO)
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rN", "--record-mode=once")
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    assert output.count("not written, it would hold a credential from the environment") == 1, output
    assert "the value of MY_SERVICE_TOKEN in interactions[0].response.body.string: choices[0].delta.content" in output
    assert "cassette_dict" not in output and "CredentialLeakError" not in output  # the message, not vcrpy's frames
    assert "SENTINEL-" not in output  # not one piece of the key either
    assert not (pytester.path / "cassettes" / "test_marked" / "test_marked.yaml").exists()


GUARDED = f"""
import boto3, pytest
from harness.emulator import Emulator
from harness.script import turn

@pytest.mark.vcr
@pytest.mark.parametrize("stream", [False, True])
def test_guarded(stream):
    with Emulator(turn.text("ok")) as emulator:
        client = boto3.client(
            "bedrock-runtime", region_name="us-east-1", endpoint_url=emulator.base_url,
            aws_access_key_id="k", aws_secret_access_key="k",
        )
        asked = dict(
            modelId="m", messages=[{{"role": "user", "content": [{{"text": "hi"}}]}}],
            guardrailConfig={{"guardrailIdentifier": "{ARN}", "guardrailVersion": "1"}},
        )
        if stream:
            list(client.converse_stream(**asked)["stream"])
        else:
            client.converse(**asked)
"""


def test_an_account_id_in_a_bedrock_request_body_is_zeroed_and_still_matches(pytester: pytest.Pytester) -> None:
    # the guardrail a Converse request names (boto3 under the plain vcr marker): the request body
    # was stored as sent, and lint passed it
    pytester.makepyfile(test_guarded=GUARDED)
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once").assert_outcomes(passed=2)
    folder = pytester.path / "cassettes" / "test_guarded"
    for name in ("test_guarded[False].yaml", "test_guarded[True].yaml"):
        [interaction] = cassettes.load(folder / name)
        assert b"123456789012" not in (folder / name).read_bytes()
        assert ARN.replace("123456789012", "0" * 12).encode() in interaction.request.body.data
    pytester.runpytest("-p", "no:cacheprovider", "--block-network").assert_outcomes(
        passed=2
    )  # the sent id is zeroed too

    kept = folder / "test_guarded[False].yaml"
    kept.write_text(kept.read_text(encoding="utf-8").replace("000000000000", "123456789012"), encoding="utf-8")
    result = CliRunner().invoke(main, ["cassettes", "lint", "--no-usage", str(pytester.path / "cassettes")])
    assert result.exit_code == 1, result.output
    assert "interaction 0: the request body holds an AWS account id (in an ARN)" in result.output
