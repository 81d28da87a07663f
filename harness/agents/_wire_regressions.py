"""Wire regressions: a failing run's replies as a scenario file, saved beside the loop's
regressions under ``wire/``, loaded back per agent, and replayed to the agent and judged.

A saved scenario is what ``harness emulate --script FILE`` serves by hand: each request gets the
next turn, the last one repeated (``meta.emulate.after_last``), which is how the campaign answered
after a final answer.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.agents._campaign_result import WireFailure, wire_of
from harness.agents._conversation import (
    DEFAULT_PROMPT,
    DEFAULT_TIME_BOUND,
    REQUEST_SLACK,
    Run,
    scripted,
    serving,
)
from harness.agents._invariants import Deviation, Judgement, declared_deviations, deviations_of, judge
from harness.agents._replies import is_final
from harness.checking import scenario_dir
from harness.scenarios import ModelTurn, Scenario
from harness.wire import write_atomic

WIRE_DIR = "wire"
"""The subdirectory of the regression directory (``cassettes/scenarios``) wire scenarios go to:
they are served to an agent, not run through our loop, so ``harness run`` must not find them."""


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
        if first.also:  # one finding per cause: what else the same reply broke
            meta["violation"]["also"] = [
                {"invariant": v.invariant, "request": v.request, "message": v.message} for v in first.also
            ]
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
