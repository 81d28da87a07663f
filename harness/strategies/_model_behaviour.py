"""Hypothesis strategies for what the model and the user do in a run: replies, queues, config, history.

The user also stops early: a consumer that leaves the stream mid-run (``_leaves``).

The replies' mix (``TURN_WEIGHTS`` and the mixes for a default scenario's middle and last turns),
the steering and follow-up schedules, the loop's config and a resumed history, each drawn from
the small tables of ``_draw_tables``. Whole scenarios (``_scenarios``) and nested runs
(``_tool_strategies``) draw their scripts from here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from harness.scenarios import Config, HistoryMessage, Leave, ModelTurn, ToolDef
from harness.scenarios._scenario_parts import FAULTS, LEAVE_HOWS, LEAVE_POINTS
from harness.strategies._draw_tables import (
    ANY,
    BATCHES,
    CALL_COUNTS,
    CONFIG_TABLES,
    HOLE,
    MAYBE_WORDS,
    PARTIALS,
    STOPS,
    _batch,
    _joint,
    _messages,
    _product,
    _say,
    _sizes,
    _take,
    _words,
    call_parts,
    draw_call,
    error_texts,
    error_words,
    joint_with,
    maybe_word,
    menu_key,
    text_words,
    tool_calls,
    what_a_turn_uses,
)
from harness.strategies._schemas import _key, memoized

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


_leave_points = st.sampled_from((*LEAVE_POINTS, "tool"))  # a tool point is reached less often
_leaves = st.builds(Leave, _leave_points, st.integers(1, 2), st.integers(0, 3), st.sampled_from(LEAVE_HOWS))
"""A consumer that leaves early: where the run is (mid-reply, in a tool or at a poll), after how
many events, and how it leaves."""
