"""Running a scenario and judging it: ``run`` / ``arun``, ``check``, and regressions.

``run`` drives the real loop with a scripted provider in a deterministic world (``_runner``);
``check`` holds the run against the invariants, the reference model and ``meta.expect``
(``_check``); a shrunk failure is saved as YAML and replayed as a test forever after
(``_regressions``).
"""

from harness.checking._check import CheckResult, Problem, check
from harness.checking._regressions import (
    Regression,
    ScenarioFailure,
    assert_scenario,
    load_regressions,
    minimize,
    save_regression,
    scenario_dir,
)
from harness.checking._runner import ToolEscaped, ToolKilled, arun, run

__all__ = [
    "CheckResult",
    "Problem",
    "Regression",
    "ScenarioFailure",
    "ToolEscaped",
    "ToolKilled",
    "arun",
    "assert_scenario",
    "check",
    "load_regressions",
    "minimize",
    "run",
    "save_regression",
    "scenario_dir",
]
