"""The argument-validation fast path may only ever accept what jsonschema accepts.

``validate_tool_arguments`` first tries a direct check of the common keywords and falls back to
jsonschema for anything it does not accept; these properties pin that the shortcut never lets
through arguments jsonschema would reject, on generated schemas and generated values.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field

from openprogram import function
from openprogram.tool_arguments import _coerce, _fits, _is_simple, _transparent
from openprogram.tools import (
    as_agent_tool,
    plain_fields,
    prepare_plain,
    signature_model,
    validate_tool_arguments,
)
from openprogram.types import ToolCall

NAMES = st.sampled_from(["a", "b", "c"])
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"])

leaf_schemas = st.one_of(
    st.builds(lambda t: {"type": t}, TYPES),
    st.builds(lambda ts: {"type": ts}, st.lists(TYPES, min_size=1, max_size=3, unique=True)),
    st.builds(lambda e: {"type": "string", "enum": e}, st.lists(st.sampled_from(["x", "y", "1"]), min_size=1)),
    st.builds(lambda e: {"enum": e}, st.lists(st.sampled_from(["x", "y"]), min_size=1)),
    st.just({}),
    st.just({"description": "anything", "default": 1}),
)


def _object(props: dict[str, Any], required: list[str], extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": [n for n in required if n in props]}
    if extra is not None:
        schema["additionalProperties"] = extra
    return schema


schemas = st.recursive(
    leaf_schemas,
    lambda children: st.one_of(
        st.builds(
            _object,
            st.dictionaries(NAMES, children, max_size=3),
            st.lists(NAMES, max_size=3),
            st.one_of(st.none(), st.booleans(), children),
        ),
        st.builds(lambda item: {"type": "array", "items": item}, children),
        st.builds(lambda branches: {"anyOf": branches}, st.lists(children, min_size=1, max_size=3)),
    ),
    max_leaves=8,
)

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.floats(allow_nan=False, allow_infinity=False, width=16),
        st.sampled_from(["x", "y", "1", "", "true"]),
    ),
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(NAMES, children, max_size=3)),
    max_leaves=8,
)


def _with_refs(schema: dict[str, Any], definition: dict[str, Any]) -> dict[str, Any]:
    return {
        "$defs": {"D": definition},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/D", "description": "via a ref"}, "b": schema},
    }


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, values)
def test_the_fast_path_accepts_only_what_jsonschema_accepts(schema: dict[str, Any], value: Any) -> None:
    assert _is_simple(schema, schema, 0)
    if _fits(value, schema, schema):
        assert jsonschema.Draft202012Validator(schema).is_valid(value), (schema, value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, schemas, st.dictionaries(NAMES, values, max_size=3))
def test_the_fast_path_follows_refs_faithfully(schema: dict[str, Any], definition: dict[str, Any], value: Any) -> None:
    root = _with_refs(schema, definition)
    assert _is_simple(root, root, 0)
    if _fits(value, root, root):
        assert jsonschema.Draft202012Validator(root).is_valid(value), (root, value)


def test_schemas_with_other_keywords_always_go_to_jsonschema() -> None:
    for schema in [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": "^a"},
        {"type": "object", "properties": {"x": {"type": "string", "maxLength": 2}}},
        {"allOf": [{"type": "string"}]},
        {"oneOf": [{"type": "string"}]},
        {"type": "array", "items": [{"type": "string"}]},
        {"$ref": "#/$defs/Missing"},
        {"type": "object", "properties": {"x": True}},
        {"enum": [1, 2]},
        {"type": "strng"},
    ]:
        assert not _is_simple(schema, schema, 0), schema


def test_a_recursive_model_is_left_to_jsonschema() -> None:
    schema = {
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    }
    assert not _is_simple(schema, schema, 0)


def test_signature_schemas_take_the_fast_path() -> None:
    @function(register=False)
    def f(a: int, b: str | None = None, c: list[float] = [], d: bool = False) -> None:  # noqa: B006
        return None

    tool = as_agent_tool(f)
    assert _is_simple(tool.parameters, tool.parameters, 0)
    assert _fits({"a": 1, "b": None, "c": [1, 2.5]}, tool.parameters, tool.parameters)
    assert not _fits({"a": 1.0}, tool.parameters, tool.parameters)  # 1.0 is jsonschema's call
    assert not _fits({"a": True}, tool.parameters, tool.parameters)
    assert not _fits({"b": "x"}, tool.parameters, tool.parameters)
    assert not _fits({"a": 1, "z": 0}, tool.parameters, tool.parameters)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, values)
def test_skipping_coercion_for_fitting_arguments_changes_nothing(schema: dict[str, Any], value: Any) -> None:
    # The loop skips _coerce when the arguments already fit a transparent schema: for every such
    # value, coercion must have returned it unchanged (a fitting "5" under an untyped enum branch
    # would have become 5, which is why such schemas are not transparent).
    if _transparent(schema, schema, 0) and _fits(value, schema, schema):
        assert _coerce(value, schema, schema) == value, (schema, value)


def test_schemas_whose_branches_coercion_would_rewrite_are_not_transparent() -> None:
    untyped_enum = {"anyOf": [{"type": "integer"}, {"enum": ["5"]}]}
    assert _fits("5", untyped_enum, untyped_enum) and _coerce("5", untyped_enum, untyped_enum) == 5
    assert not _transparent(untyped_enum, untyped_enum, 0)
    objects = {"anyOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"a": {"type": "integer"}}}]}
    assert not _transparent(objects, objects, 0)


def _tool_args() -> Any:
    def body(a: int, b: str | None = None, c: bool = False, d: float = 0.5) -> None:
        return None

    return signature_model(body)


plain_values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=16), st.sampled_from(["x", "1"])
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), plain_values, max_size=5))
def test_plain_argument_preparation_agrees_with_pydantic(args: dict[str, Any]) -> None:
    # Function._prepare skips pydantic for models of plain scalars; whenever the shortcut answers,
    # it must be what pydantic would have made (value and type), and it must step aside otherwise.
    model = _tool_args()
    plan = plain_fields(model)
    assert plan is not None
    fast = prepare_plain(plan, args)
    if fast is None:
        return
    parsed = model.model_validate(args)
    slow = {field: getattr(parsed, field) for field in model.model_fields}
    assert fast == slow
    assert [type(v) for v in fast.values()] == [type(v) for v in slow.values()]


def test_models_with_more_than_plain_scalars_keep_pydantic() -> None:
    def listed(a: list[int]) -> None: ...
    def literal(a: Literal["x", "y"]) -> None: ...
    def bounded(a: Annotated[int, Field(ge=0)]) -> None: ...
    def mutable_default(a: str = "x", b: Any = None) -> None: ...

    for fn in (listed, literal, bounded, mutable_default):
        assert plain_fields(signature_model(fn)) is None, fn.__name__


def test_validated_tool_arguments_are_a_copy_of_what_the_model_sent() -> None:
    @function(register=False)
    def f(a: int, b: str | None = None) -> None:
        return None

    tool = as_agent_tool(f)
    sent = {"a": 1, "b": "x"}
    got = validate_tool_arguments(tool, ToolCall(id="c", name="f", arguments=sent))
    assert got == sent and got is not sent
    assert validate_tool_arguments(tool, ToolCall(id="c", name="f", arguments={"a": " 5 "})) == {"a": 5}


def _counting_checks(monkeypatch: Any) -> list[Any]:
    checked: list[Any] = []
    original = jsonschema.Draft202012Validator.check_schema.__func__  # type: ignore[attr-defined]

    def counting(cls: Any, schema: Any, *args: Any, **kwargs: Any) -> None:
        checked.append(schema)
        original(cls, schema, *args, **kwargs)

    monkeypatch.setattr(jsonschema.Draft202012Validator, "check_schema", classmethod(counting))
    return checked


def _tool(parameters: Any, name: str = "t") -> Any:
    spec = {"name": name, "description": "", "parameters": parameters}
    return as_agent_tool({"spec": spec, "execute": lambda **_: "ok"})


def test_a_schema_is_checked_once_however_many_tools_share_it(monkeypatch: Any) -> None:
    # Tests and campaigns build the same tools again as new objects; the metaschema check costs
    # far more than a run, so an equal schema is not checked again, whatever its key order.
    from openprogram.tool_arguments import check_tool

    checked = _counting_checks(monkeypatch)
    # a "multipleOf" keeps them off the shortcut for plainly valid schemas, which needs no check at all
    probe = {"type": "integer", "multipleOf": 3}
    schema = {"type": "object", "properties": {"cache_probe_a": probe}, "required": ["cache_probe_a"]}
    reordered = {"required": ["cache_probe_a"], "properties": {"cache_probe_a": probe}, "type": "object"}
    for parameters in (schema, dict(schema), reordered):
        check_tool(_tool(parameters))
    assert checked == [schema]
    other = {"type": "object", "properties": {"cache_probe_a": {"type": "number", "multipleOf": 3}}}
    check_tool(_tool(other))
    assert checked == [schema, other]
    call = ToolCall(id="c1", name="t", arguments={"cache_probe_a": "9"})
    assert validate_tool_arguments(_tool(reordered), call) == {"cache_probe_a": 9}


def test_an_invalid_schema_is_refused_every_time_naming_each_tool(monkeypatch: Any) -> None:
    from openprogram.tool_arguments import check_tool

    checked = _counting_checks(monkeypatch)
    bad = {"type": "object", "properties": {"a": {"type": "intger"}}}
    for name in ("first", "second"):
        with pytest.raises(ValueError, match=f'tool "{name}" has an invalid parameters schema'):
            check_tool(_tool(bad, name))
    assert len(checked) == 2
    dangling = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    for name in ("third", "fourth"):
        with pytest.raises(ValueError, match=f'tool "{name}" has a parameters schema whose \\$ref points nowhere'):
            check_tool(_tool(dangling, name))


# Schemas a hurried author writes: the keywords of the fast path with values of every form,
# right and wrong (a misspelt type, duplicates, an empty anyOf, a numeric description, NaN, ...).
_ODD_VALUES = st.sampled_from(
    ["string", "intger", "", "#/$defs/D", "#/$defs/a b", "https://x/y", 0, -1, 2, 2.5, True, None, float("nan"), []]
)
_TYPE_VALUES = st.one_of(
    TYPES, st.lists(st.sampled_from(["string", "integer", "null", "strin"]), max_size=3), _ODD_VALUES
)
_KEYWORDS = st.sampled_from(
    [
        "type", "enum", "required", "properties", "$defs", "items", "additionalProperties", "anyOf", "title",
        "description", "format", "default", "const", "minimum", "maxLength", "minItems", "$ref", "$schema", "pattern",
    ]
)  # fmt: skip


def _keyword_value(name: str, children: Any) -> Any:
    if name == "type":
        return _TYPE_VALUES
    if name in ("properties", "$defs"):
        keys = st.one_of(NAMES, st.sampled_from(["a(", "", "x y", "$ref"]))  # names need not be identifiers
        return st.one_of(st.dictionaries(keys, children, max_size=2), _ODD_VALUES)
    if name in ("items", "additionalProperties"):
        return st.one_of(children, st.booleans(), _ODD_VALUES)
    if name == "anyOf":
        return st.one_of(st.lists(children, max_size=2), _ODD_VALUES)
    if name in ("enum", "required"):
        return st.one_of(st.lists(st.sampled_from(["a", "b", 1, None]), max_size=3), _ODD_VALUES)
    return _ODD_VALUES


odd_schemas = st.recursive(
    st.just({}),
    lambda children: (
        _KEYWORDS.flatmap(lambda name: st.tuples(st.just(name), _keyword_value(name, children))).map(
            lambda pair: {pair[0]: pair[1]}
        )
        | st.builds(lambda a, b: {**a, **b}, children, children)
    ),
    max_leaves=10,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(schemas, odd_schemas))
def test_the_schema_check_shortcut_accepts_only_what_the_metaschema_accepts(schema: dict[str, Any]) -> None:
    # check_tool skips jsonschema's metaschema check (milliseconds a schema) for schemas the
    # shortcut recognises as plainly valid: it must never wave through one jsonschema refuses.
    from openprogram.tool_arguments import _plainly_valid

    if _plainly_valid(schema, 0):
        jsonschema.Draft202012Validator.check_schema(schema)


def test_the_schemas_signatures_produce_take_the_schema_check_shortcut() -> None:
    from openprogram.tool_arguments import _plainly_valid

    def search(
        query: str,
        mode: Literal["fast", "deep"] = "fast",
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        tags: list[str] | None = None,
    ) -> str:
        """Search."""
        return query

    schema = as_agent_tool(function(register=False)(search)).parameters
    assert _plainly_valid(schema, 0), schema
    for refused in ({"type": "intger"}, {"required": ["a", "a"]}, {"anyOf": []}, {"description": 5}):
        assert not _plainly_valid(refused, 0), refused


def test_jsonschema_is_imported_only_when_a_call_needs_it() -> None:
    # a fifth of ``import openprogram`` was jsonschema's, paid by every test session that imports
    # an agent; the fast paths settle valid calls to plain tools, so only a failing call imports it
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from openprogram import function, runtime\n"
        "from harness import ScriptedProvider, turn\n"
        "@function\n"
        "def add(a: int, b: int) -> int:\n"
        "    '''Add two integers.'''\n"
        "    return a + b\n"
        "provider = ScriptedProvider(turn.tool_call('add', a=2, b=3), turn.text('5'))\n"
        "assert runtime.exec('2+3?', tools=[add], provider=provider) == '5'\n"
        "print('jsonschema' in sys.modules)\n"
        "provider = ScriptedProvider(turn.tool_call('add', a='two', b=3), turn.text('?'))\n"
        "runtime.exec('2+3?', tools=[add], provider=provider)\n"
        "print('jsonschema' in sys.modules)\n"
        "print(provider.requests[1].messages[-1].content[0].text.splitlines()[1])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["False", "True", "  - a: 'two' is not of type 'integer'"]
