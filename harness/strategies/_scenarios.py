"""Hypothesis strategies that generate adversarial model behaviour as ``Scenario`` values.

Point them at your own tools and the arguments come from your tools' real JSON Schemas::

    from hypothesis import given
    from harness.checking._check import check
    from harness.strategies import scenarios

    @given(scenarios(tools=[search, fetch_page]))
    def test_my_tools_survive_any_model(scenario):
        result = check(scenario)           # runs the real loop: YOUR tool code executes
        assert result.ok, result.problems

Defaults are small on purpose (up to three tools, up to ten turns, short texts). Hypothesis shrinks
every choice toward its first option and lists toward fewer elements, and
``harness.checking._regressions.minimize`` then removes whatever the failure does not need, so a failure ends
as a scenario a person can read: few tools, few turns, the fewest calls that still break the rule.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from harness.scenarios import Scenario
from harness.scenarios._scenario_parts import (
    FAULTS,
    LEAVE_HOWS,
    LEAVE_POINTS,
    Behaviour,
    Config,
    HistoryMessage,
    Leave,
    ModelTurn,
    NestedRun,
    ToolDef,
)
from harness.strategies._draw_tables import (
    ANY,
    BATCHES,
    CALL_COUNTS,
    CONFIG_TABLES,
    DETAILS,
    HOLE,
    MAYBE_WORDS,
    PARTIALS,
    STOPS,
    TOOL_NAMES,
    UPDATES,
    WORDS,
    _batch,
    _joint,
    _menus,
    _messages,
    _product,
    _say,
    _sizes,
    _take,
    _value,
    _words,
    call_parts,
    draw_call,
    draw_list,
    error_texts,
    error_words,
    joint_with,
    maybe_word,
    menu_key,
    no_how,
    one_in_table,
    prompt_picks,
    text_words,
    tool_calls,
    tool_schemas,
    what_a_turn_uses,
    what_matters,
    what_nests,
)
from harness.strategies._draw_tables import (
    DUPLICATE_ID as DUPLICATE_ID,
)
from harness.strategies._draw_tables import (
    NOT_JSON as NOT_JSON,
)
from harness.strategies._draw_tables import (
    UNKNOWN_TOOL as UNKNOWN_TOOL,
)
from harness.strategies._schemas import _key, memoized, schemas
from openprogram.tools import as_agent_tool

# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Model behaviour
# ---------------------------------------------------------------------------------------------

TURN_WEIGHTS: Mapping[str, int] = {
    "calls": 60,
    "text": 2,
    "empty": 1,
    "error": 1,
    "aborted": 2,
    "raise": 2,
    "hang_up": 1,
    "error_keeps_stop": 1,
    "bad_done": 1,
    "cancelled_error": 1,
    "after_done": 1,
}
"""How often each kind of reply is drawn. Mostly picks, so runs go several rounds deep; the kinds
that end a run are rarer. The first kind is also where shrinking goes. The last four are
misbehaving providers (the scenario faults)."""
FINAL_TURN_WEIGHTS: Mapping[str, int] = {
    **{"text": 10, "calls": 1, "empty": 1},
    **{kind: 1 for kind in ("error", "aborted", "raise", "hang_up", *FAULTS)},
}
"""The last reply of a default scenario's script (and one per follow-up round): mostly the
model's answer, so a run that picked tools for several rounds ends normally instead of running
past its script; else a provider fault, which ends a run there without cutting it short."""
MIDDLE_TURN_WEIGHTS: Mapping[str, int] = {**TURN_WEIGHTS, "calls": 3 * TURN_WEIGHTS["calls"]}
"""The replies before a default scenario's last (``FINAL_TURN_WEIGHTS``): picks three times as
often as in ``TURN_WEIGHTS``, so a run seldom ends mid-script (a fault, an error, a text reply,
a cancel as it streams: about one reply in 65 here) and goes several rounds deep; the last reply
brings the faults after those rounds instead."""
USER_TOOL_WEIGHTS: Mapping[str, int] = {k: v for k, v in TURN_WEIGHTS.items() if k not in FAULTS}
"""The mix for campaigns over the user's own tools: their subject is the tools, so the provider
faults (the loop's business, fuzzed with the generated tools) stay out of their budget."""
CANCEL_TURN_ONE_IN = 25
"""About one reply in 25 is cancelled by the user as it starts streaming."""


def _uncancelled(turn: ModelTurn) -> ModelTurn:
    return dataclasses.replace(turn, cancel=False) if turn.cancel else turn


def model_turns(
    tools: Sequence[ToolDef] = (), weights: Mapping[str, int] | None = None
) -> st.SearchStrategy[ModelTurn]:
    """One reply: text, one or several calls (maybe cut off by ``length``), empty, error, aborted,
    a provider that raises mid-stream or hangs up, a reply the user cancels as it streams.

    ``weights``: ``{kind: weight}`` over ``calls``, ``text``, ``empty``, ``error``, ``aborted``,
    ``raise``, ``hang_up`` (default ``TURN_WEIGHTS``; a kind left out is never drawn).
    """
    tools = tuple(tools)
    chosen = dict(TURN_WEIGHTS if weights is None else weights)
    unknown = set(chosen) - set(TURN_WEIGHTS)
    if unknown or not any(chosen.values()):
        raise ValueError(f"weights: kinds are {', '.join(TURN_WEIGHTS)} with at least one weight above 0")
    answer = weights is FINAL_TURN_WEIGHTS
    return memoized(("turns", menu_key(tools), _key(chosen), answer), lambda: _model_turns(tools, chosen, answer))


_REPLY_KINDS = ("calls", "text", "empty")


def _model_turns(
    tools: tuple[ToolDef, ...], weights: Mapping[str, int], answer: bool = False
) -> st.SearchStrategy[ModelTurn]:
    calls = call_parts(tools)
    # One choice: the kind, and whether the user cancels the reply as it streams (about one
    # reply in CANCEL_TURN_ONE_IN; a short list: Hypothesis skews long index ranges to the front).
    # The first kind, not cancelled, is where shrinking goes.
    cancellable = [kind for kind in _REPLY_KINDS if weights.get(kind)]
    scale = max(1, round((CANCEL_TURN_ONE_IN - 1) * len(cancellable) / sum(weights.values())))
    kinds = [(kind, False) for kind, weight in weights.items() for _ in range(weight * scale)]
    kinds += [(kind, True) for kind in cancellable]
    # with the stop reason, the text beside the calls, how many calls (a count, not a list: no
    # choice a call, and ``harness.checking._regressions.minimize`` still deletes any call a failure does not
    # need) and what a provider fault had streamed: one choice (``_joint``) for them all
    header = memoized(  # the same strategy _joint caches by its tables' repr, without a repr per menu
        ("turn header", tuple(weights.items())),
        lambda: _joint(kinds, STOPS, MAYBE_WORDS, CALL_COUNTS, PARTIALS, relevant=what_a_turn_uses),
    )
    return (_answer if answer else _model_turn)(header, calls)


_turn_messages = {"raise": _words, "cancelled_error": _words, "error_keeps_stop": error_texts}


@st.composite
def _model_turn(draw: st.DrawFn, kinds: Any, calls: Any) -> ModelTurn:
    return _turn(draw, kinds, calls)


@st.composite
def _answer(draw: st.DrawFn, kinds: Any, calls: Any) -> ModelTurn:
    # The same as _model_turn under another label: Hypothesis' generator copies a span over
    # another of the same label, and an answer copied over the picks would end runs early. (A
    # composite's label comes from its source without comments or name: the code must differ.)
    return _turn(draw, calls=calls, kinds=kinds)


def _turn(draw: st.DrawFn, kinds: Any, calls: Any) -> ModelTurn:
    (kind, cancel), stop, text, count, partial = draw(kinds)
    if kind == "text":
        return ModelTurn(text=_say(draw, text_words), thinking=text, cancel=cancel)
    if kind == "empty":
        return ModelTurn(stop=stop, cancel=cancel)
    if kind in ("error", "aborted"):
        return ModelTurn(kind=kind, message=_say(draw, error_words))
    picks = tuple(draw_call(draw, *calls) for _ in range(count)) if kind == "calls" or partial == "calls" else ()
    if kind == "calls":
        return ModelTurn(text=text, calls=picks, stop=stop, cancel=cancel)
    return ModelTurn(
        kind=kind,
        text=text if partial != "nothing" else None,
        calls=picks,
        message=draw(_turn_messages[kind]) if kind in _turn_messages else "",
    )


def _schedules(max_poll: int, max_entries: int, one_in: int) -> st.SearchStrategy[dict[int, tuple[str, ...]]]:
    # Drawn as a short list of (poll, messages) entries, not one slot per poll: few choices. An
    # entry shrinks away by deleting it, a poll number shrinks towards 1; a repeated poll keeps
    # its first messages. The larger ``one_in``, the more often a schedule is empty (1: never).
    if max_poll < 1 or max_entries < 1:
        return st.just({})
    entry = _product(range(1, max_poll + 1), BATCHES)  # one choice
    filled = min(3, max(1, 12 // one_in)) if one_in > 1 else 0
    sizes = _sizes(1, max_entries, SCHEDULE_MORE, empty=1 / (1 + filled) if filled else 0.0)
    return _schedule(sizes, entry, max_entries)


SCHEDULE_MORE = 0.6
"""Each number of entries in a schedule is this much as likely as one fewer."""


@st.composite
def _schedule(draw: st.DrawFn, sizes: Any, entry: Any, max_entries: int) -> dict[int, tuple[str, ...]]:
    (count,) = draw(sizes)
    entries = []
    for _ in range(count):
        poll, batch = _take(draw, entry)
        entries.append((poll, draw(_batch) if batch is ANY else batch))
    return _schedule_of(entries, max_entries)


def _schedule_of(entries: list[tuple[int, tuple[str, ...]]], max_entries: int) -> dict[int, tuple[str, ...]]:
    schedule: dict[int, tuple[str, ...]] = {}
    for poll, messages in entries:
        schedule.setdefault(poll, messages)
    return dict(sorted(schedule.items())[:max_entries])


def steering_schedules(
    max_poll: int = 10, max_entries: int = 3, one_in: int = 4
) -> st.SearchStrategy[dict[int, tuple[str, ...]]]:
    """``{poll number: messages}``: steering polls come before the first call, after each executed
    tool call and after each turn, so small numbers land mid-batch as often as between turns.
    One to ``max_entries`` polls deliver; the larger ``one_in``, the more often none does (1:
    never empty; 4, the default: empty one time in four)."""
    return memoized(("steering", max_poll, max_entries, one_in), lambda: _schedules(max_poll, max_entries, one_in))


def follow_up_schedules(
    max_poll: int = 3, max_entries: int = 2, one_in: int = 4
) -> st.SearchStrategy[dict[int, tuple[str, ...]]]:
    """``{poll number: messages}`` for follow-ups, which are polled once each time the run drains."""
    return memoized(("follow_ups", max_poll, max_entries, one_in), lambda: _schedules(max_poll, max_entries, one_in))


def configs(tools: Sequence[ToolDef] = ()) -> st.SearchStrategy[Config]:
    """max_iterations mostly unset, else small, 0, negative or above the hard cap of 50."""
    choices: tuple[Any, ...] = (None, "auto", "required", "none")
    if not tools:
        return memoized(("configs",), lambda: _config(_joint(*CONFIG_TABLES[:1], choices, *CONFIG_TABLES[1:])))
    named = {"type": "function", "name": tools[0].name}
    # one table for every first tool's name (``joint_with``): the same draws as a table per name
    return memoized(
        ("configs", _key(named)),
        lambda: _config(joint_with(named, *CONFIG_TABLES[:1], (*choices, HOLE), *CONFIG_TABLES[1:])),
    )


@st.composite
def _config(draw: st.DrawFn, fields: Any) -> Config:
    return Config(*draw(fields))


_history_shapes = st.sampled_from(
    # the two the loop must refuse are rarer, and away from the ends Hypothesis favours
    ("user", "tool round", "answered, then user", "ends with the assistant", "tool round", "nothing", "user")
)


def histories(tools: Sequence[ToolDef] = ()) -> st.SearchStrategy[tuple[HistoryMessage, ...]]:
    """A context to resume (``agent_loop_continue``): it ends with a user message or tool results,
    and now and then with an assistant message or is empty, which the loop must refuse."""
    tools = tuple(tools)
    return memoized(("history", menu_key(tools)), lambda: _histories(tools))


def _histories(tools: tuple[ToolDef, ...]) -> st.SearchStrategy[tuple[HistoryMessage, ...]]:
    return _history(st.lists(tool_calls(tools), min_size=1, max_size=2))


@st.composite
def _history(draw: st.DrawFn, calls: Any) -> tuple[HistoryMessage, ...]:
    shape = draw(_history_shapes)
    if shape == "nothing":
        return ()
    first = HistoryMessage("user", text=draw(_messages))
    if shape == "user":
        return (first,)
    if shape == "tool round":
        picks = [dataclasses.replace(c, id=f"h{i}") for i, c in enumerate(draw(calls), start=1)]
        results = [
            HistoryMessage("toolResult", text=draw(_words), tool_call_id=c.id or "", tool_name=c.name) for c in picks
        ]
        return (first, HistoryMessage("assistant", text=draw(maybe_word), calls=tuple(picks)), *results)
    answered = HistoryMessage("assistant", text=draw(_words))
    if shape == "answered, then user":
        return (first, answered, HistoryMessage("user", text=draw(_messages)))
    return (first, answered)


@st.composite
def scenarios(
    draw: st.DrawFn,
    tools: Sequence[Any] | None = None,
    max_turns: int = 10,
    max_tools: int = 3,
    nesting: bool = True,
    *,
    steering: st.SearchStrategy[dict[int, tuple[str, ...]]] | None = None,
    follow_ups: st.SearchStrategy[dict[int, tuple[str, ...]]] | None = None,
    config: st.SearchStrategy[Config] | None = None,
    cancel_one_in: int = CANCEL_ONE_IN,
    base_one_in: int = BASE_ONE_IN,
    turn_weights: Mapping[str, int] | None = None,
    resume_one_in: int = 6,
    fault_one_in: int = 8,
) -> Scenario:
    """Whole scenarios. ``tools``: your tools (see ``tools_from``) instead of generated planned ones.

    ``steering`` / ``follow_ups`` / ``config`` replace the default strategies for those parts;
    ``cancel_one_in`` / ``base_one_in`` is how rare a tool that sets the cancel event / raises a
    BaseException is (0: never);
    ``turn_weights`` tunes the mix of replies (see ``model_turns``); one scenario in
    ``resume_one_in`` resumes a generated history with ``agent_loop_continue`` (0: never).
    About one scenario in ``fault_one_in`` each (0: never) has the user press stop from outside
    (before the start, or during a steering poll), a steering getter returning an odd value (a
    bare str, a single message, or junk after the valid items), and a second concurrent consumer;
    with ``fault_one_in`` set, one in eight has a consumer that leaves early (``Scenario.leave``).
    Your tools' real code runs in ``harness.checking._runner.run(scenario)``: keep them side-effect free (or point them
    at a sandbox) and deterministic, or the determinism check will say so.
    """
    default_mix = turn_weights is None
    answer_at = 0
    if tools is not None:
        fault_one_in = 0  # the user's tools are the subject: no outside cancels, odd getters, second consumers
        turn_weights = USER_TOOL_WEIGHTS if turn_weights is None else turn_weights
        menu = tools_from(tools)
        # An @agentic_function asks a model in its body: give it one (a list, so the shrinker can
        # empty it), or every execution would fail with "no model provider".
        # It mostly ends with a text reply, so the tool returns as often as it fails.
        ending = model_turns(menu, {"text": 1}).map(lambda t: (t,))
        drawn_turns = st.tuples(st.lists(model_turns(menu, turn_weights), max_size=2), st.one_of(ending, st.just(())))
        # no reply there cancels: it would stop the outer run too, inside a body the reference cannot see
        nested_turns = drawn_turns.map(lambda drawn: tuple(_uncancelled(t) for t in (*drawn[0], *drawn[1])))
        menu = [
            dataclasses.replace(t, nested_turns=draw(nested_turns)) if t.is_agentic and not t.nested_turns else t
            for t in menu
        ]
    else:
        menu = draw(
            memoized(
                ("menus", max_tools, nesting, cancel_one_in, base_one_in),
                lambda: _tools_strategy(0, max_tools, nesting, cancel_one_in, base_one_in),
            )
        )
    # lists (not a drawn count), so the shrinker can delete any turn or tool that is not needed
    middle: list[ModelTurn] = []
    if default_mix:
        # picks for a few rounds, then (mostly) an answer: deep runs that end normally
        middle = draw_list(draw, *_turn_lists(menu, MIDDLE_TURN_WEIGHTS, min(2, max_turns - 1), max_turns - 1))
        turns = [*middle, draw(model_turns(menu, FINAL_TURN_WEIGHTS))]
        answer_at = len(turns)
    else:
        turns = draw_list(draw, *_turn_lists(menu, turn_weights, 1, max_turns))
    # one choice for the scenario's rare settings: the cap at the script's edge (and what meets
    # it there), a resumed history, the three faults from outside, and a consumer that leaves
    faults = one_in_table(fault_one_in)
    leaving = _LEAVING if fault_one_in else _NEVER
    edge, resumes, cancels, how, odd_getter, second, leaves = draw(
        _joint(_EDGES, one_in_table(resume_one_in), faults, (0, 1), faults, faults, leaving, relevant=no_how)
    )
    edge = edge if default_mix and config is None else None
    steering_plan = draw(steering if steering is not None else steering_schedules())
    follow_up_plan = draw(follow_ups if follow_ups is not None else follow_up_schedules())
    cancel_at = draw(_cancel_points) if cancels else None
    how = how if edge is not None and steering is None and follow_ups is None else None
    if edge is not None and how is not None:
        steering_plan, follow_up_plan, cancel_at = _meet_the_cap(
            edge, how, middle, steering_plan, follow_up_plan, cancel_at
        )
    if default_mix:  # a reply for each round a follow-up opens, so those runs end normally too
        turns += [draw(model_turns(menu, FINAL_TURN_WEIGHTS)) for _ in follow_up_plan]
    shapes = {poll: draw(_shapes if len(m) == 1 else _junk_shapes) for poll, m in steering_plan.items() if odd_getter}
    scenario = Scenario(
        prompts=() if resumes else _say(draw, prompt_picks),
        history=draw(histories(menu)) if resumes else (),
        resume=True if resumes else None,
        tools=tuple(menu),
        turns=tuple(turns),
        steering=steering_plan,
        follow_ups=follow_up_plan,
        config=_at_the_edge(draw(configs(menu)), edge, answer_at)
        if default_mix and config is None
        else draw(config if config is not None else configs(menu)),
        cancel_at=cancel_at,
        steering_as=shapes,
        consumers=2 if second else 1,
    )
    leave = draw(_leaves) if leaves else None  # mid-reply, in a tool or at a poll
    return scenario.with_(leave=leave) if leave is not None and scenario.consumers == 1 else scenario


_NEVER = (False,)
_LEAVING = one_in_table(8)
_leave_points = st.sampled_from((*LEAVE_POINTS, "tool"))  # a tool point is reached less often
_leaves = st.builds(Leave, _leave_points, st.integers(1, 2), st.integers(0, 3), st.sampled_from(LEAVE_HOWS))


def _turn_lists(
    menu: Sequence[ToolDef], weights: Mapping[str, int] | None, low: int, high: int
) -> tuple[st.SearchStrategy[tuple[int]], st.SearchStrategy[ModelTurn]]:
    """How many turns (``_sizes``) and each turn, for ``draw_list``."""
    return _sizes(low, high, TURNS_MORE), model_turns(menu, weights)


TURNS_MORE = 0.8
"""Each script length is this much as likely as one turn shorter: long scripts, deep runs."""
PLANS_MORE = 0.8
"""The same for a tool's plan (up to three behaviours)."""


_EDGES = (None, None, -1, -1, 0, 0, 0, 1)
"""Now and then the cap sits at the script's edge: on the last pick (-1), on the answer (0), or
on the round after it (1, a follow-up's): where the cap meets a text reply, a tool reply and the
queues. (A cap drawn on its own seldom lands there.)"""


def _meet_the_cap(
    edge: int,
    how: int,
    middle: Sequence[ModelTurn],
    steering: dict[int, tuple[str, ...]],
    follow_ups: Any,
    cancel_at: Any,
) -> tuple[dict[int, tuple[str, ...]], Any, Any]:
    """With a cap at the script's edge, what meets it there: on the last pick (edge -1) a cancel
    as its batch starts (how 0) or steering after it (1); on the answer (0) steering after it (0)
    or a follow-up that is never polled (1); on the round after it (1), a follow-up's. The poll
    numbers assume every pick runs (DESIGN 4: one steering poll first, one after each call and
    one after each turn)."""
    if not middle:
        return steering, follow_ups, cancel_at
    before_last = 1 + sum(len(t.calls) + 1 for t in middle[:-1])
    after_last = before_last + len(middle[-1].calls) + 1
    if edge == -1 and how == 0:
        return steering, follow_ups, before_last + 1
    if edge == -1 or (edge == 0 and how == 0):
        return {**steering, after_last + (edge + 1): ("stop",)}, follow_ups, cancel_at
    return steering, {1: ("also check x",), **follow_ups}, cancel_at


def _at_the_edge(config: Config, edge: int | None, answer_at: int) -> Config:
    cap = config.max_iterations
    if edge is None or (cap is not None and not 1 <= cap <= 50):  # a cap the loop clamps stays
        return config
    return dataclasses.replace(config, max_iterations=max(1, answer_at + edge))


_cancel_points: st.SearchStrategy[str | int] = st.one_of(st.integers(1, 6), st.just("start"))
_junk_shapes = st.sampled_from(("list", "assistant", "dict", "int"))
_shapes = st.sampled_from(("list", "str", "message", "str", "assistant", "dict", "int"))


_tools_strategy = tools


def is_tool_entry(value: Any) -> bool:
    """True for things ``scenarios(tools=[...])`` accepts (used by ``harness fuzz --tools``)."""
    if isinstance(value, ToolDef) or inspect.isclass(value):
        return False
    try:
        as_agent_tool(value)
    except (TypeError, ValueError):
        return False
    return hasattr(value, "to_agent_tool") or hasattr(value, "execute")
