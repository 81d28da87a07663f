"""The scenario: one value that fully determines a run of the loop, and its YAML file form.

A scenario is what a campaign generates, what a failure shrinks to, what ``harness run`` reads
and ``harness emulate`` serves. Private modules: the value and its file as a whole
(``_scenario``), the parts the value is made of (``_scenario_parts``), the file forms of those parts
(``_forms``: turns, tools, history, config), declared YAML forms with located errors
(``_yamlform``) and ``meta.expect`` (``_expectations``).
"""

from harness.scenarios._scenario import Scenario, json_schema
from harness.scenarios._scenario_parts import (
    Behaviour,
    Call,
    Config,
    HistoryMessage,
    Leave,
    ModelTurn,
    NestedRun,
    ScenarioError,
    ToolDef,
    UserImportError,
    import_user_object,
)

__all__ = [
    "Behaviour",
    "Call",
    "Config",
    "HistoryMessage",
    "Leave",
    "ModelTurn",
    "NestedRun",
    "Scenario",
    "ScenarioError",
    "ToolDef",
    "UserImportError",
    "import_user_object",
    "json_schema",
]
