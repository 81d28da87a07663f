"""Regression scenarios: a shrunk failure, written down as YAML, replayed as a test forever after.

When a property fails, Hypothesis shrinks the scenario; the final, minimal one is saved under
``cassettes/scenarios/`` (or ``$HARNESS_SCENARIO_DIR``, or a directory you pass) with the
violated invariant's name and message in the file. ``load_regressions`` reads them back, and a
test that parametrizes over them (``tests/harness/checking/test_regressions.py``) replays each one against the
reference model and the invariants. Hand-written files live in the same place: a regression file
is just a scenario with a comment header, and optionally ``meta.expect`` to pin the outcome.
Judging a run is ``harness.checking._check``'s; this module only keeps the files.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness._hypothesis_compat import is_final_example
from harness.checking._check import CheckResult, Problem, check
from harness.scenarios import Config, Scenario, ScenarioError
from harness.trace import Trace
from harness.wire import write_atomic

ENV_VAR = "HARNESS_SCENARIO_DIR"
DEFAULT_DIR = Path("cassettes") / "scenarios"


def scenario_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """Where regression scenarios live: the argument, else ``$HARNESS_SCENARIO_DIR``, else
    ``cassettes/scenarios`` under the current directory."""
    if directory is not None:
        return Path(directory)
    return Path(os.environ.get(ENV_VAR) or DEFAULT_DIR)


def regression_text(scenario: Scenario, problem: Problem, found_by: str | None = None) -> str:
    """The file's text: a comment header a person reads first, then the scenario (with the
    violation also under ``meta`` so tools can read it)."""
    meta = dict(scenario.meta)
    meta["violation"] = {"invariant": problem.name, "message": problem.message}
    if found_by:
        meta["found_by"] = found_by
    body = replace(scenario, meta=meta).to_yaml()
    first_lines = problem.message.splitlines()[:12]
    header = [
        "# Regression scenario: the minimal run that broke a rule of the loop.",
        f"# Violated: {problem.name}",
        *(f"#   {line}" for line in first_lines),
        *(["#   ..."] if len(problem.message.splitlines()) > 12 else []),
    ]
    if found_by:
        header.append(f"# Found by: {found_by}")
    header.append(
        "# Replay: harness run THIS_FILE --show  (tests/harness/checking/test_regressions.py replays every file here)"
    )
    return "\n".join(header) + "\n" + body


def save_regression(
    scenario: Scenario,
    problem: Problem,
    directory: str | os.PathLike[str] | None = None,
    found_by: str | None = None,
) -> Path:
    """Write the scenario as ``<invariant>-<digest>.yaml``; the same scenario gives the same file."""
    folder = scenario_dir(directory)
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(scenario.to_yaml().encode("utf-8")).hexdigest()[:10]
    name = "".join(c if c.isalnum() or c in "-_" else "_" for c in problem.name)
    path = folder / f"{name}-{digest}.yaml"
    # atomically: xdist workers (or machines on one share) saving the same failure at once must
    # leave one whole file, and a reader must never see half of one
    write_atomic(path, regression_text(scenario, problem, found_by))
    return path


@dataclass(frozen=True)
class Regression:
    path: Path
    scenario: Scenario

    @property
    def id(self) -> str:
        return self.path.stem


def load_regressions(directory: str | os.PathLike[str] | None = None) -> list[Regression]:
    """Every ``*.yaml`` / ``*.yml`` scenario in the directory, sorted by file name.

    A malformed file raises ``ScenarioError`` naming it: a regression that cannot be read must not
    be silently dropped.
    """
    folder = scenario_dir(directory)
    if not folder.is_dir():
        return []
    paths = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    return [Regression(path, Scenario.from_yaml(path)) for path in paths]


class ScenarioFailure(AssertionError):
    """A scenario broke a rule. Carries the scenario, the trace, the problem and the saved file."""

    def __init__(self, result: CheckResult, path: Path | None) -> None:
        self.result = result
        self.scenario = result.scenario
        self.trace = result.trace
        self.problem = result.problems[0]
        self.path = path
        lines = [f"[{p.name}] {p.message}" for p in result.problems]
        lines += ["", "scenario:", result.scenario.to_yaml(), "trace:", result.trace.render()]
        if path is not None:
            lines.append(f"saved as {path}")
        super().__init__("\n".join(lines))


check_scenario = check
"""``harness.checking._check.check`` (run, reference model, invariants, ``meta.expect``), by its old name here."""


def assert_scenario(
    scenario: Scenario,
    *,
    loop: Any = None,
    save: bool = True,
    directory: str | os.PathLike[str] | None = None,
    determinism: bool = False,
    found_by: str | None = None,
    minimal: bool = True,
) -> Trace:
    """Run and check a scenario (reference model, invariants, ``meta.expect``); raise
    ``ScenarioFailure`` on a violation.

    On Hypothesis' final replay of a shrunk failure (or outside Hypothesis) the scenario is
    minimized further (``minimize``: every turn, call, tool, message and setting the failure does
    not need is removed) and saved as a regression file; the failure then shows that scenario.
    """
    result = check(scenario, loop, determinism=determinism)
    if result.ok:
        return result.trace
    path = None
    if is_final_example():
        if minimal:
            result = _minimal_failure(result, loop, determinism)
        if save:
            path = save_regression(result.scenario, result.problems[0], directory, found_by=found_by)
    raise ScenarioFailure(result, path)


def _minimal_failure(result: CheckResult, loop: Any, determinism: bool) -> CheckResult:
    wanted = result.problems[0].name
    last: dict[str, CheckResult] = {}

    def fails(candidate: Scenario) -> bool:
        checked = check(candidate, loop, determinism=determinism)
        if any(p.name == wanted for p in checked.problems):
            last["result"] = checked
            return True
        return False

    smaller = minimize(result.scenario, fails)
    if smaller == result.scenario or "result" not in last:
        return result
    final = check(smaller, loop, determinism=determinism)
    final.problems.sort(key=lambda p: p.name != wanted)  # the same rule stays the headline
    return final


def minimize(scenario: Scenario, fails: Callable[[Scenario], bool], budget: int = 400) -> Scenario:
    """Greedy structural shrinking after Hypothesis: keep removing one part of the scenario (a
    turn, a call, a tool, a plan entry, a queued message, a setting) while ``fails`` still holds.

    Hypothesis shrinks the choices that generated a scenario and can stop in a local minimum
    (a turn it cannot delete without disturbing what follows); this works on the value itself,
    so the saved scenario has no turn, tool or message the failure does not need.
    """
    current = scenario
    tries = 0
    progress = True
    while progress and tries < budget:
        progress = False
        for candidate in _simpler(current):
            tries += 1
            if tries > budget:
                break
            if fails(candidate):
                current, progress = candidate, True
                break
    return current


def _simpler(s: Scenario) -> Iterator[Scenario]:
    """Candidates one step simpler than ``s``, biggest removals first; invalid ones are skipped."""

    def build(**changes: Any) -> Scenario | None:
        try:
            return replace(s, **changes)
        except ScenarioError:
            return None

    def shifted(schedule: Mapping[int, tuple[str, ...]], by: int) -> dict[int, tuple[str, ...]]:
        return {poll - by: messages for poll, messages in schedule.items() if poll - by >= 1}

    candidates: list[Scenario | None] = []
    for i in reversed(range(len(s.turns))):
        candidates.append(build(turns=s.turns[:i] + s.turns[i + 1 :]))
        if s.steering:  # a turn gone takes its steering polls with it (one per call, one after it)
            polls = len(s.turns[i].calls) + 1
            candidates.append(build(turns=s.turns[:i] + s.turns[i + 1 :], steering=shifted(s.steering, polls)))
    for i in reversed(range(len(s.tools))):
        candidates.append(build(tools=s.tools[:i] + s.tools[i + 1 :]))
    for field_name in ("steering", "follow_ups"):
        schedule: Mapping[int, tuple[str, ...]] = getattr(s, field_name)
        for poll in sorted(schedule, reverse=True):
            candidates.append(build(**{field_name: {k: v for k, v in schedule.items() if k != poll}}))
            if len(schedule[poll]) > 1:
                candidates.append(build(**{field_name: {**schedule, poll: schedule[poll][:1]}}))
            if poll > 1 and poll - 1 not in schedule:  # earlier polls are simpler to read
                moved = {(k - 1 if k == poll else k): v for k, v in schedule.items()}
                candidates.append(build(**{field_name: moved}))
    for i in reversed(range(len(s.history))):
        candidates.append(build(history=s.history[:i] + s.history[i + 1 :]))
    for i, turn in enumerate(s.turns):
        for j in reversed(range(len(turn.calls))):
            simpler_turn = replace(turn, calls=turn.calls[:j] + turn.calls[j + 1 :])
            candidates.append(build(turns=(*s.turns[:i], simpler_turn, *s.turns[i + 1 :])))
        for attribute in ("text", "thinking"):
            if getattr(turn, attribute) is not None and (turn.calls or turn.kind != "reply"):
                simpler_turn = replace(turn, text=None) if attribute == "text" else replace(turn, thinking=None)
                candidates.append(build(turns=(*s.turns[:i], simpler_turn, *s.turns[i + 1 :])))
    for i, tool in enumerate(s.tools):
        for j in reversed(range(len(tool.plan))):
            simpler_tool = replace(tool, plan=tool.plan[:j] + tool.plan[j + 1 :])
            candidates.append(build(tools=(*s.tools[:i], simpler_tool, *s.tools[i + 1 :])))
    if len(s.prompts) > 1:
        candidates.append(build(prompts=s.prompts[:1]))
    default = Config()
    for field_name in ("max_iterations", "tool_choice", "parallel_tool_calls", "model", "system_prompt"):
        if getattr(s.config, field_name) != getattr(default, field_name):
            candidates.append(build(config=replace(s.config, **{field_name: getattr(default, field_name)})))
    yield from (c for c in candidates if c is not None and c != s)


def replay(regressions: Iterable[Regression], loop: Callable[..., Any] | None = None) -> list[ScenarioFailure]:
    """Check every regression; the failures (none saved again)."""
    failures = []
    for regression in regressions:
        try:
            assert_scenario(regression.scenario, loop=loop, save=False)
        except ScenarioFailure as failure:
            failures.append(failure)
        except ScenarioError as exc:  # pragma: no cover - load_regressions already parsed it
            raise ScenarioError(f"{regression.path}: {exc}") from None
    return failures
