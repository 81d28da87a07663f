"""``harness fuzz``: the property campaign from the command line.

It generates scenarios with ``harness.strategies.scenarios``, runs each through the loop, and
checks the run against the reference model and every invariant. On a violation Hypothesis shrinks
the scenario; the minimal one is printed (YAML), saved as a regression file, and the command exits
1. ``--tools package.module`` fuzzes with your own tools instead of generated ones. The command
itself (progress bar, summary table) is in ``harness.cli``.
"""

from __future__ import annotations

import json
import random
import time
import unittest
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import seed as hypothesis_seed

from harness._contract import SKIPPED_STEERING, classify_result_text
from harness._hypothesis_compat import no_local_constants
from harness.campaigns._boundaries import BOUNDARIES, EXAMPLES, reached
from harness.checking import ScenarioFailure, assert_scenario, run
from harness.scenarios import Scenario
from harness.scenarios._scenario_parts import ToolDef, import_user_module
from harness.strategies import scenarios
from harness.strategies._tool_strategies import is_tool_entry
from harness.trace import Trace
from harness.wire import clip

DEFAULT_EXAMPLES = 200
"""Scenarios per campaign when ``--examples`` is not given."""
DEFAULT_SEED = 21
"""The seed of ``harness fuzz`` without ``--seed``: the campaign a user runs by default is one
campaign, whose power is measured (every mutant of the loop's core it kills, every boundary of
the loop it reaches: ``docs/property-testing.md``); ``--seed`` explores others."""


_TOOL_COUNTS = ("calls", "results", "error results", "raised")


@dataclass
class Stats:
    """What a campaign exercised, so a green run also says how much ground it covered."""

    scenarios: int = 0
    rounds: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    per_tool: dict[str, Counter[str]] = field(default_factory=dict)
    """Your (real) tools' executions at the top level: calls, results, error results, raised."""
    boundaries: Counter[str] = field(default_factory=Counter)
    """Scenarios that reached each of the loop's boundaries (``harness.campaigns._boundaries.BOUNDARIES``)."""

    def add(self, scenario: Scenario, trace: Trace) -> None:
        self.scenarios += 1
        self.boundaries.update(reached(scenario, trace))
        self.rounds += len(trace.requests)
        reason = str(trace.reason) if trace.error is None else f"(stream raised {trace.error.split(':')[0]})"
        self.reasons[reason if trace.left is None else "(consumer left)"] += 1
        for result in trace.tool_results:
            self.kinds[_result_kind(result.tool_name, result.text, result.is_error)] += 1
        real = {t.name for t in scenario.tools if t.is_real}
        for name in real:
            self.per_tool.setdefault(name, Counter({k: 0 for k in _TOOL_COUNTS}))
        for entry in trace.ledger or ():
            if entry.outcome == "raised":
                self.kinds["tool raised"] += 1
            if entry.tool_name in real:
                counts = self.per_tool[entry.tool_name]
                counts["calls"] += 1
                outcome = "raised" if entry.outcome == "raised" else "error results" if entry.is_error else "results"
                counts[outcome] += 1
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
        if any(t.nested_turns for t in scenario.tools):
            self.kinds["scenario with a scripted model for an @agentic_function"] += 1

    def boundary_rows(self) -> list[tuple[str, int]]:
        """Every boundary of the loop with the scenarios that reached it (0: not reached)."""
        return [(label, self.boundaries[key]) for key, label in BOUNDARIES.items()]

    @property
    def unreached(self) -> list[str]:
        """The boundaries no scenario of the campaign reached."""
        return [key for key in BOUNDARIES if not self.boundaries[key]]

    def rows(self) -> list[tuple[str, int]]:
        """The summary table: each label says what is counted and over what."""
        rows = [(_reason_label(reason), count) for reason, count in sorted(self.reasons.items())]
        rows += sorted((_ROW_LABELS.get(kind, kind), count) for kind, count in self.kinds.items())
        return rows


def _reason_label(reason: str) -> str:
    if reason == "(consumer left)":
        return "scenarios whose consumer left early (the run cancelled, no end reason)"
    if reason.startswith("(stream raised "):
        return f"scenarios whose event stream raised {reason[len('(stream raised ') : -1]} (end reason)"
    return f"scenarios that ended with reason {reason} (end reason)"


