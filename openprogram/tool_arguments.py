"""Checking a model's arguments against a tool's JSON Schema, and the schema itself when a menu is built.

``check_tool`` refuses a tool no provider could be shown (a bad name, an invalid schema, a dangling
``$ref``) when the menu is built; ``validate_tool_arguments`` checks each call's arguments, after
light coercion, and words what was wrong for the model. Most schemas (every one a signature
produces) go through fast paths here that only ever accept; anything else, and every error text,
is jsonschema's, imported when first needed. ``openprogram.tools`` re-exports the public names.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from openprogram.types import ToolCall

if TYPE_CHECKING:  # imported where a validator is first needed: it is a fifth of ``import openprogram``
    import jsonschema

    from openprogram.tools import AgentTool

__all__ = ["ToolArgumentsError", "check_tool", "validate_tool_arguments"]


class ToolArgumentsError(ValueError):
    """The model's arguments do not fit the schema; ``str(err)`` is the text fed back to it."""


_validators: weakref.WeakKeyDictionary[AgentTool, tuple[jsonschema.protocols.Validator | None, bool, bool]] = (
    weakref.WeakKeyDictionary()
)
"""Per tool: its validator (``None`` until first needed, for a schema the fast paths cover), and
``_checked_schema``'s two verdicts."""
_INT = re.compile(r"^[+-]?\d+$")
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _dangling_refs(schema: Any, root: Any, where: str = "#") -> list[str]:
    """Every ``$ref`` in ``schema`` that does not point at a part of this same schema."""
    found: list[str] = []
    if isinstance(schema, Mapping):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref != "#" and _pointer(ref, root) is _MISSING:
            found.append(f"{where}: $ref {ref!r}")
        for key, value in schema.items():
            found += _dangling_refs(value, root, f"{where}/{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += _dangling_refs(value, root, f"{where}/{index}")
    return found


_MISSING: Any = object()


def _pointer(ref: str, root: Any) -> Any:
    if not ref.startswith("#/"):
        return _MISSING  # remote references cannot be resolved offline, before any request
    node = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def check_tool(tool: AgentTool) -> None:
    """Refuse a tool no provider could be shown: a bad name, an invalid schema, a dangling ``$ref``.

    Called when a menu is built, so a bad entry is refused at once, naming it, before any request
    (cached per tool, so a run pays nothing for tools it has already checked).
    """
    _validator_for(tool)


def _validator_for(tool: AgentTool) -> tuple[jsonschema.protocols.Validator | None, bool, bool]:
    """The tool's JSON Schema validator (``None``: a Draft 2020-12 one, not built yet), whether its
    schema is simple enough for ``_fits``, and whether ``_coerce`` leaves every value that fits it
    unchanged (see ``_transparent``)."""
    entry = _validators.get(tool)
    if entry is None:
        if not isinstance(tool.name, str) or not _TOOL_NAME.match(tool.name):
            raise ValueError(
                f"tool {tool.name!r}: the name must match ^[A-Za-z0-9_-]{{1,64}}$ (letters, digits, _ and -, "
                "at most 64), which is what every provider accepts"
            )
        if not isinstance(tool.parameters, Mapping):
            raise ValueError(f'tool "{tool.name}" has an invalid parameters schema: not a JSON object')
        cls, simple, transparent = _checked_schema(tool)
        entry = (None if cls is None else cls(tool.parameters), simple, transparent)
        _validators[tool] = entry
    return entry


def _validator(tool: AgentTool) -> jsonschema.protocols.Validator:
    """The tool's validator, built (and jsonschema imported) the first time arguments need it."""
    validator, simple, transparent = _validator_for(tool)
    if validator is None:
        import jsonschema

        validator = jsonschema.Draft202012Validator(tool.parameters)
        _validators[tool] = (validator, simple, transparent)
    return validator


_checked: dict[str, tuple[Any, bool, bool]] = {}
"""Schemas already found valid, by their JSON text (with the validator class, ``None`` for Draft
2020-12, and the two verdicts): checking one against its metaschema costs
about 0.8 ms (using it, microseconds), and tests, campaigns and servers build the same tools again
and again, as new objects. Bounded: cleared when it reaches ``_CHECKED_MAX`` entries."""
_CHECKED_MAX = 1024


_TEXT_KEYWORDS = frozenset({"title", "description", "$comment", "format"})
_ANY_KEYWORDS = frozenset({"default", "const"})
_NUMBER_KEYWORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COUNT_KEYWORDS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
_SCHEMA_MAPS = frozenset({"properties", "$defs"})
_LOCAL_REF = re.compile(r"^#(/[A-Za-z0-9_.~$-]+)*$")


def _plainly_valid(schema: Any, depth: int) -> bool:
    """True only for a schema the 2020-12 metaschema surely accepts: made of the keywords tools
    and signatures use, each of the right form (False: ``check_schema`` decides).

    The metaschema check costs about 2.5 ms a schema (jsonschema resolves the metaschema's
    ``$dynamicRef``s at every level), this a few microseconds, and every new schema paid it when
    its tool was first used. A property test holds it to never accepting what jsonschema refuses.
    """
    if depth > 16 or type(schema) is not dict:
        return False
    for key, value in schema.items():
        if key in _TEXT_KEYWORDS:
            ok = isinstance(value, str)
        elif key in _ANY_KEYWORDS:
            ok = True
        elif key == "type":
            names = value if type(value) is list else [value]
            known = all(type(t) is str and t in _JSON_TYPES for t in names)
            ok = bool(names) and known and len(set(names)) == len(names)
        elif key == "enum":
            ok = type(value) is list
        elif key == "required":
            ok = type(value) is list and all(type(n) is str for n in value) and len(set(value)) == len(value)
        elif key in _SCHEMA_MAPS:
            ok = type(value) is dict and all(_plainly_valid(sub, depth + 1) for sub in value.values())
        elif key in ("items", "additionalProperties"):
            ok = type(value) is bool or _plainly_valid(value, depth + 1)
        elif key == "anyOf":
            ok = type(value) is list and bool(value) and all(_plainly_valid(sub, depth + 1) for sub in value)
        elif key in _NUMBER_KEYWORDS:
            ok = type(value) in (int, float) and value == value and abs(value) != float("inf")
        elif key in _COUNT_KEYWORDS:
            ok = type(value) is int and value >= 0
        elif key == "$ref":
            ok = type(value) is str and _LOCAL_REF.match(value) is not None
        else:
            return False
        if not ok:
            return False
    return True


def _checked_schema(tool: AgentTool) -> tuple[Any, bool, bool]:
    """The validator class of a valid schema (``None``: Draft 2020-12, the default, for a schema
    ``_plainly_valid`` accepts, which has no ``$schema`` to name another), whether it is simple,
    whether coercion is transparent."""
    try:
        key: str | None = json.dumps(tool.parameters, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not JSON text (a tuple key, NaN, ...): checked every time
        key = None
    found = _checked.get(key) if key is not None else None
    if found is not None:
        return found
    cls: Any = None
    if not _plainly_valid(tool.parameters, 0):
        import jsonschema

        cls = jsonschema.validators.validator_for(tool.parameters, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(tool.parameters)
        except jsonschema.SchemaError as exc:
            raise ValueError(f'tool "{tool.name}" has an invalid parameters schema: {exc.message}') from None
    dangling = _dangling_refs(tool.parameters, tool.parameters)
    if dangling:
        raise ValueError(f'tool "{tool.name}" has a parameters schema whose $ref points nowhere: {"; ".join(dangling)}')
    simple = _is_simple(tool.parameters, tool.parameters, 0)
    found = (cls, simple, simple and _transparent(tool.parameters, tool.parameters, 0))
    if key is not None:
        if len(_checked) >= _CHECKED_MAX:
            _checked.clear()
        _checked[key] = found
    return found


# A fast path for the schemas signatures produce. ``jsonschema`` costs ~20 µs per call, most of a
# loop round; ``_fits`` checks the common keywords directly. It only ever *accepts*: anything it
# does not accept (or a schema using other keywords) goes to jsonschema, which also words the
# errors, so the verdict and every error text are jsonschema's.
_ANNOTATIONS = frozenset(
    {"description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "$schema"}
)
_SIMPLE_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf"}
_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "null", "array", "object"})


def _lookup(ref: Any, root: Mapping[str, Any]) -> Any:
    """The local definition ``ref`` points at (``#/$defs/Name``), or None."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _is_simple(schema: Any, root: Mapping[str, Any], depth: int) -> bool:
    if depth > 16 or not isinstance(schema, Mapping):
        return False  # recursive models and boolean schemas: leave them to jsonschema
    keys = set(schema) - ({"$defs", "definitions"} if depth == 0 else set())
    if "$ref" in schema:
        return keys - _ANNOTATIONS == {"$ref"} and _is_simple(_lookup(schema["$ref"], root), root, depth + 1)
    if not keys <= _SIMPLE_KEYWORDS:
        return False
    declared = schema.get("type")
    declared_list = declared if isinstance(declared, list) else [declared]
    if declared is not None and not all(isinstance(t, str) and t in _JSON_TYPES for t in declared_list):
        return False
    enum = schema.get("enum")
    if enum is not None and not (isinstance(enum, list) and all(isinstance(item, str) for item in enum)):
        return False
    required = schema.get("required", [])
    if not (isinstance(required, list) and all(isinstance(name, str) for name in required)):
        return False
    extra = schema.get("additionalProperties", True)
    subschemas = [
        *(schema.get("properties") or {}).values(),
        *(schema.get("anyOf") or ()),
        *([schema["items"]] if "items" in schema else []),
        *([] if isinstance(extra, bool) else [extra]),
    ]
    return all(_is_simple(sub, root, depth + 1) for sub in subschemas)


def _scalar_branch(branch: Any) -> bool:
    if not isinstance(branch, Mapping) or "type" not in branch or {"properties", "items", "anyOf"} & set(branch):
        return False
    declared = branch["type"]
    declared_list = declared if isinstance(declared, list) else [declared]
    if "object" in declared_list or "array" in declared_list:
        return False
    return "enum" not in branch or "string" in declared_list


def _transparent(schema: Any, root: Mapping[str, Any], depth: int) -> bool:
    """Whether ``_coerce`` returns every value that ``_fits`` this simple schema unchanged.

    Coercion only rewrites a string where the schema allows no string but some other type.
    Where a value fits, its place allows its type, so a fitting string is left alone, unless an
    ``anyOf`` lets it fit through a branch that coercion does not look at (an untyped ``enum``,
    an object branch whose properties coerce differently). Schemas without such branches (all
    that signatures produce) can skip coercion for arguments that already fit.
    """
    if depth > 16 or not isinstance(schema, Mapping):
        return False
    if "$ref" in schema:
        return _transparent(_lookup(schema["$ref"], root), root, depth + 1)
    any_of = schema.get("anyOf")
    if any_of is not None and ("enum" in schema or not all(_scalar_branch(_resolve(b, root)) for b in any_of)):
        return False
    extra = schema.get("additionalProperties", True)
    subschemas = [
        *(schema.get("properties") or {}).values(),
        *([schema["items"]] if "items" in schema else []),
        *([] if isinstance(extra, bool) else [extra]),
    ]
    return all(_transparent(sub, root, depth + 1) for sub in subschemas)


def _has_type(value: Any, declared: Any) -> bool:
    if isinstance(declared, list):
        return any(_has_type(value, t) for t in declared)
    if declared == "string":
        return isinstance(value, str)
    if declared == "integer":  # floats such as 2.0 are integers to JSON Schema: jsonschema decides
        return isinstance(value, int) and not isinstance(value, bool)
    if declared == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if declared == "boolean":
        return isinstance(value, bool)
    if declared == "object":
        return isinstance(value, dict)
    if declared == "array":
        return isinstance(value, list)
    return value is None  # "null"


def _fits(value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]) -> bool:
    """True only if ``value`` is valid against a simple ``schema`` (False: ask jsonschema)."""
    if "$ref" in schema:
        return _fits(value, _lookup(schema["$ref"], root), root)
    declared = schema.get("type")
    if declared is not None and not _has_type(value, declared):
        return False
    enum = schema.get("enum")
    if enum is not None and not (isinstance(value, str) and value in enum):
        return False
    any_of = schema.get("anyOf")
    if any_of is not None and not any(_fits(value, branch, root) for branch in any_of):
        return False
    if isinstance(value, dict):
        if any(name not in value for name in schema.get("required", ())):
            return False
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = properties.get(key)
            if sub is None:
                sub = extra
                if sub is True:
                    continue
                if sub is False:
                    return False
            if not _fits(item, sub, root):
                return False
    elif isinstance(value, list) and "items" in schema:
        return all(_fits(item, schema["items"], root) for item in value)
    return True


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    seen = 0
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return schema
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, Mapping) else {}
        schema = node
        seen += 1
    return schema


def _types_of(schema: Mapping[str, Any], root: Mapping[str, Any]) -> set[str]:
    types: set[str] = set()
    declared = schema.get("type")
    if isinstance(declared, str):
        types.add(declared)
    elif isinstance(declared, list):
        types.update(t for t in declared if isinstance(t, str))
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, ()) or ():
            branch = _resolve(branch, root)
            if isinstance(branch, Mapping):
                types |= _types_of(branch, root)
    return types


def _coerce(value: Any, schema: Any, root: Mapping[str, Any]) -> Any:
    """Apply the small coercions models need (``" 5 "`` → 5, ``"true"`` → True, ``"null"`` → None).

    Only strings are coerced, only toward a type the schema allows and the string does not
    already satisfy, so valid arguments pass through unchanged.
    """
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping):
        return value
    for key in ("allOf",):
        for branch in schema.get(key, ()) or ():
            value = _coerce(value, branch, root)
    if isinstance(value, str):
        types = _types_of(schema, root)
        if "string" in types or not types:
            return value
        text = value.strip()
        if "integer" in types and _INT.match(text):
            return int(text)
        if "number" in types and _NUMBER.match(text):
            number = float(text)
            return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        if "boolean" in types and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if "null" in types and text.lower() in ("null", "none", ""):
            return None
        return value
    if isinstance(value, dict):
        branches = [schema, *(_resolve(b, root) for b in (schema.get("anyOf") or schema.get("oneOf") or ()))]
        out = dict(value)
        for branch in branches:
            if not isinstance(branch, Mapping):
                continue
            props = branch.get("properties") or {}
            for key, sub in props.items():
                if key in out:
                    out[key] = _coerce(out[key], sub, root)
            extra = branch.get("additionalProperties")
            if isinstance(extra, Mapping):
                for key in out:
                    if key not in props:
                        out[key] = _coerce(out[key], extra, root)
        return out
    if isinstance(value, list):
        branches = [schema, *(_resolve(b, root) for b in (schema.get("anyOf") or schema.get("oneOf") or ()))]
        for branch in branches:
            if isinstance(branch, Mapping) and isinstance(branch.get("items"), Mapping):
                return [_coerce(item, branch["items"], root) for item in value]
        return value
    return value


def _error_path(error: jsonschema.ValidationError) -> str:
    path = list(error.absolute_path)
    return ".".join(str(part) for part in path) if path else "root"


def validate_tool_arguments(tool: AgentTool, tool_call: ToolCall) -> dict[str, Any]:
    """Check the model's arguments against the tool's schema, after light coercion.

    Returns the (coerced) arguments. Raises ``ToolArgumentsError`` whose text is what the model
    reads: one ``  - PATH: MESSAGE`` line per error, then the arguments it sent, so it can fix
    exactly what was wrong on its next turn.
    """
    _, simple, transparent = _validator_for(tool)
    if transparent and _fits(tool_call.arguments, tool.parameters, tool.parameters):
        return dict(tool_call.arguments)  # what coercion would return, found without walking the schema twice
    args: dict[str, Any] = _coerce(dict(tool_call.arguments), tool.parameters, tool.parameters)  # an object stays one
    if simple and _fits(args, tool.parameters, tool.parameters):
        return args
    errors = sorted(_validator(tool).iter_errors(args), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if not errors:
        return args
    lines = "\n".join(f"  - {_error_path(error)}: {error.message}" for error in errors)
    received = json.dumps(tool_call.arguments, indent=2, ensure_ascii=False, default=str)
    raise ToolArgumentsError(f'Validation failed for tool "{tool.name}":\n{lines}\n\nReceived arguments:\n{received}')
