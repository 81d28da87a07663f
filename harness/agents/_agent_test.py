"""``agent_test``: a wire campaign as a pytest test, its saved regressions replayed first.

``test_my_agent = agent_test(my_agent)`` in a test module is the whole suite, under the active
Hypothesis profile (``harness-ci`` in CI: the same examples every time);
``agent_test(cmd=["node", "agent.mjs"])`` is the same for an agent in any language, run as a
process (``_process_agent``).

A failure says what ``harness fuzz`` would have exited with (1 violation, 3 inconclusive) and saves
the shrunk scenario under the regression directory, where the next run replays it first; its
traceback is the agent's, never this module's source (``__tracebackhide__``). Ctrl-C ends pytest
with 130, as it ends ``harness fuzz``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.agents._campaign import DEFAULT_MAX_REPLIES, checker, fewer_replies, tally
from harness.agents._campaign_result import (
    EXIT_MEANINGS,
    INCONCLUSIVE,
    INTERRUPTED,
    VIOLATION,
    AgentStats,
    WireViolationError,
    inconclusive,
)
from harness.agents._conversation import DEFAULT_PROMPT, DEFAULT_TIME_BOUND, agent_name, check_signature, serving
from harness.agents._first_failure import agent_traceback, nothing_tested
from harness.agents._invariants import INVARIANTS, Deviation, declared_deviations, deviations_of
from harness.agents._wire_regressions import load_wire_regressions, replay_agent, save_wire_regression
from harness.scenarios import Scenario


def agent_test(
    agent: Callable[..., Any] | None = None,
    *,
    cmd: Sequence[str] | str | None = None,
    mode: str = "process",
    prompt: str | None = None,
    deviations: Sequence[Deviation] | None = None,
    max_replies: int = DEFAULT_MAX_REPLIES,
    time_bound: float = DEFAULT_TIME_BOUND,
    regressions: str | os.PathLike[str] | None = None,
    name: str | None = None,
    hostile: bool = False,
    from_cassette: str | os.PathLike[str] | None = None,
) -> Callable[[], None]:
    """A pytest test of ``agent`` (or of the command ``cmd``, in any language): its saved wire
    regressions replayed first, then a campaign under the active Hypothesis profile.

    ``cmd``: the agent's argv (split as a shell would); ``mode="lines"`` keeps one process for the campaign
    (docs/wire-campaigns.md). ``name``: what its saved scenarios name (``meta.agent``), for a factory's agent the
    ``MODULE:CALLABLE`` it is imported by. ``time_bound``: seconds a run may take (W3; one that cannot be cancelled
    is left behind and counted). ``from_cassette``: around each recorded conversation (docs/seeded-campaigns.md)."""
    if (agent is None) == (cmd is None):
        raise TypeError("give agent_test an agent callable or cmd=[...], one of them")
    unusable: str | None = None
    try:  # checked now, said when the test runs: one wrong agent must not stop a module's collection
        agent = _the_agent(agent, cmd, mode)
        name = agent_name(agent, name)
        check_signature(agent)
    except (TypeError, ValueError) as exc:
        unusable = f"{name or cmd or agent}: {exc}"
    declared: Sequence[Deviation] = ()
    if agent is not None:  # a declaration no judgement could use is refused at once (a list, of Deviation)
        declared = deviations_of(agent) if deviations is None else declared_deviations(deviations)
    text = prompt or getattr(agent, "wire_prompt", None) or DEFAULT_PROMPT
    plan = _Plan(agent, str(name), text, declared, max_replies, time_bound, hostile, regressions, from_cassette)

    def test() -> None:
        __tracebackhide__ = True  # the failure's text is the agent's story, not this function's source
        if unusable is not None or agent is None:
            raise TypeError(unusable)
        for path in load_wire_regressions(regressions, plan.name):
            run, judgement = replay_agent(agent, path, deviations=declared)
            if judgement.violations:
                said = f"\n\n{_exit_said(VIOLATION)}: the saved regression {path} still fails{_raised(run)}"
                raise WireViolationError(judgement, run, Scenario.from_yaml(path), said)
        plan.campaign()

    test.__name__ = f"test_wire_{getattr(agent, '__name__', None) or 'agent'}"
    test.__doc__ = f"W1-W8 over generated replies for {name} ({', '.join(INVARIANTS)})."
    return test


def _the_agent(agent: Callable[..., Any] | None, cmd: Sequence[str] | str | None, mode: str) -> Callable[..., Any]:
    """The callable a campaign runs: ``agent``, or the command ``cmd`` as a process agent."""
    if cmd is not None:
        from harness.agents._process_agent import ProcessAgent

        return ProcessAgent(cmd, mode=mode)
    assert agent is not None  # one of the two, checked above
    return agent


@dataclass
class _Plan:
    """The campaign ``agent_test`` runs, under the profile active when the test runs."""

    agent: Callable[..., Any] | None
    name: str
    prompt: str
    deviations: Sequence[Deviation]
    max_replies: int
    time_bound: float
    hostile: bool
    regressions: str | os.PathLike[str] | None = None
    cassette: str | os.PathLike[str] | None = None

    def campaign(self) -> None:
        __tracebackhide__ = True
        try:
            self._seeded() if self.cassette is not None else self._campaign()
        except KeyboardInterrupt:  # Ctrl-C: pytest ends with 130, as harness fuzz does, not 2
            import pytest

            pytest.exit(f"{self.name}: {_exit_said(INTERRUPTED)}", returncode=INTERRUPTED)

    def _campaign(self) -> None:
        __tracebackhide__ = True
        assert self.agent is not None  # an unusable agent raised before its campaign
        stats = AgentStats()
        with serving(self.agent) as served:
            check = checker(
                self.agent,
                self.name,
                served,
                self.prompt,
                self.deviations,
                self.max_replies,
                self.time_bound,
                self.hostile,
            )

            def example(data: Any) -> None:
                stats.add(*check(data))

            current = settings()  # the profile active now, not at import
            campaign = settings(current, deadline=None, suppress_health_check=list(HealthCheck))(
                given(st.data())(example)
            )
            try:
                campaign()
            except WireViolationError as exc:
                tally(stats, served)
                raise self._failed(exc, served, stats) from None
            tally(stats, served)
        if stats.left_behind:  # said once the agent's output is no longer captured: pytest shows it
            warnings.warn(f"{self.name}: {stats.notes()[-1]}", RuntimeWarning, stacklevel=3)
        reasons = inconclusive(stats)
        if reasons:  # green means tested: too little reached the emulator to say "held"
            said = [f"{self.name}: {_exit_said(INCONCLUSIVE)}", *(f"- {reason}" for reason in reasons)]
            said += ["", nothing_tested(stats)] if not stats.requests else []
            for raised in list(stats.raised.values())[:5] if stats.requests else []:
                said += ["", raised.headline, raised.traceback]
            raise AssertionError("\n".join(said))

    def _seeded(self) -> None:
        """The campaign seeded by the recording: its failure saved where the next run replays it first."""
        __tracebackhide__ = True
        from harness.agents._seeded import run_seeded_campaign
        from harness.campaigns import DEFAULT_SEED

        assert self.agent is not None and self.cassette is not None  # checked before the campaign
        found = run_seeded_campaign(
            self.agent,
            self.cassette,
            examples=settings().max_examples,
            seed=DEFAULT_SEED,
            deviations=self.deviations,
            max_replies=self.max_replies,
            time_bound=self.time_bound,
            save_dir=self.regressions,
            name=self.name,
            hostile=self.hostile,
        )
        for seeded in found:
            failure = seeded.result.failure
            if failure is not None:
                notes = (
                    f"\n\n{seeded.headline()}\n{seeded.finding()}\n\n{_exit_said(VIOLATION)}; saved as "
                    f"{failure.path}, replayed first by this test from now on (serve it by hand: harness emulate "
                    f"--script {failure.path})"
                )
                raise WireViolationError(failure.judgement, failure.run, failure.scenario, notes + _raised(failure.run))
            reasons = inconclusive(seeded.result.stats)
            if reasons:  # green means tested, seeded or not
                said = [f"{self.name}: {seeded.headline()}: {_exit_said(INCONCLUSIVE)}", *(f"- {r}" for r in reasons)]
                raise AssertionError("\n".join(said))

    def _failed(self, found: WireViolationError, served: Any, stats: AgentStats) -> WireViolationError:
        """The failure, with whole replies removed where they can be, saved where the next run
        replays it first, saying what harness fuzz would exit with."""
        assert self.agent is not None  # a campaign ran it
        failure = fewer_replies(self.agent, served, found, self.deviations, self.time_bound, name=self.name)
        test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
        path = save_wire_regression(failure, self.regressions, f"pytest {test}" if test else "agent_test")
        notes = "".join(f"\n{note}" for note in stats.notes())
        notes += (
            f"\n\n{_exit_said(VIOLATION)}; saved as {path}, replayed first by this test from now on "
            f"(serve it by hand: harness emulate --script {path}){_raised(failure.run)}"
        )
        return WireViolationError(failure.judgement, failure.run, failure.scenario, notes)


def _exit_said(code: int) -> str:
    return f"{EXIT_MEANINGS[code]} (harness fuzz exits {code} on it)"


def _raised(run: Any) -> str:
    """The run's traceback, the agent's frames only: what pytest would otherwise show of ours."""
    return f"\n\nthe run raised:\n{agent_traceback(run.raised)}" if run.raised is not None else ""
