"""The invariants hold on real runs, and each one catches exactly the breakage it is about.

Every trace here comes from a real run of the loop on the scripted backend; the broken ones are
those traces edited by hand (an event dropped, results reordered, a text changed), so each test
shows the invariant firing on a realistic near-miss rather than on a synthetic toy.
"""

from __future__ import annotations

import ast
import asyncio
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import harness
from harness import ScriptedProvider, turn
from harness._contract import SKIPPED_STEERING, effective_cap
from harness.checking._runner import run
from harness.clock import SCENARIO_START_MS, DeterministicClock
from harness.oracle import _grammar as grammar
from harness.oracle._run_invariants import (
    ALL_INVARIANTS,
    InvariantViolation,
    check_all,
    check_deterministic,
    event_grammar,
    terminates_within_cap,
)
from harness.trace._trace import LedgerEntry, Trace, shorten
from harness.trace._trace_recorder import TraceRecorder
from openprogram import runtime
from openprogram.agent import AgentContext, AgentEvent, AgentLoopConfig, agent_loop, observe_runs
from openprogram.tools import AgentToolResult, as_agent_tool
from openprogram.types import Message, TextContent, ToolResultMessage, UserMessage

# ---------------------------------------------------------------------------------------------
# Real runs
# ---------------------------------------------------------------------------------------------


def lookup(q: str) -> str:
    return f"found {q}"


def explode(q: str) -> str:
    raise RuntimeError(f"cannot look up {q}")


