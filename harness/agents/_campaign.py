"""A wire campaign: Hypothesis plans each conversation's replies, W1-W8 judge each run.

``run_agent_campaign(agent)`` is ``harness fuzz --agent MODULE:CALLABLE`` (and ``--agent-cmd``):
a conversation per example, its replies one list drawn with ``st.data()`` on the test's own thread
(``_plans``, over the vocabulary of ``_replies``) and served one per request as they arrive, under
the conversation's own base URL (``_conversation``), each run judged (``_invariants``). The
first violation shrinks like any Hypothesis failure, then :func:`fewer_replies` removes whole
replies; the minimal run's replies become a scenario file (``_wire_regressions``), served by hand
with ``harness emulate --script FILE``.

An agent declares what a campaign needs to know about it as attributes: ``wire_deviations`` (a
list of :class:`~harness.agents.Deviation`) and ``wire_prompt`` (the prompt of every run).
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import Phase, given
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky, FlakyStrategyDefinition

from harness._hypothesis_compat import no_local_constants
from harness.agents._campaign_result import (
    AgentCampaignResult,
    AgentStats,
    UnsteadyAgentError,
    WireFailure,
    WireViolationError,
)
from harness.agents._conversation import (
    DEFAULT_PROMPT,
    DEFAULT_TIME_BOUND,
    REQUEST_SLACK,
    Run,
    Serving,
    agent_name,
    scripted,
    serving,
)
from harness.agents._invariants import Deviation, Judgement, declared_deviations, deviations_of, judge
from harness.agents._plans import FirstPhase, Menus, PlannedReplies
from harness.agents._wire_regressions import save_wire_regression, scenario_of
from harness.campaigns._loop_campaign import DEFAULT_SEED, campaign_settings

DEFAULT_EXAMPLES = 100
"""Conversations per campaign when ``--examples`` is not given (each one is a real agent run)."""
DEFAULT_MAX_REPLIES = 6
"""Replies drawn per conversation at most; after them the model gives its final answer."""
SHRINK_RUNS = 80
"""Runs of the agent Hypothesis may spend shrinking a failure. Each is a real conversation (one
that loops to its request bound costs a dozen requests), and Hypothesis would try hundreds; past
the budget, candidates pass unrun, and :func:`fewer_replies` removes whole replies instead.
A count, not a time, so the same seed always shrinks to the same scenario."""


def run_agent_campaign(
    agent: Callable[..., Any],
    examples: int = DEFAULT_EXAMPLES,
    seed: int | None = DEFAULT_SEED,
    *,
    prompt: str | None = None,
    deviations: Sequence[Deviation] | None = None,
    max_replies: int = DEFAULT_MAX_REPLIES,
    time_bound: float = DEFAULT_TIME_BOUND,
    save_dir: str | os.PathLike[str] | None = None,
    save: bool = True,
    on_example: Callable[[AgentStats], None] | None = None,
    name: str | None = None,
    hostile: bool = False,
    started: float | None = None,
) -> AgentCampaignResult:
    """Run ``examples`` conversations, each served its planned replies; shrink the first
    violation to a scenario and save it (``save=False``: only report it). ``name`` is how the
    saved scenario names the agent (``MODULE:CALLABLE``; default: found from the agent). ``hostile``
    also draws the ``invalid`` tier (replies no conforming provider sends, DESIGN 6).
    ``on_example``: called per conversation, exploring or shrinking (``stats.phase``); ``started``:
    ``time.perf_counter()`` when the command started, so start-up counts the agent's imports.

    Hypothesis finds and shrinks; once it has re-raised the minimal example, whole replies are
    removed where they can be (:func:`fewer_replies`) and the scenario is saved: nothing is saved
    from inside a Hypothesis example."""
    chosen = seed if seed is not None else random.randrange(2**32)
    name = agent_name(agent, name)
    declared = deviations_of(agent) if deviations is None else declared_deviations(deviations)
    failure: WireFailure | None = None
    began = time.perf_counter() if started is None else started
    with serving(agent) as served:
        menus = Menus()
        text = prompt or getattr(agent, "wire_prompt", None) or DEFAULT_PROMPT
        check = checker(agent, name, served, text, declared, max_replies, time_bound, hostile, menus)
        exploring = _Exploration(check, on_example)
        exploring.stats.startup_seconds = exploring.started - began
        exploring.explore(examples, chosen, name, FirstPhase(menus, hostile))
        stats = exploring.stats
        if exploring.failing:  # Hypothesis ran the minimal example last; then whole replies go, where they can
            shrunk = exploring.failing[-1]
            failure = fewer_replies(agent, served, shrunk, declared, time_bound, name=name, progress=exploring.shrunk)
            stats.shrinking_seconds = time.perf_counter() - exploring.started - stats.seconds
        tally(stats, served)
    result = AgentCampaignResult(name, stats, chosen, served.in_process and not stats.bypassed)
    if failure is not None and save:
        command = found_by(name, chosen, examples, max_replies, hostile, time_bound, agent=agent)
        failure.path = save_wire_regression(failure, save_dir, command)
    result.failure = failure
    return result


@dataclass
class _Exploration:
    """The Hypothesis test of a campaign: what it explored is counted, the shrinker's retries are
    not, and past :data:`SHRINK_RUNS` candidates pass unrun."""

    check: Callable[[Any], tuple[Run, Judgement]]
    on_example: Callable[[AgentStats], None] | None
    stats: AgentStats = field(default_factory=AgentStats)
    failing: list[WireViolationError] = field(default_factory=list)
    attempts: int = 0
    started: float = field(default_factory=time.perf_counter)

    def count(self, run: Run, judgement: Judgement) -> None:
        self.stats.add(run, judgement)
        self.stats.seconds = time.perf_counter() - self.started
        if self.on_example is not None:
            self.on_example(self.stats)

    def shrunk(self) -> None:
        """One more run spent shrinking: the progress says so (the count of what was explored stays)."""
        self.stats.phase = "shrinking"
        self.stats.shrink_runs += 1
        if self.on_example is not None:
            self.on_example(self.stats)

    def example(self, data: Any) -> None:
        if self.attempts >= SHRINK_RUNS:  # enough: every later candidate passes unrun
            return
        if self.failing:
            self.attempts += 1
        try:
            run, judgement = self.check(data)
        except WireViolationError as exc:
            if not self.failing:  # the failing run was explored too (the first one, even)
                self.count(exc.run, exc.judgement)
            else:
                self.shrunk()
            self.failing.append(exc)
            raise
        if not self.failing:  # count what was explored, not the shrinker's retries
            self.count(run, judgement)
        else:
            self.shrunk()

    def explore(self, examples: int, seed: int, name: str, first: FirstPhase | None = None) -> None:
        """Each kind once (``first``), then the drawn conversations, the rest of the budget; the
        kinds the tiers offered are known once the first request has shown the menu."""
        try:
            for _ in first.run(examples) if first is not None else ():
                self._explore(1, seed, name)
                if self.failing:
                    return
            self._explore(examples - (first.served if first is not None else 0), seed, name)
        finally:
            if first is not None:
                self.stats.offered = first.offered()

    def _explore(self, examples: int, seed: int, name: str) -> None:
        test = campaign_settings(examples, (Phase.generate, Phase.shrink))(
            hypothesis_seed(seed)(given(st.data())(self.example))
        )
        with no_local_constants():
            try:
                test()
            except (Flaky, FlakyStrategyDefinition) as exc:
                if not self.failing:
                    raise UnsteadyAgentError(
                        f"{name} sent different requests for the same replies ({type(exc).__name__}): a wire "
                        "campaign needs an agent that does the same thing twice (no background requests, no "
                        "reliance on timing); run it with --seed to see which conversation"
                    ) from None
            except Exception:
                if not self.failing:
                    raise
        if not self.failing:  # with a failure, the time of what was explored (set per example), not the shrinking
            self.stats.seconds = time.perf_counter() - self.started


def tally(stats: AgentStats, served: Serving) -> None:
    """What the wire saw beside the judged runs: late requests, unnamed ones, runs left behind."""
    stats.late = served.emulator.late
    stats.stale = list(served.emulator.stale)
    stats.unnamed = served.emulator.unnamed
    stats.left_behind = served.left_behind.count()
    stats.bypassed = served.bypassed


def found_by(
    name: str,
    seed: int,
    examples: int,
    max_replies: int,
    hostile: bool = False,
    time_bound: float = DEFAULT_TIME_BOUND,
    agent: object = None,
) -> str:
    """The command that runs this campaign again: each option that is not its default, so the
    same conversations are drawn (the number of examples shapes Hypothesis's generation too). An
    agent run as a command says how (its ``wire_target``: ``--agent-cmd ...``)."""
    target = getattr(agent, "wire_target", None) or f"--agent {name}"
    command = f"harness fuzz {target} --seed {seed}"
    if examples != DEFAULT_EXAMPLES:
        command += f" --examples {examples}"
    if max_replies != DEFAULT_MAX_REPLIES:
        command += f" --max-turns {max_replies}"
    if hostile:
        command += " --hostile"
    if time_bound != DEFAULT_TIME_BOUND:
        command += f" --time-bound {time_bound:g}"
    return command


def fewer_replies(
    agent: Callable[..., Any],
    served: Serving,
    found: WireViolationError,
    deviations: Sequence[Deviation],
    time_bound: float,
    budget: int = 40,
    name: str | None = None,
    progress: Callable[[], None] | None = None,
) -> WireFailure:
    """The failure with every reply it does not need removed, one reply at a time.

    Hypothesis's list shrinker removes whole replies too, within its budget of runs; replaying the
    scenario without one turn is cheap and finishes the job. A removal is kept when the same
    invariant still breaks."""
    invariant = found.judgement.violations[0].invariant
    best = WireFailure(found.judgement.violations[0], found.judgement, found.run, found.scenario)
    turns = list(found.scenario.turns)
    name = agent_name(agent, name)
    shrinking = True
    while shrinking and budget > 0:
        shrinking = False
        # the last turn stays: it is what every later request gets, and repeating another one
        # instead (a call, say) would make a run that never ends out of one that did
        for index in range(len(turns) - 1):
            candidate = turns[:index] + turns[index + 1 :]
            if not candidate or budget <= 0:
                continue
            budget -= 1
            run = served.converse(
                agent,
                scripted(candidate),
                prompt=found.run.prompt,
                request_bound=found.run.request_bound,
                time_bound=time_bound,
            )
            if progress is not None:
                progress()
            judgement = judge(run, deviations)
            same = [v for v in judgement.violations if invariant in v.invariants]  # one finding per cause
            if same:
                turns = candidate
                scenario = scenario_of(run, name, Judgement((same[0],), ()))
                best = WireFailure(same[0], judgement, run, dataclasses.replace(scenario, turns=tuple(candidate)))
                shrinking = True
                break
    return best


def checker(
    agent: Callable[..., Any],
    name: str,
    served: Serving,
    prompt: str,
    deviations: Sequence[Deviation],
    max_replies: int,
    time_bound: float,
    hostile: bool = False,
    menus: Menus | None = None,
) -> Callable[[Any], tuple[Run, Judgement]]:
    menus = menus if menus is not None else Menus()

    def check(data: Any) -> tuple[Run, Judgement]:
        run = served.converse(
            agent,
            PlannedReplies(data, max_replies, hostile, menus),
            prompt=prompt,
            request_bound=max_replies + 1 + REQUEST_SLACK,
            time_bound=time_bound,
        )
        if run.in_process == 0 and run.exchanges and served.in_process:
            served.bypassed += 1
        judgement = judge(run, deviations)
        if judgement.violations:
            raise WireViolationError(judgement, run, scenario_of(run, name, judgement))
        return run, judgement

    return check
