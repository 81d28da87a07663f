"""The wire invariants (DESIGN 6): what a verdict is made of (``_findings``) and the invariants that
reach one (``_wire_invariants``: W1-W6 and ``judge``; ``_w2_reasoning``: W2's reasoning rule; ``_w7_refused``: W7
and the refusal rule; ``_w8_well_formed``: W8), for the campaign
modules of ``harness.agents``."""

from harness.agents._invariants._findings import (
    INVARIANTS,
    Deviation,
    Judgement,
    ReplyKinds,
    Violation,
    by_cause,
    declared_deviations,
    deviations_of,
    led_by,
    reply_kinds,
    tier_for,
)
from harness.agents._invariants._w8_well_formed import judged_by_w8, raised_line
from harness.agents._invariants._wire_invariants import is_whole, judge

__all__ = [
    "INVARIANTS",
    "Deviation",
    "Judgement",
    "ReplyKinds",
    "Violation",
    "by_cause",
    "declared_deviations",
    "deviations_of",
    "is_whole",
    "judge",
    "judged_by_w8",
    "led_by",
    "raised_line",
    "reply_kinds",
    "tier_for",
]