LOOKUP = {
    "spec": {
        "name": "lookup",
        "description": "Look something up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    },
    "execute": lookup,
}
EXPLODE = {
    "spec": {
        "name": "explode",
        "description": "Always fails.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    },
    "execute": explode,
}


def record(
    *turns: Any,
    tools: Sequence[Any] = (LOOKUP,),
    prompts: Sequence[str] = ("go",),
    steering: dict[int, list[str]] | None = None,
    follow_ups: dict[int, list[str]] | None = None,
    max_iterations: int | None = None,
) -> Trace:
    """Run the loop on a script; steering/follow-ups are keyed by poll number (1-based)."""

    async def main() -> Trace:
        provider = ScriptedProvider(*turns, strict=False)
        recorder = TraceRecorder()
        clock = DeterministicClock(SCENARIO_START_MS)
        polls = {"steering": 0, "follow_up": 0}

        def source(kind: str, schedule: dict[int, list[str]] | None) -> Any:
            async def poll() -> list[Message]:
                polls[kind] += 1
                return [UserMessage(content=text) for text in (schedule or {}).get(polls[kind], [])]

            return poll

        config = AgentLoopConfig(
            provider=provider,
            max_iterations=max_iterations,
            get_steering_messages=source("steering", steering),
            get_follow_up_messages=source("follow_up", follow_ups),
            clock=clock,
        )
        context = AgentContext(tools=recorder.wrap_tools(as_agent_tool(t) for t in tools))
        with runtime.use(provider), observe_runs(recorder.on_event):
            stream = agent_loop(list(prompts), context, config)
            async for _ in stream:
                pass
            messages = await stream.result()
        return recorder.finish(provider.requests, new_messages=messages, max_iterations=max_iterations)

    return asyncio.run(main())


def basic() -> Trace:
    return record(turn.tool_call("lookup", q="weather"), turn.text("sunny"))


def parallel() -> Trace:
    return record(
        turn.tool_calls(
            turn.tool_call("lookup", q="a"), turn.tool_call("lookup", q="b"), turn.tool_call("lookup", q="c")
        ),
        turn.text("done"),
    )


def errors() -> Trace:
    return record(
        turn.tool_calls(
            turn.tool_call("nope", q="x"),
            turn.raw_tool_call("lookup", "{not json"),
            turn.tool_call("lookup", q=5),
            turn.tool_call("explode", q="y"),
            turn.tool_call("lookup", q="ok"),
        ),
        turn.text("recovered"),
        tools=(LOOKUP, EXPLODE),
    )


def skipped() -> Trace:
    # steering poll 1 is before the first model call, poll 2 after the first executed call
    return record(
        turn.tool_calls(
            turn.tool_call("lookup", q="a"), turn.tool_call("lookup", q="b"), turn.tool_call("lookup", q="c")
        ),
        turn.text("ok, changing course"),
        steering={2: ["stop, do something else"]},
    )


def capped() -> Trace:
    return record(
        turn.tool_call("lookup", q="1"),
        turn.tool_call("lookup", q="2"),
        turn.tool_call("lookup", q="3"),
        max_iterations=2,
    )


def capped_with_queued_message() -> Trace:
    # the steering message is taken from the queue after the only allowed request: committed at the cap
    return record(turn.tool_call("lookup", q="1"), turn.text("unused"), max_iterations=1, steering={2: ["late"]})


def errored() -> Trace:
    return record(turn.tool_call("lookup", q="a"), turn.error("overloaded"))


def aborted() -> Trace:
    return record(turn.aborted())


def followed_up() -> Trace:
    return record(turn.text("first"), turn.text("second"), follow_ups={1: ["and also?"]})


def nested() -> Trace:
    async def delegate(q: str) -> str:
        return await runtime.aexec(f"sub-question {q}", tools=[LOOKUP])

    tool = {
        "spec": {
            "name": "delegate",
            "description": "Ask a sub-agent.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
        "execute": delegate,
    }
    return record(
        turn.tool_call("delegate", q="x"),
        turn.tool_call("lookup", q="inner"),
        turn.text("inner answer"),
        turn.text("outer answer"),
        tools=(tool,),
    )


def add(a: int, b: int = 0) -> int:
    return a + b


ADD = {
    "spec": {
        "name": "add",
        "description": "Add integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a"],
        },
    },
    "execute": add,
}


def report(q: str, on_update: Any) -> AgentToolResult:
    on_update({"progress": 0.5})
    return AgentToolResult(content=f"no data for {q}", is_error=True)


def cancel(cancel_event: Any) -> str:
    cancel_event.set()
    return "cancelling"


REPORT = {"spec": {**LOOKUP["spec"], "name": "report"}, "execute": report}
CANCEL = {"spec": {"name": "cancel", "parameters": {"type": "object", "properties": {}}}, "execute": cancel}


def odd_turns() -> Trace:
    return record(
        turn.tool_calls(
            turn.tool_call("lookup", q="a", call_id="same"), turn.tool_call("lookup", q="b", call_id="same")
        ),
        turn.tool_calls(turn.tool_call("add", a="5", b=" 6 "), turn.tool_call("report", q="x"), stop_reason="length"),
        turn.empty(),
        tools=(LOOKUP, ADD, REPORT),
    )


def steered_between_turns() -> Trace:
    # poll 1 (before the first call) and the poll after a text reply both bring steering
    return record(
        turn.text("first"),
        turn.tool_call("lookup", q="a"),
        turn.text("last"),
        steering={1: ["before"], 2: ["keep going"], 3: ["after the call, nothing skipped"]},
    )


def capped_before_follow_ups() -> Trace:
    return record(turn.text("only"), max_iterations=0, follow_ups={1: ["never polled"]})


def provider_raised() -> Trace:
    def boom(request: Any) -> Any:
        raise RuntimeError("connection reset")

    return record(turn.tool_call("lookup", q="a"), turn.respond(boom))


def cancelled() -> Trace:
    async def main() -> Trace:
        provider = ScriptedProvider(turn.tool_call("cancel"), turn.text("never"), strict=False)
        recorder = TraceRecorder()
        event = asyncio.Event()
        config = AgentLoopConfig(provider=provider, clock=DeterministicClock(1))
        context = AgentContext(tools=recorder.wrap_tools([as_agent_tool(CANCEL)]))
        with observe_runs(recorder.on_event):
            stream = agent_loop(["go"], context, config, cancel_event=event)
            messages = await stream.result()
        return recorder.finish(provider.requests, new_messages=messages)

    return asyncio.run(main())


def odd_tools() -> Trace:
    def backup() -> AgentToolResult:
        return AgentToolResult(content="Skipped due to low disk space", is_error=True)

    # "weird" is not on the menu: a tool with a broken schema is now refused when the menu is built
    return record(
        turn.tool_calls(turn.tool_call("backup"), turn.tool_call("weird", q="x")),
        turn.text("done"),
        tools=({"spec": {"name": "backup", "parameters": {"type": "object", "properties": {}}}, "execute": backup},),
    )


REAL_RUNS: dict[str, Callable[[], Trace]] = {
    "odd_tools": odd_tools,
    "odd_turns": odd_turns,
    "steered_between_turns": steered_between_turns,
    "capped_before_follow_ups": capped_before_follow_ups,
    "provider_raised": provider_raised,
    "cancelled": cancelled,
    "basic": basic,
    "parallel": parallel,
    "errors": errors,
    "skipped": skipped,
    "capped": capped,
    "capped_with_queued_message": capped_with_queued_message,
    "errored": errored,
    "aborted": aborted,
    "followed_up": followed_up,
    "nested": nested,
}


@pytest.fixture(scope="module")
def traces() -> dict[str, Trace]:
    return {name: make() for name, make in REAL_RUNS.items()}


def failing(trace: Trace) -> dict[str, str]:
    """Every invariant that fails on ``trace``, with its message."""
    out = {}
    for invariant in ALL_INVARIANTS:
        try:
            invariant(trace)
        except InvariantViolation as violation:
            out[violation.name] = violation.message
    return out


def only_failure(trace: Trace, name: str) -> str:
    failures = failing(trace)
    assert set(failures) == {name}, failures
    return failures[name]


# ---------------------------------------------------------------------------------------------
# Editing traces by hand
# ---------------------------------------------------------------------------------------------


def edit(trace: Trace, **update: Any) -> Trace:
    return trace.model_copy(update=update)


def without_event(trace: Trace, index: int) -> Trace:
    return edit(trace, events=[e for i, e in enumerate(trace.events) if i != index])


def index_of(trace: Trace, kind: str, nth: int = 0) -> int:
    return [i for i, e in enumerate(trace.events) if e.type == kind][nth]


def result_message(trace: Trace, tool_call_id: str) -> ToolResultMessage:
    return next(m for m in trace.new_messages if isinstance(m, ToolResultMessage) and m.tool_call_id == tool_call_id)


def replace_message(trace: Trace, old: Message, new: Message, *, requests_only: bool = False) -> Trace:
    """Swap a message everywhere a run shows it (or only in the captured requests)."""

    def swap(messages: Sequence[Message]) -> tuple[Message, ...]:
        return tuple(new if m == old else m for m in messages)

    requests = [r.model_copy(update={"messages": swap(r.messages)}) for r in trace.requests]
    if requests_only:
        return edit(trace, requests=requests)
    events = []
    for event in trace.events:
        if event.type in ("message_start", "message_end") and event.message == old:
            event = event.model_copy(update={"message": new})
        elif event.type == "turn_end":
            event = event.model_copy(update={"tool_results": swap(event.tool_results)})
        elif event.type == "agent_end":
            event = event.model_copy(update={"messages": swap(event.messages)})
        elif (
            event.type == "tool_execution_end"
            and isinstance(old, ToolResultMessage)
            and event.tool_call_id == old.tool_call_id
            and event.result.text == old.text
        ):
            result = AgentToolResult(content=new.content, is_error=new.is_error)
            event = event.model_copy(update={"result": result, "is_error": new.is_error})
        events.append(event)
    return edit(trace, events=events, requests=requests, new_messages=list(swap(trace.new_messages)))


def with_text(message: ToolResultMessage, text: str) -> ToolResultMessage:
    return message.model_copy(update={"content": (TextContent(text=text),)})


# ---------------------------------------------------------------------------------------------
# The real runs satisfy every invariant
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(REAL_RUNS))
@pytest.mark.parametrize("invariant", ALL_INVARIANTS, ids=lambda f: f.__name__)
def test_real_runs_satisfy_the_invariant(
    traces: dict[str, Trace], name: str, invariant: Callable[[Trace], None]
) -> None:
    invariant(traces[name])


