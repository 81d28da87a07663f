"""A wire campaign: Hypothesis plans each conversation's replies, W1-W6 judge each run.

``run_agent_campaign(agent)`` is ``harness fuzz --agent MODULE:CALLABLE``: a conversation per
example, its replies one list drawn with ``st.data()`` on the test's own thread (``_plans``, over
the vocabulary of ``_replies``) and served one per request as they arrive, under the
conversation's own base URL (``_conversation``), each run judged (``_invariants``). The first violation shrinks like any
Hypothesis failure: the minimal run's replies become a scenario file, served by hand with
``harness emulate --script FILE`` and replayed by :func:`replay_agent`, saved beside the loop's
regressions under ``wire/``. :func:`agent_test` is the same campaign as a pytest test, under the
active Hypothesis profile.

An agent declares what a campaign needs to know about it as attributes: ``wire_deviations`` (a
list of :class:`~harness.agents.Deviation`) and ``wire_prompt`` (the prompt of every run).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky, FlakyStrategyDefinition

from harness._hypothesis_compat import no_local_constants
from harness.agents._agent_output import agent_output
from harness.agents._conversation import (
    LeftBehind,
    Run,
    WireEmulator,
    check_signature,
    converse,
    scripted,
    takes_http_client,
)
from harness.agents._invariants import (
    INVARIANTS,
    Deviation,
    Judgement,
    Violation,
    declared_deviations,
    judge,
    reply_kinds,
)
from harness.agents._plans import Menus, PlannedReplies
from harness.agents._replies import is_final
from harness.agents._verdicts import Verdict, exercised, verdicts
from harness.campaigns._loop_campaign import DEFAULT_SEED, campaign_settings
from harness.checking import scenario_dir
from harness.emulator import WireRequest
from harness.scenarios import ModelTurn, Scenario
from harness.wire import write_atomic

DEFAULT_EXAMPLES = 100
"""Conversations per campaign when ``--examples`` is not given (each one is a real agent run)."""
DEFAULT_MAX_REPLIES = 6
"""Replies drawn per conversation at most; after them the model gives its final answer."""
REQUEST_SLACK = 4
"""Requests a run may send beyond its drawn replies and the final answer before W3 calls it endless."""
DEFAULT_TIME_BOUND = 20.0
"""Seconds a run may take before it is abandoned (W3); ``--time-bound`` / ``time_bound=``."""
SHRINK_RUNS = 80
"""Runs of the agent Hypothesis may spend shrinking a failure. Each is a real conversation (one
that loops to its request bound costs a dozen requests), and Hypothesis would try hundreds; past
the budget, candidates pass unrun, and :func:`fewer_replies` removes whole replies instead.
A count, not a time, so the same seed always shrinks to the same scenario."""
DEFAULT_PROMPT = "What is 2 + 3? Use your tools."
WIRE_DIR = "wire"
"""The subdirectory of the regression directory (``cassettes/scenarios``) wire scenarios go to:
they are served to an agent, not run through our loop, so ``harness run`` must not find them."""


@dataclass
class AgentStats:
    """What a wire campaign exercised, so a green campaign also says how much ground it covered."""

    conversations: int = 0
    requests: int = 0
    seconds: float = 0.0
    kinds: Counter[str] = field(default_factory=Counter)
    endings: Counter[str] = field(default_factory=Counter)
    wires: Counter[str] = field(default_factory=Counter)
    declared: Counter[str] = field(default_factory=Counter)
    """Violations a declared deviation covered, per invariant."""
    agent_seconds: float = 0.0
    """Time the agent's runs took, less the harness's choosing of replies: the framework and the wire."""

    first_error: str | None = None
    """How the first run that sent no request ended: a campaign that reached nothing says why."""
    first_raised: Run | None = None
    """That run, whole: its traceback and what it printed are shown when nothing was tested."""
    exercised: Counter[str] = field(default_factory=Counter)
    """Conversations that gave each invariant a chance to break (``_verdicts``)."""
    late: int = 0
    """Requests that arrived from runs the campaign had abandoned (refused, never judged)."""
    unnamed: int = 0
    """Requests whose path named no conversation (a client that drops its base URL's path)."""
    left_behind: int = 0
    """Abandoned runs still running when the verdict was given."""
    bypassed: int = 0
    """Conversations in process whose requests came over loopback: the agent ignored its ``http_client``."""

    def add(self, run: Run, judgement: Judgement) -> None:
        if not run.exchanges and run.raised is not None and self.first_error is None:
            self.first_error = f"{type(run.raised).__name__}: {run.raised}"
            self.first_raised = run
        self.exercised.update(exercised(run))
        self.conversations += 1
        self.agent_seconds += run.seconds - run.choosing
        self.requests += len(run.exchanges)
        self.kinds.update(reply_kinds(run))  # arguments that fail their schema told from a valid call
        self.endings[run.ended] += 1
        if run.exchanges:
            self.wires[wire_of(run.exchanges[0].request)] += 1
        self.declared.update(v.invariant for v, _ in judgement.declared)

    @property
    def harness_seconds(self) -> float:
        """Everything else: drawing, judging, Hypothesis itself (shrinking excluded)."""
        return max(0.0, self.seconds - self.agent_seconds)

    def rows(self) -> list[tuple[str, int]]:
        rows = [(f"runs that {ending}", count) for ending, count in sorted(self.endings.items())]
        rows += [(f"replies: {kind}", count) for kind, count in sorted(self.kinds.items())]
        rows += [(f"runs on {wire}", count) for wire, count in sorted(self.wires.items())]
        if self.late:
            rows.append(("requests from runs the campaign had abandoned (refused, not judged)", self.late))
        if self.left_behind:
            rows.append(("abandoned runs still running at the verdict", self.left_behind))
        return rows

    def notes(self) -> list[str]:
        """What a reader must know to trust the verdict: runs left behind, late requests, isolation
        that a client defeated, an ``http_client`` ignored."""
        said = []
        if self.late:
            said.append(
                f"{self.late} request(s) arrived from runs the campaign had abandoned: refused and counted, "
                "not judged as another conversation's"
            )
        if self.left_behind:
            said.append(f"{self.left_behind} abandoned run(s) were still running at the verdict: left behind")
        if self.unnamed:
            said.append(
                f"{self.unnamed} request(s) did not carry their conversation's base URL path (the client drops "
                "base_url's path): each was judged in the conversation running when it arrived"
            )
        if self.bypassed:
            said.append(
                f"the agent ignored the http_client it was given in {self.bypassed} conversation(s) (a framework "
                "that takes only an httpx client?): its own client was served on loopback instead"
            )
        return said


def wire_of(request: WireRequest) -> str:
    """``openai chat.completions (streamed)``: the wire a request spoke."""
    route = request.route
    return f"{route.provider} {route.endpoint}" + (" (streamed)" if request.streaming else "")


@dataclass
class WireFailure:
    """The minimal violating run, its scenario and where it was saved."""

    violation: Violation
    judgement: Judgement
    run: Run
    scenario: Scenario
    path: Path | None = None


@dataclass
class AgentCampaignResult:
    agent: str
    stats: AgentStats
    seed: int
    in_process: bool
    failure: WireFailure | None = None

    @property
    def ok(self) -> bool:
        """No violation, and the agent reached the emulator at all (a campaign of runs that all
        failed before their first request tested nothing)."""
        return self.failure is None and self.stats.requests > 0

    def verdicts(self, invariants: Mapping[str, str] = INVARIANTS) -> list[Verdict]:
        """Per invariant, what the campaign can honestly say (the console's table and the HTML's)."""
        return verdicts(self, invariants)


class UnsteadyAgentError(RuntimeError):
    """Hypothesis saw the agent answer the same replies with different requests: a campaign over
    it can neither shrink nor reproduce anything, and says so instead of reporting noise."""


class WireViolationError(AssertionError):
    """A run broke a wire invariant; carries the run, and (once shrunk) its scenario and file."""

    def __init__(self, judgement: Judgement, run: Run, scenario: Scenario, notes: str = "") -> None:
        self.judgement, self.run, self.scenario = judgement, run, scenario
        shown = "\n".join(str(v) for v in judgement.violations)
        said = f"{shown}{notes}\n\nthe replies as a scenario (harness emulate --script FILE):\n{scenario.to_yaml()}"
        if run.log:
            from harness.agents._agent_output import shown as output

            said += f"\nthe agent's output in this conversation:\n{output(run.log)}\n"
        super().__init__(said)


def agent_name(agent: Callable[..., Any], name: str | None = None) -> str:
    """``module:name``, as ``--agent`` takes it (a function made by a factory: its ``__name__``).

    ``name``, when given, is the answer: the ``MODULE:CALLABLE`` the user typed, which a factory's
    function cannot tell (its ``__module__`` is the factory's, not the one that re-exports it)."""
    if name:
        return name
    module = getattr(agent, "__module__", None) or "agent"
    qualified = getattr(agent, "__qualname__", None) or ""
    name = qualified if qualified and "<locals>" not in qualified else getattr(agent, "__name__", "agent")
    namespace = vars(sys.modules[module]) if module in sys.modules else {}
    if namespace.get(name) is not agent:  # made by a factory: the name it is importable by, if any
        name = next((key for key, value in namespace.items() if value is agent), name)
    return f"{module}:{name}"


def deviations_of(agent: Callable[..., Any]) -> tuple[Deviation, ...]:
    """The agent's ``wire_deviations``, or a ``TypeError`` saying what is wrong with them."""
    return declared_deviations(getattr(agent, "wire_deviations", None))


class _Serving:
    """One emulator for a whole campaign, each conversation under its own path. An agent that takes
    ``http_client`` is served in process; it is given the loopback root as well (when the
    ``emulator`` extra is installed), so a framework that ignores the client it was handed (one that
    wants an ``httpx`` client, say) is served anyway, and the campaign says so."""

    def __init__(self, agent: Callable[..., Any]) -> None:
        self.in_process = takes_http_client(agent)
        self.emulator = WireEmulator()
        self.left_behind = LeftBehind()
        self.bypassed = 0
        """Conversations whose requests all came over loopback though the agent was given a client."""
        self.base_url: str | None = None
        try:
            self.base_url = self.emulator.start()
        except ImportError:  # no uvicorn: in process only (a client it ignores fails loudly instead)
            if not self.in_process:
                raise

    def converse(self, agent: Callable[..., Any], choose: Any, **kwargs: Any) -> Run:
        return converse(
            agent,
            self.emulator,
            choose,
            base_url=self.base_url,
            in_process=self.in_process,
            left_behind=self.left_behind,
            **kwargs,
        )

    def close(self) -> None:
        self.emulator.stop()


@contextmanager
def serving(agent: Callable[..., Any]) -> Iterator[_Serving]:
    with agent_output():
        served = _Serving(agent)
        try:
            yield served
        finally:
            served.close()


def scenario_of(run: Run, agent: str, judgement: Judgement | None = None) -> Scenario:
    """The run's replies as a scenario file's turns, the last one repeated for every later request
    (``meta.emulate.after_last``), which is how the campaign answered after a final answer."""
    meta: dict[str, Any] = {"agent": agent, "emulate": {"after_last": "repeat"}}
    if run.exchanges:
        meta["wire"] = wire_of(run.exchanges[0].request)
    if run.time_bound and run.time_bound != DEFAULT_TIME_BOUND:  # a W3 needs the same bound to come again
        meta["time_bound"] = run.time_bound
    if judgement is not None and judgement.violations:
        first = judgement.violations[0]
        meta["violation"] = {
            "invariant": first.invariant,
            "request": first.request,
            "message": first.message,
            "tier": first.tier,
        }
    name = f"{agent}: {judgement.violations[0].invariant}" if judgement and judgement.violations else agent
    turns: list[ModelTurn] = []
    for reply in run.replies:  # after a final answer the campaign repeats it: the file says so once
        turns.append(reply)
        if is_final(reply):
            break
    return Scenario(name=name, prompts=(run.prompt,), turns=tuple(turns), meta=meta)


def save_wire_regression(failure: WireFailure, directory: str | os.PathLike[str] | None, found_by: str) -> Path:
    """``<dir>/wire/<W>-<digest>.yaml`` with a header a person reads first; same run, same file."""
    folder = scenario_dir(directory) / WIRE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    body = failure.scenario.to_yaml()
    digest = hashlib.sha1(body.encode("utf-8")).hexdigest()[:10]
    path = folder / f"{failure.violation.invariant}-{digest}.yaml"
    header = [
        "# Wire regression: the minimal conversation in which an agent broke a wire invariant.",
        f"# Violated: {failure.violation}",
        f"# Found by: {found_by}",
        "# Serve it: harness emulate --script THIS_FILE (each request gets the next turn, the last repeats)",
    ]
    write_atomic(path, "\n".join(header) + "\n" + body)  # two workers saving one failure leave one whole file
    return path


def load_wire_regressions(directory: str | os.PathLike[str] | None = None, agent: str | None = None) -> list[Path]:
    """The saved wire scenarios (of one agent, when named), sorted by file name."""
    folder = scenario_dir(directory) / WIRE_DIR
    if not folder.is_dir():
        return []
    paths = sorted(p for p in folder.glob("*.yaml") if p.is_file())
    if agent is None:
        return paths
    return [p for p in paths if Scenario.from_yaml(p).meta.get("agent") == agent]


def replay_agent(
    agent: Callable[..., Any],
    scenario: Scenario | str | os.PathLike[str],
    *,
    deviations: Sequence[Deviation] | None = None,
    time_bound: float | None = None,
) -> tuple[Run, Judgement]:
    """Serve a saved scenario's turns to the agent and judge the run (a regression test's body).
    ``time_bound``: by default the one the campaign that saved it ran under."""
    if not isinstance(scenario, Scenario):
        scenario = Scenario.from_yaml(Path(scenario))
    if time_bound is None:
        time_bound = float(scenario.meta.get("time_bound", DEFAULT_TIME_BOUND))
    turns = tuple(scenario.turns)
    declared = deviations_of(agent) if deviations is None else declared_deviations(deviations)
    with serving(agent) as served:
        run = served.converse(
            agent,
            scripted(turns),
            prompt=scenario.prompts[0] if scenario.prompts else DEFAULT_PROMPT,
            request_bound=max(len(turns), 1) + REQUEST_SLACK,
            time_bound=time_bound,
        )
    return run, judge(run, declared)


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
) -> AgentCampaignResult:
    """Run ``examples`` conversations, each served its planned replies; shrink the first
    violation to a scenario and save it (``save=False``: only report it). ``name`` is how the
    saved scenario names the agent (``MODULE:CALLABLE``; default: found from the agent). ``hostile``
    also draws the ``invalid`` tier (replies no conforming provider sends, DESIGN 6).

    Hypothesis finds and shrinks; once it has re-raised the minimal example, whole replies are
    removed where they can be (:func:`fewer_replies`) and the scenario is saved: nothing is saved
    from inside a Hypothesis example."""
    chosen = seed if seed is not None else random.randrange(2**32)
    name = agent_name(agent, name)
    declared = deviations_of(agent) if deviations is None else declared_deviations(deviations)
    text = prompt or getattr(agent, "wire_prompt", None) or DEFAULT_PROMPT
    stats = AgentStats()
    failing: list[WireViolationError] = []
    attempts: list[int] = []
    started = time.perf_counter()
    failure: WireFailure | None = None
    with serving(agent) as served:
        check = _checker(agent, name, served, text, declared, max_replies, time_bound, hostile)

        def count(run: Run, judgement: Judgement) -> None:
            stats.add(run, judgement)
            stats.seconds = time.perf_counter() - started
            if on_example is not None:
                on_example(stats)

        @campaign_settings(examples, (Phase.generate, Phase.shrink))
        @hypothesis_seed(chosen)
        @given(st.data())
        def test(data: Any) -> None:
            if len(attempts) >= SHRINK_RUNS:  # enough: every later candidate passes unrun
                return
            if failing:
                attempts.append(1)
            try:
                run, judgement = check(data)
            except WireViolationError as exc:
                if not failing:  # the failing run was explored too (the first one, even)
                    count(exc.run, exc.judgement)
                failing.append(exc)
                raise
            if not failing:  # count what was explored, not the shrinker's retries
                count(run, judgement)

        with no_local_constants():
            try:
                test()
            except (Flaky, FlakyStrategyDefinition) as exc:
                if not failing:
                    raise UnsteadyAgentError(
                        f"{name} sent different requests for the same replies ({type(exc).__name__}): a wire "
                        "campaign needs an agent that does the same thing twice (no background requests, no "
                        "reliance on timing); run it with --seed to see which conversation"
                    ) from None
            except Exception:
                if not failing:
                    raise
        if not failing:  # with a failure, the time of what was explored (set per example), not the shrinking
            stats.seconds = time.perf_counter() - started
        if failing:  # Hypothesis ran the minimal example last; then whole replies go, where they can
            failure = fewer_replies(agent, served, failing[-1], declared, time_bound, name=name)
        _tally(stats, served)
    result = AgentCampaignResult(name, stats, chosen, served.in_process and not stats.bypassed)
    if failure is not None:
        if save:
            command = found_by(name, chosen, examples, max_replies, hostile, time_bound)
            failure.path = save_wire_regression(failure, save_dir, command)
        result.failure = failure
    return result


