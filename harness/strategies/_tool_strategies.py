"""Hypothesis strategies for the tools a scenario offers: planned tools and what each execution does.

A planned tool's plan is a list of behaviours (return, is_error, raise, a nested exec with its
own short script); ``tools_from`` turns your own tools into the same ``ToolDef`` values, whose
executions run your real code. Whole scenarios (``_scenarios``) draw their menu from here.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import itertools
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from harness.scenarios import Behaviour, NestedRun, ToolDef
from harness.strategies._draw_tables import (
    DETAILS,
    TOOL_NAMES,
    UPDATES,
    WORDS,
    _joint,
    _menus,
    _say,
    _sizes,
    _value,
    draw_list,
    error_words,
    menu_key,
    one_in_table,
    tool_schemas,
    what_matters,
    what_nests,
)
from harness.strategies._model_behaviour import model_turns, steering_schedules
from harness.strategies._schemas import memoized, schemas
from openprogram.tools import as_agent_tool

CANCEL_ONE_IN = 16
"""By default one behaviour in 16 also sets the run's cancel_event (a user pressing stop)."""
BASE_ONE_IN = 12
"""One ``raise`` in 12 raises a BaseException (``ToolKilled``) instead of an Exception."""


def behaviours(
    tools: Sequence[ToolDef] = (),
    nesting: bool = True,
    cancel_one_in: int = CANCEL_ONE_IN,
    base_one_in: int = BASE_ONE_IN,
) -> st.SearchStrategy[Behaviour]:
    """One execution of a planned tool: return, is_error, raise (with or without text), nested exec."""
    tools = tuple(tools)
    return memoized(
        ("behaviours", menu_key(tools), nesting, cancel_one_in, base_one_in),
        lambda: _behaviours(tools, nesting, cancel_one_in, base_one_in),
    )


def _behaviours(
    tools: tuple[ToolDef, ...], nesting: bool, cancel_one_in: int, base_one_in: int
) -> st.SearchStrategy[Behaviour]:
    return _behaviour(_behaviour_parts(tools, nesting, cancel_one_in, base_one_in))


def _behaviour_parts(
    tools: tuple[ToolDef, ...], nesting: bool, cancel_one_in: int, base_one_in: int
) -> tuple[Any, ...]:
    """The leaf strategies of one behaviour, built once per menu (drawing them is what is cheap)."""
    return memoized(
        ("behaviour parts", menu_key(tools), nesting, cancel_one_in, base_one_in),
        lambda: (_flags(nesting, cancel_one_in, base_one_in), nested_runs(tools) if nesting else st.nothing()),
    )


def _flags(nesting: bool, cancel_one_in: int, base_one_in: int) -> tuple[st.SearchStrategy[tuple[Any, ...]], ...]:
    """Two choices (``_joint``): the kind with its updates, details and how a ``raise`` raises;
    then the four rare flags any behaviour may have. Each flag is true in the middle of its
    table (``one_in_table``), and the simplest entries come first, so shrinking goes to a
    plain return and clears the flags."""
    kinds = ("return", "return", "error", "raise", *(("exec",) if nesting else ()))
    raising = (one_in_table(base_one_in), one_in_table(UNPRINTABLE_ONE_IN))
    rare = (cancel_one_in, MUTATE_ONE_IN, 2 * cancel_one_in, LATE_UPDATE_ONE_IN)
    return memoized(
        ("flags", nesting, cancel_one_in, base_one_in),
        lambda: (
            _joint(kinds, UPDATES, DETAILS, *raising, relevant=what_matters),
            _joint(*map(one_in_table, rare)),
        ),
    )


@st.composite
def _behaviour(draw: st.DrawFn, parts: tuple[Any, ...]) -> Behaviour:
    (what, flags), nested = parts
    kind, updates, details, base, unprintable = draw(what)
    cancel, mutate, wait, late_update = draw(flags)
    if kind == "return":
        drawn = Behaviour("return", _value(draw), updates, cancel, details=details)
    elif kind == "error":
        drawn = Behaviour(kind, _say(draw, error_words), updates, cancel, details=details)
    elif kind == "raise":
        drawn = Behaviour(kind, _say(draw, error_words), updates, cancel, base=base, unprintable=unprintable)
    else:
        drawn = Behaviour("exec", updates=updates, cancel=cancel, nested=draw(nested))
    if mutate or late_update or wait:  # misbehaving tools (DESIGN 4, Robustness)
        drawn = dataclasses.replace(drawn, mutate=mutate, late_update=late_update, wait=wait)
    return drawn


MUTATE_ONE_IN = 4
"""One behaviour in 4 rewrites its arguments in place (the history must not change)."""
LATE_UPDATE_ONE_IN = 8
"""One in 8 calls ``on_update`` again after returning (the loop must drop it)."""
UNPRINTABLE_ONE_IN = 4
"""One ``raise`` in 4 raises an exception whose ``str()`` fails."""


