"""Tools: schemas from type hints and docstrings, argument validation and coercion, result conversion.

This module uses postponed annotations on purpose: every hint below is a string until the schema
is built, which is what ``from __future__ import annotations`` does in users' code too.
"""

from __future__ import annotations

import asyncio
import json
from enum import StrEnum
from typing import Any, Literal, Union

import pytest
from pydantic import BaseModel

from harness import ScriptedProvider, turn
from openprogram import function, runtime
from openprogram.tools import (
    AgentTool,
    AgentToolResult,
    ToolArgumentsError,
    as_agent_tool,
    parse_docstring,
    to_tool_result,
    validate_tool_arguments,
)
from openprogram.types import TextContent, ToolCall


async def _noop(*_args: Any) -> AgentToolResult:
    return AgentToolResult()


def tool_with(parameters: dict[str, Any], name: str = "t") -> AgentTool:
    return AgentTool(name=name, description="", parameters=parameters, execute=_noop)


def validate(tool: AgentTool, **arguments: Any) -> dict[str, Any]:
    return validate_tool_arguments(tool, ToolCall(id="c", name=tool.name, arguments=arguments))


def validation_error(tool: AgentTool, **arguments: Any) -> str:
    with pytest.raises(ToolArgumentsError) as excinfo:
        validate(tool, **arguments)
    return str(excinfo.value)


# --------------------------------------------------------------------------------------------
# Schemas from type hints (postponed annotations throughout this module)
# --------------------------------------------------------------------------------------------


class Item(BaseModel):
    sku: str
    qty: int = 1


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


@function(register=False)
def order(
    item: Item,
    note: str | None,
    code: Union[int, str],
    size: Literal["s", "m", "l"] = "m",
    tags: list[str] | None = None,
    extras: list[Item] = [],  # noqa: B006 - a default the schema shows
    rush: bool = False,
    color: Color = Color.RED,
) -> str:
    """Place an order.

    Args:
        item: what to order.
        note: a note for the courier,
            which may span lines.
        code: a discount code.
    """
    return "ok"


def test_schema_covers_models_optionals_unions_literals_lists_and_enums() -> None:
    spec = order.spec
    assert spec.name == "order"
    assert spec.description == "Place an order."
    properties = spec.parameters["properties"]
    assert properties["item"] == {"$ref": "#/$defs/Item", "description": "what to order."}
    assert properties["note"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "description": "a note for the courier, which may span lines.",
    }
    assert properties["code"] == {"anyOf": [{"type": "integer"}, {"type": "string"}], "description": "a discount code."}
    assert properties["size"] == {"default": "m", "enum": ["s", "m", "l"], "type": "string"}
    assert properties["tags"] == {
        "anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
        "default": None,
    }
    assert properties["extras"] == {"default": [], "items": {"$ref": "#/$defs/Item"}, "type": "array"}
    assert properties["rush"] == {"default": False, "type": "boolean"}
    assert properties["color"] == {"$ref": "#/$defs/Color", "default": "red"}
    assert spec.parameters["required"] == ["item", "note", "code"]
    assert spec.parameters["additionalProperties"] is False
    assert spec.parameters["$defs"]["Item"] == {
        "properties": {"sku": {"type": "string"}, "qty": {"default": 1, "type": "integer"}},
        "required": ["sku"],
        "type": "object",
    }
    assert "title" not in json.dumps(spec.parameters)  # pydantic's titles are noise for the model


def test_special_parameters_are_not_in_the_schema() -> None:
    @function(register=False)
    def work(x: int, cancel_event: Any = None, on_update: Any = None) -> str:
        return "ok"

    assert work.spec.parameters == {
        "additionalProperties": False,
        "properties": {"x": {"type": "integer"}},
        "required": ["x"],
        "type": "object",
    }


def test_a_function_without_parameters_has_an_empty_object_schema() -> None:
    @function(register=False)
    def ping() -> str:
        return "pong"

    assert ping.spec.parameters == {"additionalProperties": False, "properties": {}, "type": "object"}


