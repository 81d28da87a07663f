"""The wire invariants' verdicts as a campaign reports them: one computation for the console and
the HTML page, so the two can never say different things.

"held" is a claim that the campaign gave an invariant chances to break and it did not; a count of
those chances goes with it. An invariant no conversation gave a chance is "not exercised"; one the
campaign stopped before reaching (it stops at its first violation) is "not reached".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.agents._conversation import Run
from harness.agents._replies import retry_after

RETRIED_STATUSES = (429, 503)


def exercised(run: Run) -> set[str]:
    """The invariants this run gave a chance to break (it is counted under each, once)."""
    chances: set[str] = set()
    exchanges = run.exchanges
    if not exchanges:
        return chances
    chances.add("W3")  # a run that reached the emulator could have failed to end
    if len(exchanges) > 1:
        chances.add("W2")  # a second request could have rewritten the first one's history
    for exchange in exchanges:
        reply = exchange.reply
        if reply is None:
            continue
        if exchange.delivered and reply.calls:
            chances.add("W1")  # a call was owed a result
        if not exchange.delivered:
            chances.add("W5")  # a reply that is not whole could have been returned as one
        if reply.kind == "error" and retry_after(reply) is not None:
            chances.add("W6")  # a retry could have come too soon
    if run.returned is not None and not run.timed_out:
        chances.add("W4")  # a returned text to compare with the last reply's
    return chances


@dataclass(frozen=True)
class Verdict:
    """One row of the invariants' table."""

    invariant: str
    statement: str
    verdict: str
    """``VIOLATED``, ``held (exercised in N conversations)``, ``not exercised`` or ``not reached (stopped at W<n>)``."""
    declared: int = 0
    """Violations a declared deviation covered."""

    @property
    def held(self) -> bool:
        return self.verdict.startswith("held")

    @property
    def text(self) -> str:
        """The verdict as the table shows it, with the declared deviations it needed."""
        return self.verdict + (f" ({self.declared} declared deviation(s))" if self.declared else "")


def verdicts(result: Any, invariants: Mapping[str, str]) -> list[Verdict]:
    """Per invariant, what ``result`` (an ``AgentCampaignResult``) can honestly say of it."""
    stats = result.stats
    failure = result.failure
    broken = failure.violation.invariant if failure is not None else None
    rows = []
    for name, statement in invariants.items():
        chances = int(stats.exercised.get(name, 0))
        if name == broken:
            verdict = "VIOLATED"
        elif chances:
            verdict = f"held (exercised in {chances} conversation{'s' if chances != 1 else ''})"
        elif broken is not None:
            verdict = f"not reached (stopped at {broken})"
        else:
            verdict = "not exercised"
        rows.append(Verdict(name, statement, verdict, int(stats.declared.get(name, 0))))
    return rows
