"""Fuzzing any agent through the wire (DESIGN section 6): generated replies served on the wire the
agent speaks, wire invariants W1-W6 judging the requests it sends back.

A layer of its own, above the emulator, the recording tools and the campaigns: it drives the
emulator (``harness.emulator``), reads requests the way cassettes are read
(``harness.recording``) and reuses the campaigns' vocabulary and Hypothesis hygiene
(``harness.campaigns``), three packages that must not import each other. Lazy, so the pytest
plugin and ``harness --help`` pay nothing for it.

``run_agent_campaign`` (``_campaign``) is ``harness fuzz --agent``; ``agent_test`` its pytest
form; ``replay_agent`` serves a saved scenario; ``judge`` and ``Deviation`` (``_invariants``) are
the invariants; ``replies`` (``_replies``) the vocabulary; ``converse`` (``_conversation``) one run,
under a base URL of its own; ``Verdict`` (``_verdicts``) a row of the invariants' table, the same
on the console and the HTML page. ``_agent_output`` keeps what the agent prints per conversation,
``_first_failure`` shows what a run raised (the agent's frames, the hints that fit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import _lazy_exports

if TYPE_CHECKING:
    from harness.agents._campaign import (
        DEFAULT_EXAMPLES,
        AgentCampaignResult,
        AgentStats,
        UnsteadyAgentError,
        WireFailure,
        WireViolationError,
        agent_test,
        load_wire_regressions,
        replay_agent,
        run_agent_campaign,
        scenario_of,
    )
    from harness.agents._conversation import Agent, Exchange, Run, WireEmulator, converse
    from harness.agents._invariants import INVARIANTS, Deviation, Judgement, Violation, judge
    from harness.agents._replies import KINDS, TIERS, kinds_for, replies, tier_of
    from harness.agents._verdicts import Verdict

_EXPORTS = {
    "DEFAULT_EXAMPLES": "._campaign",
    "AgentCampaignResult": "._campaign",
    "AgentStats": "._campaign",
    "UnsteadyAgentError": "._campaign",
    "WireFailure": "._campaign",
    "WireViolationError": "._campaign",
    "agent_test": "._campaign",
    "load_wire_regressions": "._campaign",
    "replay_agent": "._campaign",
    "run_agent_campaign": "._campaign",
    "scenario_of": "._campaign",
    "Agent": "._conversation",
    "Exchange": "._conversation",
    "Run": "._conversation",
    "WireEmulator": "._conversation",
    "converse": "._conversation",
    "INVARIANTS": "._invariants",
    "Deviation": "._invariants",
    "Judgement": "._invariants",
    "Violation": "._invariants",
    "judge": "._invariants",
    "judge_recording": "._recordings",
    "KINDS": "._replies",
    "TIERS": "._replies",
    "kinds_for": "._replies",
    "replies": "._replies",
    "tier_of": "._replies",
    "Verdict": "._verdicts",
}
__all__ = [
    "Agent",
    "AgentCampaignResult",
    "AgentStats",
    "DEFAULT_EXAMPLES",
    "Deviation",
    "Exchange",
    "INVARIANTS",
    "Judgement",
    "KINDS",
    "Run",
    "TIERS",
    "UnsteadyAgentError",
    "Verdict",
    "Violation",
    "WireEmulator",
    "WireFailure",
    "WireViolationError",
    "agent_test",
    "converse",
    "judge",
    "judge_recording",
    "kinds_for",
    "load_wire_regressions",
    "replay_agent",
    "replies",
    "run_agent_campaign",
    "scenario_of",
    "tier_of",
]
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
