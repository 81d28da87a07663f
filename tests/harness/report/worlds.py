"""Runs to draw: a nested run, a run with a broken rule, a recorded conversation, a campaign that
finds a planted bug. Built once each, through the real loop and the harness's own readers."""

from __future__ import annotations

import importlib
import sys
import types
from functools import cache
from pathlib import Path
from typing import Any

from harness import ScriptedProvider, turn
from harness.checking import CheckResult, check, run
from harness.clock import DeterministicClock
from harness.scenarios import Scenario
from harness.trace import RunCollector, Trace
from openprogram import agentic_function, function, runtime
from openprogram.agent.events import observe_runs

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "cassettes" / "scenarios"
DEMO_CASSETTE = ROOT / "cassettes" / "demo" / "test_demo_agent[openai-responses].yaml"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def nested_trace() -> Trace:
    """An expert tool that asks a model of its own: one nested run under expert#call_1."""

    @function(register=False)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @agentic_function(register=False)
    def expert(question: str) -> str:
        """Ask the arithmetic expert."""
        return runtime.exec(question, tools=[add])

    provider = ScriptedProvider(
        turn.tool_call("expert", question="2+2?"),
        turn.tool_call("add", a=2, b=2),
        turn.text("4"),
        turn.text(f"the expert says 4 {HOSTILE}"),
    )
    collector = RunCollector()
    collector.watch(provider)
    with observe_runs(collector.on_event), runtime.use(provider):
        runtime.exec(f"ask the expert {HOSTILE}", tools=[expert], clock=DeterministicClock())
    return collector.last


def broken_run() -> tuple[Scenario, Trace]:
    """A run whose second tool call never ends: the grammar and the reference both object to it."""
    scenario = Scenario.from_yaml(SCENARIOS / "raising-tool.yaml")
    trace = run(scenario)
    events = [e for e in trace.events if not (e.type == "tool_execution_end" and e.tool_call_id == "call_2")]
    return scenario, trace.model_copy(update={"events": events})


def checked(name: str) -> CheckResult:
    return check(Scenario.from_yaml(SCENARIOS / f"{name}.yaml"))


def _loop_copy(old: str, new: str) -> types.ModuleType:
    """A copy of the loop with one rule broken (the campaign must find it)."""
    source = Path(importlib.import_module("openprogram.agent.agent_loop").__file__ or "").read_text()
    planted = source.replace(old, new)
    assert planted != source
    module = types.ModuleType("seeded_loop_for_reports")
    module.__file__ = "<seeded copy of agent_loop.py>"
    sys.modules[module.__name__] = module
    try:
        exec(compile(planted, module.__file__, "exec"), module.__dict__)
    finally:
        sys.modules.pop(module.__name__, None)
    return module


@cache
def failing_campaign(save_dir: str) -> Any:
    """``harness fuzz`` over a loop whose skip text is wrong: found, shrunk, its trace kept."""
    from harness.campaigns import run_campaign

    seeded = _loop_copy('"Skipped due to queued user message."', '"Skipped."')
    result = run_campaign(400, seed=2024, loop=seeded.agent_loop, save_dir=save_dir)
    assert result.failure is not None
    return result


def long_trace(requests: int = 50) -> Trace:
    """A run of ``requests`` model requests (one tool call each, then an answer), the size the
    issue asks a report to stay responsive at."""

    @function(register=False)
    def lookup(page: int) -> str:
        """Look a page up."""
        return f"page {page}: " + "some words of the page " * 6

    turns = [turn.tool_calls(turn.tool_call("lookup", page=i), text=f"Reading page {i}.") for i in range(1, requests)]
    provider = ScriptedProvider(*turns, turn.text("Done: all pages read."))
    collector = RunCollector()
    collector.watch(provider)
    with observe_runs(collector.on_event), runtime.use(provider):
        runtime.exec("Read every page.", tools=[lookup], max_iterations=requests, clock=DeterministicClock())
    return collector.last


@cache
def wire_campaign(defect: str, save_dir: str, examples: int = 100) -> Any:
    """``harness fuzz --agent`` over the planted loop (tests/harness/agents/planted.py) with one
    defect (``""``: none): found and shrunk, or not, with the time split the campaign measured."""
    from harness.agents import run_agent_campaign
    from tests.harness.agents import planted

    agent = planted.make(defect) if defect else planted.agent
    return run_agent_campaign(agent, examples, save_dir=save_dir)


def tools_of(request: Any) -> Any:
    """A request's menu, read as ``harness fuzz --agent --html`` reads it."""
    from harness.agents._conversation import as_recorded

    return as_recorded(request).tools
