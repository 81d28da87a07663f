"""The reference model: what a scenario's run must look like, worked out from the contract alone.

This never imports or runs the loop. It reads DESIGN.md sections 1 and 4 as a recipe and follows
it one step at a time: ask the model, run each pick, poll the queues, decide whether another
round happens. It also knows what the harness's own pieces do (the scripted provider streams a
reply in 16-character chunks and numbers calls ``call_1``, ``call_2``, ...; the clock counts up
by one from 1000; planned tools follow their plan), so it can predict every message byte for byte.

``predict(scenario)`` gives the expected event sequence, the messages of every model request,
the tool ledger, ``new_messages`` and the end reason; ``compare(scenario, trace)`` lists, in
readable lines, where a real run disagrees.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Literal, TypeVar

from harness._contract import (
    ABORTED_MESSAGE,
    HUNG_UP_MESSAGE,
    SKIPPED_CANCELLED,
    SKIPPED_STEERING,
    effective_cap,
    invalid_json_text,
    not_found_text,
)
from harness.clock import SCENARIO_START_MS, DeterministicClock
from harness.oracle._compare import Prediction, differences
from harness.scenarios import Scenario
from harness.scenarios._scenario_parts import MAX_NESTING, Behaviour, Call, ModelTurn, NestedRun, ToolDef
from harness.trace import LedgerEntry, Left, Trace
from openprogram.tools import AgentTool, ToolArgumentsError, validate_tool_arguments
from openprogram.types import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    parse_tool_arguments,
    trusted_copy,
)

_M = TypeVar("_M", bound=Message)
_How = Literal["returned", "raised"]
"""How a tool body ended, as the ledger says it (``LedgerEntry.outcome``)."""

MALFORMED_DONE_MESSAGE = "malformed done event: no AssistantMessage (got None)"
CHUNK = 16  # the scripted provider streams text and argument text in chunks of this size


def predict(scenario: Scenario, outcomes: Sequence[LedgerEntry] = (), stamps: Sequence[Message] = ()) -> Prediction:
    """The run ``scenario`` must produce. ``outcomes``: what real (user) tools did, in order;
    ``stamps``: the run's committed messages, whose real tools' results show how far a nested
    exec in the tool's body moved the shared clock (the reference cannot know its model's run)."""
    history = [message.message() for message in scenario.history]
    if scenario.resumes and (not history or isinstance(history[-1], AssistantMessage)):
        # agent_loop_continue refuses, at call time, an empty context or one the model already answered
        return Prediction(reason=None, error="ValueError: agent_loop_continue")
    world = _World(scenario, outcomes)
    for message in stamps:  # by id and name: a model may reuse an id, for another tool or a call that never ran
        if isinstance(message, ToolResultMessage) and message.timestamp is not None:
            world.stamps.setdefault((message.tool_call_id, message.tool_name), []).append(message.timestamp)
    run = _Run(
        world,
        history=history,
        prompts=scenario.prompts,
        menu=list(scenario.tools),
        turns=scenario.turns,
        steering=scenario.steering,
        follow_ups=scenario.follow_ups,
        max_iterations=scenario.config.max_iterations,
        model=scenario.config.model,
        system_prompt=scenario.config.system_prompt,
        tool_choice=scenario.config.tool_choice,
        parallel_tool_calls=scenario.config.parallel_tool_calls,
        depth=0,
        top=True,
    )
    reason: str | None = None
    error = None
    left = None
    try:
        reason = run.play()
    except _Left:  # the consumer left while the run was held there: cancelled, nothing after
        left = Left(after=len(run.events))
    except _Killed as killed:  # a BaseException from a tool: the stream raises it to the consumer
        error = f"ToolKilled: {killed}"
    except _GetterFailed:  # a getter handed over junk: the valid items are in, then a TypeError
        error = "TypeError: get_steering_messages returned"
    return Prediction(
        events=run.events,
        requests=run.requests,
        ledger=world.ledger,
        new_messages=run.new_messages if error is None and left is None else [],
        reason=reason,
        loose=world.loose,
        error=error,
        left=left,
    )


class _Killed(Exception):
    """A tool raised ``ToolKilled``: nothing in the loop catches it, so it ends every level."""


class _Left(Exception):
    """The run got to where its consumer leaves (``Scenario.leave``): the run is cancelled there."""


class _GetterFailed(Exception):
    """The steering getter returned something that is not a user message or a str."""


class _World:
    """What every level of a scenario shares: the clock, the plan counters, the ledger."""

    def __init__(self, scenario: Scenario, outcomes: Sequence[LedgerEntry]) -> None:
        self.scenario = scenario
        self.clock = DeterministicClock(SCENARIO_START_MS)  # the one a scenario run is given
        self.executions: dict[str, int] = {}
        self.ledger: list[LedgerEntry] = []
        self.real_outcomes: Iterator[LedgerEntry] = iter([e for e in outcomes if _is_real(scenario, e.tool_name)])
        self.loose: set[int] = set()
        self.validators = {t.name: _validator(t) for t in scenario.tools}
        self.stamps: dict[tuple[str, str], list[int]] = {}  # per (call id, tool name): ids may repeat
        self.results: dict[tuple[str, str], int] = {}  # top-level results committed so far, per the same key
        self.planned_runs = 0  # top-level executions of planned tools so far (a leave point counts them)

    def leaves_at(self, point: str, number: int) -> bool:
        leave = self.scenario.leave
        return leave is not None and leave.at == point and leave.number == number

    def tick(self) -> int:
        return self.clock()


_validators: dict[tuple[str, str], AgentTool] = {}


def _validator(tool: ToolDef) -> AgentTool:
    """A never-executed AgentTool to validate arguments with, reused per name and schema (the
    schema check behind ``validate_tool_arguments`` is costly and cached per tool object)."""
    key = (tool.name, json.dumps(tool.parameters, sort_keys=True, default=str))
    found = _validators.get(key)
    if found is None:
        if len(_validators) > 4096:
            _validators.clear()
        found = _validators[key] = AgentTool(tool.name, tool.description, dict(tool.parameters), _never)
    return found


async def _never(*_: Any) -> Any:  # pragma: no cover - the reference only validates, never executes
    raise AssertionError("the reference model does not execute tools")


def _is_real(scenario: Scenario, name: str) -> bool:
    tool = scenario.tool(name)
    return tool is not None and tool.is_real


class _Run:
    """One run of the loop (the top-level one, or a nested exec), simulated step by step."""

    def __init__(
        self,
        world: _World,
        *,
        history: Sequence[Message] = (),
        prompts: Sequence[str],
        menu: list[ToolDef],
        turns: Sequence[ModelTurn],
        steering: Any,
        follow_ups: Any,
        max_iterations: int | None,
        model: str | None,
        system_prompt: str,
        tool_choice: Any,
        parallel_tool_calls: bool | None,
        depth: int,
        top: bool,
    ) -> None:
        self.world = world
        self.prompts = prompts
        self.menu = menu
        self.turns = turns
        self.steering, self.steering_polls = steering, 0
        self.follow_ups, self.follow_up_polls = follow_ups, 0
        self.cap = effective_cap(max_iterations)
        self.model = model
        self.system_prompt = system_prompt
        self.tool_choice = dict(tool_choice) if isinstance(tool_choice, dict) else tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.depth = depth
        self.top = top
        self.history: list[Message] = list(history)  # the context; never committed again
        self.new_messages: list[Message] = []
        self.events: list[tuple[Any, ...]] = []
        self.requests: list[dict[str, Any]] = []
        self.generated_ids = 0
        self.cancelled = False

    # -- the run, as DESIGN.md tells it ---------------------------------------------------------
    def play(self) -> str:
        if self.top and self.world.scenario.cancel_at == "start":
            self.cancelled = True  # the user pressed stop before the run started
        self.emit("agent_start")
        self.emit("turn_start")
        for prompt in self.prompts:
            self.commit(UserMessage(content=prompt))
        queued = self.poll_steering()  # once before the first model call
        first_round = True
        while True:
            if not first_round:
                self.emit("turn_start")
            first_round = False
            for message in queued:  # queued user messages go in before the model is asked
                self.commit(message)
            queued = []
            if self.cancelled:  # checked before each model call: the provider is not asked
                aborted = AssistantMessage(stop_reason="aborted", error_message=ABORTED_MESSAGE)
                aborted = self.commit(aborted)
                self.emit("turn_end", aborted, ())
                return self.end("aborted")
            reply = self.ask_model()
            if reply.stop_reason in ("error", "aborted"):  # the run ends at once
                self.emit("turn_end", reply, ())
                return self.end(reply.stop_reason)
            calls = [block for block in reply.content if isinstance(block, ToolCall)]
            results, arrived = self.run_batch(calls)
            self.emit("turn_end", reply, tuple(results))
            queued = arrived if arrived else self.poll_steering()  # after turn_end, unless the batch got some
            wants_another_round = bool(calls) or bool(queued)
            budget_left = len(self.requests) < self.cap
            if wants_another_round and not budget_left:
                for message in queued:  # nothing taken from a queue is lost
                    self.commit(message)
                return self.end("max_iterations")
            if wants_another_round:
                continue
            # The model answered in text and nothing is queued: the inner loop drains.
            if not budget_left:
                return self.end("stop")  # no budget to serve follow-ups, so none are taken
            queued = self.poll_follow_ups()
            if not queued:
                return self.end("stop")

    def run_batch(self, calls: list[ToolCall]) -> tuple[list[ToolResultMessage], list[Message]]:
        """Run a reply's calls one by one, in order; the results, and the steering that arrived."""
        results: list[ToolResultMessage] = []
        arrived: list[Message] = []
        for position, call in enumerate(calls):
            if self.cancelled:  # once cancel is set no further tool of the batch starts
                results.extend(self.skip(rest, SKIPPED_CANCELLED) for rest in calls[position:])
                break
            results.append(self.run_call(call))
            arrived = self.poll_steering()  # after each executed call
            if arrived:  # the rest of the batch is skipped, the user goes first
                results.extend(self.skip(rest) for rest in calls[position + 1 :])
                break
        return results, arrived

    def end(self, reason: str) -> str:
        self.emit("agent_end", reason, tuple(self.new_messages))
        return reason

    # -- small steps ----------------------------------------------------------------------------
    def emit(self, kind: str, *fields: Any) -> None:
        if self.top:
            self.events.append((kind, *fields))

    def commit(self, message: _M) -> _M:
        """Stamp with the clock, announce, append to the history and to ``new_messages``."""
        message = trusted_copy(message, timestamp=self.world.tick())  # model_copy(update=...), typed as its input
        self.emit("message_start", message.role, None if message.role == "assistant" else message)
        self.emit("message_end", message)
        self.history.append(message)
        self.new_messages.append(message)
        return message

    def poll_steering(self) -> list[Message]:
        cancel_at = self.world.scenario.cancel_at if self.top else None
        polled = isinstance(cancel_at, int) and not isinstance(cancel_at, bool)
        if not self.steering and not polled:
            return []
        self.steering_polls += 1
        if self.top and self.world.leaves_at("poll", self.steering_polls):
            raise _Left  # the consumer leaves while the getter is being polled
        if polled and self.steering_polls == cancel_at:
            self.cancelled = True  # the getter presses stop
        messages: list[Message] = [UserMessage(content=text) for text in self.steering.get(self.steering_polls, ())]
        shape = self.world.scenario.steering_as.get(self.steering_polls) if self.top else None
        if messages and shape in ("assistant", "dict", "int"):
            for message in messages:  # the valid items are committed, then the junk is refused
                self.commit(message)
            raise _GetterFailed(shape)
        return messages

    def poll_follow_ups(self) -> list[Message]:
        if not self.follow_ups:
            return []
        self.follow_up_polls += 1
        return [UserMessage(content=text) for text in self.follow_ups.get(self.follow_up_polls, ())]

    # -- the model ------------------------------------------------------------------------------
    def ask_model(self) -> AssistantMessage:
        # Only the top level's requests are captured (and compared); a nested run's are counted.
        self.requests.append(self.request() if self.top else {})
        number = len(self.requests)
        reply, updates = self.scripted_reply(number)
        leave = self.world.scenario.leave
        held = self.top and self.world.leaves_at("reply", number) and number <= len(self.turns)
        if held and leave is not None and leave.streams(self.turns[number - 1]):
            self.emit("message_start", "assistant", None)  # the consumer leaves mid-reply
            for _ in range(min(leave.after, updates)):
                self.emit("message_update")
            raise _Left
        reply = reply.model_copy(update={"timestamp": self.world.tick()})
        self.emit("message_start", "assistant", None)
        for _ in range(updates):
            self.emit("message_update")
        self.emit("message_end", reply)
        self.history.append(reply)
        self.new_messages.append(reply)
        return reply

    def scripted_reply(self, number: int) -> tuple[AssistantMessage, int]:
        """The reply the scripted provider gives request ``number``, and how many updates it streams."""
        reported_model = self.model or "scripted"
        if number > len(self.turns):
            beyond = AssistantMessage(
                stop_reason="error",
                error_message=(
                    f"ScriptedProvider: request {number} is beyond the script ({len(self.turns)} turn(s) scripted); "
                    "add a turn or check why the agent asked again"
                ),
                model=reported_model,
                provider="scripted",
            )
            return beyond, 0
        scripted = self.turns[number - 1]
        if scripted.cancel:
            self.cancelled = True  # the user pressed stop as the reply started streaming
        if scripted.cancel and scripted.has_content:  # the scripted provider notices before a block
            aborted = AssistantMessage(
                stop_reason="aborted", error_message=ABORTED_MESSAGE, model=reported_model, provider="scripted"
            )
            return aborted, 0
        if scripted.kind in ("error", "aborted"):
            failed = AssistantMessage(
                stop_reason=scripted.kind, error_message=scripted.message, model=reported_model, provider="scripted"
            )
            return failed, 0
        content, updates = self.stream_content(scripted)
        if scripted.kind == "error_keeps_stop":  # the event's reason wins over its message's
            reply = AssistantMessage(
                content=content,
                stop_reason="error",
                error_message=scripted.message or "provider reported error",
                model=reported_model,
                provider="scripted",
            )
        elif scripted.kind in ("reply", "after_done"):
            has_calls = any(isinstance(b, ToolCall) for b in content)
            stop = "toolUse" if has_calls and scripted.stop == "stop" else scripted.stop
            reply = AssistantMessage(content=content, stop_reason=stop, model=reported_model, provider="scripted")
        else:  # the provider raised, or hung up: the loop writes the error message itself
            why = {
                "raise": f"ConnectionError: {scripted.message}",
                "cancelled_error": f"CancelledError: {scripted.message}",
                "bad_done": MALFORMED_DONE_MESSAGE,
            }.get(scripted.kind, HUNG_UP_MESSAGE)
            reply = AssistantMessage(
                content=content, stop_reason="error", error_message=why, model=self.model or "", provider="scripted"
            )
        return reply, updates

    def request(self) -> dict[str, Any]:
        """What the next model request must carry, as ``reference_compare`` reads a real one."""
        return {
            "model": self.model,
            "system_prompt": self.system_prompt,
            "messages": tuple(self.history),
            "tools": tuple((t.name, t.description, dict(t.parameters)) for t in self.menu),
            "tool_choice": self.tool_choice,
            "parallel_tool_calls": self.parallel_tool_calls,
            "max_tokens": None,  # the loop sets no generation limits of its own
            "temperature": None,
            "extra": {},
        }

    def stream_content(self, scripted: ModelTurn) -> tuple[tuple[Any, ...], int]:
        """The reply's blocks, and how many ``message_update`` events streaming them gives."""
        content: list[Any] = []
        updates = 0
        if scripted.thinking is not None:
            content.append(ThinkingContent(thinking=scripted.thinking))
            updates += 2 + _chunks(scripted.thinking)
        if scripted.text is not None:
            content.append(TextContent(text=scripted.text))
            updates += 2 + _chunks(scripted.text)
        for call in scripted.calls:
            content.append(self.tool_call(call))
            updates += 2 + _chunks(call.arguments_text())
        return tuple(content), updates

    def tool_call(self, call: Call) -> ToolCall:
        call_id = call.id
        if call_id is None:
            self.generated_ids += 1
            call_id = f"call_{self.generated_ids}"
        arguments, raw = parse_tool_arguments(call.arguments_text())
        return ToolCall(id=call_id, name=call.name, arguments=arguments, raw_arguments=raw)

    # -- the tools ------------------------------------------------------------------------------
    def run_call(self, call: ToolCall) -> ToolResultMessage:
        self.emit("tool_execution_start", call.id, call.name, call.arguments)
        tool = next((t for t in self.menu if t.name == call.name), None)
        loose, details = False, None
        if tool is None:
            text, is_error = not_found_text(call.name, (t.name for t in self.menu)), True
        elif call.raw_arguments is not None:
            text, is_error = _invalid_json(call), True
        else:
            try:
                arguments = validate_tool_arguments(self.world.validators[tool.name], call)
            except (ToolArgumentsError, ValueError) as exc:
                text, is_error = str(exc), True
            else:
                text, is_error, loose, details = self.execute(tool, call, arguments)
        self.emit("tool_execution_end", call.id, call.name, text, is_error)
        return self.commit_result(call, text, is_error, loose, details)

    def skip(self, call: ToolCall, text: str = SKIPPED_STEERING) -> ToolResultMessage:
        self.emit("tool_execution_start", call.id, call.name, call.arguments)
        self.emit("tool_execution_end", call.id, call.name, text, True)
        return self.commit_result(call, text, True, False)

    def commit_result(
        self, call: ToolCall, text: str, is_error: bool, loose: bool, details: Any = None
    ) -> ToolResultMessage:
        result = ToolResultMessage(
            tool_call_id=call.id, tool_name=call.name, content=text, is_error=is_error, details=details
        )
        result = self.commit(result)
        if self.top:
            key = (call.id, call.name)
            self.world.results[key] = self.world.results.get(key, 0) + 1
        if loose:
            self.world.loose.add(id(result))
        return result

    def execute(self, tool: ToolDef, call: ToolCall, arguments: dict[str, Any]) -> tuple[str, bool, bool, Any]:
        """Run one validated call: ``(text, is_error, loose, details)``; the top level writes the ledger."""
        how: _How
        if tool.is_real:
            outcome = next(self.world.real_outcomes, None)
            self.emit("tool_execution_update*", call.id, call.name)  # a real tool may report any updates
            if outcome is None:
                text, is_error, how = "<the real tool's result>", False, "returned"
            else:
                text, is_error, how = outcome.text, outcome.is_error, outcome.outcome
            self.write_ledger(call, arguments, how, text, is_error)
            key, seen = (call.id, call.name), self.world.stamps.get((call.id, call.name), [])
            done = self.world.results.get(key, 0) if self.top else len(seen)  # the results before this one
            stamp = seen[done] if done < len(seen) else None
            if stamp is not None and stamp > self.world.clock.now:
                self.world.clock.advance(stamp - self.world.clock.now)  # its nested run's ticks
            return text, is_error, True, None
        index = self.world.executions.get(tool.name, 0)
        self.world.executions[tool.name] = index + 1
        behaviour = tool.behaviour(index)
        for update in behaviour.updates:
            self.emit("tool_execution_update", call.id, call.name, update)
        if self.top:
            self.world.planned_runs += 1
            if self.world.leaves_at("tool", self.world.planned_runs):  # the consumer leaves: the run cancels the tool
                self.write_ledger(call, arguments, "raised", "CancelledError", True)
                raise _Left
        if behaviour.cancel or behaviour.wait:
            self.cancelled = True
        try:
            text, is_error, how = self.behave(behaviour)
        except _Killed as killed:
            self.write_ledger(call, arguments, "raised", str(killed) or "ToolKilled", True)
            raise
        self.write_ledger(call, arguments, how, text, is_error)
        return text, is_error, False, behaviour.details

    def behave(self, behaviour: Behaviour) -> tuple[str, bool, _How]:
        if behaviour.kind == "return":
            value = behaviour.value
            if isinstance(value, str):
                return value, False, "returned"
            return ("" if value is None else json.dumps(value, ensure_ascii=False)), False, "returned"
        if behaviour.kind == "error":
            return behaviour.value, True, "returned"
        if behaviour.kind == "raise" and behaviour.base:
            raise _Killed(behaviour.value)
        if behaviour.kind == "raise" and behaviour.unprintable:
            return "UnprintableError", True, "raised"  # its str() fails: its type name
        if behaviour.kind == "raise":
            return behaviour.value or "RuntimeError", True, "raised"
        assert behaviour.nested is not None
        return self.nested(behaviour.nested)

    def nested(self, nested: NestedRun) -> tuple[str, bool, _How]:
        """A tool body that calls ``runtime.exec`` again: another level of the same loop."""
        if self.depth >= MAX_NESTING:
            return f"scenario nesting limit ({MAX_NESTING}) reached", True, "raised"
        menu = self.menu if nested.tools is None else [self.world.scenario.tool(n) for n in nested.tools]
        inner = _Run(
            self.world,
            prompts=(nested.prompt,),
            menu=[t for t in menu if t is not None],
            turns=nested.turns,
            steering=nested.steering,
            follow_ups=nested.follow_ups,
            max_iterations=nested.max_iterations,
            model=None,
            system_prompt="",
            tool_choice="auto",
            parallel_tool_calls=None,
            depth=self.depth + 1,
            top=False,
        )
        reason = inner.play()
        last = next((m for m in reversed(inner.new_messages) if isinstance(m, AssistantMessage)), None)
        if reason in ("error", "aborted"):
            why = (last.error_message if last is not None else None) or reason
            return f"nested run ended with {reason}: {why}", True, "raised"
        return (last.text if last is not None else ""), False, "returned"

    def write_ledger(self, call: ToolCall, arguments: dict[str, Any], how: _How, text: str, is_error: bool) -> None:
        if self.top:
            self.world.ledger.append(
                LedgerEntry(
                    tool_name=call.name,
                    tool_call_id=call.id,
                    arguments=dict(arguments),
                    outcome=how,
                    text=text,
                    is_error=is_error,
                )
            )


def _chunks(text: str) -> int:
    return -(-len(text) // CHUNK)


def _invalid_json(call: ToolCall) -> str:
    return invalid_json_text(call.name, call.raw_arguments or "")


# ---------------------------------------------------------------------------------------------
# compare: a prediction against a real trace (the comparing itself is harness.oracle._compare)
# ---------------------------------------------------------------------------------------------


def compare(scenario: Scenario, trace: Trace) -> list[str]:
    """Readable lines saying where ``trace`` departs from the reference; ``[]`` when it agrees."""
    expected = predict(scenario, outcomes=trace.ledger or (), stamps=trace.new_messages or ())
    return differences(expected, trace)
