"""How our ``tool_choice`` / ``parallel_tool_calls`` reach each provider: one table, read by every backend.

The loop speaks one vocabulary (``"auto"``, ``"required"``, ``"none"``, ``{"type": "function",
"name": X}``, and ``parallel_tool_calls`` ``None``/``True``/``False``); each provider spells it
differently and some cannot say all of it. Keeping every spelling in one mapping means the four
backends cannot drift apart, and the gaps below are decided once, here, instead of four times.

Each function returns a fresh dict the backend merges into its request; ``{}`` means "send
nothing, let the provider use its default". Call them only when the request has tools: with no
tools there is nothing to choose from, and several providers reject a choice without tools.

Cells are what gets sent (``-``: nothing; the provider default applies):

| our value       | openai_chat ``tool_choice``  | openai_responses ``tool_choice`` | anthropic ``tool_choice`` |
|-----------------|------------------------------|----------------------------------|---------------------------|
| None            | -                            | -                                | -                         |
| "auto"          | "auto"                       | "auto"                           | {"type": "auto"}          |
| "required"      | "required"                   | "required"                       | {"type": "any"}           |
| "none"          | "none"                       | "none"                           | {"type": "none"}          |
| function X      | {"type": "function",         | {"type": "function", "name": X}  | {"type": "tool",          |
|                 |  "function": {"name": X}}    |                                  |  "name": X}               |
| parallel=True   | parallel_tool_calls=True     | parallel_tool_calls=True         | - (the default)           |
| parallel=False  | parallel_tool_calls=False    | parallel_tool_calls=False        | adds "disable_parallel_   |
|                 |                              |                                  | tool_use": True           |

| our value       | gemini ``tool_config``                                   | bedrock ``toolConfig`` entry          |
|-----------------|----------------------------------------------------------|---------------------------------------|
| None            | -                                                        | -                                     |
| "auto"          | {"function_calling_config": {"mode": "AUTO"}}            | {"toolChoice": {"auto": {}}}          |
| "required"      | {"function_calling_config": {"mode": "ANY"}}             | {"toolChoice": {"any": {}}}           |
| "none"          | {"function_calling_config": {"mode": "NONE"}}            | {"__omit_tools__": True} (sentinel)   |
| function X      | {"function_calling_config": {"mode": "ANY",              | {"toolChoice": {"tool": {"name": X}}} |
|                 |  "allowed_function_names": [X]}}                         |                                       |
| parallel=any    | - (no knob)                                              | - (no knob)                           |

Decisions where a provider lacks the knob:

- **Anthropic, parallel with "none"**: no tool can be called, so ``disable_parallel_tool_use`` is
  not sent (the ``none`` choice takes no other field). With no ``tool_choice`` and
  ``parallel_tool_calls=False`` the flag rides on ``{"type": "auto"}``, which is the default.
- **Gemini and Bedrock, parallel_tool_calls**: neither API can forbid several calls in one turn,
  so nothing is sent and the loop runs whatever calls come back, in order. Truncating the reply to
  its first call would silently discard what the model said, which is less faithful than running it.
- **Bedrock "none"**: Converse has no "none" tool choice. The only way to guarantee no tool call
  is not to offer tools, so the sentinel :data:`OMIT_TOOLS` (``"__omit_tools__"``) tells the backend
  to send the request **without** ``toolConfig``. Bedrock rejects a request whose messages hold
  ``toolUse``/``toolResult`` blocks when ``toolConfig`` is absent, so in that request the backend
  must also render those history blocks as plain text blocks (e.g. ``[called NAME with {...}]`` and
  ``[result of NAME: ...]``). The sentinel is never a wire field: never merge it into the request.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "OMIT_TOOLS",
    "TABLE",
    "anthropic",
    "bedrock",
    "gemini",
    "normalize",
    "openai_chat",
    "openai_responses",
]

OMIT_TOOLS = "__omit_tools__"
"""Key of Bedrock's ``"none"`` sentinel: send no ``toolConfig`` (see the module docstring)."""

_NAME = "\x00forced-function-name\x00"
"""Placeholder in the table for the forced function's name; cannot collide with a real name."""

_Named = Literal["auto", "required", "none"]
_NAMED: tuple[_Named, ...] = ("auto", "required", "none")
_Kind = Literal[_Named, "function"]
_ACCEPTED = '"auto", "required", "none", {"type": "function", "name": "<tool name>"} or None'


@dataclass(frozen=True)
class _Row:
    """One provider's spelling: a cell per choice kind, and a patch per parallel_tool_calls value.

    The parallel patch is laid under the choice cell (the choice wins on shared keys), so a patch
    can both carry the flag and supply a base such as Anthropic's ``{"type": "auto"}``.
    """

    choice: Mapping[_Kind | None, Mapping[str, Any]]
    parallel: Mapping[bool | None, Mapping[str, Any]]
    parallel_ignored_for: frozenset[_Kind] = field(default_factory=frozenset)


_NO_PARALLEL_KNOB: Mapping[bool | None, Mapping[str, Any]] = {None: {}, True: {}, False: {}}

