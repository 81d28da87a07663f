"""A replay's mismatch says what differs even when nobody can see it, and JSON compares by type.

A prompt that differs from its recording only by a no-break space, or by a decomposed ``é``, used
to print ``sent "Café à Paris?", recorded "Café à Paris?"``; and a recorded ``"logprobs": 1``
replayed a request that sent ``true`` (in Python ``True == 1``). Both as a user's project meets
them: the ``recorded`` fixture and the plain ``vcr`` marker, each in a pytest run of its own.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ASKED = "Café à Paris?"

ASK = """
import os
def ask(client):
    return client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": os.environ["ASK"]}], logprobs=True
    )
"""

MARKED = """
import openai, pytest
from harness.emulator import Emulator
from harness.script import turn
from ask import ask

@pytest.mark.vcr
def test_ask():
    with Emulator(turn.text("ok")) as emulator:
        ask(openai.OpenAI(base_url=emulator.base_url + "/v1", api_key="k", max_retries=0))
"""

FIXTURE = """
import asyncio
import pytest
from harness.emulator import Emulator
from harness.recording import recorded_client
from harness.script import turn
from ask import ask

@pytest.fixture
def upstream(recorded):
    if not recorded.records:
        yield None
        return
    with Emulator(turn.text("ok")) as emulator:
        yield emulator.base_url

def test_ask(recorded, upstream):
    async def go():
        sdk = recorded_client("openai", recorded.recording, upstream=upstream)
        try:
            await ask(sdk.client)
        finally:
            await sdk.aclose()
    asyncio.run(go())
"""


@pytest.fixture(params=["vcr marker", "recorded fixture"])
def project(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> Iterator[Path]:
    """A user's project whose one test has recorded asking :data:`ASKED`; yields its cassette."""
    pytester.makepyfile(ask=ASK, test_ask=MARKED if request.param == "vcr marker" else FIXTURE)
    _run(pytester, ASKED, "--record-mode=once").assert_outcomes(passed=1)
    yield pytester.path / "cassettes" / "test_ask" / "test_ask.yaml"
    os.environ.pop("ASK", None)


def _run(pytester: pytest.Pytester, asked: str, *args: str) -> pytest.RunResult:
    os.environ["ASK"] = asked
    return pytester.runpytest("-p", "no:cacheprovider", "-q", "-rN", *args)


def _mismatch(pytester: pytest.Pytester, asked: str) -> str:
    result = _run(pytester, asked, "--record-mode=none")
    result.assert_outcomes(failed=1)
    return " ".join(result.stdout.str().split())


def test_a_mismatch_escapes_and_names_what_cannot_be_seen(pytester: pytest.Pytester, project: Path) -> None:
    said = _mismatch(pytester, ASKED.replace(" ", "\u00a0", 1))
    assert 'messages[0].content: sent "Café\\u00a0à Paris?", recorded "Café à Paris?"' in said, said
    assert "(character 5: sent U+00A0 NO-BREAK SPACE, recorded U+0020 SPACE)" in said, said

    said = _mismatch(pytester, unicodedata.normalize("NFD", ASKED))  # é as e and a combining accent
    assert 'sent "Cafe\\u0301 a\\u0300 Paris?", recorded "Café à Paris?"' in said, said
    assert "(the same text in two Unicode forms: sent NFD, recorded NFC)" in said, said


def test_a_recorded_number_does_not_match_a_sent_boolean(pytester: pytest.Pytester, project: Path) -> None:
    text = project.read_text(encoding="utf-8")
    assert '"logprobs": true' in text
    project.write_text(text.replace('"logprobs": true', '"logprobs": 1'), encoding="utf-8")
    said = _mismatch(pytester, ASKED)
    assert "logprobs: sent true, recorded 1 (a boolean sent, a number recorded)" in said, said
