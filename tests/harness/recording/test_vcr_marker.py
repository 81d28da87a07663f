"""The plain ``@pytest.mark.vcr`` marker, as a user's project meets it: SDK clients of its own,
vcrpy's global patches, pytest-recording's record modes, the harness's checks plugged in when the
project opts in (``harness_vcr = strict``): each project here that checks them says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.harness.support import run_in_process

pytest_plugins = ["pytester"]

STREAMED = {  # a user's streaming client, one per wire; each asks once and returns the text it read
    "openai": """
async def ask(base_url):
    import openai
    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="k", max_retries=0)
    stream = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True, stream_options={"include_usage": True}
    )
    parts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    await client.close()
    return "".join(parts)
""",
    "anthropic": """
async def ask(base_url):
    import anthropic
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key="k", max_retries=0)
    stream = await client.messages.create(
        model="m", max_tokens=64, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    parts = [event.delta.text async for event in stream if event.type == "content_block_delta"]
    await client.close()
    return "".join(parts)
""",
    "responses": """
async def ask(base_url):
    import openai
    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="k", max_retries=0)
    stream = await client.responses.create(model="m", input="hi", stream=True)
    parts = [event.delta async for event in stream if event.type == "response.output_text.delta"]
    await client.close()
    return "".join(parts)
""",
    "gemini": """
async def ask(base_url):  # google-genai's async client: httpx's async stream under vcrpy's stub
    from google import genai
    client = genai.Client(api_key="k", http_options={"base_url": base_url, "retry_options": {"attempts": 1}})
    stream = await client.aio.models.generate_content_stream(model="m", contents="hi")
    parts = [chunk.text or "" async for chunk in stream]
    await client.aio.aclose()
    return "".join(parts)
""",
    "bedrock": """
