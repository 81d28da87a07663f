"""A campaign seeded by a recorded conversation: example 0 the recording, then mutations of it.

A campaign from scratch plans about three replies and starts every conversation anew: a bug past
the fourth tool round, or past a history length, is out of its reach. A recording a user already
has reaches it. Example 0 serves the recording unchanged (call ids included); an agent that fails
on it is told so, and nothing else runs. Every later example draws mutations of the recording
(``_mutations``), judged by W1-W8 like any run; the first failure shrinks, as Hypothesis shrinks,
toward the unmodified recording, and its scenario (the recorded prompt, the served replies) is
saved for ``harness emulate --script`` and ``agent_test``, naming each remaining mutation by its
recorded step.
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.agents._campaign import DEFAULT_EXAMPLES, DEFAULT_MAX_REPLIES, SHRINK_RUNS, _Exploration, tally
from harness.agents._campaign_result import AgentCampaignResult, AgentStats, WireFailure, WireViolationError
from harness.agents._conversation import DEFAULT_TIME_BOUND, REQUEST_SLACK, Run, Serving, agent_name, serving
from harness.agents._invariants import Deviation, Judgement, declared_deviations, deviations_of, judge
from harness.agents._replies import kind_of
from harness.agents._seeded._mutations import Mutation, SeededReplies, Served, mutations, spine_of
from harness.agents._seeded._seed import Seed, chosen_seeds
from harness.agents._wire_regressions import save_wire_regression, scenario_of
from harness.campaigns import DEFAULT_SEED
from harness.report import Spine
from harness.scenarios import ModelTurn

SEEDED_SHRINK_RUNS = 40
"""Runs of the agent Hypothesis may spend shrinking a seeded failure: its search is small (at most
three mutations, each of a few kinds), and each run replays the whole recording."""


@dataclass
class SeededCampaign:
    """What a campaign seeded by one recorded conversation found."""

    seed: Seed
    result: AgentCampaignResult
    mutated: int = 0
    """Mutated examples run (example 0, the recording unchanged, not counted)."""
    recording_fails: bool = False
    """Example 0 failed: the recorded conversation itself breaks an invariant."""
    mutations: list[str] = field(default_factory=list)
    """The failure's mutations, each named by its recorded step."""
    command: str = ""
    """The command that runs this conversation's campaign again."""
    trail: list[Served] = field(default_factory=list)
    """What answered each request of the failing run: the recorded step, mutated or not, or a drawn reply."""

    def spine(self) -> Spine:
        """The recording as the spine of the failure's page: each recorded step with the requests
        it answered and its mutation, and the replies drawn once the agent left it."""
        return spine_of(self.seed, self.trail, self.headline())

    def headline(self) -> str:
        """What ran, in one line: example 0 and the mutated examples."""
        seed = self.seed
        return (
            f"conversation {seed.number} of {seed.source} ({seed.provider} {seed.endpoint}, "
            f"{len(seed.replies)} recorded replies): example 0 was the recording unchanged, "
            f"{self.mutated} mutated example{'s' if self.mutated != 1 else ''} ran"
        )

    def finding(self) -> str | None:
        """The failure in one line: the recording's own, or the mutations it needs."""
        failure = self.result.failure
        if failure is None:
            return None
        if self.recording_fails:
            return f"the recorded conversation itself fails {failure.violation.invariant}: {failure.violation.message}"
        return f"{failure.violation.invariant} after: " + "; ".join(self.mutations)


@dataclass
class _Options:
    examples: int
    seed: int
    deviations: Sequence[Deviation]
    max_replies: int
    time_bound: float
    hostile: bool
    name: str