@pytest.mark.parametrize("name", list(REAL_RUNS))
def test_check_all_passes_on_real_runs(traces: dict[str, Trace], name: str) -> None:
    check_all(traces[name])


def test_the_real_runs_exercise_what_they_claim(traces: dict[str, Trace]) -> None:
    # guards the fixtures themselves: a broken-trace test is only meaningful on the right run
    assert traces["skipped"].tool_results[1].text == SKIPPED_STEERING
    assert [m.text for m in traces["capped_with_queued_message"].new_messages][-1] == "late"
    assert traces["capped"].reason == "max_iterations" and len(traces["capped"].requests) == 2
    assert traces["errored"].reason == "error" and traces["aborted"].reason == "aborted"
    assert [r.is_error for r in traces["errors"].tool_results] == [True, True, True, True, False]
    assert [e.outcome for e in traces["errors"].ledger] == ["raised", "returned"]
    assert traces["nested"].event_types.count("agent_start") == 2
    assert traces["followed_up"].final_text == "second"
    assert [r.is_error for r in traces["odd_turns"].tool_results] == [False, False, False, True]
    assert traces["odd_turns"].ledger[2].arguments == {"a": 5, "b": 6}  # coerced by the loop
    assert traces["steered_between_turns"].tool_results[0].text == "found a"
    assert traces["capped_before_follow_ups"].reason == "stop"
    assert traces["provider_raised"].reason == "error" and len(traces["provider_raised"].requests) == 2
    assert traces["cancelled"].reason == "aborted" and len(traces["cancelled"].requests) == 1
    assert traces["odd_tools"].tool_results[0].text == "Skipped due to low disk space"
    assert traces["odd_tools"].tool_results[1].text.startswith('Tool "weird" not found')


