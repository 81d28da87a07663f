"""Hypothesis strategies that generate adversarial model behaviour as ``Scenario`` values.

The public namespace, as Hypothesis keeps ``hypothesis.strategies`` over ``strategies/_internal``:
whole scenarios (``_scenarios``), the tools they offer (``_tool_strategies``), what the model and
the user do in them (``_model_behaviour``), the one-choice parts all of these are drawn from
(``_draw_tables``) and arguments for a JSON Schema, valid and broken on purpose (``_schemas``).
"""

from harness.strategies._draw_tables import tool_calls
from harness.strategies._model_behaviour import (
    FINAL_TURN_WEIGHTS,
    MIDDLE_TURN_WEIGHTS,
    TURN_WEIGHTS,
    configs,
    follow_up_schedules,
    histories,
    model_turns,
    steering_schedules,
)
from harness.strategies._scenarios import scenarios
from harness.strategies._schemas import arguments, invalid_arguments, schemas
from harness.strategies._tool_strategies import CANCEL_ONE_IN, behaviours, nested_runs, tool_specs, tools, tools_from

__all__ = [
    "CANCEL_ONE_IN",
    "FINAL_TURN_WEIGHTS",
    "MIDDLE_TURN_WEIGHTS",
    "TURN_WEIGHTS",
    "arguments",
    "behaviours",
    "configs",
    "follow_up_schedules",
    "histories",
    "invalid_arguments",
    "model_turns",
    "nested_runs",
    "scenarios",
    "schemas",
    "steering_schedules",
    "tool_calls",
    "tool_specs",
    "tools",
    "tools_from",
]
