"""The wire campaign against a loop of our own over the openai SDK, with one planted defect per
invariant: the default campaign finds each one, shrunk to at most two replies, saved as a scenario
that reproduces it when served again; the same loop without defects passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.agents import Deviation, replay_agent, run_agent_campaign
from harness.scenarios._scenario import Scenario
from tests.harness.agents import planted

FOUND_AS = {
    "drop_second_result": "W1",
    "resend_without_result": "W1",
    "rewrite_history": "W2",
    "loop_on_unknown_tool": "W3",
    "return_cut_text": "W5",
    "retry_without_wait": "W6",
    "keep_text_on_stream_error": "W5",
}


def test_the_loop_without_defects_passes_the_default_campaign(tmp_path: Path) -> None:
    result = run_agent_campaign(planted.agent, save_dir=tmp_path)
    assert result.ok, result.failure and str(result.failure.violation)
    assert result.in_process  # it takes http_client: no socket
    stats = result.stats
    assert stats.conversations == 100
    assert set(stats.kinds) >= {
        "final answer",
        "valid call",
        "invalid arguments",
        "several calls",
        "unknown tool",
        "error status",
        "cut stream",
        "in-band error",
        "malformed chunk",
        "cut inside an event",
    }
    assert not list(tmp_path.rglob("*.yaml"))


@pytest.mark.parametrize("defect", sorted(FOUND_AS))
def test_the_default_campaign_finds_each_planted_defect_in_at_most_two_replies(defect: str, tmp_path: Path) -> None:
    agent = planted.make(defect)
    result = run_agent_campaign(agent, save_dir=tmp_path)
    assert result.failure is not None, f"{defect} was not found"
    failure = result.failure
    assert failure.violation.invariant == FOUND_AS[defect], str(failure.violation)
    assert 1 <= len(failure.scenario.turns) <= 2, failure.scenario.to_yaml()
    assert failure.path is not None and failure.path.parent == tmp_path / "wire"
    saved = Scenario.from_yaml(failure.path)
    assert saved.meta["violation"]["invariant"] == FOUND_AS[defect]
    # served again, the file reproduces the failure, and the loop without the defect passes it
    _, again = replay_agent(agent, failure.path)
    assert [v.invariant for v in again.violations][:1] == [FOUND_AS[defect]]
    _, clean = replay_agent(planted.agent, failure.path)
    assert clean.ok, [str(v) for v in clean.violations]


def test_a_declared_deviation_is_reported_as_declared_and_checked_as_declared(tmp_path: Path) -> None:
    agent = planted.make("return_cut_text")
    why = "this agent prefers a partial answer to none"
    covered = run_agent_campaign(
        agent, 40, deviations=[Deviation("W5", why, kinds=("cut stream", "cut inside an event"))], save=False
    )
    assert covered.ok and covered.stats.declared["W5"] > 0
    elsewhere = run_agent_campaign(agent, 40, deviations=[Deviation("W5", why, kinds=("error status",))], save=False)
    assert elsewhere.failure is not None and elsewhere.failure.violation.invariant == "W5"


def test_a_deviation_names_a_known_invariant_and_a_reason() -> None:
    with pytest.raises(ValueError, match="unknown invariant"):
        Deviation("W9", "because")
    with pytest.raises(ValueError, match="say why"):
        Deviation("W1", " ")