def test_an_unannotated_parameter_accepts_anything() -> None:
    @function(register=False)
    def anything(x, y=3):  # type: ignore[no-untyped-def]
        return x

    assert anything.spec.parameters["properties"] == {"x": {}, "y": {"default": 3}}


def test_a_postponed_annotation_may_name_a_class_defined_after_the_function() -> None:
    assert later.spec.parameters["properties"]["when"] == {"$ref": "#/$defs/DefinedLater"}
    assert later.spec.parameters["$defs"]["DefinedLater"]["properties"] == {"at": {"type": "string"}}


@function(register=False)
def later(when: DefinedLater) -> str:
    return when.at


class DefinedLater(BaseModel):
    at: str


def test_a_postponed_annotation_naming_a_local_class_resolves() -> None:
    class Local(BaseModel):
        n: int

    @function(register=False)
    def uses_local(value: Local) -> int:
        return value.n

    assert uses_local.spec.parameters["$defs"]["Local"]["properties"] == {"n": {"type": "integer"}}


def test_an_unresolvable_annotation_is_reported_with_the_function_name() -> None:
    @function(register=False)
    def broken(x: Nowhere) -> str:  # type: ignore[name-defined]  # noqa: F821
        return "x"

    with pytest.raises(TypeError, match=r"cannot resolve the type hints of .*broken: name 'Nowhere' is not defined"):
        broken.spec  # noqa: B018


def test_the_executor_receives_model_instances_and_enums() -> None:
    seen: dict[str, Any] = {}

    @function(register=False)
    def place(item: Item, extras: list[Item], color: Color = Color.RED) -> str:
        seen.update(item=item, extras=extras, color=color)
        return f"{item.qty} x {item.sku}"

    provider = ScriptedProvider(
        turn.tool_call("place", item={"sku": "A1", "qty": " 2 "}, extras=[{"sku": "B"}], color="blue"), "ok"
    )
    with runtime.use(provider):
        runtime.exec("buy", tools=[place])
    assert seen == {"item": Item(sku="A1", qty=2), "extras": [Item(sku="B")], "color": Color.BLUE}
    assert isinstance(seen["item"], Item) and isinstance(seen["color"], Color)
    assert provider.requests[1].messages[-1].text == "2 x A1"


# --------------------------------------------------------------------------------------------
# Descriptions: docstrings and overrides
# --------------------------------------------------------------------------------------------


def test_google_style_docstrings_describe_the_tool_and_its_parameters() -> None:
    description, params = parse_docstring(
        """Sum two numbers.

        Useful for arithmetic.

        Args:
            a (int): the first
                number.
            b: the second.
            **kwargs: ignored.

        Returns:
            int: the sum.
        """
    )
    assert description == "Sum two numbers.\n\nUseful for arithmetic."
    assert params == {"a": "the first number.", "b": "the second.", "kwargs": "ignored."}


def test_rest_docstrings_describe_the_tool_and_its_parameters() -> None:
    @function(register=False)
    def sub(a: int, b: int) -> int:
        """Subtract b from a.

        :param a: the minuend
        :param int b: the subtrahend,
            a number
        :returns: the difference
        :rtype: int
        """
        return a - b

    assert sub.spec.description == "Subtract b from a."
    assert sub.spec.parameters["properties"] == {
        "a": {"description": "the minuend", "type": "integer"},
        "b": {"description": "the subtrahend, a number", "type": "integer"},
    }


def test_a_function_without_a_docstring_has_an_empty_description() -> None:
    @function(register=False)
    def bare(a: int) -> int:
        return a

    assert bare.spec.description == ""
    assert parse_docstring(None) == ("", {})


def test_name_and_description_can_be_overridden() -> None:
    @function(name="plus", description="Add, but named differently.", register=False)
    def add(a: int, b: int) -> int:
        """Original description."""
        return a + b

    assert (add.spec.name, add.spec.description) == ("plus", "Add, but named differently.")
    assert add.name == "plus"
    assert add(1, 2) == 3
    assert add.to_agent_tool().name == "plus"


def test_an_empty_description_override_wins_over_the_docstring() -> None:
    @function(description="", register=False)
    def f() -> None:
        """Docstring."""

    assert f.spec.description == ""