TABLE: Mapping[str, _Row] = {
    "openai_chat": _Row(
        choice={
            None: {},
            "auto": {"tool_choice": "auto"},
            "required": {"tool_choice": "required"},
            "none": {"tool_choice": "none"},
            "function": {"tool_choice": {"type": "function", "function": {"name": _NAME}}},
        },
        parallel={None: {}, True: {"parallel_tool_calls": True}, False: {"parallel_tool_calls": False}},
    ),
    "openai_responses": _Row(
        choice={
            None: {},
            "auto": {"tool_choice": "auto"},
            "required": {"tool_choice": "required"},
            "none": {"tool_choice": "none"},
            "function": {"tool_choice": {"type": "function", "name": _NAME}},
        },
        parallel={None: {}, True: {"parallel_tool_calls": True}, False: {"parallel_tool_calls": False}},
    ),
    "anthropic": _Row(
        choice={
            None: {},
            "auto": {"tool_choice": {"type": "auto"}},
            "required": {"tool_choice": {"type": "any"}},
            "none": {"tool_choice": {"type": "none"}},
            "function": {"tool_choice": {"type": "tool", "name": _NAME}},
        },
        parallel={None: {}, True: {}, False: {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}},
        parallel_ignored_for=frozenset({"none"}),
    ),
    "gemini": _Row(
        choice={
            None: {},
            "auto": {"function_calling_config": {"mode": "AUTO"}},
            "required": {"function_calling_config": {"mode": "ANY"}},
            "none": {"function_calling_config": {"mode": "NONE"}},
            "function": {"function_calling_config": {"mode": "ANY", "allowed_function_names": [_NAME]}},
        },
        parallel=_NO_PARALLEL_KNOB,
    ),
    "bedrock": _Row(
        choice={
            None: {},
            "auto": {"toolChoice": {"auto": {}}},
            "required": {"toolChoice": {"any": {}}},
            "none": {OMIT_TOOLS: True},
            "function": {"toolChoice": {"tool": {"name": _NAME}}},
        },
        parallel=_NO_PARALLEL_KNOB,
    ),
}
"""provider → how each of our values is spelled there (rendered by the functions below)."""


def normalize(tool_choice: Any) -> _Named | dict[str, str] | None:
    """Validate a user's ``tool_choice`` early (``runtime.exec`` calls this) and return its canonical form.

    Rejecting a typo here, with the list of accepted values, beats a provider's 400 several calls
    into a run, or worse, a provider silently ignoring it.
    """
    kind, name = _classify(tool_choice)
    if kind is None:
        return None
    if kind == "function":
        return {"type": "function", "name": name or ""}  # _classify always names a function pick
    return kind


def openai_chat(tool_choice: Any, parallel_tool_calls: bool | None) -> dict[str, Any]:
    """Keyword arguments to merge into ``chat.completions.create``."""
    return _render("openai_chat", tool_choice, parallel_tool_calls)


def openai_responses(tool_choice: Any, parallel_tool_calls: bool | None) -> dict[str, Any]:
    """Keyword arguments to merge into ``responses.create``."""
    return _render("openai_responses", tool_choice, parallel_tool_calls)


def anthropic(tool_choice: Any, parallel_tool_calls: bool | None) -> dict[str, Any]:
    """Keyword arguments to merge into ``messages.create`` (``{}`` or ``{"tool_choice": {...}}``)."""
    return _render("anthropic", tool_choice, parallel_tool_calls)


def gemini(tool_choice: Any, parallel_tool_calls: bool | None) -> dict[str, Any]:
    """The ``tool_config`` for ``GenerateContentConfig`` (``{}``: leave it unset)."""
    return _render("gemini", tool_choice, parallel_tool_calls)


def bedrock(tool_choice: Any, parallel_tool_calls: bool | None) -> dict[str, Any]:
    """Entries to merge into Converse ``toolConfig``, or the :data:`OMIT_TOOLS` sentinel for ``"none"``."""
    return _render("bedrock", tool_choice, parallel_tool_calls)


def _classify(tool_choice: Any) -> tuple[_Kind | None, str | None]:
    if tool_choice is None:
        return None, None
    if isinstance(tool_choice, str):
        for named in _NAMED:
            if tool_choice == named:
                return named, None
        raise ValueError(f"unknown tool_choice {tool_choice!r}; accepted: {_ACCEPTED}")
    if isinstance(tool_choice, Mapping):
        name = tool_choice.get("name")
        if set(tool_choice) != {"type", "name"} or tool_choice.get("type") != "function":
            raise ValueError(f"tool_choice {dict(tool_choice)!r} is not a function pick; accepted: {_ACCEPTED}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tool_choice {dict(tool_choice)!r} needs a non-empty tool name; accepted: {_ACCEPTED}")
        return "function", name
    raise ValueError(f"tool_choice must be a string or a dict, got {type(tool_choice).__name__}; accepted: {_ACCEPTED}")


def _render(provider: str, tool_choice: Any, parallel_tool_calls: bool | None) -> dict[str, Any]:
    kind, name = _classify(tool_choice)
    if parallel_tool_calls is not None and not isinstance(parallel_tool_calls, bool):
        raise ValueError(f"parallel_tool_calls must be True, False or None, got {parallel_tool_calls!r}")
    row = TABLE[provider]
    parallel = {} if kind in row.parallel_ignored_for else row.parallel[parallel_tool_calls]
    return {key: _fill(value, name) for key, value in _merge(parallel, row.choice[kind]).items()}


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _fill(value: Any, name: str | None) -> Any:
    if value == _NAME:
        return name
    if isinstance(value, dict):
        return {key: _fill(item, name) for key, item in value.items()}
    if isinstance(value, list):
        return [_fill(item, name) for item in value]
    return value
