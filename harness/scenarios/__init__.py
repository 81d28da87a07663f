"""The scenario: one value that fully determines a run of the loop, and its YAML file form.

A scenario is what a campaign generates, what a failure shrinks to, what ``harness run`` reads and
``harness emulate`` serves. Private modules: the value and its file form (``_scenario``), its parts
(``_parts``), the file form of model turns (``_turn_forms``), declared YAML forms with located
errors (``_yamlform``) and ``meta.expect`` (``_expectations``).
"""

from harness.scenarios._parts import Call, UserImportError, import_user_object
from harness.scenarios._scenario import (
    Behaviour,
    Config,
    HistoryMessage,
    Leave,
    ModelTurn,
    NestedRun,
    Scenario,
    ScenarioError,
    ToolDef,
    json_schema,
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