_ROW_LABELS = {
    "tool result": "tool results that are not errors",
    "is_error result": "error results from a tool (returned, or raised and caught)",
    "skipped (steering)": "tool calls skipped for a queued user message",
    "skipped (cancelled)": "tool calls skipped after a cancel",
    "unknown tool": "calls of a tool not on the menu (not-found result)",
    "invalid arguments": "calls whose arguments fail the tool's schema",
    "invalid JSON": "calls whose argument text is not JSON",
    "tool raised": "tool executions that raised (ledger, top level)",
    "steering/follow-up delivered": "steering and follow-up messages delivered",
    "length stop": "replies cut off (stop reason length)",
    "provider raised": "replies where the provider raised mid-stream",
    "scenario with nested exec": "scenarios with a planned nested exec",
    "scenario with a scripted model for an @agentic_function": "scenarios giving an @agentic_function a model",
}


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
    nondeterministic: dict[str, str] = field(default_factory=dict)
    """Real tools whose ledger differed between two runs of one scenario: name -> what differed."""

    @property
    def ok(self) -> bool:
        return self.failure is None and not self.nondeterministic


def campaign_settings(examples: int, phases: tuple[Phase, ...], database: Any = None) -> settings:
    """The Hypothesis settings of a campaign, ours or an agent's through the wire: no deadline (a run
    may wait on a tool or a Retry-After), the seed decides (not derandomize), one bug reported, no
    blob, every health check off (the strategies draw large values on purpose). No Phase.target: a
    campaign calls no target(), so it would only cost. Applied outside ``@seed``, which would
    otherwise turn the database off."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=database,
        derandomize=False,
        report_multiple_bugs=False,
        print_blob=False,
        phases=phases,
        suppress_health_check=list(HealthCheck),
    )


def run_campaign(
    examples: int = DEFAULT_EXAMPLES,
    seed: int | None = DEFAULT_SEED,
    *,
    tools: Sequence[Any] | None = None,
    loop: Callable[..., Any] | None = None,
    save_dir: str | Path | None = None,
    max_turns: int = 10,
    on_example: Callable[[Stats], None] | None = None,
    database: Any = None,
    shrink: bool = True,
) -> CampaignResult:
    """Generate ``examples`` scenarios and check each; shrink and save the first violation.

    ``loop`` replaces the real ``agent_loop`` (to fuzz a copy or a variant); ``seed`` makes the
    campaign reproducible (a random one is chosen and reported otherwise). ``database`` (a
    Hypothesis example database, ``harness.campaigns._profiles.example_database``) is replayed first and
    receives what this campaign finds, so a failure found on one machine is tried first on the next.
    ``shrink=False`` reports the first violating scenario as found, unshrunk and unsaved: whether a
    campaign finds a violation does not depend on shrinking (mutation testing asks only that).
    """
    chosen = seed if seed is not None else random.randrange(2**32)
    # The boundary table's examples first, inside the budget (when it is large enough to leave
    # the generated scenarios most of it), so every row is reached whatever the seed draws. Not
    # with your tools: they are the subject of that campaign, and the examples use planned ones.
    explicit = EXAMPLES if tools is None and examples >= 4 * len(EXAMPLES) else ()
    stats = Stats()
    nondeterministic: dict[str, str] = {}
    started = time.perf_counter()
    check_one = _checker(f"harness fuzz --seed {chosen}", stats, nondeterministic, loop, save_dir, shrink, on_example)

    def campaign(phases: tuple[Phase, ...], budget: int, explicit: Sequence[Scenario] = ()) -> Callable[[], None]:
        @campaign_settings(budget, (*phases, *((Phase.shrink,) if shrink else ())), database)
        @hypothesis_seed(chosen)
        @given(scenarios(tools=tools, max_turns=max_turns))
        def test(scenario: Scenario) -> None:
            check_one(scenario)

        for scenario in reversed(explicit):  # decorators apply bottom-up: the first example runs first
            test = example(scenario)(test)
        return test

    # The database's saved failures first, in a pass of their own (Hypothesis would run explicit
    # examples before them), then the examples and the generated scenarios.
    replay = campaign((Phase.reuse,), examples) if database is not None else None
    main = campaign((Phase.explicit, Phase.generate), examples - len(explicit), explicit)
    failure = _run_passes(replay, main)
    stats.seconds = time.perf_counter() - started
    return CampaignResult(stats, chosen, failure, nondeterministic)


def _checker(
    found_by: str,
    stats: Stats,
    nondeterministic: dict[str, str],
    loop: Callable[..., Any] | None,
    save_dir: str | Path | None,
    shrink: bool,
    on_example: Callable[[Stats], None] | None,
) -> Callable[[Scenario], None]:
    """What the campaign does with each scenario: check it (shrinking and saving the first
    violation), and count what was explored into ``stats`` until one fails."""
    failing = [False]

    def check_one(scenario: Scenario) -> None:
        try:
            trace = assert_scenario(
                scenario,
                loop=loop,
                directory=save_dir,
                found_by=found_by,
                save=shrink,
                minimal=shrink,
            )
        except ScenarioFailure:
            failing[0] = True
            raise
        if not failing[0]:  # count what was explored, not the shrinker's retries
            stats.add(scenario, trace)
            if any(t.is_real for t in scenario.tools):
                for name, detail in _ledger_differences(scenario, trace, run(scenario, loop)).items():
                    nondeterministic.setdefault(name, detail)
            if on_example is not None:
                on_example(stats)

    return check_one


def _run_passes(replay: Callable[[], None] | None, main: Callable[[], None]) -> ScenarioFailure | None:
    """Run the database's pass (if any), then the main one; the violation they found, or None."""
    try:
        with no_local_constants():
            if replay is not None:
                try:
                    replay()
                except unittest.SkipTest:  # nothing saved yet: Hypothesis ran no example
                    pass
            main()
    except ScenarioFailure as exc:
        return exc
    return None