def test_invariant_violation_is_an_assertion_error_with_name_and_message() -> None:
    violation = InvariantViolation("event_grammar", "turn_end without turn_start")
    assert isinstance(violation, AssertionError)
    assert (violation.name, violation.message) == ("event_grammar", "turn_end without turn_start")
    assert "event_grammar" in str(violation) and "turn_end without turn_start" in str(violation)


def test_every_invariant_is_a_documented_public_function() -> None:
    import harness.oracle as oracle

    for invariant in (*ALL_INVARIANTS, check_all, check_deterministic):
        assert getattr(oracle, invariant.__name__) is invariant
        assert invariant.__doc__ and len(invariant.__doc__.strip()) > 40
        assert invariant.__name__ in oracle.__all__


@pytest.mark.parametrize(
    ("given", "cap"), [(None, 50), (0, 1), (-3, 1), (1, 1), (7, 7), (50, 50), (51, 50), (1000, 50)]
)
def test_effective_cap(given: int | None, cap: int) -> None:
    assert effective_cap(given) == cap


# ---------------------------------------------------------------------------------------------
# Each hand-broken trace trips exactly its invariant
# ---------------------------------------------------------------------------------------------


def test_terminates_within_cap_catches_too_many_requests(traces: dict[str, Trace]) -> None:
    broken = edit(traces["basic"], max_iterations=1)
    message = only_failure(broken, "terminates_within_cap")
    assert "made 2 model requests but the cap is min(50, max(1, max_iterations=1)) = 1" in message
    assert "[request 2] assistant [stop]: sunny" in message
    with pytest.raises(InvariantViolation) as info:
        terminates_within_cap(broken)
    assert info.value.name == "terminates_within_cap"


def test_terminates_within_cap_uses_the_hard_cap_without_max_iterations() -> None:
    trace = record(*[turn.tool_call("lookup", q=str(i)) for i in range(51)])
    terminates_within_cap(trace)  # the loop stops at 50 by itself
    assert trace.reason == "max_iterations"
    assert len(trace.assistant_messages) == 50


def test_event_grammar_catches_a_dropped_turn_end(traces: dict[str, Trace]) -> None:
    broken = without_event(traces["basic"], index_of(traces["basic"], "turn_end"))
    message = only_failure(broken, "event_grammar")
    assert "turn_start inside an open turn (turns never nest)" in message
    assert ">> #" in message  # points at the offending event in a window of the timeline


def test_event_grammar_catches_a_dropped_tool_execution_end(traces: dict[str, Trace]) -> None:
    broken = without_event(traces["basic"], index_of(traces["basic"], "tool_execution_end"))
    message = only_failure(broken, "event_grammar")
    assert "message_start inside the execution of lookup#call_1" in message


def test_event_grammar_catches_a_missing_agent_end(traces: dict[str, Trace]) -> None:
    broken = without_event(traces["basic"], len(traces["basic"].events) - 1)
    failures = failing(broken)
    assert "event_grammar" in failures
    assert "the stream ended without agent_end" in failures["event_grammar"]
    # a stream that raised may stop early
    event_grammar(edit(broken, error="RuntimeError: boom"))


def test_event_grammar_catches_an_update_outside_an_assistant_message(traces: dict[str, Trace]) -> None:
    trace = traces["basic"]
    update = trace.events[index_of(trace, "message_update")]
    events = list(trace.events)
    events.insert(index_of(trace, "turn_end"), update)
    message = only_failure(edit(trace, events=events), "event_grammar")
    assert "message_update outside an assistant message" in message


