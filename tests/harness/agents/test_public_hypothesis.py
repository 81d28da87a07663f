"""The wire campaign uses Hypothesis through its public API only (issue 27 point 3): a Hypothesis
release that moves its internals cannot break it, and a plan of replies shrinks as a list."""

from __future__ import annotations

import re
from pathlib import Path

import harness.agents
from harness.agents import run_agent_campaign
from tests.harness.agents import planted

INTERNALS = re.compile(
    r"hypothesis\.internal|conjecture|ConjectureData|for_choices|mark_overrun|_get_local_constants"
    r"|current_build_context|is_final\(\)|_hypothesis_internal"
)


def test_no_module_of_the_wire_campaign_reaches_into_hypothesis_internals() -> None:
    package = Path(harness.agents.__file__).parent
    found = {
        f"{path.name}:{number}": line.strip()
        for path in sorted(package.glob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if INTERNALS.search(line)
    }
    assert not found, found


def test_a_minimal_failure_keeps_only_the_replies_it_needs() -> None:
    # one plan of replies per conversation, a list: shrinking removes whole replies
    result = run_agent_campaign(planted.drop_second_result, save=False)
    assert result.failure is not None and result.failure.violation.invariant == "W1"
    kinds = [(len(t.calls), t.kind) for t in result.failure.scenario.turns]
    assert len(kinds) <= 2 and kinds[0][0] >= 2, kinds  # the reply with several calls, then the answer at most
