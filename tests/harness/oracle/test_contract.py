"""The oracle's own schema judgement: remembered per schema and arguments, never confused."""

from __future__ import annotations

from typing import Any

import pytest

from harness._contract import schema_errors

NUMBER_AT_LEAST_ONE = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ({"n": 1}, {"n": True}),  # bool is not an integer to jsonschema, though True == 1
        ({"n": 1}, {"n": "1"}),
        ({"n": 2}, {"n": 2.5}),
    ],
)
def test_values_that_compare_equal_or_look_alike_are_judged_each_on_its_own(first: Any, then: Any) -> None:
    assert schema_errors(NUMBER_AT_LEAST_ONE, first) == []
    assert schema_errors(NUMBER_AT_LEAST_ONE, then) != []
    assert schema_errors(NUMBER_AT_LEAST_ONE, first) == []


def test_a_tuple_is_not_taken_for_the_list_judged_before() -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array"}}}
    assert schema_errors(schema, {"items": [1]}) == []
    assert schema_errors(schema, {"items": (1,)}) == ["(1,) is not of type 'array'"]


def test_the_message_names_the_value_given_not_an_equal_one_judged_before() -> None:
    assert schema_errors(NUMBER_AT_LEAST_ONE, {"n": 0.0}) == ["0.0 is less than the minimum of 1"]
    assert schema_errors(NUMBER_AT_LEAST_ONE, {"n": -0.0}) == ["-0.0 is less than the minimum of 1"]


def test_a_remembered_answer_is_a_new_list_each_time() -> None:
    errors = schema_errors(NUMBER_AT_LEAST_ONE, {"n": 0})
    assert errors == ["0 is less than the minimum of 1"]
    errors.append("changed by the caller")
    assert schema_errors(NUMBER_AT_LEAST_ONE, {"n": 0}) == ["0 is less than the minimum of 1"]


def test_an_unusable_schema_stays_unusable_and_odd_values_are_still_judged() -> None:
    assert schema_errors({"type": "no such type"}, {}) is None
    assert schema_errors({"type": "no such type"}, {}) is None
    odd = {"n": {1, 2}}  # not a JSON value: judged afresh every time
    assert schema_errors(NUMBER_AT_LEAST_ONE, odd) == schema_errors(NUMBER_AT_LEAST_ONE, odd) != []


def test_arguments_nested_too_deep_for_a_key_are_still_judged() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    assert schema_errors({"type": "array", "minItems": 1}, deep) == []