async def ask(base_url):  # boto3: vcrpy's botocore stub, not its httpx one
    import boto3
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=base_url,
        aws_access_key_id="k", aws_secret_access_key="k",
    )
    reply = client.converse_stream(modelId="m", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    events = list(reply["stream"])
    return "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e)
""",
}

MARKED = """
import asyncio
import pytest
from harness.emulator import Emulator
from harness.script import turn
{ask}

@pytest.mark.vcr
@pytest.mark.allow_model_requests
def test_streamed():
    from fallback import swallowing

    with Emulator(turn.text("hello from a streamed reply")) as emulator:
        text = swallowing(lambda: asyncio.run(ask(emulator.base_url)))
    print("TEXT", text)
"""

FALLBACK = """
def swallowing(call):
    try:
        return call()
    except Exception:  # code under test that swallows what its client raised
        return "failed"
"""
"""The project's code under test that hides every error of its client: a module of its own, since an
error the test module itself catches is the test's business."""


STRICT = "[pytest]\nharness_vcr = strict\n"
"""The ini of a project that asks for the harness's checks under the plain vcr marker."""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # in this process (vcrpy's patches are undone when each test's cassette closes); -rN: no short
    # summary repeating each message
    return run_in_process(pytester, *args)


def _cut_last_event(cassette: Path) -> None:
    """The stream ends inside its last event (OpenAI chat: the usage chunk; Responses: response.completed;
    Anthropic: message_stop; Gemini: the chunk with usageMetadata; Bedrock: metadata)."""
    data = yaml.load(cassette.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    body = data["interactions"][-1]["response"]["body"]
    if isinstance(body["string"], bytes):  # an AWS event stream: its last message (metadata) loses its end
        body["string"] = body["string"][:-10]
        cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        return
    stored = body["string"].rstrip()
    if "data: [DONE]" in stored:
        stored = stored.rsplit("data: [DONE]", 1)[0].rstrip()
    body["string"] = stored[: -max(8, len(stored.rsplit("\n\n", 1)[-1]) // 2)]
    cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _fresh(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # a fresh process, as a user runs it: a streamed replay depends on what the session imported
    # (tests/harness/recording/test_recorded.py's streamed test says how in-process hid a failure)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "-rN", *args)


def test_a_stream_cut_inside_its_last_event_fails_under_the_plain_vcr_marker(pytester: pytest.Pytester) -> None:
    # one project, one test module per wire (three sessions for all five, not three each); each
    # wire's cut is its own failure naming its cassette
    pytester.makeini(STRICT)
    pytester.makepyfile(fallback=FALLBACK, **{f"test_{wire}": MARKED.format(ask=ask) for wire, ask in STREAMED.items()})
    cassettes = {wire: pytester.path / "cassettes" / f"test_{wire}" / "test_streamed.yaml" for wire in STREAMED}
    _fresh(pytester, "--record-mode=once").assert_outcomes(passed=len(STREAMED))
    whole = _fresh(pytester, "--record-mode=none", "-s")
    whole.assert_outcomes(passed=len(STREAMED))
    assert whole.stdout.str().count("TEXT hello from a streamed reply\n") == len(STREAMED), whole.stdout.str()

    for cassette in cassettes.values():
        _cut_last_event(cassette)
    cut = _fresh(pytester, "--record-mode=none")
    cut.assert_outcomes(failed=len(STREAMED))  # not a pass with a shorter reply, though the test swallowed the error
    output = cut.stdout.str()
    for wire, cassette in cassettes.items():
        lines = [line for line in output.splitlines() if line.startswith(f"{cassette}: interaction 0 (POST http")]
        assert len(lines) == 1, (wire, output)
        assert "the recorded reply to request 1, is a stream cut inside its last event" in lines[0], (wire, output)
        assert "re-record it: --record-mode=rewrite" in lines[0], (wire, output)


PLAIN_TYPO = """
import pytest

@pytest.fixture
def vcr_config():
    return {"max_age": "30d", "max_age_actoin": "fail"}

@pytest.mark.vcr
def test_plain():
    pass
"""


def test_an_unknown_vcr_config_option_of_a_plain_vcr_test_names_the_closest(pytester: pytest.Pytester) -> None:
    pytester.makeini(STRICT)
    pytester.makepyfile(test_plain=PLAIN_TYPO)
    result = pytester.runpytest("-p", "no:cacheprovider", "-q", "-rN")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    expected = (
        "the vcr_config fixture or @pytest.mark.vcr: unknown option 'max_age_actoin'; did you mean 'max_age_action'?"
    )
    assert output.count(expected) == 1, output
    assert "VcrOptionError" not in output and "raise" not in output  # the line, not a traceback


EMPTY_FILE = """
import openai, pytest
from harness.emulator import Emulator
from harness.script import turn

@pytest.mark.vcr
def test_plain():
    with Emulator(turn.text("recorded at last")) as emulator:
        client = openai.OpenAI(base_url=emulator.base_url + "/v1", api_key="k", max_retries=0)
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "recorded at last"
"""


def test_an_empty_cassette_file_is_no_recording_yet_under_the_plain_vcr_marker(pytester: pytest.Pytester) -> None:
    # an editor or a killed `touch` leaves it; pytest-recording's loader failed on it with a bare
    # TypeError ('NoneType' object is not subscriptable); the recorded fixture reads it as absent
    pytester.makeini(STRICT)
    pytester.makepyfile(test_plain=EMPTY_FILE)
    cassette = pytester.path / "cassettes" / "test_plain" / "test_plain.yaml"
    cassette.parent.mkdir(parents=True)
    cassette.write_text("\n", encoding="utf-8")
    replay = _run(pytester, "--record-mode=none")
    replay.assert_outcomes(failed=1)
    assert "TypeError" not in replay.stdout.str()
    assert "record_mode 'none' doesn't record new ones" in replay.stdout.str()
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    assert "recorded at last" in cassette.read_text(encoding="utf-8")
    _run(pytester, "--record-mode=none").assert_outcomes(passed=1)


SWALLOWED = """
import os, pytest
import openai
from fallback import swallowing
from harness.emulator import Emulator
from harness.script import turn

@pytest.mark.vcr
def test_swallowed():
    with Emulator(turn.text("ok")) as emulator:
        client = openai.OpenAI(base_url=emulator.base_url + "/v1", api_key="k", max_retries=0)
        ask = [{"role": "user", "content": os.environ["ASK"]}]
        swallowing(lambda: client.chat.completions.create(model="m", messages=ask))

@pytest.mark.vcr
def test_caught():
    import vcr.errors

    with Emulator(turn.text("ok")) as emulator:
        client = openai.OpenAI(base_url=emulator.base_url + "/v1", api_key="k", max_retries=0)
        ask = [{"role": "user", "content": os.environ["ASK"]}]
        if os.environ["ASK"] == "hi":
            client.chat.completions.create(model="m", messages=ask)
        else:  # the test expects the refusal: its own business, not a failure
            with pytest.raises(vcr.errors.CannotOverwriteExistingCassetteException):
                client.chat.completions.create(model="m", messages=ask)
"""


def test_a_request_the_cassette_cannot_answer_fails_once_even_when_the_code_swallows_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as under the recorded fixture: vcrpy raised its CannotOverwriteExistingCassetteException into
    # the code under test, which caught it, and the test passed with nothing replayed
    pytester.makeini(STRICT)
    pytester.makepyfile(test_swallowed=SWALLOWED, fallback=FALLBACK)
    monkeypatch.setenv("ASK", "hi")
    _run(pytester, "--record-mode=once").assert_outcomes(passed=2)
    monkeypatch.setenv("ASK", "changed")
    result = _run(pytester, "--record-mode=none")
    result.assert_outcomes(failed=1, passed=1)  # swallowed by the code under test; caught by the test
    output = result.stdout.str()
    assert output.count("Can't play back this request: no recorded interaction matches it") == 1, output
    assert 'sent "changed", recorded "hi"' in output
    assert "Traceback" not in output and "raise CannotOverwrite" not in output  # the message, once