# --------------------------------------------------------------------------------------------
# validate_tool_arguments
# --------------------------------------------------------------------------------------------

SCALARS = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "flag": {"type": "boolean"},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "nullable": {"type": ["boolean", "null"]},
        "text": {"type": "string"},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    },
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"n": " 5 "}, {"n": 5}),
        ({"n": "-12"}, {"n": -12}),
        ({"n": 5}, {"n": 5}),
        ({"x": "2.5"}, {"x": 2.5}),
        ({"x": " 3 "}, {"x": 3}),
        ({"x": "1e3"}, {"x": 1000.0}),
        ({"flag": "true"}, {"flag": True}),
        ({"flag": "False"}, {"flag": False}),
        ({"flag": " TRUE "}, {"flag": True}),
        ({"maybe": " 7 "}, {"maybe": 7}),
        ({"maybe": "null"}, {"maybe": None}),
        ({"maybe": None}, {"maybe": None}),
        ({"nullable": "true"}, {"nullable": True}),
        ({"nullable": "null"}, {"nullable": None}),
        ({"text": " 5 "}, {"text": " 5 "}),  # strings stay strings
        ({"either": " 5 "}, {"either": " 5 "}),  # a string is already valid: left alone
    ],
)
def test_light_coercion_of_string_arguments(arguments: dict[str, Any], expected: dict[str, Any]) -> None:
    result = validate(tool_with(SCALARS), **arguments)
    assert result == expected
    assert type(next(iter(result.values()))) is type(next(iter(expected.values())))


def test_coercion_reaches_nested_objects_arrays_and_refs() -> None:
    tool = as_agent_tool(order)
    arguments = {
        "item": {"sku": "A", "qty": " 3 "},
        "note": "null",
        "code": "X",
        "extras": [{"sku": "B", "qty": "4"}],
        "rush": "true",
    }
    assert validate(tool, **arguments) == {
        "item": {"sku": "A", "qty": 3},
        "note": "null",  # Optional[str]: "null" is a valid string and stays one
        "code": "X",
        "extras": [{"sku": "B", "qty": 4}],
        "rush": True,
    }


def test_a_validation_error_lists_each_problem_with_its_path_then_the_arguments() -> None:
    tool = as_agent_tool(order)
    text = validation_error(tool, item={"qty": "many"}, code=1, extras=[{"sku": "B", "qty": "x"}], colour="red")
    assert text == (
        'Validation failed for tool "order":\n'
        "  - root: 'note' is a required property\n"
        "  - root: Additional properties are not allowed ('colour' was unexpected)\n"
        "  - extras.0.qty: 'x' is not of type 'integer'\n"
        "  - item: 'sku' is a required property\n"
        "  - item.qty: 'many' is not of type 'integer'\n"
        "\n"
        "Received arguments:\n"
        "{\n"
        '  "item": {\n'
        '    "qty": "many"\n'
        "  },\n"
        '  "code": 1,\n'
        '  "extras": [\n'
        "    {\n"
        '      "sku": "B",\n'
        '      "qty": "x"\n'
        "    }\n"
        "  ],\n"
        '  "colour": "red"\n'
        "}"
    )


def test_the_received_arguments_are_shown_as_sent_not_as_coerced() -> None:
    text = validation_error(tool_with(SCALARS), n=" 5 ", flag="yes")
    assert text == (
        'Validation failed for tool "t":\n'
        "  - flag: 'yes' is not of type 'boolean'\n"
        "\n"
        "Received arguments:\n"
        '{\n  "n": " 5 ",\n  "flag": "yes"\n}'
    )


def test_non_ascii_arguments_are_shown_unescaped() -> None:
    text = validation_error(tool_with(SCALARS), n="fünf")
    assert text.endswith('Received arguments:\n{\n  "n": "fünf"\n}')


def test_literal_and_enum_violations_name_the_allowed_values() -> None:
    text = validation_error(as_agent_tool(order), item={"sku": "A"}, note=None, code=1, size="xl")
    assert "  - size: 'xl' is not one of ['s', 'm', 'l']\n" in text


