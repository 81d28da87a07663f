"""The loop's boundaries a campaign reached, read off each run's trace.

A green campaign is only worth as much as the ground it covered. ``reached(scenario, trace)``
names the boundaries of DESIGN sections 1 and 4 a run crossed (the iteration cap hit on a tool
reply or on a text reply, with each queue empty or not; a cancel before the first request,
while a reply streams, mid-batch, at the cap; steering mid-batch; follow-ups; nested runs;
each error result; ...), and ``harness fuzz`` prints the table with its summary, marking the
boundaries it did not reach.

Like the rest of the oracle it looks only at what a run shows the outside: the committed
messages (``new_messages``), the events, the captured requests and the tool ledger, read in
the light of the scenario that was run (which poll a steering message was scheduled for, say).
Nothing of the loop's internals is used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harness._contract import SKIPPED_CANCELLED, SKIPPED_STEERING, classify_result_text
from harness.scenarios import Behaviour, Call, Config, HistoryMessage, Leave, ModelTurn, NestedRun, Scenario, ToolDef
from harness.trace import Trace
from openprogram.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

BOUNDARIES: dict[str, str] = {
    "cap, tool reply, queues empty": "the cap hit on a tool reply, no steering queued, no follow-up waiting",
    "cap, tool reply, steering queued": "the cap hit on a tool reply with steering taken (kept, not sent)",
    "cap, tool reply, follow-up waiting": "the cap hit on a tool reply with a follow-up waiting (not polled)",
    "cap, text reply, steering queued": "the cap hit on a text reply with steering taken (kept, not sent)",
    "cap, text reply, follow-up waiting": "the last allowed request answered in text, a follow-up waiting",
    "cap clamped": "a max_iterations of 0 or less (clamped to 1) or above 50 (clamped to 50)",
    "cancel before the first request": "cancel before the first request (no request made)",
    "cancel while streaming": "cancel while a reply streams (the scripted reply is cancelled)",
    "cancel mid-batch": "cancel mid-batch: the rest of the batch skipped",
    "cancel before a later request": "cancel after a batch: the loop aborts before asking again",
    "cancel at the cap": "cancel in the last round the cap allows",
    "steering before the first request": "steering delivered before the first request",
    "steering mid-batch, calls skipped": "steering mid-batch, the rest of the batch skipped",
    "steering after a batch": "steering delivered after a batch's last call (nothing skipped)",
    "steering after a text reply": "steering after a text reply keeps the run going",
    "follow-up after a text reply": "a follow-up after a text reply opens another round",
    "follow-up, then the cap": "a follow-up round uses up the cap (follow-ups do not reset it)",
    "nested exec": "a tool ran a nested exec",
    "nested exec ended early": "a nested run ended early (error or aborted): the tool fails",
    "error finish": "the run ended with an error (error event, provider raised, bad stream)",
    "provider raised": "the provider raised mid-stream",
    "aborted by the provider": "the provider reported aborted (no cancel from the user)",
    **{
        f"provider: {kind}": f"a reply where the provider {what}"
        for kind, what in (
            ("hang_up", "hung up (no done, no error event)"),
            ("error_keeps_stop", "sent an error event whose message says stop"),
            ("bad_done", "sent a done event without a message"),
            ("cancelled_error", "raised CancelledError of its own"),
            ("after_done", "kept streaming after done"),
        )
    },
    "stream raised to the consumer": "the event stream raised (a getter's junk, a refused resume, ...)",
    "resumed a history": "a resumed history (agent_loop_continue)",
    "invalid JSON arguments": "a call whose argument text is not JSON",
    "unknown tool": "a call of a tool not on the menu",
    "validation failure": "a call whose arguments fail the tool's schema",
    "tool raised": "a tool that raised (caught: an error result)",
    "tool returned an error": "a tool that returned an is_error result",
    "tool result": "a tool that returned a result",
    "tool updates": "a tool that reported progress (tool_execution_update)",
    "length stop with calls": "a reply with calls cut off by length",
    "several calls in one reply": "a reply with two or more calls",
    "duplicate call ids": "a reply whose calls share an id",
    "second consumer": "a second consumer of the same stream",
    "consumer left mid-reply": "the consumer left (aclose, async with) while a reply streamed",
    "consumer left during a tool": "the consumer left while a tool ran (the run cancels it)",
    "consumer left between events": "the consumer left while the loop polled for steering",
}
"""Every boundary the table lists, with the label it is printed under (in order)."""


def reached(scenario: Scenario, trace: Trace) -> set[str]:
    """The keys of ``BOUNDARIES`` this run crossed."""
    out: set[str] = set()
    messages = list(trace.new_messages)
    replies = [m for m in messages if isinstance(m, AssistantMessage)]
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    texts = [r.text for r in results]
    if trace.error is not None:
        out.add("stream raised to the consumer")
    if scenario.history and not scenario.prompts and trace.requests:
        out.add("resumed a history")
    if scenario.consumers == 2 and trace.error is None:
        out.add("second consumer")
    if trace.left is not None and scenario.leave is not None:
        out.add(_LEFT[scenario.leave.at])
    out |= _results(results, texts)
    out |= _replies(scenario, trace, replies)
    planned = _planned(scenario, trace)
    for entry, behaviour in planned:
        if behaviour is not None and behaviour.kind == "exec":
            out.add("nested exec")
            if "nested run ended with" in entry.text:
                out.add("nested exec ended early")
    if trace.reason == "max_iterations" and replies:
        last_ids = {c.id for c in replies[-1].content if isinstance(c, ToolCall)}
        pressed = any(
            b is not None and (b.cancel or b.wait) and e.tool_call_id in last_ids for e, b in planned[-len(last_ids) :]
        )
        if pressed or any(r.text == SKIPPED_CANCELLED and r.tool_call_id in last_ids for r in results[-3:]):
            out.add("cancel at the cap")
    if any(e.type == "tool_execution_update" for e in trace.events):
        out.add("tool updates")
    if trace.error is None and trace.reason is not None:
        out |= _rounds(scenario, trace, messages)
    return out


_LEFT = {
    "reply": "consumer left mid-reply",
    "tool": "consumer left during a tool",
    "poll": "consumer left between events",
}


def _planned(scenario: Scenario, trace: Trace) -> list[tuple[Any, Any]]:
    """Each top-level ledger entry with the behaviour its tool's plan gave that execution.

    Execution N of a tool follows ``plan[N-1]`` (the last entry repeats), counted over the whole
    scenario; nested runs' executions are not in the top-level ledger, so the count is exact up
    to the first nested exec, which is all the table needs."""
    plans = {t.name: t.plan for t in scenario.tools if not t.is_real}
    counts: dict[str, int] = {}
    out: list[tuple[Any, Any]] = []
    for entry in trace.ledger or ():
        plan = plans.get(entry.tool_name)
        number = counts[entry.tool_name] = counts.get(entry.tool_name, 0) + 1
        out.append((entry, plan[min(number, len(plan)) - 1] if plan else None))
    return out


def _results(results: Sequence[ToolResultMessage], texts: Sequence[str]) -> set[str]:
    out: set[str] = set()
    kinds = {
        "invalid_json": "invalid JSON arguments",
        "not_found": "unknown tool",
        "invalid_args": "validation failure",
    }
    for result, text in zip(results, texts, strict=True):
        if text == SKIPPED_STEERING:
            out.add("steering mid-batch, calls skipped")
        elif text == SKIPPED_CANCELLED:
            out.add("cancel mid-batch")
        elif result.is_error:
            kind = classify_result_text(result.tool_name, text, True)
            out.add(kinds.get(kind, "tool returned an error"))
        else:
            out.add("tool result")
    return out


def _replies(scenario: Scenario, trace: Trace, replies: Sequence[AssistantMessage]) -> set[str]:
    out: set[str] = set()
    for reply in replies:
        calls = [c for c in reply.content if isinstance(c, ToolCall)]
        if len(calls) > 1:
            out.add("several calls in one reply")
            if len({c.id for c in calls}) < len(calls):
                out.add("duplicate call ids")
        if calls and reply.stop_reason == "length":
            out.add("length stop with calls")
        if (reply.error_message or "").startswith("ConnectionError"):
            out.add("provider raised")
    for entry in trace.ledger or ():
        if entry.outcome == "raised":
            out.add("tool raised")
    if trace.reason == "error":
        out.add("error finish")
    for number in range(1, min(len(trace.requests), len(scenario.turns)) + 1):
        kind = scenario.turns[number - 1].kind
        if f"provider: {kind}" in BOUNDARIES:
            out.add(f"provider: {kind}")
    if trace.reason == "aborted" and replies:
        if not trace.requests:
            out.add("cancel before the first request")
        elif len(trace.requests) < len(replies):  # the loop wrote the aborted reply itself
            out.add("cancel before a later request")
        elif len(trace.requests) <= len(scenario.turns) and scenario.turns[len(trace.requests) - 1].cancel:
            out.add("cancel while streaming")
        else:
            out.add("aborted by the provider")
    return out


def _rounds(scenario: Scenario, trace: Trace, messages: Sequence[Any]) -> set[str]:
    """The queue boundaries: which poll delivered what, replayed from the schedules (DESIGN 4,
    "Steering polls"), and what was waiting when the cap ended the run."""
    out: set[str] = set()
    cap = trace.max_iterations
    configured = scenario.config.max_iterations
    if configured is not None and (configured < 1 or configured > 50) and trace.reason == "max_iterations":
        out.add("cap clamped")
    steering = scenario.steering
    polls_steering = bool(steering) or (
        isinstance(scenario.cancel_at, int) and not isinstance(scenario.cancel_at, bool)
    )
    poll = 0
    follow_up_polls = 0
    followed = False
    rounds = list(_split(messages, len(scenario.prompts)))
    if rounds and polls_steering:
        poll = 1
        if rounds[0][2] and steering.get(1):
            out.add("steering before the first request")
    for number, (reply, batch_results, after) in enumerate(rounds[1:], start=1):
        calls = [c for c in reply.content if isinstance(c, ToolCall)]
        first_poll = poll + 1
        delivered, poll = _batch_polls(steering, polls_steering, batch_results, poll)
        if delivered and len(batch_results) == len(calls) and all(r.text != SKIPPED_STEERING for r in batch_results):
            out.add("steering after a batch")
        if not delivered and polls_steering:
            poll += 1
            delivered = bool(steering.get(poll))
        last = number == len(rounds) - 1
        at_cap = last and trace.reason == "max_iterations"
        waiting = any(k > follow_up_polls for k in scenario.follow_ups)
        if calls:
            if at_cap:
                pressed = isinstance(scenario.cancel_at, int) and first_poll <= scenario.cancel_at <= poll
                cancelled = pressed or any(r.text == SKIPPED_CANCELLED for r in batch_results)
                out |= _cap_on_a_tool_reply(delivered and bool(after), waiting, bool(after), cancelled)
            continue
        if delivered and after:
            out.add("cap, text reply, steering queued" if at_cap else "steering after a text reply")
            continue
        if last and trace.reason == "stop" and cap is not None and len(trace.requests) >= cap and waiting:
            out.add("cap, text reply, follow-up waiting")
        if after:  # the run drained and a follow-up poll delivered
            follow_up_polls += 1
            out.add("follow-up after a text reply")
            followed = True
    if followed and cap is not None and len(trace.requests) >= cap:
        out.add("follow-up, then the cap")
    return out


def _batch_polls(
    steering: Mapping[int, Any], polls_steering: bool, batch_results: Sequence[ToolResultMessage], poll: int
) -> tuple[bool, int]:
    """Replay the steering polls after each executed call of a batch: whether one delivered, and
    the poll count after the batch."""
    for result in batch_results:
        if result.text in (SKIPPED_STEERING, SKIPPED_CANCELLED):
            break
        if polls_steering:
            poll += 1
            if steering.get(poll):
                return True, poll
    return False, poll


def _cap_on_a_tool_reply(steering_queued: bool, follow_up_waiting: bool, after: bool, cancelled: bool) -> set[str]:
    """The rows of a run the cap ended on a reply with tool calls."""
    out: set[str] = set()
    if steering_queued:
        out.add("cap, tool reply, steering queued")
    if follow_up_waiting:
        out.add("cap, tool reply, follow-up waiting")
    if not after and not follow_up_waiting:
        out.add("cap, tool reply, queues empty")
    if cancelled:
        out.add("cancel at the cap")
    return out


def _split(messages: Sequence[Any], prompts: int) -> Iterator[tuple[Any, list[ToolResultMessage], list[Any]]]:
    """(reply, its results, the user messages after them) per model call; first an entry for
    what came before the first reply (reply ``None``)."""
    current: Any = None
    results: list[ToolResultMessage] = []
    after: list[Any] = []
    for message in messages[prompts:]:
        if isinstance(message, AssistantMessage):
            yield current, results, after
            current, results, after = message, [], []
        elif isinstance(message, ToolResultMessage) and not after:
            results.append(message)
        elif isinstance(message, UserMessage):
            after.append(message)
    yield current, results, after


_OPEN = {"type": "object", "properties": {}}
_COUNT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
_PICK, _TWO_PICKS, _ANSWER = (
    ModelTurn(calls=(Call("a"),)),
    ModelTurn(calls=(Call("a"), Call("a"))),
    ModelTurn(text="done"),
)
_A = ToolDef(name="a", parameters=_OPEN)
STOPS = ToolDef(name="a", parameters=_OPEN, plan=(Behaviour(cancel=True),))
_NESTS = ToolDef(
    name="a",
    parameters=_OPEN,
    plan=(
        Behaviour("exec", nested=NestedRun(tools=(), turns=(ModelTurn(text="inner"),))),
        Behaviour("exec", nested=NestedRun(tools=(), turns=(ModelTurn(kind="error", message="x"),))),
    ),
)
_MIXED = ToolDef(
    name="a",
    parameters=_COUNT,
    plan=(Behaviour("return", "ok", updates=("half",)), Behaviour("error", "bad"), Behaviour("raise", "boom")),
)
_ONE_OF_EACH_CALL = ModelTurn(
    calls=(
        Call("a", {"n": 1}, id="dup"),
        Call("a", {"n": 2}, id="dup"),
        Call("a", {"n": "x"}),
        Call("zz"),
        Call("a", raw="{"),
    ),
    stop="length",
)
EXAMPLES: tuple[Scenario, ...] = (
    Scenario(
        tools=(_MIXED,),
        turns=(_ONE_OF_EACH_CALL, ModelTurn(calls=(Call("a", {"n": 3}),)), _ANSWER),
        steering={1: ("first",)},
    ),
    Scenario(turns=(_ANSWER, ModelTurn(kind="error_keeps_stop", message="stop")), follow_ups={1: ("more",)}),
    Scenario(turns=(_ANSWER,), consumers=2),
    Scenario(
        tools=(_A,),
        turns=(ModelTurn(kind="after_done", text="x", calls=(Call("a"),)), _ANSWER),
        steering={2: ("stop",)},
        config=Config(max_iterations=1),
    ),
    Scenario(tools=(STOPS,), turns=(_TWO_PICKS, _ANSWER), config=Config(max_iterations=1)),
    Scenario(tools=(_NESTS,), turns=(_TWO_PICKS, _ANSWER)),
    Scenario(turns=(_ANSWER, ModelTurn(kind="hang_up", text="part")), steering={2: ("go on",)}),
    Scenario(prompts=(), history=(HistoryMessage("user", text="hi"),), turns=(ModelTurn(kind="bad_done"),)),
    Scenario(tools=(_A,), turns=(_TWO_PICKS, ModelTurn(kind="cancelled_error", message="x")), steering={2: ("stop",)}),
    Scenario(tools=(_A,), turns=(_PICK, _ANSWER), follow_ups={1: ("more",)}, config=Config(max_iterations=-1)),
    Scenario(turns=(_ANSWER, ModelTurn(kind="aborted")), follow_ups={1: ("more",)}),
    Scenario(tools=(_A,), turns=(_PICK, ModelTurn(text="x", cancel=True)), steering={1: ("first",)}),
    Scenario(turns=(_ANSWER, _ANSWER), steering={1: ("x",)}, steering_as={1: "int"}),
    Scenario(tools=(_A,), turns=(_PICK, _ANSWER), steering={4: ("stop",)}, config=Config(max_iterations=2)),
    Scenario(tools=(_A,), turns=(_PICK, _ANSWER), follow_ups={1: ("more",)}, config=Config(max_iterations=2)),
    Scenario(tools=(_A,), turns=(_ANSWER, _PICK, _ANSWER), follow_ups={1: ("more",)}, config=Config(max_iterations=2)),
    Scenario(turns=(_ANSWER,), cancel_at="start"),
    Scenario(tools=(_A,), turns=(_PICK, _ANSWER), cancel_at=2),
    Scenario(turns=(ModelTurn(kind="raise", text="part", message="down"),)),
    Scenario(turns=(ModelTurn(text="an answer in several deltas"),), leave=Leave("reply", after=1)),
    Scenario(tools=(_A,), turns=(_PICK, _ANSWER), leave=Leave("tool", how="with")),
    Scenario(turns=(_ANSWER,), steering={1: ("x",)}, leave=Leave("poll", how="break")),
)
"""Small scenarios that between them cross every row of ``BOUNDARIES`` (checked by
``tests/harness/campaigns/test_boundaries.py``). ``harness fuzz`` runs them first, inside its budget, so
the table a default campaign prints is complete whatever the seed draws, and the generated
scenarios spend the rest of the budget on what no list of examples foresees. What
``harness.checking._regressions.minimize`` cannot take away (a second consumer, an odd getter, an outside
cancel) has a scenario of its own, so a violation an example finds (Hypothesis does not shrink
explicit examples) still ends as a small scenario."""
