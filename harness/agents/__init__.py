"""Fuzzing any agent through the wire (DESIGN section 6): generated replies served on the wire the
agent speaks, wire invariants W1-W8 judging the requests it sends back.

A layer of its own, above the emulator, the recording tools and the campaigns: it drives the
emulator (``harness.emulator``), reads requests the way cassettes are read
(``harness.recording``) and reuses the campaigns' vocabulary and Hypothesis hygiene
(``harness.campaigns``), three packages that must not import each other. Lazy, so the pytest
plugin and ``harness --help`` pay nothing for it.

``run_agent_campaign`` (``_campaign``) is ``harness fuzz --agent`` and ``--agent-cmd``;
``agent_test`` (``_agent_test``) its pytest form; ``replay_agent`` (``_wire_regressions``) serves a
saved scenario; ``judge`` and ``Deviation`` (``_invariants``) are the invariants; ``replies``
(``_replies``) the vocabulary; ``converse`` (``_conversation``) one run, under a base URL of its
own; ``ProcessAgent`` (``_process_agent``) an agent in any language, run as a process, and
``serve_lines`` the long-lived mode's loop for a Python agent, in one call;
``run_seeded_campaign`` (``_seeded``, with ``judge_recording``) a campaign seeded by a recorded
conversation; ``AgentCampaignResult`` and ``Verdict`` (``_campaign_result``) what a campaign found and can say,
the same on the console and the HTML page. ``_agent_output`` keeps what the agent prints per
conversation, ``_first_failure`` shows what a run raised (the agent's frames, the hints that fit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import _lazy_exports

if TYPE_CHECKING:
    from harness.agents._agent_test import agent_test
    from harness.agents._campaign import DEFAULT_EXAMPLES, run_agent_campaign
    from harness.agents._campaign_result import (
        AgentCampaignResult,
        AgentStats,
        UnsteadyAgentError,
        Verdict,
        WireFailure,
        WireViolationError,
    )
    from harness.agents._conversation import Agent, Exchange, Run, WireEmulator, converse
    from harness.agents._invariants import INVARIANTS, Deviation, Judgement, Violation, judge
    from harness.agents._process_agent import ProcessAgent, serve_lines
    from harness.agents._replies import KINDS, TIERS, kinds_for, replies, tier_of
    from harness.agents._seeded import SeededCampaign, SeedError, chosen_seeds, judge_recording, run_seeded_campaign
    from harness.agents._wire_regressions import load_wire_regressions, replay_agent, scenario_of

_EXPORTS = {
    "DEFAULT_EXAMPLES": "._campaign",
    "AgentCampaignResult": "._campaign_result",
    "AgentStats": "._campaign_result",
    "UnsteadyAgentError": "._campaign_result",
    "WireFailure": "._campaign_result",
    "WireViolationError": "._campaign_result",
    "agent_test": "._agent_test",
    "load_wire_regressions": "._wire_regressions",
    "replay_agent": "._wire_regressions",
    "run_agent_campaign": "._campaign",
    "scenario_of": "._wire_regressions",
    "ProcessAgent": "._process_agent",
    "serve_lines": "._process_agent",
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
    "judge_recording": "._seeded",
    "run_seeded_campaign": "._seeded",
    "SeedError": "._seeded",
    "SeededCampaign": "._seeded",
    "chosen_seeds": "._seeded",
    "KINDS": "._replies",
    "TIERS": "._replies",
    "kinds_for": "._replies",
    "replies": "._replies",
    "tier_of": "._replies",
    "Verdict": "._campaign_result",
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
    "ProcessAgent",
    "Run",
    "SeedError",
    "SeededCampaign",
    "TIERS",
    "UnsteadyAgentError",
    "Verdict",
    "Violation",
    "WireEmulator",
    "WireFailure",
    "WireViolationError",
    "agent_test",
    "chosen_seeds",
    "converse",
    "judge",
    "judge_recording",
    "kinds_for",
    "load_wire_regressions",
    "replay_agent",
    "replies",
    "run_agent_campaign",
    "run_seeded_campaign",
    "scenario_of",
    "serve_lines",
    "tier_of",
]
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