def _ledger_differences(scenario: Scenario, first: Trace, second: Trace) -> dict[str, str]:
    """Per real tool, the first execution whose outcome differs between two runs of ``scenario``."""
    differences: dict[str, str] = {}
    for tool in (t for t in scenario.tools if t.is_real):
        a = [e for e in first.ledger or () if e.tool_name == tool.name]
        b = [e for e in second.ledger or () if e.tool_name == tool.name]
        for index in range(max(len(a), len(b))):
            x, y = (a[index] if index < len(a) else None), (b[index] if index < len(b) else None)
            if x is None or y is None:
                differences[tool.name] = f"executed {len(a)} time(s) in one run and {len(b)} in the other"
                break
            if (x.arguments, x.outcome, x.text, x.is_error) != (y.arguments, y.outcome, y.text, y.is_error):
                args = json.dumps(x.arguments, ensure_ascii=False, sort_keys=True, default=str)
                differences[tool.name] = f"called with {clip(args)}, it gave {clip(x.text)!r}, then {clip(y.text)!r}"
                break
    return differences


class NoToolsError(LookupError):
    """The module named for ``--tools`` offers no tool (``harness fuzz`` says so as a usage error)."""


def load_tools(module_name: str) -> list[Any]:
    """The tools a module offers: its ``TOOLS`` list, else every ``@function`` / tool defined in it.

    The module is imported from the current directory first, as ``python -m`` would; a module
    that cannot be imported raises ``UserImportError`` with a one-line reason.
    """
    module = import_user_module(module_name)
    listed = getattr(module, "TOOLS", None)
    if listed is not None:
        if isinstance(listed, (str, bytes)) or not isinstance(listed, Iterable):
            raise NoToolsError(f"{module_name}.TOOLS is a {type(listed).__name__}, not a list of tools")
        entries = list(listed)
        for index, entry in enumerate(entries):
            if not isinstance(entry, ToolDef) and not is_tool_entry(entry):
                raise NoToolsError(
                    f"{module_name}.TOOLS[{index}] is not a tool ({entry!r:.60}): list @function tools, "
                    "AgentTools or {'spec', 'execute'} dicts"
                )
        if not entries:
            raise NoToolsError(f"{module_name}.TOOLS is empty")
        return entries
    found = [
        value
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__ and is_tool_entry(value)
    ]
    if not found:
        raise NoToolsError(f"{module_name} defines no @function tools and no TOOLS list")
    return found