def nested_runs(tools: Sequence[ToolDef] = ()) -> st.SearchStrategy[NestedRun]:
    """A nested ``runtime.exec`` with its own short script, over some of the tools or the whole menu."""
    tools = tuple(tools)
    return memoized(("nested", menu_key(tools)), lambda: _nested_runs(tools))


def _nested_runs(tools: tuple[ToolDef, ...]) -> st.SearchStrategy[NestedRun]:
    planned = tuple(i for i, t in enumerate(tools) if not t.is_real)
    can_inherit = len(planned) == len(tools)
    settings = memoized(("nest settings", planned, can_inherit), lambda: _nest_settings(planned, can_inherit))
    return _nested(tools, settings)


def _nest_settings(planned: tuple[int, ...], can_inherit: bool) -> st.SearchStrategy[tuple[Any, ...]]:
    # one choice: whether it inherits the menu (one in four), its cap, whether it runs sync, its
    # prompt, the planned tools it sees otherwise (up to two, none as often as one or two) and
    # how many replies its script has
    inherit = (False, False, False, can_inherit)
    subsets = ((),) * 3 + tuple(pick for size in (1, 2) for pick in itertools.permutations(planned, size))
    subsets = tuple(pick for pick in subsets for _ in range(6 // len([s for s in subsets if len(s) == len(pick)])))
    return _joint(
        inherit,
        (None,) * 4 + (0, 1, 2, 3),
        (False,) * 7 + (True,),
        WORDS,
        subsets if planned else ((),),
        (1, 1, 1, 1, 2, 2, 3),
        relevant=what_nests,
    )


@st.composite
def _nested(draw: st.DrawFn, tools: tuple[ToolDef, ...], settings: Any) -> NestedRun:
    inherits, cap, sync, prompt, subset, count = draw(settings)
    chosen = tuple(tools[i] for i in subset)
    visible = tools if inherits else chosen
    turns = memoized(("nested turns", menu_key(visible)), lambda: model_turns(visible))
    return NestedRun(
        prompt=prompt,
        tools=None if inherits else tuple(t.name for t in chosen),
        turns=tuple(draw(turns) for _ in range(count)),
        steering=draw(steering_schedules(max_poll=4)),
        max_iterations=cap,
        sync=sync,
    )


_names = st.sampled_from(TOOL_NAMES)


@st.composite
def tool_specs(draw: st.DrawFn, name: str | None = None, nesting: bool = True) -> ToolDef:
    """One planned tool: a name, an object schema, and a plan of zero to three behaviours."""
    shell = ToolDef(name=name or draw(_names), parameters=draw(schemas()))
    plan = draw(st.lists(behaviours((shell,), nesting=nesting), max_size=3))
    return ToolDef(name=shell.name, parameters=shell.parameters, plan=tuple(plan))


@st.composite
def tools(
    draw: st.DrawFn,
    min_size: int = 0,
    max_size: int = 3,
    nesting: bool = True,
    cancel_one_in: int = CANCEL_ONE_IN,
    base_one_in: int = BASE_ONE_IN,
) -> list[ToolDef]:
    """A menu of planned tools with distinct names; nested runs may use any of them."""
    (names,) = draw(_menus(min_size, max_size))
    shells = tuple(ToolDef(name=n, parameters=draw(tool_schemas)) for n in names)
    plans = behaviours(shells, nesting, cancel_one_in, base_one_in)
    sizes = _sizes(0, 3, PLANS_MORE)
    return [
        ToolDef(name=shell.name, parameters=shell.parameters, plan=tuple(draw_list(draw, sizes, plans)))
        for shell in shells
    ]


def tools_from(entries: Sequence[Any]) -> list[ToolDef]:
    """Your tools (``@function``, ``AgentTool``, ``{"spec", "execute"}`` dicts, ToolDefs) as ToolDefs.

    Their execution runs your real code. An ``@function`` found in its module under its own name
    is saved to YAML as ``python: module:name`` so a saved regression can import it again.
    """
    out = []
    for entry in entries:
        if isinstance(entry, ToolDef):
            out.append(entry)
            continue
        out.append(ToolDef.from_tool(entry, python=_import_path(entry)))
    return out


def _import_path(entry: Any) -> str | None:
    module_name = getattr(entry, "__module__", None)
    if not module_name:
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:  # pragma: no cover - defined in a module that is gone
        return None
    for attribute, value in vars(module).items():
        if value is entry and not attribute.startswith("_"):
            return f"{module_name}:{attribute}"
    return None


PLANS_MORE = 0.8
"""The same for a tool's plan (up to three behaviours)."""


def is_tool_entry(value: Any) -> bool:
    """True for things ``scenarios(tools=[...])`` accepts (used by ``harness fuzz --tools``)."""
    if isinstance(value, ToolDef) or inspect.isclass(value):
        return False
    try:
        as_agent_tool(value)
    except (TypeError, ValueError):
        return False
    return hasattr(value, "to_agent_tool") or hasattr(value, "execute")