def run_seeded_campaign(
    agent: Callable[..., Any],
    cassette: str | os.PathLike[str],
    *,
    conversation: int | None = None,
    examples: int = DEFAULT_EXAMPLES,
    seed: int | None = DEFAULT_SEED,
    deviations: Sequence[Deviation] | None = None,
    max_replies: int = DEFAULT_MAX_REPLIES,
    time_bound: float = DEFAULT_TIME_BOUND,
    save_dir: str | os.PathLike[str] | None = None,
    save: bool = True,
    on_example: Callable[[AgentStats], None] | None = None,
    name: str | None = None,
    hostile: bool = False,
    target: str | None = None,
) -> list[SeededCampaign]:
    """``examples`` per recorded conversation (example 0 included), each conversation in turn, or
    only ``conversation`` (from 1). Raises :class:`SeedError` (one line) for a file no campaign
    can be seeded from, or a conversation it does not hold."""
    seeds = chosen_seeds(Path(cassette), conversation)
    declared = deviations_of(agent) if deviations is None else declared_deviations(deviations)
    chosen = _Options(
        examples,
        seed if seed is not None else random.randrange(2**32),
        declared,
        max_replies,
        time_bound,
        hostile,
        agent_name(agent, name),
    )
    found: list[SeededCampaign] = []
    with serving(agent) as served:
        for recorded in seeds:
            campaign = _campaign(agent, served, recorded, chosen, on_example)
            found.append(campaign)
            campaign.command = _found_by(target or f"--agent {chosen.name}", cassette, recorded, chosen)
            failure = campaign.result.failure
            if failure is not None and save:
                failure.path = save_wire_regression(failure, save_dir, campaign.command)
    return found


def _campaign(
    agent: Callable[..., Any],
    served: Serving,
    recorded: Seed,
    chosen: _Options,
    on_example: Callable[[AgentStats], None] | None,
) -> SeededCampaign:
    check, tried = _checker(agent, served, recorded, chosen)
    exploring = _Exploration(check, on_example)
    exploring.attempts = SHRINK_RUNS - SEEDED_SHRINK_RUNS  # the shrinker's budget counts up from here
    outcome = SeededCampaign(recorded, AgentCampaignResult(chosen.name, exploring.stats, chosen.seed, False))
    unchanged = SeededReplies(recorded, {})
    run = _converse(agent, served, recorded, unchanged, chosen, faults=0)
    judgement = judge(run, chosen.deviations)
    exploring.count(run, judgement)
    outcome.trail = unchanged.trail  # the page's spine, unless a failure's run replaces it
    if judgement.violations:  # the recording itself: nothing mutated could say more
        outcome.recording_fails = True
        outcome.result.failure = _failure(run, judgement, recorded, chosen, [])
    elif chosen.examples > 1:
        exploring.explore(chosen.examples - 1, chosen.seed, chosen.name)
        outcome.mutated = exploring.stats.conversations - 1
        if exploring.failing:  # Hypothesis ran the minimal example last; then whole mutations go, where they can
            minimal = exploring.failing[-1]
            planned, drawn, trail = tried[id(minimal)]
            run, judgement, planned, fresh, outcome.trail = _fewer_mutations(
                agent, served, recorded, chosen, minimal, (planned, drawn, trail)
            )
            outcome.mutations = [m.name(recorded) for m in planned]
            if fresh:  # what the agent was served once it left the recording belongs to the finding too
                kinds = ", ".join(kind_of(reply, recorded.provider) for reply in fresh)
                outcome.mutations.append(f"then, once the agent left the recording, drawn replies: {kinds}")
            outcome.result.failure = _failure(run, judgement, recorded, chosen, planned)
            exploring.stats.shrinking_seconds = time.perf_counter() - exploring.started - exploring.stats.seconds
    tally(exploring.stats, served)
    outcome.result.in_process = served.in_process and not exploring.stats.bypassed
    return outcome


Tried = tuple[list[Mutation], list[ModelTurn], list[Served]]
"""A failing example's mutations, the replies it drew once the agent left the recording, its trail."""


