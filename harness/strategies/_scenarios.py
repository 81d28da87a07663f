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
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from harness.scenarios import Config, ModelTurn, Scenario, ToolDef
from harness.strategies._draw_tables import (
    DUPLICATE_ID as DUPLICATE_ID,
)
from harness.strategies._draw_tables import (
    NOT_JSON as NOT_JSON,
)
from harness.strategies._draw_tables import (
    UNKNOWN_TOOL as UNKNOWN_TOOL,
)
from harness.strategies._draw_tables import (
    _joint,
    _say,
    _sizes,
    draw_list,
    no_how,
    one_in_table,
    prompt_picks,
)
from harness.strategies._model_behaviour import (
    FINAL_TURN_WEIGHTS,
    MIDDLE_TURN_WEIGHTS,
    USER_TOOL_WEIGHTS,
    _leaves,
    _uncancelled,
    configs,
    follow_up_schedules,
    histories,
    model_turns,
    steering_schedules,
)
from harness.strategies._schemas import memoized
from harness.strategies._tool_strategies import BASE_ONE_IN, CANCEL_ONE_IN, tools_from
from harness.strategies._tool_strategies import tools as _tools_strategy


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
    if tools is not None:
        fault_one_in = 0  # the user's tools are the subject: no outside cancels, odd getters, second consumers
        turn_weights = USER_TOOL_WEIGHTS if turn_weights is None else turn_weights
        menu = _user_menu(draw, tools, turn_weights)
    else:
        menu = draw(
            memoized(
                ("menus", max_tools, nesting, cancel_one_in, base_one_in),
                lambda: _tools_strategy(0, max_tools, nesting, cancel_one_in, base_one_in),
            )
        )
    middle, turns, answer_at = _drawn_turns(draw, menu, None if default_mix else turn_weights, max_turns)
    # one choice for the scenario's rare settings: the cap at the script's edge (and what meets
    # it there), a resumed history, the three faults from outside, and a consumer that leaves
    faults = one_in_table(fault_one_in)
    leaving = _LEAVING if fault_one_in else _NEVER
    edge, resumes, cancels, how, odd_getter, second, leaves = draw(
        _joint(_EDGES, one_in_table(resume_one_in), faults, (0, 1), faults, faults, leaving, relevant=no_how)
    )
    edge = edge if default_mix and config is None else None
    steering_plan, follow_up_plan, cancel_at = _queues(draw, edge, how, cancels, middle, steering, follow_ups)
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


def _user_menu(draw: st.DrawFn, tools: Sequence[Any], turn_weights: Mapping[str, int]) -> list[ToolDef]:
    """Your tools as a menu; an ``@agentic_function`` among them gets the replies its body's model
    gives (drawn here, a list, so the shrinker can empty it)."""
    menu = tools_from(tools)
    # An @agentic_function asks a model in its body: give it one (a list, so the shrinker can
    # empty it), or every execution would fail with "no model provider".
    # It mostly ends with a text reply, so the tool returns as often as it fails.
    ending = model_turns(menu, {"text": 1}).map(lambda t: (t,))
    drawn_turns = st.tuples(st.lists(model_turns(menu, turn_weights), max_size=2), st.one_of(ending, st.just(())))
    # no reply there cancels: it would stop the outer run too, inside a body the reference cannot see
    nested_turns = drawn_turns.map(lambda drawn: tuple(_uncancelled(t) for t in (*drawn[0], *drawn[1])))
    return [
        dataclasses.replace(t, nested_turns=draw(nested_turns)) if t.is_agentic and not t.nested_turns else t
        for t in menu
    ]


def _drawn_turns(
    draw: st.DrawFn, menu: Sequence[ToolDef], turn_weights: Mapping[str, int] | None, max_turns: int
) -> tuple[list[ModelTurn], list[ModelTurn], int]:
    """The script: the middle turns, all turns, and the number of the answer (0: no planned one).

    With the default mix (``turn_weights`` None, even for your tools), picks for a few rounds, then
    (mostly) an answer: deep runs that end normally."""
    # lists (not a drawn count), so the shrinker can delete any turn or tool that is not needed
    if turn_weights is None:
        middle = draw_list(draw, *_turn_lists(menu, MIDDLE_TURN_WEIGHTS, min(2, max_turns - 1), max_turns - 1))
        turns = [*middle, draw(model_turns(menu, FINAL_TURN_WEIGHTS))]
        return middle, turns, len(turns)
    return [], draw_list(draw, *_turn_lists(menu, turn_weights, 1, max_turns)), 0


def _queues(
    draw: st.DrawFn,
    edge: Any,
    how: Any,
    cancels: Any,
    middle: list[ModelTurn],
    steering: st.SearchStrategy[dict[int, tuple[str, ...]]] | None,
    follow_ups: st.SearchStrategy[dict[int, tuple[str, ...]]] | None,
) -> tuple[dict[int, tuple[str, ...]], dict[int, tuple[str, ...]], Any]:
    """The steering and follow-up schedules and the poll a cancel comes at, moved to meet the cap
    when the scenario runs to its edge."""
    steering_plan = draw(steering if steering is not None else steering_schedules())
    follow_up_plan = draw(follow_ups if follow_ups is not None else follow_up_schedules())
    cancel_at = draw(_cancel_points) if cancels else None
    how = how if edge is not None and steering is None and follow_ups is None else None
    if edge is not None and how is not None:
        steering_plan, follow_up_plan, cancel_at = _meet_the_cap(
            edge, how, middle, steering_plan, follow_up_plan, cancel_at
        )
    return steering_plan, follow_up_plan, cancel_at


_NEVER = (False,)
_LEAVING = one_in_table(8)


def _turn_lists(
    menu: Sequence[ToolDef], weights: Mapping[str, int] | None, low: int, high: int
) -> tuple[st.SearchStrategy[tuple[int]], st.SearchStrategy[ModelTurn]]:
    """How many turns (``_sizes``) and each turn, for ``draw_list``."""
    return _sizes(low, high, TURNS_MORE), model_turns(menu, weights)


TURNS_MORE = 0.8
"""Each script length is this much as likely as one turn shorter: long scripts, deep runs."""


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
