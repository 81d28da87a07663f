"""``@function`` / ``@agentic_function`` and the registry they share."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from openprogram import AgenticFunction, Function, agentic_function, function, registry
from openprogram.functions import Registry, matches
from openprogram.tools import AgentTool


@pytest.fixture
def reg() -> Iterator[Registry]:
    with registry.isolated() as isolated:
        yield isolated


def test_both_decorators_register_and_stay_plain_callables(reg: Registry) -> None:
    @function
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @agentic_function
    def think(topic: str) -> str:
        """Think about a topic."""
        return topic.upper()

    assert isinstance(add, Function) and not isinstance(add, AgenticFunction)
    assert isinstance(think, AgenticFunction)
    assert add(2, 3) == 5 and think("x") == "X"
    assert [f.name for f in reg] == ["add", "think"]
    assert reg.get("add") is add and len(reg) == 2
    assert repr(add) == "<function add>" and repr(think) == "<agentic_function think>"
    assert add.__name__ == "add" and add.__doc__ == "Add."


def test_decorators_with_arguments(reg: Registry) -> None:
    @function(name="plus", toolset="math", source="calc")
    def add(a: int, b: int) -> int:
        return a + b

    assert (add.name, add.source, add.toolsets) == ("plus", "calc", frozenset({"math"}))
    assert reg.get("plus") is add and reg.get("add") is None
    assert reg.toolset("math") == [add]


def test_register_false_keeps_a_function_out_of_the_registry(reg: Registry) -> None:
    @function(register=False)
    def private() -> str:
        return "p"

    assert reg.get("private") is None
    assert private.spec.name == "private"


def test_a_second_tool_under_a_taken_name_is_refused_naming_both_definitions(reg: Registry) -> None:
    @function
    def tool() -> str:
        return "old"

    with pytest.raises(ValueError) as refused:

        @function(name="tool")
        def tool_v2() -> str:
            return "new"

    first_line = str(refused.value).splitlines()[0]
    assert first_line.startswith('two tools are named "tool": ')
    test = "test_a_second_tool_under_a_taken_name_is_refused_naming_both_definitions"
    assert f"{__name__}:{test}.<locals>.tool (" in first_line
    assert ".<locals>.tool_v2 (" in first_line and f"{__file__}:" in first_line
    assert "register=False" in first_line
    assert reg.get("tool") is tool and len(reg) == 1
    reg.unregister("tool")
    assert reg.get("tool") is None


def test_the_same_definition_registered_again_replaces_the_first(reg: Registry) -> None:
    def define(answer: str) -> Function:
        @function
        def tool() -> str:  # one definition, run twice: a module reload, a re-run cell
            return answer

        return tool

    first, second = define("old"), define("new")
    assert reg.get("tool") is second and second is not first and len(reg) == 1


def test_a_tool_whose_module_is_no_longer_imported_gives_way(reg: Registry) -> None:
    import types

    stale_module = types.ModuleType("gone_app")
    exec("from openprogram import function\n@function\ndef lookup() -> str:\n    return 'old'\n", vars(stale_module))
    assert reg.get("lookup") is not None  # gone_app was never in sys.modules: like one unloaded since

    @function
    def lookup() -> str:
        return "new"

    assert reg.get("lookup") is lookup


def test_a_name_taken_outside_the_registry_does_not_count(reg: Registry) -> None:
    @function(register=False)
    def tool() -> str:
        return "private"

    @function(name="tool")
    def public() -> str:
        return "public"

    assert reg.get("tool") is public


def test_a_type_hint_with_no_json_schema_fails_at_decoration_naming_tool_and_parameter() -> None:
    import socket

    with pytest.raises(TypeError) as refused:

        @function(register=False)
        def get_x(s: socket.socket, n: int) -> str:
            return "x"

    first_line = str(refused.value).splitlines()[0]
    assert first_line.startswith('@function get_x: parameter "s" has type socket.socket, which has no JSON Schema; ')
    assert "use a JSON-able type" in first_line and "{'spec': {...}, 'execute': fn}" in first_line
    assert refused.value.__cause__ is not None  # pydantic's own detail stays in the chain


def test_a_type_that_validates_but_has_no_json_schema_is_refused_too() -> None:
    from collections.abc import Callable

    refusal = r'^@agentic_function plan: parameter "step" has type .*Callable.*no JSON Schema'
    with pytest.raises(TypeError, match=refusal):

        @agentic_function(register=False)
        def plan(goal: str, step: Callable[[int], int]) -> str:
            return goal


def test_a_forward_reference_defined_later_is_checked_when_the_spec_is_needed() -> None:
    @function(register=False)
    def later(x: DefinedLater) -> str:  # type: ignore[name-defined]  # noqa: F821
        return "x"

    globals()["DefinedLater"] = type("DefinedLater", (), {})
    try:
        with pytest.raises(TypeError, match=r'^@function later: parameter "x" has type .*DefinedLater, which has'):
            _ = later.spec
    finally:
        del globals()["DefinedLater"]


@pytest.mark.parametrize(
    ("signature", "shown"),
    [("x: int, *rest: int", "*rest"), ("x: int, **options: str", "**options")],
)
def test_star_parameters_are_refused_at_decoration(signature: str, shown: str) -> None:
    namespace: dict[str, object] = {"function": function}
    source = f"@function(register=False)\ndef spread({signature}) -> str:\n    return 'x'\n"
    with pytest.raises(TypeError) as refused:
        exec(source, namespace)
    assert str(refused.value).startswith(
        f'@function spread: parameter "{shown}" cannot be sent by a model (tool arguments are one JSON object'
    )
    assert "named parameter" in str(refused.value)


def test_isolated_starts_empty_and_restores_afterwards() -> None:
    @function
    def outside_isolation() -> str:
        return "x"

    try:
        with registry.isolated() as isolated:
            assert isolated.get("outside_isolation") is None and len(isolated) == 0

            @function
            def inside() -> str:
                return "y"

            assert isolated.get("inside") is inside
        assert registry.get("inside") is None
        assert registry.get("outside_isolation") is outside_isolation
    finally:
        registry.unregister("outside_isolation")


def test_toolsets_full_none_and_named(reg: Registry) -> None:
    @function(toolset=["a", "b"])
    def one() -> None: ...

    @function(toolset="b")
    def two() -> None: ...

    @function
    def three() -> None: ...

    assert reg.toolset("full") == [one, two, three]
    assert reg.toolset("none") == []
    assert reg.toolset("a") == [one]
    assert reg.toolset("b") == [one, two]
    with pytest.raises(ValueError, match=r"unknown toolset 'c': use 'full', 'none' or one of \['a', 'b'\]"):
        reg.toolset("c")


def test_an_unknown_toolset_with_no_toolsets_defined_says_how_to_make_one(reg: Registry) -> None:
    with pytest.raises(ValueError, match=r"@function\(toolset=\.\.\.\)"):
        reg.toolset("anything")


def test_the_default_source_is_the_defining_module(reg: Registry) -> None:
    @function
    def here() -> None: ...

    assert here.source == __name__


def test_decorating_a_class_or_a_non_callable_is_refused() -> None:
    with pytest.raises(TypeError, match=r"@function decorates functions, not classes \(Thing\)"):

        @function(register=False)
        class Thing:
            pass

    with pytest.raises(TypeError, match="@agentic_function decorates a function, got int"):
        AgenticFunction(3)  # type: ignore[arg-type]


def test_execute_takes_json_style_arguments(reg: Registry) -> None:
    class Box(BaseModel):
        w: int

    @function
    def area(box: Box, scale: int = 1) -> int:
        return box.w * box.w * scale

    assert area.execute(box={"w": 3}, scale="2") == 18


def test_to_agent_tool_is_built_once_and_carries_the_spec(reg: Registry) -> None:
    @agentic_function(thread=True)
    def slow(x: int) -> int:
        """Slow."""
        return x

    tool = slow.to_agent_tool()
    assert isinstance(tool, AgentTool) and slow.to_agent_tool() is tool
    assert (tool.name, tool.description, tool.source) == ("slow", "Slow.", __name__)
    assert asyncio.run(tool.execute("id", {"x": 4}, None, None)).text == "4"


def test_matches_takes_names_and_globs() -> None:
    assert matches("fs_read", ["fs_read"])
    assert matches("fs_read", ["fs_*"])
    assert matches("fs_read", ["web", "fs_?ead"])
    assert not matches("fs_read", ["FS_*"])  # case-sensitive, like tool names
    assert not matches("fs_read", [])