def test_event_grammar_catches_a_queued_message_outside_a_turn_when_the_cap_did_not_end_the_run(
    traces: dict[str, Trace],
) -> None:
    trace = traces["capped_with_queued_message"]
    end = trace.events[-1]
    broken_end = end.model_copy(update={"reason": "stop"})
    broken = edit(trace, events=[*trace.events[:-1], broken_end], reason="stop")
    failures = failing(broken)
    assert "a message outside any turn" in failures["event_grammar"]


def test_event_grammar_checks_nested_runs_on_their_own(traces: dict[str, Trace]) -> None:
    trace = traces["nested"]
    inner_turn_end = index_of(trace, "turn_end", 0)  # the nested run's first turn ends before the outer one
    assert trace.events[inner_turn_end - 1].type == "message_end"
    broken = without_event(trace, inner_turn_end)
    message = only_failure(broken, "event_grammar")
    assert "nested run" in message and "delegate" in message


def test_tool_calls_answered_catches_reordered_results_in_the_next_request(traces: dict[str, Trace]) -> None:
    trace = traces["parallel"]
    second = trace.requests[1]
    messages = list(second.messages)
    messages[2], messages[3] = messages[3], messages[2]  # prompt, assistant, result a, result b, result c
    broken = edit(trace, requests=[trace.requests[0], second.model_copy(update={"messages": tuple(messages)})])
    message = only_failure(broken, "tool_calls_answered")
    assert "request 2 shows the model the results [lookup#call_2, lookup#call_1, lookup#call_3]" in message
    assert "for the calls [lookup#call_1, lookup#call_2, lookup#call_3]" in message


def test_tool_calls_answered_catches_a_missing_result_in_the_history(traces: dict[str, Trace]) -> None:
    trace = traces["basic"]
    result = result_message(trace, "call_1")
    assistant = trace.assistant_messages[0]
    answered = assistant.model_copy(
        update={"content": (*assistant.content, assistant.content[0].model_copy(update={"id": "call_9"}))}
    )
    # the model asked for a second call that nobody answered: edit the call into every view of the run
    events = [
        e.model_copy(update={"message": answered})
        if e.type in ("message_end", "turn_end") and e.message == assistant
        else e
        for e in trace.events
    ]
    events = [
        e.model_copy(update={"messages": tuple(answered if m == assistant else m for m in e.messages)})
        if e.type == "agent_end"
        else e
        for e in events
    ]
    requests = [
        r.model_copy(update={"messages": tuple(answered if m == assistant else m for m in r.messages)})
        for r in trace.requests
    ]
    broken = edit(
        trace,
        events=events,
        requests=requests,
        new_messages=[answered if m == assistant else m for m in trace.new_messages],
    )
    message = only_failure(broken, "tool_calls_answered")
    assert (
        "made 2 tool call(s) [lookup#call_1, lookup#call_9] but the results that follow it are [lookup#call_1]"
        in message
    )
    assert result.text in message


def test_error_feedback_catches_a_wrong_not_found_text(traces: dict[str, Trace]) -> None:
    trace = traces["errors"]
    old = result_message(trace, "call_1")
    assert old.text == 'Tool "nope" not found. Available tools: lookup, explode'
    broken = replace_message(trace, old, with_text(old, 'Tool "nope" not found.'))
    message = only_failure(broken, "error_feedback")
    assert "expected the result 'Tool \"nope\" not found. Available tools: lookup, explode'" in message


def test_error_feedback_catches_a_raised_exception_reported_differently(traces: dict[str, Trace]) -> None:
    trace = traces["errors"]
    old = result_message(trace, "call_4")
    assert old.text == "cannot look up y"
    message = only_failure(replace_message(trace, old, with_text(old, "RuntimeError")), "error_feedback")
    assert "the tool raised 'cannot look up y'" in message


def test_error_feedback_catches_an_error_result_the_next_request_does_not_carry(traces: dict[str, Trace]) -> None:
    trace = traces["errors"]
    old = result_message(trace, "call_2")
    assert old.text.startswith('Invalid JSON arguments for tool "lookup": ')
    broken = replace_message(trace, old, with_text(old, "something else"), requests_only=True)
    message = only_failure(broken, "error_feedback")
    assert "the next request (request 2) does not carry its error result" in message


