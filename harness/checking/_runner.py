"""Running a scenario: the real loop, driven by a scripted provider in a deterministic world.

``run(scenario)`` (``await arun(scenario)`` from async code) builds what the scenario describes
around the *real* ``agent_loop``: a ``ScenarioProvider`` replaying its turns, a counting clock,
planned tools that follow their behaviour plans and write the tool ledger, the steering and
follow-up schedules, and nested runs through ``runtime.aexec`` / ``runtime.exec``. It returns the
run's ``Trace``; the same scenario always gives the same bytes. Judging the trace is
``harness.checking._check``'s job.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
import json
import sys
import types
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from harness.clock import SCENARIO_START_MS, DeterministicClock
from harness.scenarios import Scenario
from harness.scenarios._scenario_parts import MAX_NESTING, Behaviour, Leave, ModelTurn, NestedRun, ToolDef
from harness.script import ScriptedProvider
from harness.trace import Left, Trace, TraceRecorder
from openprogram import runtime
from openprogram.agent.agent_loop import (  # noqa: F401 - both looked up at run time, so they can be patched
    AgentContext,
    AgentLoopConfig,
    agent_loop,
    agent_loop_continue,
)
from openprogram.providers import ModelRequest
from openprogram.tools import AgentTool, AgentToolResult, to_tool_result
from openprogram.types import AssistantMessage, AssistantMessageEvent, ErrorEvent, UserMessage

_T = TypeVar("_T")

LoopUnderTest = Callable[..., Any] | types.ModuleType
"""What ``run`` drives: an ``agent_loop``-like function, or a module with ``agent_loop`` and ``agent_loop_continue``."""

RUN_TIMEOUT = 20.0
"""Seconds a run may take before the harness calls it a hang (the stream must always end)."""


class ToolKilled(BaseException):
    """What a ``raise`` behaviour with ``base: true`` raises: not an ``Exception``, so no tool
    error handler catches it (think of a cancellation or a kill reaching the tool)."""


class ToolEscaped(ToolKilled):
    """A real tool raised ``SystemExit``, ``KeyboardInterrupt`` or a ``CancelledError`` of its own.

    Those are not ``Exception``s, so the loop lets them through and the run (in a real program,
    often the program) ends. The runner carries them to the trace under this name, so the harness
    reports a finding about the user's tool instead of exiting or being cancelled itself.
    """

    PREFIX = "ToolEscaped"

    def __init__(self, tool_name: str, raised: BaseException) -> None:
        super().__init__(f"tool {tool_name!r} raised {raised!r}")
        self.tool_name = tool_name
        self.raised = raised


def run(scenario: Scenario, loop: LoopUnderTest | None = None, *, timeout: float = RUN_TIMEOUT) -> Trace:
    """Run ``scenario`` in a fresh event loop; from async code use ``await arun(scenario)``."""
    return run_coroutine(arun(scenario, loop, timeout=timeout))


async def arun(scenario: Scenario, loop: LoopUnderTest | None = None, *, timeout: float = RUN_TIMEOUT) -> Trace:
    """Drive ``loop`` through ``scenario``; from sync code use ``run(scenario)``.

    ``loop``: an ``agent_loop``-like function, or a module with ``agent_loop`` and
    ``agent_loop_continue`` (a copy of the loop's module); default: the real ones, looked up
    as ``harness.checking._runner.agent_loop`` / ``agent_loop_continue`` so a test can patch them.
    A stream that has not ended after ``timeout`` seconds is recorded as a hang
    (``trace.error``), which the reference model reports: the contract says it always ends.
    """
    start, resume = _loops(loop)
    recorder = TraceRecorder()
    world = _World(scenario, recorder)
    provider = ScenarioProvider(scenario.turns)
    provider.world = world if scenario.leave is not None else None  # holds its reply where the consumer leaves
    plain = [world.tools[t.name] for t in scenario.tools]
    # Planned tools write the ledger themselves (first-hand, as TraceRecorder's wrapper does);
    # real tools get the recorder's wrapper, for the executions the reference can see.
    menu = [
        _seen_by_reference(tool, recorder.wrap_tool(tool)) if t.is_real else tool
        for t, tool in zip(scenario.tools, plain, strict=True)
    ]
    cancel_event = asyncio.Event()
    if scenario.cancel_at == "start":
        cancel_event.set()  # the user pressed stop before the run started
    config = _loop_config(scenario, provider, world, cancel_event)
    history = [message.message() for message in scenario.history]
    context = AgentContext(system_prompt=scenario.config.system_prompt, messages=history, tools=menu)
    # The loop's task copies this context: its tools find the world, and a nested exec
    # without tools= inherits the menu, exactly as under runtime.aexec.
    tokens = (_world.set(world), _depth.set(0))
    try:
        with runtime.inherit_tools(plain):
            if scenario.resumes:
                stream = resume(context, config, cancel_event)
            else:
                stream = start(list(scenario.prompts), context, config, cancel_event)
    except Exception as exc:  # refused at call time (agent_loop_continue's ValueError)
        recorder.error = f"{type(exc).__name__}: {exc}"
        return recorder.finish(provider.requests, new_messages=[], max_iterations=scenario.cap)
    finally:
        _depth.reset(tokens[1])
        _world.reset(tokens[0])
    new_messages, left = await _consume(scenario, stream, recorder, world, provider, timeout)
    trace = recorder.finish(provider.requests, new_messages=new_messages, max_iterations=scenario.cap)
    trace.left = left
    return trace


def _loop_config(
    scenario: Scenario, provider: ScenarioProvider, world: _World, cancel_event: asyncio.Event
) -> AgentLoopConfig:
    """The loop's config for ``scenario``: its settings, and its queues as the world serves them."""
    poll_cancel = scenario.cancel_at if isinstance(scenario.cancel_at, int) else None
    return AgentLoopConfig(
        provider=provider,
        model=scenario.config.model,
        tool_choice=_plain(scenario.config.tool_choice),
        parallel_tool_calls=scenario.config.parallel_tool_calls,
        max_iterations=scenario.config.max_iterations,
        get_steering_messages=_Schedule(
            scenario.steering, scenario.steering_as, poll_cancel, cancel_event, world
        ).source(),
        get_follow_up_messages=_Schedule(scenario.follow_ups).source(),
        clock=world.clock,
    )


async def _consume(
    scenario: Scenario, stream: Any, recorder: TraceRecorder, world: _World, provider: Any, timeout: float
) -> tuple[list[Any] | None, Left | None]:
    """Read the run's stream as the scenario's consumer(s) do, within ``timeout``: the run's
    ``new_messages`` (None when it did not end) and where a consumer left early. A hang or an
    exception raised to the consumer is kept as ``recorder.error``, with every event seen so far."""
    new_messages = None
    left: Left | None = None
    second = asyncio.ensure_future(_collect(stream)) if scenario.consumers == 2 else None
    try:
        async with asyncio.timeout(timeout):
            if scenario.leave is not None:
                left = await _leave_early(scenario.leave, stream, recorder, world, provider)
            if left is None:
                async for event in stream:  # (after a leave that was never due: already at its end)
                    recorder.on_event(event)
                new_messages = await stream.result()
            if second is not None:
                _judge_second(recorder, await second)
            world.late_updates()  # after the run ended: must be dropped, never raise
    except TimeoutError:
        recorder.error = f"TimeoutError: the event stream did not end within {timeout:g}s (a hang)"
    except (Exception, ToolKilled) as exc:  # the stream raised to its consumer: keep what was seen
        recorder.error = f"{type(exc).__name__}: {exc}"
    return new_messages, left


async def _leave_early(leave: Leave, stream: Any, recorder: TraceRecorder, world: _World, provider: Any) -> Left | None:
    """Read the stream as a user's consumer that stops early does, in the way ``leave.how`` names.

    It leaves once it has read every event the run pushed before the run reached the leave point
    (where the world holds the run: ``_World.hold``), then waits for ``stream.result()`` and says
    what the run did meanwhile; ``None`` if the run ended before the point (it was read to its end).
    """
    subscribe = getattr(stream, "subscribe", None)
    if subscribe is not None:
        subscribe(world.pushed)  # every push, also those nobody reads after the consumer left
    if leave.how == "with":
        async with stream:
            async for event in stream:
                recorder.on_event(event)
                if world.due(len(recorder.events)):
                    break  # leaving the block closes the stream
    else:
        async for event in stream:
            recorder.on_event(event)
            if world.due(len(recorder.events)):
                if leave.how == "aclose":
                    await stream.aclose()
                break
        if world.left and leave.how == "break":
            await stream.aclose()
    if not world.left:
        return None
    outcome = "ended"
    try:
        await stream.result()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the harness itself is being cancelled (its timeout): not the run's outcome
        outcome = "cancelled"
    except Exception as exc:
        outcome = f"raised: {type(exc).__name__}: {exc}"
    return Left(
        after=len(recorder.events),
        events_after=world.events_after,
        tools_after=world.tools_after,
        outcome=outcome,
        provider_open=getattr(provider, "_open", None) is not None,
    )


async def _collect(stream: Any) -> list[Any] | BaseException:
    events: list[Any] = []
    try:
        async for event in stream:
            events.append(event)
    except Exception as exc:
        return exc if not events else RuntimeError(f"the second consumer failed after {len(events)} events: {exc}")
    return events


def _judge_second(recorder: TraceRecorder, seen: list[Any] | BaseException) -> None:
    """Two consumers of one stream: both get every event, or the second is refused at once."""
    if isinstance(seen, RuntimeError) and str(seen).startswith("the second consumer failed after"):
        recorder.error = f"SecondConsumer: {seen}"
    elif isinstance(seen, list) and seen != recorder.events:
        recorder.error = (
            f"SecondConsumer: the second consumer got {len(seen)} events, the first {len(recorder.events)}: "
            "each must get every event, or the second be refused at once"
        )


def _loops(loop: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    # Looked up at call time so a test can monkeypatch ``harness.checking._runner.agent_loop``.
    here = sys.modules[__name__]
    if loop is None:
        return here.agent_loop, here.agent_loop_continue
    if callable(loop):
        return loop, here.agent_loop_continue
    return loop.agent_loop, loop.agent_loop_continue


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


class _Schedule:
    """``get_steering_messages`` / ``get_follow_up_messages``: poll N returns what is keyed N
    (in the shape ``shapes`` names for it); poll ``cancel_at`` also sets ``cancel_event``."""

    def __init__(
        self,
        plan: Mapping[int, tuple[str, ...]],
        shapes: Mapping[int, str] | None = None,
        cancel_at: int | None = None,
        cancel_event: asyncio.Event | None = None,
        world: _World | None = None,
    ) -> None:
        self.plan = plan
        self.shapes = shapes or {}
        self.cancel_at, self.cancel_event = cancel_at, cancel_event
        self.world = world  # the top-level steering getter: a consumer may leave while it is polled
        self.polls = 0

    def source(self) -> Callable[[], Any] | None:
        # No schedule: pass no getter at all, the way most callers configure the loop.
        return self.poll if self.plan or self.cancel_at is not None else None

    async def poll(self) -> Any:
        self.polls += 1
        if self.world is not None and self.world.holds_at("poll", self.polls):
            await self.world.hold()
        if self.polls == self.cancel_at and self.cancel_event is not None:
            self.cancel_event.set()  # the user presses stop while the loop polls
        messages = list(self.plan.get(self.polls, ()))
        shape = self.shapes.get(self.polls)
        return messages if shape is None or not messages else _steering_item(shape, messages)


def run_coroutine(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run`` without its SIGINT handler, whose set-up reprs the whole task on every call
    (milliseconds for a long run); leftover tasks are cancelled the same way. A new loop each run:
    keeping one between runs saved no measurable time (within noise, issue 11) and would have to
    prove, through asyncio's private state, that a run left nothing behind."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


_depth: contextvars.ContextVar[int] = contextvars.ContextVar("harness_scenario_depth", default=0)
_world: contextvars.ContextVar[_World | None] = contextvars.ContextVar("harness_scenario_world", default=None)
_planned_tools: dict[tuple[str, str, str], AgentTool] = {}


def _planned_tool(tool: ToolDef) -> AgentTool:
    """One ``AgentTool`` per name and schema, reused across runs (so the loop's per-tool schema
    check happens once); it finds the running scenario's world through a context variable."""
    key = (tool.name, tool.description, json.dumps(tool.parameters, sort_keys=True, default=str))
    cached = _planned_tools.get(key)
    if cached is None:
        name = tool.name

        async def execute(tool_call_id: str, args: dict[str, Any], cancel_event: Any, on_update: Any) -> Any:
            world = _world.get()
            if world is None:
                raise RuntimeError(f"planned tool {name!r} called outside harness.checking._runner.run()")
            return await world.execute(name, tool_call_id, args, cancel_event, on_update)

        if len(_planned_tools) > 4096:
            _planned_tools.clear()
        cached = _planned_tools[key] = AgentTool(
            name=tool.name, description=tool.description, parameters=dict(tool.parameters), execute=execute
        )
    return cached


def _real_tool(tool: ToolDef) -> AgentTool:
    """The user's tool, run in the scenario's world: a nested exec in its body is answered by the
    tool's ``nested_turns`` (so an ``@agentic_function`` runs instead of finding no model), and a
    ``BaseException`` it raises reaches the trace as ``ToolEscaped`` instead of ending the harness."""
    real = tool.agent_tool()
    inner, name = real.execute, tool.name
    model = ScenarioProvider(tool.nested_turns)  # one script per run, consumed across executions

    async def execute(tool_call_id: str, args: dict[str, Any], cancel_event: Any, on_update: Any) -> Any:
        try:
            with runtime.use(model):
                return await inner(tool_call_id, args, cancel_event, on_update)
        except (SystemExit, KeyboardInterrupt) as exc:
            raise ToolEscaped(name, exc) from exc
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the run itself is being cancelled: not the tool's doing
            raise ToolEscaped(name, exc) from exc

    return dataclasses.replace(real, execute=execute)


_INSIDE_REAL_TOOL: contextvars.ContextVar[bool] = contextvars.ContextVar("harness_inside_real_tool", default=False)


def _seen_by_reference(plain: AgentTool, recorded: AgentTool) -> AgentTool:
    """A real tool that writes the ledger unless a real tool's own nested run called it.

    The reference model predicts the executions it simulates: top-level calls and those of the
    nested runs that planned tools script. A real tool's body is opaque to it (an
    ``@agentic_function``'s nested run is the user's code), so what that body's nested run
    executes stays off the ledger, as planned tools keep their nested executions off it.
    """

    async def execute(tool_call_id: str, args: dict[str, Any], cancel_event: Any, on_update: Any) -> AgentToolResult:
        if _INSIDE_REAL_TOOL.get():
            return await plain.execute(tool_call_id, args, cancel_event, on_update)
        token = _INSIDE_REAL_TOOL.set(True)
        try:
            return await recorded.execute(tool_call_id, args, cancel_event, on_update)
        finally:
            _INSIDE_REAL_TOOL.reset(token)

    return dataclasses.replace(plain, execute=execute)


class _World:
    """Shared by a run and its nested runs: the clock, the plan counters, the tools, the ledger."""

    def __init__(self, scenario: Scenario, recorder: TraceRecorder) -> None:
        self.scenario = scenario
        self.clock = DeterministicClock(SCENARIO_START_MS)
        self.recorder = recorder
        self.executions: dict[str, int] = {}
        self.defs = {t.name: t for t in scenario.tools}
        self.tools: dict[str, AgentTool] = {
            t.name: (_real_tool(t) if t.is_real else _planned_tool(t)) for t in scenario.tools
        }
        self.stale: list[Callable[[Any], None]] = []
        # A consumer that leaves early (scenario.leave): where the run is held, and what came after.
        self.leave = scenario.leave
        self.counted: dict[str, int] = {}  # per leave point: how often the run got there
        self.pushes = 0  # events the run pushed to its stream
        self.held_at: int | None = None  # pushes when the run was held: the consumer leaves once it read them
        self.left = False
        self.events_after: list[str] = []
        self.tools_after: list[str] = []

    # -- the consumer that leaves ----------------------------------------------------------
    def holds_at(self, point: str, number: int | None = None) -> bool:
        """Whether the run is to be held here: the ``number``-th time it reaches ``point``
        (counted here when ``number`` is None)."""
        leave = self.leave
        if leave is None or leave.at != point or self.held_at is not None:
            return False
        if number is None:
            number = self.counted[point] = self.counted.get(point, 0) + 1
        return number == leave.number

    async def hold(self) -> None:
        """Keep the run here (as a slow network or tool would) until the consumer has left.

        The consumer leaves once it has read what was pushed so far; its leaving cancels the run,
        which ends the wait with a ``CancelledError`` here. A run the leaving does not cancel goes
        on after a few turns of the event loop, and the trace shows what it did then.
        """
        self.held_at = self.pushes
        for _ in range(_HOLD_TURNS):
            await asyncio.sleep(0)

    def due(self, read: int) -> bool:
        """The consumer, having read ``read`` events: leave now? (Marks it gone when so.)"""
        if self.left or self.held_at is None or read < self.held_at:
            return False
        self.left = True
        return True

    def pushed(self, event: Any) -> None:
        self.pushes += 1
        if self.left:
            self.events_after.append(event.type)

    async def execute(
        self, name: str, tool_call_id: str, args: dict[str, Any], cancel_event: Any, on_update: Any
    ) -> Any:
        index = self.executions.get(name, 0)
        self.executions[name] = index + 1
        behaviour = self.defs[name].behaviour(index)
        top = _depth.get() == 0
        if self.left:
            self.tools_after.append(name)  # the contract: no tool starts after the consumer has gone
        self.late_updates()  # a finished tool's on_update, called during this one: must be dropped
        seen = copy.deepcopy(args)  # what the tool was given, before it rewrites anything
        for update in behaviour.updates:
            if on_update is not None:
                on_update(update)
        if top and self.holds_at("tool"):
            try:
                await self.hold()
            except asyncio.CancelledError as exc:  # the consumer left: the run cancels its tool
                self.recorder.record_raised(name, tool_call_id, seen, exc)
                raise
        if behaviour.mutate:
            _mutate(args)
        if behaviour.cancel and cancel_event is not None:
            cancel_event.set()
        if behaviour.wait and cancel_event is not None:
            asyncio.get_running_loop().call_soon(cancel_event.set)  # the user presses stop meanwhile
            await cancel_event.wait()
        try:
            result = await self._behave(behaviour)
        except (Exception, ToolKilled) as exc:
            if top:
                self.recorder.record_raised(name, tool_call_id, seen, _Reported() if behaviour.unprintable else exc)
            raise
        finally:
            # kept only once the tool is done: while its own nested run goes on, an update is not late
            if behaviour.late_update and on_update is not None:
                self.stale.append(on_update)
        if top:
            self.recorder.record_returned(name, tool_call_id, seen, result)
        return result

    def late_updates(self) -> None:
        for on_update in self.stale:
            on_update("late update")

    async def _behave(self, behaviour: Behaviour) -> Any:
        if behaviour.kind == "return":
            value = behaviour.value
            if behaviour.details is not None:
                return AgentToolResult(content=to_tool_result(value).content, details=behaviour.details)
            # A plain str is returned as is (as a hand-written executor might); the loop wraps it.
            return value if isinstance(value, str) else to_tool_result(value)
        if behaviour.kind == "error":
            return AgentToolResult(content=behaviour.value, is_error=True, details=behaviour.details)
        if behaviour.kind == "raise" and behaviour.unprintable:
            raise UnprintableError()
        if behaviour.kind == "raise":
            raise ToolKilled(behaviour.value) if behaviour.base else RuntimeError(behaviour.value)
        assert behaviour.nested is not None
        return await self._nested(behaviour.nested)

    async def _nested(self, nested: NestedRun) -> str:
        depth = _depth.get()
        if depth >= MAX_NESTING:
            raise RuntimeError(f"scenario nesting limit ({MAX_NESTING}) reached")
        kwargs: dict[str, Any] = dict(
            tools=None if nested.tools is None else [self.tools[name] for name in nested.tools],
            provider=ScenarioProvider(nested.turns),
            max_iterations=nested.max_iterations,
            clock=self.clock,
            get_steering_messages=_Schedule(nested.steering).source(),
            get_follow_up_messages=_Schedule(nested.follow_ups).source(),
            cancel_event=asyncio.Event(),
        )
        token = _depth.set(depth + 1)
        try:
            if nested.sync:
                return runtime.exec(nested.prompt, **kwargs)
            return await runtime.aexec(nested.prompt, **kwargs)
        except runtime.ExecError as exc:
            raise RuntimeError(f"nested run ended with {exc.reason}: {exc.message}") from None
        finally:
            _depth.reset(token)


_HOLD_TURNS = 64
"""Event-loop turns a held run waits for its consumer to leave (one is enough for a loop that
suspends nowhere else; the rest is slack)."""


class ScenarioProvider(ScriptedProvider):
    """The ScriptedProvider, plus what it cannot script: raising, hanging up, a user pressing stop
    mid-stream; and one piece of hygiene a real HTTP backend needs: a stream must be closed before
    the next request (else this provider fails that request, naming the leak)."""

    estimate_usage = False  # a scenario's turns script no usage, and the reference model predicts none

    def __init__(self, turns: Sequence[ModelTurn]) -> None:
        super().__init__(*[t.scripted() for t in turns], strict=False)
        self._manual = {i: t for i, t in enumerate(turns) if t.kind != "reply" or t.cancel}
        self._open: int | None = None
        self._turns = tuple(turns)
        self.world: _World | None = None  # set on the top-level provider when the consumer leaves early

    async def stream(
        self, request: ModelRequest, cancel_event: asyncio.Event | None = None
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        number = len(self.requests) + 1
        if self._open is not None:
            raise RuntimeError(f"request {number} arrived while the stream of request {self._open} was still open")
        special = self._manual.get(number - 1)
        events = super().stream(request, cancel_event)
        self._open = number
        world, hold = self.world, None
        if world is not None and world.leave is not None and number <= len(self._turns):
            if world.leave.streams(self._turns[number - 1]) and world.holds_at("reply", number):
                hold = world.leave.after  # held after the start and this many more events
        sent = 0
        try:
            async for event in events:
                if hold is not None and world is not None and event.type in ("done", "error"):
                    hold = None  # a reply with fewer events: held before it finishes
                    await world.hold()
                if special is not None:
                    if special.cancel and event.type == "start" and cancel_event is not None:
                        cancel_event.set()  # the user presses stop as the reply starts
                    if event.type == "start" and not special.has_content and special.kind != "reply":
                        continue  # nothing streamed: fail before the first event
                    if event.type == "done" and special.kind != "reply":
                        for instead in _instead_of_done(special, event):
                            yield instead
                        return
                yield event
                sent += 1
                if hold is not None and world is not None and sent > hold:
                    hold = None
                    await world.hold()
        finally:
            self._open = None
            await events.aclose()


def _instead_of_done(special: ModelTurn, done: Any) -> Iterator[Any]:
    """What a special turn streams instead of its ``done`` event, or raises; nothing at all for a
    hang-up (the stream just ends, with no done or error event)."""
    if special.kind == "raise":
        raise ConnectionError(special.message)
    if special.kind == "cancelled_error":
        raise asyncio.CancelledError(special.message)  # nobody cancelled the run
    if special.kind == "bad_done":
        yield _MalformedDone()  # not an event on purpose: what a buggy provider adapter sends
    elif special.kind == "error_keeps_stop":
        keeps = done.message.model_copy(update={"stop_reason": "stop", "error_message": special.message or None})
        yield ErrorEvent(reason="error", error=keeps)
    elif special.kind == "after_done":
        yield done
        yield done  # a second done, and more: the loop must stop reading at the first
        yield ErrorEvent(reason="error", error=done.message)


class _MalformedDone:
    """A ``done`` event without an ``AssistantMessage``: what a buggy provider adapter sends."""

    type = "done"
    reason = "stop"
    message = None


class UnprintableError(Exception):
    """A tool's exception whose ``str()`` raises: the loop must report it by its type name."""

    def __str__(self) -> str:
        raise RuntimeError("this exception cannot be printed")


class _Reported(Exception):
    """What the ledger records for an ``UnprintableError`` (its text is its type name)."""


_Reported.__name__ = _Reported.__qualname__ = "UnprintableError"


def _mutate(value: Any) -> None:
    """Rewrite arguments in place, nested values too: what a careless tool does to its input."""
    if isinstance(value, dict):
        for item in list(value.values()):
            _mutate(item)
        value["mutated_by_tool"] = True
    elif isinstance(value, list):
        for item in value:
            _mutate(item)
        value.append("mutated_by_tool")


def _steering_item(shape: str, messages: list[str]) -> Any:
    """A poll's messages in the shape ``steering_as`` asks for (``scenario_parts.STEERING_SHAPES``)."""
    if shape == "str":
        return messages[0]
    if shape == "message":
        return UserMessage(content=messages[0])
    junk = {"assistant": AssistantMessage(content=()), "dict": {"role": "user"}, "int": 7}.get(shape)
    return messages if junk is None else [*messages, junk]
