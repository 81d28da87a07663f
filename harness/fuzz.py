"""``harness fuzz``: the property campaign from the command line.

It generates scenarios with ``harness.strategies.scenarios``, runs each through the loop, and
checks the run against the reference model and every invariant. On a violation Hypothesis shrinks
the scenario; the minimal one is printed (YAML), saved as a regression file, and the command exits
1. ``--tools package.module`` fuzzes with your own tools instead of generated ones. The command
itself (progress bar, summary table) is in ``harness.cli``.
"""

from __future__ import annotations

import importlib
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed

from harness.contract import SKIPPED_STEERING, classify_result_text
from harness.regressions import ScenarioFailure, assert_scenario
from harness.scenario import Scenario
from harness.strategies import is_tool_entry, scenarios
from harness.trace import Trace

__all__ = ["CampaignResult", "NoToolsError", "Stats", "load_tools", "run_campaign"]


@dataclass
class Stats:
    """What a campaign exercised, so a green run also says how much ground it covered."""

    scenarios: int = 0
    rounds: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0

    def add(self, scenario: Scenario, trace: Trace) -> None:
        self.scenarios += 1
        self.rounds += len(trace.requests)
        self.reasons[str(trace.reason) if trace.error is None else f"(stream raised {trace.error.split(':')[0]})"] += 1
        for result in trace.tool_results:
            self.kinds[_result_kind(result.tool_name, result.text, result.is_error)] += 1
        for entry in trace.ledger or ():
            if entry.outcome == "raised":
                self.kinds["tool raised"] += 1
        user_messages = sum(1 for m in trace.new_messages if m.role == "user")
        if user_messages > len(scenario.prompts):
            self.kinds["steering/follow-up delivered"] += user_messages - len(scenario.prompts)
        for message in trace.assistant_messages:
            if message.stop_reason == "length":
                self.kinds["length stop"] += 1
            if message.error_message and message.error_message.startswith("ConnectionError"):
                self.kinds["provider raised"] += 1
        if any(b.nested is not None for t in scenario.tools for b in t.plan):
            self.kinds["scenario with nested exec"] += 1


_KIND_LABELS = {
    "skipped": "skipped (cancelled)",
    "not_found": "unknown tool",
    "invalid_args": "invalid arguments",
    "invalid_json": "invalid JSON",
}


def _result_kind(name: str, text: str, is_error: bool) -> str:
    if not is_error:
        return "tool result"
    if text == SKIPPED_STEERING:
        return "skipped (steering)"
    kind = classify_result_text(name, text, is_error)
    return _KIND_LABELS.get(kind, "is_error result")


@dataclass
class CampaignResult:
    stats: Stats
    seed: int
    failure: ScenarioFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


def run_campaign(
    examples: int = 200,
    seed: int | None = None,
    *,
    tools: Sequence[Any] | None = None,
    loop: Callable[..., Any] | None = None,
    save_dir: str | Path | None = None,
    max_turns: int = 10,
    on_example: Callable[[Stats], None] | None = None,
) -> CampaignResult:
    """Generate ``examples`` scenarios and check each; shrink and save the first violation.

    ``loop`` replaces the real ``agent_loop`` (to fuzz a copy or a variant); ``seed`` makes the
    campaign reproducible (a random one is chosen and reported otherwise).
    """
    chosen = seed if seed is not None else random.randrange(2**32)
    stats = Stats()
    failing = [False]
    started = time.perf_counter()

    @hypothesis_seed(chosen)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        report_multiple_bugs=False,
        print_blob=False,
        phases=(Phase.generate, Phase.target, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    @given(scenarios(tools=tools, max_turns=max_turns))
    def campaign(scenario: Scenario) -> None:
        try:
            trace = assert_scenario(scenario, loop=loop, directory=save_dir, found_by=f"harness fuzz --seed {chosen}")
        except ScenarioFailure:
            failing[0] = True
            raise
        if not failing[0]:  # count what was explored, not the shrinker's retries
            stats.add(scenario, trace)
            if on_example is not None:
                on_example(stats)

    failure = None
    try:
        campaign()
    except ScenarioFailure as exc:
        failure = exc
    stats.seconds = time.perf_counter() - started
    return CampaignResult(stats, chosen, failure)


class NoToolsError(LookupError):
    """The module named for ``--tools`` offers no tool (``harness fuzz`` says so as a usage error)."""


def load_tools(module_name: str) -> list[Any]:
    """The tools a module offers: its ``TOOLS`` list, else every ``@function`` / tool defined in it."""
    module = importlib.import_module(module_name)
    listed = getattr(module, "TOOLS", None)
    if listed is not None:
        return list(listed)
    found = [
        value
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__ and is_tool_entry(value)
    ]
    if not found:
        raise NoToolsError(f"{module_name} defines no @function tools and no TOOLS list")
    return found