def _tally(stats: AgentStats, served: _Serving) -> None:
    """What the wire saw beside the judged runs: late requests, unnamed ones, runs left behind."""
    stats.late = served.emulator.late
    stats.unnamed = served.emulator.unnamed
    stats.left_behind = served.left_behind.count()
    stats.bypassed = served.bypassed


def found_by(
    name: str, seed: int, examples: int, max_replies: int, hostile: bool = False, time_bound: float = DEFAULT_TIME_BOUND
) -> str:
    """The command that runs this campaign again: each option that is not its default, so the
    same conversations are drawn (the number of examples shapes Hypothesis's generation too)."""
    command = f"harness fuzz --agent {name} --seed {seed}"
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
    served: _Serving,
    found: WireViolationError,
    deviations: Sequence[Deviation],
    time_bound: float,
    budget: int = 40,
    name: str | None = None,
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
            judgement = judge(run, deviations)
            same = [v for v in judgement.violations if v.invariant == invariant]
            if same:
                turns = candidate
                scenario = scenario_of(run, name, Judgement((same[0],), ()))
                best = WireFailure(same[0], judgement, run, dataclasses.replace(scenario, turns=tuple(candidate)))
                shrinking = True
                break
    return best


def _checker(
    agent: Callable[..., Any],
    name: str,
    served: _Serving,
    prompt: str,
    deviations: Sequence[Deviation],
    max_replies: int,
    time_bound: float,
    hostile: bool = False,
) -> Callable[[Any], tuple[Run, Judgement]]:
    menus = Menus()

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


