"""`harness fuzz` and the campaign behind it, including a planted bug it must find and shrink."""

from __future__ import annotations

import importlib
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import harness.checking._runner as runner_module
from harness.campaigns._loop_campaign import load_tools, run_campaign
from harness.checking._check import check
from harness.cli import main
from harness.scenarios._scenario import Scenario


def test_fuzz_command_reports_what_it_exercised(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["fuzz", "--examples", "30", "--seed", "3", "--save-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "30 scenarios" in result.output and "seed 3" in result.output
    assert "end reason" in result.output and "no violation" in result.output
    assert list(tmp_path.iterdir()) == []


def test_the_same_seed_explores_the_same_scenarios(tmp_path: Path) -> None:
    first = run_campaign(15, seed=11, save_dir=tmp_path)
    second = run_campaign(15, seed=11, save_dir=tmp_path)
    assert (first.stats.rounds, first.stats.reasons) == (second.stats.rounds, second.stats.reasons)
    assert first.ok and second.ok


TOOLS_MODULE = textwrap.dedent(
    '''
    from openprogram import function

    @function(register=False)
    def lookup(key: str, limit: int = 3) -> str:
        """Look a key up."""
        return f"{key}:{limit}"

    @function(register=False)
    def explode(reason: str) -> str:
        """Always fails."""
        raise ValueError(reason)
    '''
)


@pytest.fixture
def user_tools_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    package = tmp_path / "usertools"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(TOOLS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "usertools.tools"
    for name in ("usertools.tools", "usertools"):
        sys.modules.pop(name, None)


def test_fuzz_with_the_users_tools_module(user_tools_module: str, tmp_path: Path) -> None:
    assert sorted(t.name for t in load_tools(user_tools_module)) == ["explode", "lookup"]
    result = CliRunner().invoke(
        main,
        ["fuzz", "--examples", "25", "--seed", "5", "--tools", user_tools_module, "--save-dir", str(tmp_path / "s")],
    )
    assert result.exit_code == 0, result.output
    assert "2 tool(s) from usertools.tools" in result.output
    assert "tool executions that raised" in result.output  # explode's real code ran


def test_a_module_without_tools_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty_tools.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(main, ["fuzz", "--examples", "1", "--tools", "empty_tools"])
    assert result.exit_code == 2
    assert "defines no @function tools" in result.output


# ---------------------------------------------------------------------------------------------
# A seeded bug: a copy of the loop with one rule broken. The campaign must find it, shrink it to
# a minimal scenario, save that, and exit non-zero from the command line.
# ---------------------------------------------------------------------------------------------


def _loop_copy(transform: Callable[[str], str], name: str) -> types.ModuleType:
    source = Path(importlib.import_module("openprogram.agent.agent_loop").__file__ or "").read_text()
    planted = transform(source)
    assert planted != source, "the bug was not planted: the loop's source changed shape"
    module = types.ModuleType(f"seeded_loop_{name}")
    module.__file__ = f"<seeded copy of agent_loop.py: {name}>"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    try:
        exec(compile(planted, module.__file__, "exec"), module.__dict__)
    finally:
        sys.modules.pop(module.__name__, None)
    return module


def _wrong_skip_text(source: str) -> str:
    return source.replace('"Skipped due to queued user message."', '"Skipped."')


def _results_in_reverse(source: str) -> str:
    # run the batch back to front: results come out in reverse call order
    marker = "    results: list[ToolResultMessage] = []\n"
    head, sep, tail = source.partition("async def _execute_tool_calls(")
    assert sep and marker in tail
    return head + sep + tail.replace(marker, marker + "    tool_calls = list(reversed(tool_calls))\n", 1)


def _calls(scenario: Scenario) -> int:
    return sum(len(t.calls) for t in scenario.turns)


def test_a_wrong_skip_text_is_found_and_shrunk_to_a_minimal_scenario(tmp_path: Path) -> None:
    seeded = _loop_copy(_wrong_skip_text, "skip_text")
    result = run_campaign(400, seed=2024, loop=seeded.agent_loop, save_dir=tmp_path)
    assert result.failure is not None, "the campaign missed a wrong skip text"
    minimal = result.failure.scenario
    # needed: one turn of two calls (to any tool, even unknown ones), and one steering message
    # arriving after the first call; nothing else
    assert len(minimal.turns) == 1 and _calls(minimal) == 2, minimal.to_yaml()
    assert minimal.tools == () and len(minimal.steering) == 1 and not minimal.follow_ups, minimal.to_yaml()
    assert "Skipped" in result.failure.problem.message
    saved = result.failure.path
    assert saved is not None and saved.parent == tmp_path
    assert Scenario.from_yaml(saved).turns == minimal.turns
    assert f"# Violated: {result.failure.problem.name}" in saved.read_text()
    assert check(Scenario.from_yaml(saved)).ok  # the real loop passes it


def test_results_in_reverse_order_are_found_through_the_patched_default_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded = _loop_copy(_results_in_reverse, "reverse")
    monkeypatch.setattr(runner_module, "agent_loop", seeded.agent_loop)  # what harness.checking._runner.run uses
    result = run_campaign(400, seed=7, save_dir=tmp_path)
    assert result.failure is not None, "the campaign missed results in reverse order"
    minimal = result.failure.scenario
    assert len(minimal.turns) == 1 and _calls(minimal) == 2, minimal.to_yaml()
    assert minimal.tools == () and not minimal.steering and not minimal.follow_ups, minimal.to_yaml()


def test_the_fuzz_command_exits_non_zero_printing_the_minimal_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeded = _loop_copy(_wrong_skip_text, "skip_text_cli")
    monkeypatch.setattr(runner_module, "agent_loop", seeded.agent_loop)
    result = CliRunner().invoke(main, ["fuzz", "--examples", "400", "--seed", "2024", "--save-dir", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "VIOLATION" in result.output and "minimal scenario:" in result.output
    assert "steering:" in result.output and "saved as" in result.output
    assert len(list(tmp_path.glob("*.yaml"))) == 1


# ---------------------------------------------------------------------------------------------
# Planted Robustness bugs (DESIGN 4): each is a class of fault the adversarial pass found by hand;
# the campaign's own vocabulary (misbehaving providers and tools, odd getter values, cancel from
# outside) must find each in a copy of the loop and shrink it to the few parts that show it.
# ---------------------------------------------------------------------------------------------


def _replace_once(old: str, new: str) -> Callable[[str], str]:
    def transform(source: str) -> str:
        assert source.count(old) == 1, f"the loop's source changed shape: {old!r}"
        return source.replace(old, new)

    return transform


_ROBUSTNESS_BUGS = {
    # an error event whose message kept stop_reason "stop" is taken as a normal reply
    "error event taken as success": _replace_once(
        "        if message.stop_reason != reason or message.error_message is None:", "        if False:"
    ),
    # tools get the committed ToolCall.arguments themselves: a tool that mutates them rewrites history
    "tools share the committed arguments": _replace_once(
        "tool.execute(call.id, copy_arguments(args),", "tool.execute(call.id, call.arguments,"
    ),
    # a steering getter's bare string is iterated: one user message per character
    "a getter's bare string split into characters": _replace_once(
        "isinstance(queued, (str, UserMessage)) or not", "isinstance(queued, UserMessage) or not"
    ),
    # cancel set mid-batch: the rest of the batch still runs
    "cancel mid-batch does not skip": _replace_once(
        "        if run.cancel_requested:  # no further tool of the batch starts once cancel is set",
        "        if False:",
    ),
}


_SEEDS = {"a getter's bare string split into characters": 3, "cancel mid-batch does not skip": 7}
"""Seeds under which each is found well within the budget (examples needed: docs/property-testing.md)."""


def _size(scenario: Scenario) -> tuple[int, int, int, int]:
    """(turns, calls, tools, scheduled steering polls): how big a shrunk scenario is."""
    return len(scenario.turns), _calls(scenario), len(scenario.tools), len(scenario.steering)


@pytest.mark.parametrize("bug", list(_ROBUSTNESS_BUGS))
def test_a_planted_robustness_bug_is_found_and_shrunk(bug: str, tmp_path: Path) -> None:
    seeded = _loop_copy(_ROBUSTNESS_BUGS[bug], bug.replace(" ", "_").replace("'", ""))
    # A rare fault may be missed under one seed (the draws shift with the campaign's history):
    # up to three campaigns of 600, each with its own seed, must find it.
    for seed in (_SEEDS.get(bug, 2024), 7, 5):
        result = run_campaign(600, seed=seed, loop=seeded.agent_loop, save_dir=tmp_path)
        if result.failure is not None:
            break
    assert result.failure is not None, f"the campaign missed: {bug}"
    minimal = result.failure.scenario
    turns, calls, tools, polls = _size(minimal)
    assert turns <= 2 and calls <= 2 and tools <= 1 and polls <= 1, minimal.to_yaml()
    assert not minimal.follow_ups and minimal.consumers == 1, minimal.to_yaml()
    # what shows each bug survives the shrinking; everything else is gone
    if bug == "error event taken as success":
        assert [t.kind for t in minimal.turns] == ["error_keeps_stop"], minimal.to_yaml()
    elif bug == "tools share the committed arguments":
        assert any(b.mutate for t in minimal.tools for b in t.plan), minimal.to_yaml()
    elif bug == "a getter's bare string split into characters":
        assert set(minimal.steering_as.values()) == {"str"}, minimal.to_yaml()
    else:  # the user presses stop mid-batch: from a tool, or while the loop polls between two calls
        pressed = minimal.cancel_at is not None or any(b.cancel or b.wait for t in minimal.tools for b in t.plan)
        assert calls == 2 and pressed, minimal.to_yaml()
    assert check(Scenario.from_yaml(result.failure.path)).ok  # the real loop passes the saved scenario
