"""Declared YAML forms: a pydantic model per mapping of a file a person writes, dumped readably.

A file format that people edit needs three things a plain pydantic model does not give: errors in
the file's own words (``turn 2, call 1: unknown key(s) txt; allowed: ...``, not a raw ``loc``
tuple), a value built while validating (so a rule the value itself checks is located like a type
error), and YAML written the way a person would (flow style for small leaves, ``|`` blocks for
multi-line text). ``harness.scenarios._scenario`` declares the scenario file with these; nothing here knows
what a scenario is.
"""

from __future__ import annotations

import ast
import difflib
import functools
import inspect
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Self

import yaml
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, model_validator
from pydantic_core import PydanticCustomError

import harness._yaml as bounded_yaml


class Form(BaseModel):
    """One mapping of the file. Subclasses declare the keys as fields and say how to ``build``
    the value; ``of`` (by convention) goes back, setting only the keys a readable file has, so
    ``model_dump(by_alias=True, exclude_unset=True)`` is that file's data."""

    # No ``use_attribute_docstrings``: pydantic would read and parse every form's source when the
    # class is made, a fifth of importing ``harness.campaigns._loop_campaign``; ``describe_fields`` reads them when a
    # JSON Schema is asked for, the only place they show.
    model_config = ConfigDict(extra="forbid", defer_build=True)
    shape: ClassVar[str] = "a mapping"
    """What this mapping looks like, said when something else stands in its place."""
    _value: Any = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise PydanticCustomError("shape", cls.shape)
        allowed = sorted(f.alias or name for name, f in cls.model_fields.items())
        unknown = sorted(str(key) for key in data if key not in allowed)
        if unknown:  # said once, with what would work (pydantic says "extra" once per key)
            hint = _did_you_mean(unknown, allowed)
            raise PydanticCustomError(
                "unknown_keys",
                "unknown key(s) {unknown}{hint}; allowed: {allowed}",
                {"unknown": ", ".join(unknown), "hint": hint, "allowed": ", ".join(allowed)},
            )
        return data

    @model_validator(mode="after")
    def _build(self) -> Self:
        # A ValueError the value raises here is reported by pydantic at this mapping's place.
        self._value = self.build()
        return self

    @property
    def value(self) -> Any:
        """What this mapping stands for (built when it was validated)."""
        return self._value

    def build(self) -> Any:
        raise NotImplementedError