def test_error_feedback_catches_an_invalid_call_that_ran(traces: dict[str, Trace]) -> None:
    trace = traces["errors"]
    ran = LedgerEntry(tool_name="lookup", tool_call_id="call_3", arguments={"q": 5}, text="found 5")
    message = only_failure(edit(trace, ledger=[*trace.ledger, ran]), "error_feedback")
    assert "could not run (invalid args), but the ledger shows 1 execution(s)" in message


def test_error_feedback_catches_valid_arguments_reported_as_invalid(traces: dict[str, Trace]) -> None:
    trace = traces["basic"]
    old = result_message(trace, "call_1")
    broken = replace_message(trace, old, with_text(old, 'Validation failed for tool "lookup":\n  - root: nope'))
    message = only_failure(broken, "error_feedback")
    assert "satisfy the tool's schema, yet the result reports a validation failure" in message


def test_skip_semantics_catches_a_skipped_call_that_ran(traces: dict[str, Trace]) -> None:
    trace = traces["skipped"]
    ran = LedgerEntry(tool_name="lookup", tool_call_id="call_3", arguments={"q": "c"}, text="found c")
    message = only_failure(edit(trace, ledger=[*trace.ledger, ran]), "skip_semantics")
    assert "lookup#call_3 was skipped in model call 1, but the ledger shows it ran" in message


def test_skip_semantics_catches_an_inexact_skip_text(traces: dict[str, Trace]) -> None:
    trace = traces["skipped"]
    old = result_message(trace, "call_3")
    broken = replace_message(trace, old, with_text(old, "Skipped due to a queued user message."))
    message = only_failure(broken, "skip_semantics")
    assert "reads like a skip but is not the exact text 'Skipped due to queued user message.'" in message


def test_skip_semantics_catches_a_skip_followed_by_an_executed_call(traces: dict[str, Trace]) -> None:
    trace = traces["skipped"]
    old = result_message(trace, "call_3")
    ran = LedgerEntry(tool_name="lookup", tool_call_id="call_3", arguments={"q": "c"}, text="found c")
    broken = edit(replace_message(trace, old, with_text(old, "found c").model_copy(update={"is_error": False})))
    broken = edit(broken, ledger=[*trace.ledger, ran])
    message = only_failure(broken, "skip_semantics")
    assert "lookup#call_3 comes after a skipped call in model call 1 but was not skipped" in message


def test_skip_semantics_catches_steering_that_the_next_request_does_not_show(traces: dict[str, Trace]) -> None:
    trace = traces["skipped"]
    second = trace.requests[1]
    broken = edit(trace, requests=[trace.requests[0], second.model_copy(update={"messages": second.messages[:-1]})])
    message = only_failure(broken, "skip_semantics")
    assert "request 2 must show the batch's results and then exactly the steering message(s)" in message
    assert "user: stop, do something else" in message


def test_conservation_catches_a_steering_message_lost_from_new_messages(traces: dict[str, Trace]) -> None:
    trace = traces["skipped"]
    lost = [m for m in trace.new_messages if getattr(m, "text", None) != "stop, do something else"]
    message = only_failure(edit(trace, new_messages=lost), "conservation")
    assert "the user message 'stop, do something else' was committed 1 time(s) but appears 0 time(s)" in message


def test_conservation_catches_a_message_queued_at_the_cap_lost_from_agent_end(traces: dict[str, Trace]) -> None:
    trace = traces["capped_with_queued_message"]
    end = trace.events[-1]
    broken_end = end.model_copy(update={"messages": end.messages[:-1]})
    broken = edit(trace, events=[*trace.events[:-1], broken_end])
    message = only_failure(broken, "conservation")
    assert "agent_end.messages (3 messages) differs from the messages committed by message_end (4 messages)" in message
    assert "user: late" in message


def test_error_ends_run_catches_a_wrong_end_reason(traces: dict[str, Trace]) -> None:
    trace = traces["errored"]
    end = trace.events[-1].model_copy(update={"reason": "stop"})
    message = only_failure(edit(trace, events=[*trace.events[:-1], end], reason="stop"), "error_ends_run")
    assert "ended with an error model turn but agent_end.reason is 'stop'" in message


def test_error_ends_run_catches_a_run_that_continued_after_an_error(traces: dict[str, Trace]) -> None:
    trace = traces["errored"]
    # pretend the error turn came first: the run then went on to run a tool
    first_end = index_of(trace, "message_end", 1)  # prompt, then the first assistant message
    error_message = trace.events[index_of(trace, "message_end", 3)].message
    assert error_message.stop_reason == "error"
    events = list(trace.events)
    events[first_end] = events[first_end].model_copy(update={"message": error_message})
    events[first_end - 1] = events[first_end - 1].model_copy(update={"message": error_message})
    failures = failing(edit(trace, events=events))
    assert "continued after an error model turn" in failures["error_ends_run"]


