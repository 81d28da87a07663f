"""The boundary table of `harness fuzz`: what each run reached, and that the default campaign reaches all."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.campaigns._boundaries import BOUNDARIES, EXAMPLES, reached
from harness.campaigns._loop_campaign import DEFAULT_EXAMPLES, run_campaign
from harness.checking._check import problems_of
from harness.checking._runner import run
from harness.cli import main
from harness.scenarios._scenario import Config, ModelTurn, Scenario, ToolDef
from harness.scenarios._scenario_parts import Behaviour, Call

OPEN = {"type": "object", "properties": {}}


def _tool(*plan: Behaviour) -> ToolDef:
    return ToolDef(name="a", parameters=OPEN, plan=plan)


def _reached(scenario: Scenario) -> set[str]:
    return reached(scenario, run(scenario))


PICK = ModelTurn(calls=(Call("a"),))
TWO_PICKS = ModelTurn(calls=(Call("a"), Call("a")))
ANSWER = ModelTurn(text="done")


@pytest.mark.parametrize(
    ("scenario", "boundary"),
    [
        (
            Scenario(tools=(_tool(),), turns=(PICK, ANSWER), config=Config(max_iterations=1)),
            "cap, tool reply, queues empty",
        ),
        (
            Scenario(tools=(_tool(),), turns=(PICK, ANSWER), steering={2: ("stop",)}, config=Config(max_iterations=1)),
            "cap, tool reply, steering queued",
        ),
        (
            Scenario(
                tools=(_tool(),), turns=(PICK, ANSWER), follow_ups={1: ("more",)}, config=Config(max_iterations=1)
            ),
            "cap, tool reply, follow-up waiting",
        ),
        (
            Scenario(tools=(_tool(),), turns=(PICK, ANSWER), steering={4: ("stop",)}, config=Config(max_iterations=2)),
            "cap, text reply, steering queued",
        ),
        (
            Scenario(
                tools=(_tool(),), turns=(PICK, ANSWER), follow_ups={1: ("more",)}, config=Config(max_iterations=2)
            ),
            "cap, text reply, follow-up waiting",
        ),
        (
            Scenario(
                tools=(_tool(),),
                turns=(ANSWER, PICK, ANSWER),
                follow_ups={1: ("more",)},
                config=Config(max_iterations=2),
            ),
            "follow-up, then the cap",
        ),
        (Scenario(tools=(_tool(),), turns=(PICK, ANSWER), config=Config(max_iterations=0)), "cap clamped"),
        (Scenario(turns=(ANSWER,), cancel_at="start"), "cancel before the first request"),
        (Scenario(tools=(_tool(),), turns=(PICK, ANSWER), cancel_at=2), "cancel before a later request"),
        (Scenario(tools=(_tool(Behaviour(cancel=True)),), turns=(TWO_PICKS, ANSWER)), "cancel mid-batch"),
        (
            Scenario(
                tools=(_tool(Behaviour(cancel=True)),), turns=(TWO_PICKS, ANSWER), config=Config(max_iterations=1)
            ),
            "cancel at the cap",
        ),
        (Scenario(turns=(ModelTurn(text="x", cancel=True),)), "cancel while streaming"),
        (Scenario(turns=(ModelTurn(kind="aborted"),)), "aborted by the provider"),
        (
            Scenario(tools=(_tool(),), turns=(TWO_PICKS, ANSWER), steering={2: ("stop",)}),
            "steering mid-batch, calls skipped",
        ),
        (Scenario(tools=(_tool(),), turns=(PICK, ANSWER, ANSWER), steering={2: ("stop",)}), "steering after a batch"),
        (Scenario(turns=(ANSWER, ANSWER), steering={2: ("go on",)}), "steering after a text reply"),
        (Scenario(turns=(ANSWER, ANSWER), follow_ups={1: ("more",)}), "follow-up after a text reply"),
        (Scenario(turns=(ModelTurn(calls=(Call("a", raw="{"),)), ANSWER), tools=(_tool(),)), "invalid JSON arguments"),
        (Scenario(turns=(ModelTurn(calls=(Call("zz"),)), ANSWER)), "unknown tool"),
        (Scenario(tools=(_tool(Behaviour("raise", "boom")),), turns=(PICK, ANSWER)), "tool raised"),
    ],
)
def test_a_run_reports_the_boundary_it_crossed(scenario: Scenario, boundary: str) -> None:
    assert boundary in BOUNDARIES
    assert boundary in _reached(scenario)


def test_a_plain_answer_crosses_no_queue_or_cap_boundary() -> None:
    found = _reached(Scenario(turns=(ANSWER,)))
    assert not {b for b in found if b.startswith(("cap", "cancel", "steering", "follow-up"))}


def test_the_default_campaign_reaches_every_boundary_deeply(tmp_path: Path) -> None:
    # what a bare `harness fuzz` runs: it finds nothing in the real loop, and its budget reaches
    # every boundary the table lists, at 2.5 model rounds a scenario or more, errors a minority
    result = run_campaign(save_dir=tmp_path)
    assert result.ok, str(result.failure)
    stats = result.stats
    assert stats.scenarios == DEFAULT_EXAMPLES
    assert stats.unreached == [], stats.unreached
    assert stats.rounds / stats.scenarios >= 2.5
    assert stats.reasons["error"] < stats.scenarios / 2


def test_the_examples_a_campaign_starts_with_cross_every_boundary_and_break_no_rule() -> None:
    # what makes the table of every campaign of the default budget complete, whatever its seed
    crossed: set[str] = set()
    for scenario in EXAMPLES:
        trace = run(scenario)
        assert problems_of(scenario, trace) == [], scenario.to_yaml()
        crossed |= reached(scenario, trace)
    assert sorted(set(BOUNDARIES) - crossed) == []


@pytest.mark.parametrize("seed", [1, 2])
def test_a_campaign_under_another_seed_reaches_every_boundary_too(seed: int, tmp_path: Path) -> None:
    result = run_campaign(seed=seed, save_dir=tmp_path, shrink=False)
    assert result.ok, str(result.failure)
    assert result.stats.scenarios == DEFAULT_EXAMPLES
    assert result.stats.unreached == []


def test_a_small_budget_is_spent_on_generated_scenarios_alone(tmp_path: Path) -> None:
    # below four times the examples' number the budget is the generated scenarios' alone
    result = run_campaign(len(EXAMPLES), seed=3, save_dir=tmp_path, shrink=False)
    assert result.stats.scenarios == len(EXAMPLES)
    assert result.stats.unreached  # a budget that small does not reach everything


def test_the_fuzz_command_prints_the_table_and_marks_what_it_missed(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["fuzz", "--examples", "3", "--save-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "loop boundaries reached" in result.output
    assert "NOT REACHED" in result.output  # three scenarios cannot reach them all