def agent_test(
    agent: Callable[..., Any],
    *,
    prompt: str | None = None,
    deviations: Sequence[Deviation] | None = None,
    max_replies: int = DEFAULT_MAX_REPLIES,
    time_bound: float = DEFAULT_TIME_BOUND,
    regressions: str | os.PathLike[str] | None = None,
    name: str | None = None,
    hostile: bool = False,
) -> Callable[[], None]:
    """A pytest test of ``agent``: its saved wire regressions replayed first, then a campaign under
    the active Hypothesis profile (``harness-ci`` in CI: the same examples every time).

    ``test_my_agent = agent_test(my_agent)`` in a test module is the whole suite. ``name`` is the
    ``MODULE:CALLABLE`` its saved scenarios name (``meta.agent``), for an agent made by a factory
    in another module, whose own ``__module__`` names the factory's module. ``time_bound``: the
    seconds a run may take before it is abandoned (W3); a run that cannot be cancelled is left
    behind, and the test's failure message counts it."""
    declared = deviations_of(agent) if deviations is None else declared_deviations(deviations)
    text = prompt or getattr(agent, "wire_prompt", None) or DEFAULT_PROMPT
    name = agent_name(agent, name)
    try:  # checked now, said when the test runs: one wrong agent must not stop a module's collection
        check_signature(agent)
        unusable: str | None = None
    except TypeError as exc:
        unusable = f"{name}: {exc}"

    def test() -> None:
        if unusable is not None:
            raise TypeError(unusable)
        for path in load_wire_regressions(regressions, name):
            run, judgement = replay_agent(agent, path, deviations=declared)
            if judgement.violations:
                raise WireViolationError(judgement, run, Scenario.from_yaml(path))
        stats = AgentStats()
        with serving(agent) as served:
            check = _checker(agent, name, served, text, declared, max_replies, time_bound, hostile)

            def example(data: Any) -> None:
                stats.add(*check(data))

            current = settings()  # the profile active now, not at import
            campaign = settings(current, deadline=None, suppress_health_check=list(HealthCheck))(
                given(st.data())(example)
            )
            try:
                campaign()
            except WireViolationError as exc:
                _tally(stats, served)
                notes = "".join(f"\n{note}" for note in stats.notes())
                raise WireViolationError(exc.judgement, exc.run, exc.scenario, notes) from None
            _tally(stats, served)
        if stats.left_behind:  # said once the agent's output is no longer captured: pytest shows it
            warnings.warn(f"{name}: {stats.notes()[-1]}", RuntimeWarning, stacklevel=2)
        if not stats.requests:  # a campaign of runs that all failed before their first request tested nothing
            raise AssertionError(f"{name}: " + nothing_tested(stats))

    test.__name__ = f"test_wire_{getattr(agent, '__name__', 'agent')}"
    test.__doc__ = f"W1-W6 over generated replies for {name} ({', '.join(INVARIANTS)})."
    return test


def nothing_tested(stats: AgentStats) -> str:
    """Why a campaign that reached nothing reached nothing: the first run's traceback (the agent's
    frames), the hints it supports, and what the agent printed."""
    from harness.agents._agent_output import shown
    from harness.agents._first_failure import agent_traceback, hints

    run = stats.first_raised
    if run is None or run.raised is None:
        return "no run sent a request to the emulator, and none raised: does the agent call its model at all?"
    lines = [f"no run sent a request to the emulator; the first one raised {stats.first_error}"]
    lines += ["", agent_traceback(run.raised)]
    lines += ["", *hints(run.raised)] if hints(run.raised) else []
    if run.log:
        lines += ["", "the agent's output in that run:", shown(run.log)]
    return "\n".join(lines)