def _checker(
    agent: Callable[..., Any], served: Serving, recorded: Seed, chosen: _Options
) -> tuple[Callable[[Any], tuple[Run, Judgement]], dict[int, Tried]]:
    """The Hypothesis example: mutations drawn, the run judged; each failure's mutations kept by
    the failure's id, so the minimal one can be named."""
    tried: dict[int, Tried] = {}
    strategy = mutations(recorded, chosen.hostile)

    def check(data: Any) -> tuple[Run, Judgement]:
        planned = sorted(data.draw(strategy, label="mutations"), key=lambda m: m.step)
        replies = SeededReplies(recorded, {m.step: m for m in planned}, data, chosen.hostile, chosen.max_replies)
        faults = sum(m.change == "fault before" for m in planned)
        run = _converse(agent, served, recorded, replies, chosen, faults)
        judgement = judge(run, chosen.deviations)
        if judgement.violations:
            error = WireViolationError(judgement, run, scenario_of(run, chosen.name, judgement))
            tried[id(error)] = (planned, replies.drawn, replies.trail)
            raise error
        return run, judgement

    return check, tried


def _fewer_mutations(
    agent: Callable[..., Any],
    served: Serving,
    recorded: Seed,
    chosen: _Options,
    found: WireViolationError,
    minimal: Tried,
) -> tuple[Run, Judgement, list[Mutation], list[ModelTurn], list[Served]]:
    """The failure with every mutation it does not need removed, one at a time (a removal is kept
    when the same invariant still breaks): Hypothesis's shrinker does this too, within its budget
    of runs, and a replay without one mutation is one run. The replies the failing run drew once it
    left the recording are served again, in order, where the agent leaves it again."""
    invariant = found.judgement.violations[0].invariant
    planned, drawn, trail = minimal
    best = (found.run, found.judgement, planned, drawn, trail)
    removing = True
    while removing and len(best[2]) > 1:
        removing = False
        for index in range(len(best[2])):
            candidate = best[2][:index] + best[2][index + 1 :]
            replies = SeededReplies(recorded, {m.step: m for m in candidate}, None, chosen.hostile, drawn=list(drawn))
            faults = sum(m.change == "fault before" for m in candidate)
            run = _converse(agent, served, recorded, replies, chosen, faults)
            judgement = judge(run, chosen.deviations)
            same = [v for v in judgement.violations if v.invariant == invariant]
            if same:
                served_fresh = drawn[: replies.fresh]
                kept = Judgement((same[0],), judgement.declared)
                best, removing = (run, kept, candidate, served_fresh, replies.trail), True
                break
    return best


def _converse(
    agent: Callable[..., Any], served: Serving, recorded: Seed, replies: SeededReplies, chosen: _Options, faults: int
) -> Run:
    """One run; its request bound the campaign's usual one, counted from the recording's length."""
    run = served.converse(
        agent,
        replies,
        prompt=recorded.prompt,
        request_bound=len(recorded.replies) + faults + chosen.max_replies + 1 + REQUEST_SLACK,
        time_bound=chosen.time_bound,
    )
    if run.in_process == 0 and run.exchanges and served.in_process:
        served.bypassed += 1
    return run


def _failure(run: Run, judgement: Judgement, recorded: Seed, chosen: _Options, planned: list[Mutation]) -> WireFailure:
    """The failing run as a scenario carrying the recorded prompt, where it came from and its mutations."""
    scenario = scenario_of(run, chosen.name, judgement)
    seeded = {
        "cassette": Path(recorded.source).name,
        "conversation": recorded.number,
        "mutations": [m.name(recorded) for m in planned] or ["none: the recording unchanged"],
    }
    scenario = dataclasses.replace(scenario, meta={**scenario.meta, "seeded_from": seeded})
    return WireFailure(judgement.violations[0], judgement, run, scenario)


def _found_by(target: str, cassette: str | os.PathLike[str], recorded: Seed, chosen: _Options) -> str:
    command = f"harness fuzz {target} --from-cassette {cassette} --conversation {recorded.number} --seed {chosen.seed}"
    if chosen.examples != DEFAULT_EXAMPLES:
        command += f" --examples {chosen.examples}"
    if chosen.hostile:
        command += " --hostile"
    if chosen.time_bound != DEFAULT_TIME_BOUND:
        command += f" --time-bound {chosen.time_bound:g}"
    return command