def test_an_invalid_parameters_schema_is_reported_as_a_tool_problem() -> None:
    tool = tool_with({"type": "object", "properties": {"n": {"type": "integr"}}}, name="bad")
    with pytest.raises(ValueError, match=r'tool "bad" has an invalid parameters schema: '):
        validate(tool, n=1)


def test_validation_returns_a_copy_and_leaves_the_call_untouched() -> None:
    call = ToolCall(id="c", name="t", arguments={"n": "5"})
    assert validate_tool_arguments(tool_with(SCALARS), call) == {"n": 5}
    assert call.arguments == {"n": "5"}


# --------------------------------------------------------------------------------------------
# Return values and AgentToolResult
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("hi", "hi"),
        ("", ""),
        (None, ""),
        (0, "0"),
        ({"k": "ü"}, '{"k": "ü"}'),
        (Item(sku="A"), '{"sku": "A", "qty": 1}'),
        ({"item": Item(sku="A")}, '{"item": {"sku": "A", "qty": 1}}'),
        (Color.BLUE, "blue"),  # a str subclass is a str
    ],
)
def test_to_tool_result_converts_return_values(value: Any, text: str) -> None:
    result = to_tool_result(value)
    assert (result.text, result.is_error) == (text, False)


def test_to_tool_result_keeps_an_agent_tool_result() -> None:
    result = AgentToolResult(content="x", is_error=True)
    assert to_tool_result(result) is result


def test_to_tool_result_refuses_what_is_not_json() -> None:
    with pytest.raises(TypeError, match=r"tool returned a object, which is not JSON-serializable"):
        to_tool_result(object())


def test_agent_tool_result_accepts_a_string_or_blocks() -> None:
    assert AgentToolResult(content="a").content == (TextContent(text="a"),)
    blocks = (TextContent(text="a"), TextContent(text="b"))
    assert AgentToolResult(content=blocks).text == "ab"
    assert AgentToolResult().text == ""


# --------------------------------------------------------------------------------------------
# as_agent_tool: every menu form becomes one AgentTool
# --------------------------------------------------------------------------------------------


def _execute(tool: AgentTool, **args: Any) -> AgentToolResult:
    return asyncio.run(tool.execute("id", args, None, None))


def test_a_dict_tool_with_a_toolspec_or_anthropic_style_schema() -> None:
    from openprogram.types import ToolSpec

    spec_tool = as_agent_tool({"spec": ToolSpec(name="a", description="d"), "execute": lambda: "A"})
    assert (spec_tool.name, spec_tool.description, spec_tool.parameters) == (
        "a",
        "d",
        {"type": "object", "properties": {}},
    )
    anthropic = as_agent_tool(
        {
            "spec": {"name": "b", "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
            "execute": str,
        }
    )
    assert anthropic.parameters["properties"] == {"q": {"type": "string"}}
    assert _execute(spec_tool).text == "A"


def test_a_dict_tool_keeps_thread_and_source() -> None:
    tool = as_agent_tool({"spec": {"name": "a"}, "execute": lambda: "x", "source": "web"})
    assert tool.source == "web"


def test_an_agent_tool_passes_through_and_a_function_is_converted_once() -> None:
    tool = tool_with({"type": "object"})
    assert as_agent_tool(tool) is tool
    assert as_agent_tool(order) is as_agent_tool(order)
    assert as_agent_tool(order).source == __name__


def test_an_async_dict_executor_is_awaited() -> None:
    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return f"<{url}>"

    tool = as_agent_tool({"spec": {"name": "fetch"}, "execute": fetch})
    assert _execute(tool, url="u").text == "<u>"


def test_a_spec_without_a_name_is_refused() -> None:
    with pytest.raises(ValueError, match="the spec has no 'name'"):
        as_agent_tool({"spec": {"description": "nameless"}, "execute": print})


def test_a_spec_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match="the spec must be a ToolSpec or a dict, got int"):
        as_agent_tool({"spec": 3, "execute": print})


def test_something_that_is_not_a_tool_at_all_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^42 is not a tool: use an @function / @agentic_function"):
        as_agent_tool(42)
