"""Every scenario under cassettes/scenarios/ (or $HARNESS_SCENARIO_DIR) replayed as a test.

Hand-written files pin the seed's rules; files saved by a failing property or `harness fuzz` pin
the bug they found. Each must agree with the reference model, pass every invariant, and meet its
own ``meta.expect``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checking._check import Problem, check_expectations
from harness.checking._regressions import (
    ENV_VAR,
    Regression,
    ScenarioFailure,
    assert_scenario,
    load_regressions,
    regression_text,
    save_regression,
    scenario_dir,
)
from harness.checking._runner import run
from harness.scenarios._scenario import ModelTurn, Scenario, ScenarioError
from harness.scenarios._scenario_parts import Call

REPO_SCENARIOS = Path(__file__).resolve().parents[3] / "cassettes" / "scenarios"
RULES = [
    "unknown-tool",
    "invalid-arguments",
    "raising-tool",
    "parallel-order",
    "steering-mid-batch-skip",
    "steering-after-text-reply",
    "follow-up",
    "error-finish",
    "aborted-finish",
    "cap-with-queued-steering",
    "nested-exec",
]


def _collected() -> list[Regression]:
    import os

    return load_regressions(os.environ.get(ENV_VAR) or REPO_SCENARIOS)


@pytest.mark.parametrize("regression", _collected(), ids=lambda r: r.id)
def test_regression_scenario_replays_clean(regression: Regression) -> None:
    assert_scenario(regression.scenario, save=False)


def test_the_seeds_rules_are_pinned_by_hand_written_files() -> None:
    names = {path.stem for path in REPO_SCENARIOS.glob("*.yaml")}
    assert set(RULES) <= names, sorted(set(RULES) - names)
    for rule in RULES:
        text = (REPO_SCENARIOS / f"{rule}.yaml").read_text()
        assert text.startswith("# Rule"), f"{rule}.yaml needs a comment header saying which rule it pins"
        assert "expect" in Scenario.from_yaml(text).meta, f"{rule}.yaml should pin the outcome in meta.expect"


def test_a_saved_regression_names_the_invariant_and_reads_back(tmp_path: Path) -> None:
    scenario = Scenario(turns=(ModelTurn(calls=(Call("nope"),)),))
    problem = Problem("skip_semantics", "the second call was not skipped\nsecond line")
    path = save_regression(scenario, problem, tmp_path, found_by="harness fuzz --seed 7")
    text = path.read_text()
    assert path.name.startswith("skip_semantics-") and path.suffix == ".yaml"
    assert text.startswith("# Regression scenario")
    assert "# Violated: skip_semantics" in text and "#   second line" in text and "--seed 7" in text
    [loaded] = load_regressions(tmp_path)
    assert loaded.path == path
    assert loaded.scenario.turns == scenario.turns
    assert loaded.scenario.meta["violation"] == {"invariant": "skip_semantics", "message": problem.message}
    assert save_regression(scenario, problem, tmp_path) == path  # same scenario, same file


def test_the_directory_comes_from_the_argument_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert scenario_dir() == Path("cassettes/scenarios")
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert scenario_dir() == tmp_path
    assert scenario_dir(tmp_path / "x") == tmp_path / "x"


def test_missing_directory_has_no_regressions(tmp_path: Path) -> None:
    assert load_regressions(tmp_path / "absent") == []


def test_a_malformed_regression_file_is_an_error_not_a_skip(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("turns: [{txt: x}]")
    with pytest.raises(ScenarioError, match=r"bad\.yaml"):
        load_regressions(tmp_path)


def test_expectations_are_checked() -> None:
    scenario = Scenario(turns=(ModelTurn(text="hi"),), meta={"expect": {"reason": "error", "nonsense": 1}})
    problems = check_expectations(scenario, run(scenario))
    assert [p.message for p in problems] == [
        "reason: expected 'error', got 'stop'",
        "unknown expectation 'nonsense'; known: reason, requests, executed, final_text, results, new_messages",
    ]


def test_assert_scenario_saves_outside_hypothesis_and_raises(tmp_path: Path) -> None:
    scenario = Scenario(turns=(ModelTurn(text="hi"),), meta={"expect": {"requests": 2}})
    with pytest.raises(ScenarioFailure) as failure:
        assert_scenario(scenario, directory=tmp_path)
    assert failure.value.problem.name == "expectation"
    assert failure.value.path is not None and failure.value.path.parent == tmp_path
    assert "requests: expected 2, got 1" in str(failure.value)
    assert "regression_text" not in str(failure.value)
    assert regression_text(scenario, failure.value.problem).count("# Violated: expectation") == 1


def test_minimize_removes_everything_the_failure_does_not_need() -> None:
    from harness.checking._regressions import minimize
    from harness.scenarios._scenario import Config, ToolDef
    from harness.scenarios._scenario_parts import Behaviour

    big = Scenario(
        prompts=("a", "b"),
        tools=(ToolDef(name="t", plan=(Behaviour("return", "x"), Behaviour("error", "y"))), ToolDef(name="u")),
        turns=(
            ModelTurn(text="thinking out loud", calls=(Call("t"), Call("u"), Call("t"))),
            ModelTurn(calls=(Call("u"),)),
            ModelTurn(text="done"),
        ),
        steering={2: ("s1", "s2"), 5: ("s3",)},
        follow_ups={1: ("f",)},
        config=Config(max_iterations=7, model="m"),
    )

    def fails(candidate: Scenario) -> bool:  # "the bug": some turn calls u
        return any(call.name == "u" for turn in candidate.turns for call in turn.calls)

    small = minimize(big, fails)
    assert small.turns == (ModelTurn(calls=(Call("u"),)),)
    assert small.tools == () and small.steering == {} and small.follow_ups == {}
    assert small.prompts == ("a",) and small.config == Config()
