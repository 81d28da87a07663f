"""Record modes as a user's project meets them over several runs: what each run sends upstream,
what the cassette holds afterwards, and what the next replay gets.
"""

from __future__ import annotations

import pytest

from harness.recording import _cassette as cassettes
from tests.harness.support import run_in_process

pytest_plugins = ["pytester"]


CONVERSATION = """
import os
import pytest
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

TURNS = ["one", "two", "three"]

@pytest.fixture
def upstream(recorded):
    if not recorded.records:
        yield None
        return
    with Emulator(*[turn.text(text) for text in TURNS]) as emulator:
        yield emulator

@pytest.mark.parametrize("provider", [{providers}])
def test_conversation(recorded, upstream, provider):
    calls = int(os.environ.get("CALLS", "3"))
    base_url = upstream.base_url if upstream is not None else None
    backend = recorded(provider, model="m-1", stream={stream}, upstream=base_url)
    answers = [runtime.exec(f"question {{n}}", provider=backend, tools=[]) for n in range(calls)]
    assert answers == TURNS[:calls]
    if upstream is not None:  # the emulator saw the whole conversation, the replayed requests too
        assert len(upstream.requests) == calls
"""


@pytest.mark.parametrize(
    ("provider", "stream"),
    [("openai", True), ("anthropic", False), ("gemini", True), ("bedrock", True)],
    ids=["openai", "anthropic", "gemini", "bedrock"],
)
def test_new_episodes_against_the_emulator_gets_the_turn_after_the_replayed_ones(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, provider: str, stream: bool
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    pytester.makepyfile(test_conv=CONVERSATION.format(providers=repr(provider), stream=stream))
    cassette = pytester.path / "cassettes" / "test_conv" / f"test_conversation[{provider}].yaml"
    run_in_process(pytester, "--record-mode=once", CALLS="1").assert_outcomes(passed=1)
    assert len(cassettes.load(cassette)) == 1
    # the test now asks three questions: the first replays, the next two get the script's turns 2 and 3
    run_in_process(pytester, "--record-mode=new_episodes", CALLS="3").assert_outcomes(passed=1)
    assert len(cassettes.load(cassette)) == 3
    run_in_process(pytester, "--block-network", CALLS="3").assert_outcomes(passed=1)
