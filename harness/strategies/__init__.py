"""Hypothesis strategies that generate adversarial model behaviour as ``Scenario`` values.

The public namespace, as Hypothesis keeps ``hypothesis.strategies`` over ``strategies/_internal``:
whole scenarios (``_scenarios``), the one-choice parts they are drawn from (``_draw_tables``) and
arguments for a JSON Schema, valid and broken on purpose (``_schemas``).
"""

from harness.strategies._draw_tables import tool_calls
from harness.strategies._scenarios import (
    CANCEL_ONE_IN,
    FINAL_TURN_WEIGHTS,
    MIDDLE_TURN_WEIGHTS,
    TURN_WEIGHTS,
    behaviours,
    configs,
    follow_up_schedules,
    histories,
    model_turns,
    nested_runs,
    scenarios,
    steering_schedules,
    tool_specs,
    tools,
    tools_from,
)
from harness.strategies._schemas import arguments, invalid_arguments, schemas

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
