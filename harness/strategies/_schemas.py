"""Hypothesis strategies from JSON Schema to values: tool schemas, arguments that fit them, and
arguments broken on purpose.

The lower half of ``harness.strategies``, which re-exports ``schemas``, ``arguments`` and
``invalid_arguments`` (it is the public namespace of strategies); this module knows nothing of
scenarios, tools or turns. ``harness.strategies`` also shares its strategy cache (``memoized``),
``_key`` and ``_json``. Keep new string constants out of here: Hypothesis draws text from the
string constants of the project's modules, so a new one changes what fixed seeds generate.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from hypothesis import strategies as st

PROPERTY_SCHEMAS: tuple[dict[str, Any], ...] = (
    {"type": "integer"},
    {"type": "string"},
    {"type": "boolean"},
    {"type": "number"},
    {"type": "integer", "minimum": 0, "maximum": 10},
    {"type": "string", "enum": ["asc", "desc"]},
    {"type": "array", "items": {"type": "integer"}},
    {"type": ["integer", "null"]},
    {"anyOf": [{"type": "string"}, {"type": "null"}]},
    {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
)
"""The property schemas a generated tool's parameters are made of (the strategies' fixed menus too)."""
_property_schemas = st.sampled_from(PROPERTY_SCHEMAS)


_property_names = st.sampled_from(("a", "b", "query", "limit", "flag"))
_booleans = st.booleans()


@st.composite
def schemas(draw: st.DrawFn, max_properties: int = 3) -> dict[str, Any]:
    """Object schemas of zero to ``max_properties`` typed properties, some required, maybe closed."""
    names = draw(
        memoized(("names", max_properties), lambda: st.lists(_property_names, max_size=max_properties, unique=True))
    )
    properties = {name: draw(_property_schemas) for name in names}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [name for name in names if draw(_booleans)]
    if required:
        schema["required"] = required
    if draw(_booleans):
        schema["additionalProperties"] = False
    return schema


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    for _ in range(32):
        if not (
            isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and schema["$ref"].startswith("#/")
        ):
            return schema
        node: Any = root
        for part in schema["$ref"][2:].split("/"):
            node = node.get(part, {}) if isinstance(node, Mapping) else {}
        schema = node
    return schema


_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 100), st.text(max_size=8))
_json = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


_T = TypeVar("_T")
_memo: dict[Hashable, Any] = {}


def memoized(key: Hashable, build: Callable[[], _T]) -> _T:
    """Strategies are built once per key: building and validating them costs more than drawing."""
    found: _T | None = _memo.get(key)  # what build() gave for this key (keys name their strategy)
    if found is None:
        if len(_memo) > 4096:
            _memo.clear()
        found = _memo[key] = build()
    return found


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def arguments(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> st.SearchStrategy[Any]:
    """Values that fit ``schema`` (the common JSON Schema subset tool schemas use, ``$ref`` included).

    Keywords it does not know are ignored, so a value may occasionally not validate; that is fine:
    the reference model validates exactly like the loop, so an invalid value is just another case.
    """
    text = _key(schema)
    if "$ref" not in text:  # the root matters only to a reference: one strategy (validated once) for any
        return memoized(("arguments", text), lambda: _arguments(schema, schema if root is None else root))
    root = schema if root is None else root
    return memoized(("arguments", text, _key(root)), lambda: _arguments(schema, root))


def _arguments(schema: Mapping[str, Any], root: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping) or not schema:
        return _json
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return st.one_of([arguments(branch, root) for branch in schema[key]])
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for branch in schema["allOf"]:
            merged.update(_resolve(branch, root))
        return arguments({**merged, **{k: v for k, v in schema.items() if k != "allOf"}}, root)
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([arguments({**schema, "type": k}, root) for k in kind])
    if kind == "object" or (kind is None and "properties" in schema):
        return _objects(schema, root)
    if kind == "array":
        return _arrays(schema, root)
    if kind == "string":
        return _strings(schema)
    if kind == "integer":
        return _integers(schema)
    if kind == "number":
        return st.floats(
            min_value=schema.get("minimum"), max_value=schema.get("maximum"), allow_nan=False, allow_infinity=False
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return _json


def _arrays(schema: Mapping[str, Any], root: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    items = schema.get("items", {})
    return st.lists(
        arguments(items, root) if isinstance(items, Mapping) else _json,
        min_size=int(schema.get("minItems", 0)),
        max_size=min(int(schema.get("maxItems", 3)), int(schema.get("minItems", 0)) + 3),
    )


def _strings(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    if isinstance(schema.get("pattern"), str):
        try:
            re.compile(schema["pattern"])
            return st.from_regex(schema["pattern"], fullmatch=True)
        except re.error:
            pass
    low = int(schema.get("minLength", 0))
    return st.text(min_size=low, max_size=max(low, int(schema.get("maxLength", low + 12))))


def _integers(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    low = schema.get("minimum", schema.get("exclusiveMinimum", -(2**31)))
    high = schema.get("maximum", schema.get("exclusiveMaximum", 2**31))
    low = int(low) + (1 if "exclusiveMinimum" in schema and "minimum" not in schema else 0)
    high = int(high) - (1 if "exclusiveMaximum" in schema and "maximum" not in schema else 0)
    return st.integers(min_value=low, max_value=max(low, high))


def _objects(schema: Mapping[str, Any], root: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    return st.fixed_dictionaries(
        {k: arguments(v, root) for k, v in properties.items() if k in required},
        optional={k: arguments(v, root) for k, v in properties.items() if k not in required},
    )


ALIENS: tuple[Any, ...] = ("x", -1, 1.5, True, None, [], {}, [1, "two"], {"nested": "object"})


_aliens = st.sampled_from(ALIENS)


def _refused_by(schema: Any, alien: Any) -> Any:
    """``alien``, or when ``schema`` accepts it (``"x"`` for a string, ``-1`` for an integer) the
    next alien it refuses: a "wrong type" that fits is a valid call, and it is the simplest one,
    where shrinking goes. The same draws, so a seed keeps its conversations."""
    if not isinstance(schema, Mapping):
        return alien
    accepts = _accepts(json.dumps(schema, sort_keys=True, default=repr))
    start = next(i for i, a in enumerate(ALIENS) if a == alien and type(a) is type(alien))
    for offset in range(len(ALIENS)):
        candidate = ALIENS[(start + offset) % len(ALIENS)]
        if not accepts(candidate):
            return candidate
    return alien


@functools.lru_cache(maxsize=256)
def _accepts(schema_text: str) -> Callable[[Any], bool]:
    import jsonschema

    schema = json.loads(schema_text)
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
    except (jsonschema.SchemaError, TypeError, ValueError):  # a schema it cannot read: any alien will do
        return lambda _: False

    def accepts(value: Any) -> bool:
        try:
            return bool(validator.is_valid(value))
        except Exception:  # a reference it cannot resolve on its own: taken as refused
            return False

    return accepts


def invalid_arguments(schema: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Valid arguments broken on purpose: a wrong type, a missing required key, or an extra key."""
    return memoized(("invalid", _key(schema)), lambda: _invalid_arguments(schema))


def _invalid_arguments(schema: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties = tuple(sorted(schema.get("properties") or {}))
    required = tuple(sorted(schema.get("required") or ()))
    ways = ["wrong type"] if properties else []
    if required:
        ways.append("missing required")
    if schema.get("additionalProperties") is False or not ways:
        ways.append("extra key")
    return _broken(
        arguments(schema),
        st.sampled_from(tuple(ways)),
        st.sampled_from(properties or ("",)),
        st.sampled_from(required or ("",)),
        dict(schema.get("properties") or {}),
    )


@st.composite
def _broken(
    draw: st.DrawFn, base: Any, pick_way: Any, pick_property: Any, pick_required: Any, declared: dict[str, Any]
) -> dict[str, Any]:
    value = draw(base)
    args = dict(value) if isinstance(value, dict) else {}
    way = draw(pick_way)
    if way == "wrong type":
        name = draw(pick_property)
        args[name] = _refused_by(declared.get(name), draw(_aliens))
    elif way == "missing required":
        args.pop(draw(pick_required), None)
    else:
        args["unexpected"] = draw(_aliens)
    return args
