"""Each conversation has its own base URL, and a request is judged only in the conversation that
sent it: a run the campaign abandoned that wakes up later is counted, never judged as another's."""

from __future__ import annotations

from pathlib import Path

from harness.agents import Deviation, run_agent_campaign
from tests.harness.agents import planted

SLOW = [Deviation("W3", "it waits 3 s before retrying a 429, longer than this campaign's bound")]


def test_a_retry_from_an_abandoned_run_is_counted_not_judged_in_a_later_conversation(tmp_path: Path) -> None:
    # Before: the retry, sent 3 s after its run was abandoned, was filed under the conversation
    # running then, and reported as W2 ("request 1 and its reply had 4 ... calling add#call_1"),
    # with a shrunk scenario of one text turn that did not reproduce it.
    result = run_agent_campaign(planted.slow_retry, deviations=SLOW, time_bound=1.0, save_dir=tmp_path)
    assert result.failure is None, str(result.failure.violation) if result.failure else ""
    stats = result.stats
    assert stats.declared["W3"] >= 1  # the slow retries were abandoned at the bound, as declared
    assert stats.late >= 1, stats.notes()
    assert any("arrived from runs the campaign had abandoned" in note for note in stats.notes())
    assert not list(tmp_path.rglob("*.yaml"))