def test_end_reason_consistent_catches_max_iterations_without_work_left(traces: dict[str, Trace]) -> None:
    trace = traces["basic"]
    end = trace.events[-1].model_copy(update={"reason": "max_iterations"})
    broken = edit(trace, events=[*trace.events[:-1], end], reason="max_iterations", max_iterations=2)
    message = only_failure(broken, "end_reason_consistent")
    assert "ended 'max_iterations', but its last model call left no work" in message


def test_end_reason_consistent_catches_a_cap_that_was_not_reached(traces: dict[str, Trace]) -> None:
    message = only_failure(edit(traces["capped"], max_iterations=3), "end_reason_consistent")
    assert (
        "ended 'max_iterations' after 2 model request(s), but the cap is min(50, max(1, max_iterations=3)) = 3"
        in message
    )


def test_end_reason_consistent_catches_stop_with_a_queued_message_left(traces: dict[str, Trace]) -> None:
    trace = traces["capped_with_queued_message"]
    # the same run, but claiming the model answered and the loop simply stopped
    end = trace.events[-1].model_copy(update={"reason": "stop"})
    failures = failing(edit(trace, events=[*trace.events[:-1], end], reason="stop"))
    assert "ended 'stop', but its last model call left work" in failures["end_reason_consistent"]


def test_end_reason_consistent_catches_a_trace_reason_that_disagrees(traces: dict[str, Trace]) -> None:
    message = only_failure(edit(traces["basic"], reason="error"), "end_reason_consistent")
    assert "trace.reason is 'error' but agent_end.reason is 'stop'" in message


# ---------------------------------------------------------------------------------------------
# check_all and check_deterministic
# ---------------------------------------------------------------------------------------------


def test_check_all_raises_the_first_violation_and_lists_the_others(traces: dict[str, Trace]) -> None:
    trace = traces["skipped"]
    lost = [m for m in trace.new_messages if getattr(m, "text", None) != "stop, do something else"]
    broken = edit(trace, new_messages=lost, max_iterations=1)
    with pytest.raises(InvariantViolation) as info:
        check_all(broken, scenario=type("Scenario", (), {"name": "steer-mid-batch"})())
    assert info.value.name == "terminates_within_cap"
    assert "(also violated: conservation)" in info.value.message
    assert "(scenario: steer-mid-batch)" in info.value.message


def test_check_deterministic_passes_for_a_deterministic_run() -> None:
    check_deterministic(basic)


def test_check_deterministic_shows_where_two_runs_diverge() -> None:
    answers = iter(["sunny", "rainy"])

    def flaky() -> Trace:
        return record(turn.tool_call("lookup", q="weather"), turn.text(next(answers)))

    with pytest.raises(InvariantViolation) as info:
        check_deterministic(flaky)
    assert info.value.name == "check_deterministic"
    assert "first event divergence at #" in info.value.message
    assert "sunny" in info.value.message and "rainy" in info.value.message


def test_invariants_work_without_requests_or_ledger(traces: dict[str, Trace]) -> None:
    # a user's own agent may only have the event stream
    for trace in traces.values():
        check_all(edit(trace, requests=[], ledger=None))
    old = result_message(traces["errors"], "call_1")
    broken = replace_message(edit(traces["errors"], requests=[], ledger=None), old, with_text(old, "nope"))
    # without the request, an unknown tool is recognised only by its text; "nope" is not an error text,
    # so the run still passes: what the trace does not show is not checked
    check_all(broken)


# ---------------------------------------------------------------------------------------------
# The layer the invariants read through, and the oracle's independence
# ---------------------------------------------------------------------------------------------

HARNESS = Path(harness.__file__).parent
ORACLE = ("_contract", *(f"oracle/{m}" for m in ("_grammar", "_run_invariants", "_batches", "_reference", "_compare")))