@functools.cache
def _attribute_docs(cls: type) -> dict[str, str]:
    """The docstrings written under a class's annotated attributes (``name: T`` then a string)."""
    try:
        tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):  # no source (a frozen or generated class): no descriptions
        return {}
    docs: dict[str, str] = {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for before, after in itertools.pairwise(body):
        if (
            isinstance(before, ast.AnnAssign)
            and isinstance(before.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[before.target.id] = inspect.cleandoc(after.value.value)
    return docs


def describe_fields(schema: dict[str, Any], root: type[Form]) -> dict[str, Any]:
    """``schema`` (``root.model_json_schema()``) with each form's attribute docstrings as its
    properties' descriptions, as pydantic's ``use_attribute_docstrings`` would have given them;
    a ``Field(description=...)`` stays as it is."""
    forms: list[type[Form]] = []
    pending = [Form]
    while pending:
        cls = pending.pop()
        forms.append(cls)
        pending.extend(cls.__subclasses__())
    definitions = schema.get("$defs", {})
    for form in forms:
        part = schema if form is root else definitions.get(form.__name__)
        if part is None or "properties" not in part:
            continue
        docs: dict[str, str] = {}
        for base in reversed(form.__mro__):  # a field a subclass inherits keeps its parent's docstring
            if isinstance(base, type) and issubclass(base, Form):
                docs.update(_attribute_docs(base))
        properties = part["properties"]
        for name, info in form.model_fields.items():
            key = info.alias or name
            if key in properties and info.description is None and name in docs:
                # in key order, as pydantic prints a schema
                properties[key] = dict(sorted({**properties[key], "description": docs[name]}.items()))
    return schema


def tagger(keys: Mapping[str, str], default: str | None, text: str | None = None) -> Callable[[Any], str | None]:
    """A pydantic ``Discriminator``: a mapping is tagged by the first of ``keys`` it has (else
    ``default``), a bare string by ``text``; a form instance (when dumping) by its class name."""

    def tag(value: Any) -> str | None:
        if isinstance(value, str):
            return text
        if isinstance(value, Form):
            return type(value).__name__
        if isinstance(value, Mapping):
            return next((tag for key, tag in keys.items() if key in value), default)
        return None

    return tag


def jsonish(value: Any) -> Any:
    """Plain JSON-like data: str keys, lists for tuples."""
    if isinstance(value, Mapping):
        return {str(k): jsonish(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonish(v) for v in value]
    return value


# -- errors in the file's own words ---------------------------------------------------------------

_EXPECTED = {
    "string_type": "text",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
}


def located(
    exc: ValidationError,
    fields: frozenset[str],
    items: Mapping[str, str],
    keyed: Mapping[str, str],
    hints: Mapping[str, str] | None = None,
) -> list[str]:
    """One line per problem, ``WHERE: WHAT``.

    ``fields``: every key of the format (other loc parts, like a union member's tag, are not the
    user's words and are dropped); ``items``: list keys and what one item is called (``turns`` ->
    ``turn``, so ``('turns', 1)`` reads ``turn 2``); ``keyed``: mapping keys whose own keys are
    named (``steering`` -> ``poll``). A union's failed alternatives are said together, and only
    the ones that got furthest. ``hints``: what to add when a given key is wrong.
    """
    errors = exc.errors(include_url=False)
    locs = [_user_loc(e["loc"], fields, keyed) for e in errors]
    said: dict[tuple[int | str, ...], list[Any]] = {}
    for loc, error in zip(locs, errors, strict=True):
        if any(len(other) > len(loc) and other[: len(loc)] == loc for other in locs):
            continue  # an alternative that failed earlier than another one did
        said.setdefault(loc, []).append(error)
    lines = []
    for loc, found in said.items():
        place = _where(loc, items, keyed)
        hint = (hints or {}).get(place[-1].rsplit(".", 1)[-1]) if place else None
        lines.append((f"{', '.join(place)}: " if place else "") + _what(found) + (f"; {hint}" if hint else ""))
    return lines


def _user_loc(loc: Sequence[int | str], fields: frozenset[str], keyed: Mapping[str, str]) -> tuple[int | str, ...]:
    """The parts of a pydantic ``loc`` that are in the file: keys, list positions, a keyed mapping's
    keys; not a union member's tag or a mapping key's ``[key]``."""
    kept: list[int | str] = []
    for part in loc:
        if isinstance(part, int) or part in fields or (kept and kept[-1] in keyed and part != "[key]"):
            kept.append(part)
    return tuple(kept)


def _where(loc: Sequence[int | str], items: Mapping[str, str], keyed: Mapping[str, str]) -> tuple[str, ...]:
    words: list[str] = []
    joined = False  # the last word is a key, so a key after it joins it with a dot: config.model
    i = 0
    while i < len(loc):
        part, after = loc[i], loc[i + 1] if i + 1 < len(loc) else None
        if isinstance(part, str) and part in keyed and after is not None:
            words.append(f"{part} {keyed[part]} {after}")
            i, joined = i + 2, False
            if i < len(loc) and isinstance(loc[i], int):
                words[-1] += f", message {int(loc[i]) + 1}"
                i += 1
        elif isinstance(part, str) and part in items and isinstance(after, int):
            words.append(f"{items[part]} {after + 1}")
            i, joined = i + 2, False
        else:
            if isinstance(part, str):
                words[-1:] = [f"{words[-1]}.{part}"] if joined else [*words[-1:], part]
                joined = True
            i += 1
    return tuple(words)


def _what(errors: list[Any]) -> str:
    expected: list[str] = []
    said: list[str] = []
    for error in errors:
        kind = error["type"]
        if kind in _EXPECTED or kind == "literal_error":
            phrase = _EXPECTED.get(kind) or error.get("ctx", {}).get("expected", "")
            expected += [phrase] if phrase not in expected else []
        elif kind == "value_error":
            said.append(str(error["ctx"]["error"]))
        else:
            said.append("required" if kind == "missing" else error["msg"])
    if expected:
        hint = " (quote it in YAML)" if expected == ["text"] else ""
        said.insert(0, f"expected {' or '.join(expected)}, got {errors[0]['input']!r:.60}{hint}")
    return "; ".join(dict.fromkeys(said))


# -- YAML people read --------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block style for structure, flow style for small leaves, ``|`` for multi-line text."""

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # list items indented under their key: easier to read


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    # Multi-line text as a literal block; PyYAML falls back to quoting when a block cannot hold it.
    # PyYAML reads NEL and the Unicode line/paragraph separators back as line breaks unless escaped.
    if any(c in value for c in "\x85\u2028\u2029"):
        style: str | None = '"'
    else:
        style = "|" if "\n" in value.rstrip("\n") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _depth_of(value: Any) -> int:
    if isinstance(value, Mapping):
        return 1 + max((_depth_of(v) for v in value.values()), default=0)
    if isinstance(value, (list, tuple)):
        return 1 + max((_depth_of(v) for v in value), default=0)
    return 0


def _flow(value: Any) -> bool:
    """Small and shallow values read best on one line: ``{name: add, args: {a: 1}}``."""
    if _depth_of(value) > 2:
        return False
    if any(isinstance(v, str) and "\n" in v for v in (value.values() if isinstance(value, Mapping) else value)):
        return False
    return len(json.dumps(value, default=str, ensure_ascii=False)) <= 72


def _represent_dict(dumper: yaml.SafeDumper, value: Mapping[str, Any]) -> yaml.Node:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value.items(), flow_style=bool(value) and _flow(value))


def _represent_list(dumper: yaml.SafeDumper, value: Sequence[Any]) -> yaml.Node:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=_flow(value))


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def plain_scalar(text: str) -> bool:
    """True when ``text`` written bare in YAML reads back as this very string."""
    try:
        return bounded_yaml.load(text) == text and not text.startswith(
            ("{", "[", "-", "?", ":", "#", "&", "*", "!", "|", ">", "'", '"', "%", "@", "`")
        )
    except yaml.YAMLError:
        return False


def _did_you_mean(unknown: list[str], allowed: list[str]) -> str:
    """`` (did you mean prompts?)``: a misspelt key is the usual mistake, so name the likely one."""
    guesses = {key: close[0] for key in unknown if (close := difflib.get_close_matches(key, allowed, 1))}
    if not guesses:
        return ""
    if len(unknown) == 1:
        return f" (did you mean {guesses[unknown[0]]}?)"
    return " (" + "; ".join(f"{key}: did you mean {guess}?" for key, guess in guesses.items()) + ")"
