"""Strategies shared between menus (built once, cheaper in a fresh process) must draw exactly
what a strategy built for each menu would: the campaign's fixed seeds depend on it."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.scenarios._scenario import ToolDef
from harness.strategies import configs
from harness.strategies._draw_tables import CONFIG_TABLES, TOOL_NAMES, _joint, _joint_table, _product
from harness.strategies._schemas import arguments


def _elements(strategy: st.SearchStrategy[object]) -> tuple[object, ...]:
    return tuple(getattr(strategy, "wrapped_strategy", strategy).elements)


def test_the_config_table_shared_by_first_tool_names_is_the_table_built_for_each_name() -> None:
    for name in TOOL_NAMES:
        choices = (None, "auto", "required", "none", {"type": "function", "name": name})
        own = _joint_table((*CONFIG_TABLES[:1], choices, *CONFIG_TABLES[1:]), None)
        drawn = configs([ToolDef(name=name, parameters={"type": "object", "properties": {}})])
        fields = drawn.wrapped_strategy.args[0] if hasattr(drawn, "wrapped_strategy") else None
        assert fields is not None
        assert repr(_elements(fields)) == repr(own)


def test_a_product_lists_its_combinations_first_table_fastest() -> None:
    tables = ((0, 1, 2), ("a", "b"), (None, True), (5,))
    expected = tuple((a, b, c, d) for d in tables[3] for c in tables[2] for b in tables[1] for a in tables[0])
    (group,) = _product(*tables)
    assert _elements(group) == expected
    (single,) = _product((7, 8, 9))
    assert _elements(single) == ((7,), (8,), (9,))


def test_a_joint_table_weighs_combinations_by_their_tables() -> None:
    table = _joint(("x", "x", "x", "y"), (1, 2)).elements
    counts = {combination: table.count(combination) for combination in itertools.product("xy", (1, 2))}
    assert sum(counts.values()) == len(table)
    assert abs(counts[("x", 1)] - 3 * counts[("y", 1)]) <= 2 and abs(counts[("x", 2)] - counts[("x", 1)]) <= 1


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_a_reference_is_resolved_against_its_own_root(data: st.DataObject) -> None:
    # argument strategies are shared between roots only where no $ref can make the root matter
    reference = {"$ref": "#/$defs/value"}
    as_int = {"$defs": {"value": {"type": "integer"}}, **reference}
    as_bool = {"$defs": {"value": {"type": "boolean"}}, **reference}
    assert type(data.draw(arguments(reference, as_int))) is int
    assert type(data.draw(arguments(reference, as_bool))) is bool