def imported_modules(module: str) -> set[str]:
    """Every module ``harness/<module>.py`` imports, at the top or inside a function."""
    tree = ast.parse((HARNESS / f"{module}.py").read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("module", ORACLE)
def test_the_oracle_never_imports_the_loop_it_judges(module: str) -> None:
    imported = imported_modules(module)
    assert not any(name.startswith(("openprogram.agent", "openprogram.runtime")) for name in imported), imported
    assert "openprogram.runtime" not in imported  # `from openprogram import runtime` too


def test_the_grammar_has_one_rule_for_every_event_type() -> None:
    kinds = {cls.model_fields["type"].default for cls in typing.get_args(typing.get_args(AgentEvent)[0])}
    assert len(kinds) == 10
    assert set(grammar._GRAMMAR) == kinds


def test_first_violation_names_the_event_and_the_problem(traces: dict[str, Trace]) -> None:
    events = traces["basic"].events
    assert grammar.first_violation(events, capped=False, allow_unfinished=False) is None
    turn_end = index_of(traces["basic"], "turn_end")
    broken = [e for i, e in enumerate(events) if i != turn_end]
    assert grammar.first_violation(broken, capped=False, allow_unfinished=False) == (
        turn_end,
        "turn_start inside an open turn (turns never nest)",
    )
    assert grammar.first_violation(events[:-1], capped=False, allow_unfinished=True) is None
    assert grammar.first_violation(events[:-1], capped=False, allow_unfinished=False) == (
        len(events) - 2,
        "the stream ended without agent_end (and the trace records no error)",
    )


def test_render_indents_a_nested_run_and_numbers_its_turns_anew(traces: dict[str, Trace]) -> None:
    lines = traces["nested"].render().splitlines()
    assert lines[:4] == [
        "agent_start",
        "-- turn 1 --",
        "  user: go",
        '  [request 1] assistant [toolUse]: call delegate#call_1 {"q": "x"}',
    ]
    assert lines[4:7] == ["  agent_start (nested run)", "  -- turn 1 --", "    user: sub-question x"]
    assert "    [request 2] assistant [stop]: inner answer" in lines
    assert lines[-3:] == [
        "  [request 2] assistant [stop]: outer answer",
        "agent_end reason=stop (4 new messages)",
        "tools executed: delegate#call_1",
    ]


def test_the_ledger_is_written_the_same_way_by_every_writer() -> None:
    recorder = TraceRecorder()
    recorder.record_returned("lookup", "call_1", {"q": "a"}, "found a")
    recorder.record_returned("lookup", "call_2", {"q": "b"}, AgentToolResult(content="no", is_error=True))
    recorder.record_raised("explode", "call_3", {"q": "c"}, RuntimeError())
    assert recorder.ledger == [
        LedgerEntry(tool_name="lookup", tool_call_id="call_1", arguments={"q": "a"}, text="found a"),
        LedgerEntry(tool_name="lookup", tool_call_id="call_2", arguments={"q": "b"}, text="no", is_error=True),
        LedgerEntry(
            tool_name="explode",
            tool_call_id="call_3",
            arguments={"q": "c"},
            outcome="raised",
            text="RuntimeError",
            is_error=True,
        ),
    ]
    silent = TraceRecorder(ledger=False)
    silent.record_returned("lookup", "call_1", {}, "x")
    assert silent.ledger is None and silent.finish().ledger is None


def test_the_scenario_planned_tools_and_the_wrapper_write_equal_entries() -> None:
    from harness.scenarios._scenario import ModelTurn, Scenario, ToolDef
    from harness.scenarios._scenario_parts import Behaviour
    from harness.scenarios._scenario_parts import Call as PlannedCall

    scenario = Scenario(
        prompts=("go",),
        tools=(ToolDef(name="echo", plan=(Behaviour("return", "hi"), Behaviour("raise", ""))),),
        turns=(ModelTurn(calls=(PlannedCall("echo", {}), PlannedCall("echo", {}))), ModelTurn(text="done")),
    )
    ledger = run(scenario).ledger
    assert ledger == [
        LedgerEntry(tool_name="echo", tool_call_id="call_1", arguments={}, text="hi"),
        LedgerEntry(
            tool_name="echo", tool_call_id="call_2", arguments={}, outcome="raised", text="RuntimeError", is_error=True
        ),
    ]


def test_shorten_keeps_one_line_within_the_limit() -> None:
    assert shorten("short") == "short"
    assert shorten({"a": [1, 2]}) == '{"a": [1, 2]}'
    assert shorten("line\nbreak") == "line\\nbreak"
    cut = shorten("x" * 500, 100)
    assert len(cut) == 100 and cut.endswith("...")
