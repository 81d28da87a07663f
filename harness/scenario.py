"""Scenario: one value that fully determines a run of the loop, and runs it.

A scenario is what a property test generates, what a shrunk failure is saved as, and what a
person writes by hand to pin a rule: the prompts, the tools (a JSON Schema and a per-call
behaviour plan each), the model's turns, when steering and follow-up messages arrive (keyed by
poll number), and the loop's config. Running it drives the *real* loop with a scripted provider,
a counting clock and ledger-recording tools, so the same scenario always gives the same bytes.

The YAML form is meant to be read and edited by people; see ``docs/property-testing.md``::

    prompts: [Add 2 and 3]
    tools:
      - name: add
        parameters: {type: object, properties: {a: {type: integer}, b: {type: integer}}}
        plan:
          - return: 5
    turns:
      - calls:
          - {name: add, args: {a: 2, b: 3}}
      - The answer is 5.
    steering: {2: [stop, I changed my mind]}
    config: {max_iterations: 4}
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import json
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import click
import yaml

from harness.clock import SCENARIO_START_MS, DeterministicClock
from harness.contract import effective_cap
from harness.script import ScriptedCall, ScriptedProvider, Turn, turn
from harness.trace import Trace, TraceRecorder
from openprogram import runtime
from openprogram.agent.agent_loop import (  # noqa: F401 - both looked up at run time, so they can be patched
    AgentContext,
    AgentLoopConfig,
    agent_loop,
    agent_loop_continue,
)
from openprogram.providers import ModelRequest
from openprogram.tools import AgentTool, AgentToolResult, as_agent_tool, to_tool_result
from openprogram.types import (
    AssistantMessage,
    AssistantMessageEvent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    parse_tool_arguments,
)

__all__ = [
    "MAX_NESTING",
    "RUN_TIMEOUT",
    "Behaviour",
    "Call",
    "CheckResult",
    "Config",
    "ModelTurn",
    "NestedRun",
    "Problem",
    "Scenario",
    "ScenarioError",
    "ScenarioProvider",
    "HistoryMessage",
    "ToolDef",
    "ToolKilled",
    "effective_cap",
    "run_command",
]

RUN_TIMEOUT = 20.0
"""Seconds a run may take before the harness calls it a hang (the stream must always end)."""

MAX_NESTING = 3
"""Nested runs deeper than this raise instead of running, so a self-calling plan always ends."""

DEFAULT_BEHAVIOUR_TEXT = "ok"
"""What a tool with an empty plan returns."""

TurnKind = Literal["reply", "error", "aborted", "raise", "hang_up"]
BehaviourKind = Literal["return", "error", "raise", "exec"]


class ScenarioError(ValueError):
    """A scenario (or its YAML) is malformed; the message says where and what would work."""


# ---------------------------------------------------------------------------------------------
# The data: small frozen values, built by hand, by Hypothesis or from YAML
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One tool call in a model turn. ``raw`` is argument text sent verbatim (maybe not JSON).

    ``id=None`` lets the scripted provider number it (``call_1``, ``call_2``, ... per run).
    """

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    raw: str | None = None
    id: str | None = None

    def scripted(self) -> ScriptedCall:
        if self.raw is not None:
            return turn.raw_tool_call(self.name, self.raw, id=self.id)
        return turn.tool_call(self.name, args=dict(self.args), id=self.id)

    def arguments_text(self) -> str:
        """The exact argument text the model streams."""
        return self.scripted().arguments_text()


@dataclass(frozen=True)
class ModelTurn:
    """One model reply.

    ``reply``: thinking, text and calls in that order, finishing with ``stop`` (``stop`` or
    ``length``; a ``stop`` reply with calls is reported as ``toolUse``). ``error`` / ``aborted``:
    the provider reports that outcome with ``message``. ``raise``: the provider streams the
    content, then raises ``ConnectionError(message)`` (before anything when there is no
    content). ``hang_up``: it streams the content and stops without a done or error event.
    ``cancel``: the user presses stop as this reply starts streaming: the provider sets the
    ``cancel_event`` it was given, and the scripted provider then reports ``aborted`` before
    its first block (a reply without blocks finishes, and the loop stops before the next call).
    """

    kind: TurnKind = "reply"
    text: str | None = None
    thinking: str | None = None
    calls: tuple[Call, ...] = ()
    stop: Literal["stop", "length"] = "stop"
    message: str = ""
    cancel: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))
        if self.kind in ("error", "aborted") and (self.text is not None or self.thinking is not None or self.calls):
            raise ScenarioError(f"an {self.kind} turn has no content; drop text/thinking/calls")
        if self.kind not in ("reply", "error", "aborted", "raise", "hang_up"):
            raise ScenarioError(f"unknown turn kind {self.kind!r}")
        if self.cancel and self.kind != "reply":
            raise ScenarioError("only a reply can be cancelled while it streams")

    @property
    def has_content(self) -> bool:
        return self.text is not None or self.thinking is not None or bool(self.calls)

    def scripted(self) -> Turn:
        """The ScriptedProvider turn (a placeholder for ``raise`` / ``hang_up``, streamed by hand)."""
        if self.kind == "error":
            return turn.error(self.message)
        if self.kind == "aborted":
            return turn.aborted(self.message)
        blocks: list[tuple[str, str] | ScriptedCall] = []
        if self.thinking is not None:
            blocks.append(("thinking", self.thinking))
        if self.text is not None:
            blocks.append(("text", self.text))
        blocks.extend(call.scripted() for call in self.calls)
        return Turn(blocks=tuple(blocks), stop_reason=self.stop)

    # -- builders, for hand-written scenarios in Python ----------------------------------------
    @staticmethod
    def say(text: str, *, thinking: str | None = None) -> ModelTurn:
        return ModelTurn(text=text, thinking=thinking)

    @staticmethod
    def pick(*calls: Call, text: str | None = None, stop: Literal["stop", "length"] = "stop") -> ModelTurn:
        return ModelTurn(text=text, calls=calls, stop=stop)


@dataclass(frozen=True)
class NestedRun:
    """A nested ``runtime.aexec`` (or sync ``runtime.exec`` with ``sync=True``) made by a tool body.

    ``tools``: names of the scenario's planned tools, ``()`` for none, or ``None`` to inherit the
    outer run's menu the way an ``@agentic_function`` does. It has its own script and schedules;
    it shares the scenario's clock and the tools' plan counters. Its final text is the tool's
    result; an ``error`` / ``aborted`` finish makes the tool raise
    ``RuntimeError("nested run ended with REASON: MESSAGE")``.
    """

    prompt: str = "nested task"
    tools: tuple[str, ...] | None = ()
    turns: tuple[ModelTurn, ...] = ()
    steering: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    follow_ups: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    max_iterations: int | None = None
    sync: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "turns", tuple(self.turns))
        if self.tools is not None:
            object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "steering", _schedule(self.steering, "nested steering"))
        object.__setattr__(self, "follow_ups", _schedule(self.follow_ups, "nested follow_ups"))


@dataclass(frozen=True)
class Behaviour:
    """What one execution of a tool does.

    ``return``: return ``value`` (a str as is, ``None`` as ``""``, other JSON values as JSON
    text). ``error``: return an ``is_error`` result with text ``value``. ``raise``: raise
    ``RuntimeError(value)`` (``value=""`` raises it without a message); with ``base=True`` it
    raises ``ToolKilled(value)``, a ``BaseException`` the loop does not catch (the run's stream
    must then raise it to the consumer instead of hanging). ``exec``: run ``nested``.
    Before that, each of ``updates`` is reported with ``on_update``, and ``cancel`` sets the
    run's ``cancel_event`` (a user pressing stop while the tool runs). ``details`` goes into
    the result (``AgentToolResult.details``) of a ``return`` or ``error``.
    """

    kind: BehaviourKind = "return"
    value: Any = None
    updates: tuple[Any, ...] = ()
    cancel: bool = False
    nested: NestedRun | None = None
    details: Any = None
    base: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "updates", tuple(self.updates))
        if self.kind not in ("return", "error", "raise", "exec"):
            raise ScenarioError(f"unknown behaviour {self.kind!r}: use return, error, raise or exec")
        if (self.kind == "exec") != (self.nested is not None):
            raise ScenarioError("an exec behaviour needs `nested` (and only exec has one)")
        if self.kind in ("error", "raise") and not isinstance(self.value, str):
            raise ScenarioError(f"a {self.kind} behaviour takes a text, got {self.value!r:.60}")
        if self.base and self.kind != "raise":
            raise ScenarioError("base: true goes with raise")
        if self.details is not None and self.kind not in ("return", "error"):
            raise ScenarioError("details go with return or error")


class ToolKilled(BaseException):
    """What a ``raise`` behaviour with ``base: true`` raises: not an ``Exception``, so no tool
    error handler catches it (think of a cancellation or a kill reaching the tool)."""


DEFAULT_BEHAVIOUR = Behaviour("return", DEFAULT_BEHAVIOUR_TEXT)


@dataclass(frozen=True)
class ToolDef:
    """A tool on the menu: a spec, and either a behaviour ``plan`` or a real implementation.

    Execution N of the tool (counted over the whole scenario, nested runs included) follows
    ``plan[N-1]``; past the end the last entry repeats; an empty plan returns ``"ok"``.
    A *real* tool runs the user's code: ``python`` names it (``package.module:attribute``, how
    it is saved to YAML) and/or ``impl`` holds it (an ``@function``, ``AgentTool`` or dict).
    """

    name: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    description: str = ""
    plan: tuple[Behaviour, ...] = ()
    python: str | None = None
    impl: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", tuple(self.plan))
        if self.is_real and self.plan:
            raise ScenarioError(f"tool {self.name!r} is real (python/impl) and cannot also have a plan")

    @property
    def is_real(self) -> bool:
        return self.python is not None or self.impl is not None

    def behaviour(self, index: int) -> Behaviour:
        """The plan entry for the ``index``-th (0-based) execution."""
        if not self.plan:
            return DEFAULT_BEHAVIOUR
        return self.plan[min(index, len(self.plan) - 1)]

    def agent_tool(self) -> AgentTool:
        """The user's real tool, imported from ``python`` when not given as ``impl``."""
        entry = self.impl
        if entry is None:
            if self.python is None:
                raise ScenarioError(f"tool {self.name!r} has a plan, not an implementation")
            module_name, _, attribute = self.python.partition(":")
            if not attribute:
                raise ScenarioError(
                    f"tool {self.name!r}: python must be 'package.module:attribute', got {self.python!r}"
                )
            entry = importlib.import_module(module_name)
            for part in attribute.split("."):
                entry = getattr(entry, part)
        tool = as_agent_tool(entry)
        if tool.name != self.name or dict(tool.parameters) != dict(self.parameters):
            tool = AgentTool(
                name=self.name,
                description=self.description,
                parameters=dict(self.parameters),
                execute=tool.execute,
                source=tool.source,
            )
        return tool

    @classmethod
    def from_tool(cls, entry: Any, python: str | None = None) -> ToolDef:
        """A real tool from an ``@function`` / ``AgentTool`` / dict entry, with its real schema."""
        tool = as_agent_tool(entry)
        return cls(
            name=tool.name,
            parameters=dict(tool.parameters),
            description=tool.description,
            python=python,
            impl=entry,
        )


@dataclass(frozen=True)
class HistoryMessage:
    """A message already in the context before the run (``AgentContext.messages``).

    ``role``: ``user`` (``text``), ``assistant`` (``text`` and/or ``calls``, which need ids) or
    ``toolResult`` (``text``, ``tool_call_id``, ``tool_name``, ``is_error``).
    """

    role: Literal["user", "assistant", "toolResult"]
    text: str | None = None
    calls: tuple[Call, ...] = ()
    tool_call_id: str = ""
    tool_name: str = ""
    is_error: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))
        if self.role not in ("user", "assistant", "toolResult"):
            raise ScenarioError(f"a history message is user, assistant or toolResult, not {self.role!r}")
        if self.calls and self.role != "assistant":
            raise ScenarioError("only an assistant message in the history has calls")
        if any(call.id is None for call in self.calls):
            raise ScenarioError("calls in the history need an id")

    def message(self) -> Message:
        if self.role == "user":
            return UserMessage(content=self.text or "")
        if self.role == "toolResult":
            return ToolResultMessage(
                tool_call_id=self.tool_call_id,
                tool_name=self.tool_name,
                content=self.text or "",
                is_error=self.is_error,
            )
        blocks: list[Any] = [TextContent(text=self.text)] if self.text is not None else []
        for call in self.calls:
            arguments, raw = parse_tool_arguments(call.arguments_text())
            blocks.append(ToolCall(id=call.id or "", name=call.name, arguments=arguments, raw_arguments=raw))
        return AssistantMessage(content=tuple(blocks), stop_reason="toolUse" if self.calls else "stop")


@dataclass(frozen=True)
class Config:
    """The loop's knobs; ``max_iterations`` is passed through unclamped (None, 0, -3, 99 ...)."""

    max_iterations: int | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    model: str | None = None
    system_prompt: str = ""


@dataclass(frozen=True)
class Scenario:
    """Everything that determines one run; ``run()`` drives the real loop and returns its trace."""

    prompts: tuple[str, ...] = ("hello",)
    tools: tuple[ToolDef, ...] = ()
    turns: tuple[ModelTurn, ...] = ()
    steering: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    follow_ups: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    config: Config = field(default_factory=Config)
    name: str = ""
    notes: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)
    history: tuple[HistoryMessage, ...] = ()
    """Messages already in the context. With a history and no prompts the run *resumes* it
    (``agent_loop_continue``); otherwise ``agent_loop(prompts, ...)`` starts after it."""
    resume: bool | None = None
    """Force (``True``) or forbid (``False``) resuming; ``None``: resume when there is a history
    and no prompts. ``resume=True`` with an empty history is how to ask the loop to refuse."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "prompts", tuple(self.prompts))
        object.__setattr__(self, "history", tuple(self.history))
        if self.resume is not None and self.resume == (bool(self.history) and not self.prompts):
            object.__setattr__(self, "resume", None)  # one spelling per scenario: YAML round-trips exactly
        if self.resume and self.prompts:
            raise ScenarioError("a resumed run (agent_loop_continue) takes no prompts")
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "turns", tuple(self.turns))
        object.__setattr__(self, "steering", _schedule(self.steering, "steering"))
        object.__setattr__(self, "follow_ups", _schedule(self.follow_ups, "follow_ups"))
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ScenarioError(f"two tools share the name(s) {', '.join(duplicates)}")
        planned = {t.name for t in self.tools if not t.is_real}
        for tool in self.tools:
            for behaviour in tool.plan:
                if behaviour.nested is not None:
                    self._check_nested(behaviour.nested, planned, where=f"tool {tool.name!r}")

    def _check_nested(self, nested: NestedRun, planned: set[str], where: str) -> None:
        if nested.tools is None:
            if len(planned) != len(self.tools):
                raise ScenarioError(f"{where}: a nested run can inherit the menu only when every tool has a plan")
            return
        unknown = [n for n in nested.tools if n not in planned]
        if unknown:
            raise ScenarioError(f"{where}: a nested run may use only planned tools; not planned here: {unknown}")
        if len(set(nested.tools)) != len(nested.tools):
            raise ScenarioError(f"{where}: a nested run lists a tool twice")

    # -- views ------------------------------------------------------------------------------
    @property
    def cap(self) -> int:
        return effective_cap(self.config.max_iterations)

    @property
    def resumes(self) -> bool:
        """True when the run is ``agent_loop_continue`` (by default: a history and no prompts)."""
        if self.resume is not None:
            return self.resume
        return bool(self.history) and not self.prompts

    def tool(self, name: str) -> ToolDef | None:
        return next((t for t in self.tools if t.name == name), None)

    def with_(self, **changes: Any) -> Scenario:
        return replace(self, **changes)

    # -- YAML -------------------------------------------------------------------------------
    def to_data(self) -> dict[str, Any]:
        return _scenario_data(self)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Scenario:
        return _scenario_from(data)

    def to_yaml(self) -> str:
        """Readable, canonical YAML; ``Scenario.from_yaml(s.to_yaml()) == s``."""
        return dump_yaml(self.to_data())

    @classmethod
    def from_yaml(cls, source: str | Path) -> Scenario:
        """From YAML text or a path (a ``Path``, or a str naming an existing ``.yaml``/``.yml`` file)."""
        text, where = _read_source(source)
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ScenarioError(f"{where}: not valid YAML: {exc}") from None
        if not isinstance(data, Mapping):
            raise ScenarioError(f"{where}: a scenario is a mapping (prompts:, tools:, turns:, ...)")
        try:
            return cls.from_data(data)
        except ScenarioError as exc:
            raise ScenarioError(f"{where}: {exc}") from None

    # -- running ----------------------------------------------------------------------------
    def run(self, loop: Any = None, *, timeout: float = RUN_TIMEOUT) -> Trace:
        """Run in a fresh event loop; from async code use ``await scenario.arun()``."""
        return run_coroutine(self.arun(loop, timeout=timeout))

    async def arun(self, loop: Any = None, *, timeout: float = RUN_TIMEOUT) -> Trace:
        """Drive ``loop`` through this scenario.

        ``loop``: an ``agent_loop``-like function, or a module with ``agent_loop`` and
        ``agent_loop_continue`` (a copy of the loop's module); default: the real ones, looked up
        as ``harness.scenario.agent_loop`` / ``agent_loop_continue`` so a test can patch them.
        A stream that has not ended after ``timeout`` seconds is recorded as a hang
        (``trace.error``), which the reference model reports: the contract says it always ends.
        """
        start, resume = _loops(loop)
        recorder = TraceRecorder()
        world = _World(self, recorder)
        provider = ScenarioProvider(self.turns)
        plain = [world.tools[t.name] for t in self.tools]
        # Planned tools write the ledger themselves (first-hand, as TraceRecorder's wrapper does);
        # real tools get the recorder's wrapper.
        menu = [recorder.wrap_tool(tool) if t.is_real else tool for t, tool in zip(self.tools, plain, strict=True)]
        config = AgentLoopConfig(
            provider=provider,
            model=self.config.model,
            tool_choice=_plain(self.config.tool_choice),
            parallel_tool_calls=self.config.parallel_tool_calls,
            max_iterations=self.config.max_iterations,
            get_steering_messages=_Schedule(self.steering).source(),
            get_follow_up_messages=_Schedule(self.follow_ups).source(),
            clock=world.clock,
        )
        history = [message.message() for message in self.history]
        context = AgentContext(system_prompt=self.config.system_prompt, messages=history, tools=menu)
        # The loop's task copies this context: its tools find the world, and a nested exec
        # without tools= inherits the menu, exactly as under runtime.aexec.
        tokens = (_world.set(world), _depth.set(0))
        try:
            with runtime.inherit_tools(plain):
                if self.resumes:
                    stream = resume(context, config, asyncio.Event())
                else:
                    stream = start(list(self.prompts), context, config, asyncio.Event())
        except Exception as exc:  # refused at call time (agent_loop_continue's ValueError)
            recorder.error = f"{type(exc).__name__}: {exc}"
            return recorder.finish(provider.requests, new_messages=[], max_iterations=self.cap)
        finally:
            _depth.reset(tokens[1])
            _world.reset(tokens[0])
        new_messages = None
        try:
            async with asyncio.timeout(timeout):
                async for event in stream:
                    recorder.on_event(event)
                new_messages = await stream.result()
        except TimeoutError:
            recorder.error = f"TimeoutError: the event stream did not end within {timeout:g}s (a hang)"
        except (Exception, ToolKilled) as exc:  # the stream raised to its consumer: keep what was seen
            recorder.error = f"{type(exc).__name__}: {exc}"
        return recorder.finish(provider.requests, new_messages=new_messages, max_iterations=self.cap)

    def check(self, loop: Any = None, *, determinism: bool = False) -> CheckResult:
        """Run, then compare with the reference model and check every invariant."""
        trace = self.run(loop)
        problems = problems_of(self, trace)
        if determinism and not problems:
            again = self.run(loop)
            if again.to_json() != trace.to_json():
                from harness.trace import diff

                problems.append(
                    Problem("determinism", "the same scenario gave two different traces:\n" + diff(trace, again))
                )
        return CheckResult(self, trace, problems)


def _loops(loop: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    # Looked up at call time so a test can monkeypatch ``harness.scenario.agent_loop``.
    here = sys.modules[__name__]
    if loop is None:
        return here.agent_loop, here.agent_loop_continue
    if callable(loop):
        return loop, here.agent_loop_continue
    return loop.agent_loop, loop.agent_loop_continue


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else value


def _schedule(value: Any, where: str) -> dict[int, tuple[str, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: a schedule maps poll numbers to messages, e.g. {{2: [stop]}}")
    out: dict[int, tuple[str, ...]] = {}
    for key, messages in sorted(value.items(), key=lambda kv: int(kv[0])):
        try:
            number = int(key)
        except (TypeError, ValueError):
            raise ScenarioError(f"{where}: poll number {key!r} is not an integer") from None
        if number < 1:
            raise ScenarioError(f"{where}: poll numbers start at 1, got {number}")
        if isinstance(messages, str):
            messages = (messages,)
        if not all(isinstance(m, str) for m in messages):
            raise ScenarioError(f"{where}: poll {number}: messages are strings")
        if messages:
            out[number] = tuple(messages)
    return out


# ---------------------------------------------------------------------------------------------
# Running: the world a scenario's run lives in
# ---------------------------------------------------------------------------------------------


class _Schedule:
    """``get_steering_messages`` / ``get_follow_up_messages``: poll N returns what is keyed N."""

    def __init__(self, plan: Mapping[int, tuple[str, ...]]) -> None:
        self.plan = plan
        self.polls = 0

    def source(self) -> Callable[[], Any] | None:
        # No schedule: pass no getter at all, the way most callers configure the loop.
        return self.poll if self.plan else None

    async def poll(self) -> list[str]:
        self.polls += 1
        return list(self.plan.get(self.polls, ()))


def run_coroutine(coroutine: Any) -> Any:
    """``asyncio.run`` without its SIGINT handler, whose set-up reprs the whole task on every call
    (milliseconds for a long run); leftover tasks are cancelled the same way."""
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
                raise RuntimeError(f"planned tool {name!r} called outside Scenario.run()")
            return await world.execute(name, tool_call_id, args, cancel_event, on_update)

        if len(_planned_tools) > 4096:
            _planned_tools.clear()
        cached = _planned_tools[key] = AgentTool(
            name=tool.name, description=tool.description, parameters=dict(tool.parameters), execute=execute
        )
    return cached


class _World:
    """Shared by a run and its nested runs: the clock, the plan counters, the tools, the ledger."""

    def __init__(self, scenario: Scenario, recorder: TraceRecorder) -> None:
        self.scenario = scenario
        self.clock = DeterministicClock(SCENARIO_START_MS)
        self.recorder = recorder
        self.executions: dict[str, int] = {}
        self.defs = {t.name: t for t in scenario.tools}
        self.tools: dict[str, AgentTool] = {
            t.name: (t.agent_tool() if t.is_real else _planned_tool(t)) for t in scenario.tools
        }

    async def execute(
        self, name: str, tool_call_id: str, args: dict[str, Any], cancel_event: Any, on_update: Any
    ) -> Any:
        index = self.executions.get(name, 0)
        self.executions[name] = index + 1
        behaviour = self.defs[name].behaviour(index)
        top = _depth.get() == 0
        for update in behaviour.updates:
            if on_update is not None:
                on_update(update)
        if behaviour.cancel and cancel_event is not None:
            cancel_event.set()
        try:
            result = await self._behave(behaviour)
        except (Exception, ToolKilled) as exc:
            if top:
                self.recorder.record_raised(name, tool_call_id, args, exc)
            raise
        if top:
            self.recorder.record_returned(name, tool_call_id, args, result)
        return result

    async def _behave(self, behaviour: Behaviour) -> Any:
        if behaviour.kind == "return":
            value = behaviour.value
            if behaviour.details is not None:
                return AgentToolResult(content=to_tool_result(value).content, details=behaviour.details)
            # A plain str is returned as is (as a hand-written executor might); the loop wraps it.
            return value if isinstance(value, str) else to_tool_result(value)
        if behaviour.kind == "error":
            return AgentToolResult(content=behaviour.value, is_error=True, details=behaviour.details)
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


class ScenarioProvider(ScriptedProvider):
    """The ScriptedProvider, plus what it cannot script: raising, hanging up, a user pressing stop
    mid-stream; and one piece of hygiene a real HTTP backend needs: a stream must be closed before
    the next request (else this provider fails that request, naming the leak)."""

    def __init__(self, turns: Sequence[ModelTurn]) -> None:
        super().__init__(*[t.scripted() for t in turns], strict=False)
        self._manual = {i: t for i, t in enumerate(turns) if t.kind in ("raise", "hang_up") or t.cancel}
        self._open: int | None = None

    async def stream(
        self, request: ModelRequest, cancel_event: asyncio.Event | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        number = len(self.requests) + 1
        if self._open is not None:
            raise RuntimeError(f"request {number} arrived while the stream of request {self._open} was still open")
        special = self._manual.get(number - 1)
        events = super().stream(request, cancel_event)
        self._open = number
        try:
            async for event in events:
                if special is not None:
                    if special.cancel and event.type == "start" and cancel_event is not None:
                        cancel_event.set()  # the user presses stop as the reply starts
                    if event.type == "start" and not special.has_content and special.kind != "reply":
                        continue  # nothing streamed: fail before the first event
                    if event.type == "done" and special.kind != "reply":
                        if special.kind == "raise":
                            raise ConnectionError(special.message)
                        return  # hang_up: the stream just ends, with no done or error event
                yield event
        finally:
            self._open = None
            await events.aclose()


# ---------------------------------------------------------------------------------------------
# Checking: reference model + invariants
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a run: ``name`` is the invariant (or ``reference``, ``determinism``)."""

    name: str
    message: str

    def __str__(self) -> str:
        return f"[{self.name}] {self.message}"


@dataclass
class CheckResult:
    scenario: Scenario
    trace: Trace
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems


def invariants_available() -> bool:
    try:
        import harness.invariants  # noqa: F401
    except ImportError:
        return False
    return True


def problems_of(scenario: Scenario, trace: Trace) -> list[Problem]:
    """What the reference model and the invariants (when ``harness.invariants`` exists) object to."""
    from harness.reference import compare

    problems: list[Problem] = []
    differences = compare(scenario, trace)
    if differences:
        problems.append(Problem("reference", "\n".join(differences)))
    try:
        from harness.invariants import InvariantViolation, check_all
    except ImportError:
        return problems
    try:
        check_all(trace, scenario=scenario)
    except InvariantViolation as exc:
        problems.insert(0, Problem(getattr(exc, "name", "invariant"), getattr(exc, "message", str(exc))))
    return problems


# ---------------------------------------------------------------------------------------------
# YAML
# ---------------------------------------------------------------------------------------------


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


def _read_source(source: str | Path) -> tuple[str, str]:
    if isinstance(source, Path):
        return source.read_text(encoding="utf-8"), str(source)
    if "\n" not in source and source.endswith((".yaml", ".yml")) and Path(source).is_file():
        return Path(source).read_text(encoding="utf-8"), source
    return source, "scenario"


def _turn_data(t: ModelTurn) -> Any:
    if t.kind == "error":
        return {"error": t.message}
    if t.kind == "aborted":
        return {"aborted": t.message}
    if (
        t.kind == "reply"
        and t.thinking is None
        and not t.calls
        and t.stop == "stop"
        and t.text is not None
        and not t.cancel
    ):
        if t.text and t.text == t.text.strip() and "\n" not in t.text and _plain_scalar(t.text):
            return t.text  # a bare string is a text reply: the most readable form
        return {"text": t.text}
    data: dict[str, Any] = {}
    if t.thinking is not None:
        data["thinking"] = t.thinking
    if t.text is not None:
        data["text"] = t.text
    if t.calls:
        data["calls"] = [_call_data(c) for c in t.calls]
    if t.stop != "stop":
        data["stop"] = t.stop
    if t.kind == "raise":
        data["raise"] = t.message
    elif t.kind == "hang_up":
        data["hang_up"] = True
    if not data:
        data["empty"] = True
    if t.cancel:
        data["cancel"] = True
    return data


def _plain_scalar(text: str) -> bool:
    """True when ``text`` written bare in YAML reads back as this very string."""
    try:
        return yaml.safe_load(text) == text and not text.startswith(
            ("{", "[", "-", "?", ":", "#", "&", "*", "!", "|", ">", "'", '"', "%", "@", "`")
        )
    except yaml.YAMLError:
        return False


def _call_data(c: Call) -> dict[str, Any]:
    data: dict[str, Any] = {"name": c.name}
    if c.raw is not None:
        data["raw"] = c.raw
    elif c.args:
        data["args"] = _jsonish(c.args)
    if c.id is not None:
        data["id"] = c.id
    return data


def _jsonish(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonish(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonish(v) for v in value]
    return value


def _schedule_data(schedule: Mapping[int, tuple[str, ...]]) -> dict[int, list[str]]:
    return {int(k): list(v) for k, v in schedule.items()}


def _nested_data(n: NestedRun) -> dict[str, Any]:
    data: dict[str, Any] = {"prompt": n.prompt}
    data["tools"] = "inherit" if n.tools is None else list(n.tools)
    data["turns"] = [_turn_data(t) for t in n.turns]
    if n.steering:
        data["steering"] = _schedule_data(n.steering)
    if n.follow_ups:
        data["follow_ups"] = _schedule_data(n.follow_ups)
    if n.max_iterations is not None:
        data["max_iterations"] = n.max_iterations
    if n.sync:
        data["sync"] = True
    return data


def _behaviour_data(b: Behaviour) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if b.kind == "exec":
        assert b.nested is not None
        data["exec"] = _nested_data(b.nested)
    else:
        data[b.kind] = _jsonish(b.value)
    if b.base:
        data["base"] = True
    if b.details is not None:
        data["details"] = _jsonish(b.details)
    if b.updates:
        data["updates"] = _jsonish(list(b.updates))
    if b.cancel:
        data["cancel"] = True
    return data


def _tool_data(t: ToolDef) -> dict[str, Any]:
    data: dict[str, Any] = {"name": t.name}
    if t.description:
        data["description"] = t.description
    data["parameters"] = _jsonish(t.parameters)
    if t.is_real:
        data["python"] = t.python
    elif t.plan:
        data["plan"] = [_behaviour_data(b) for b in t.plan]
    return data


def _history_data(h: HistoryMessage) -> dict[str, Any]:
    if h.role == "user":
        return {"user": h.text or ""}
    if h.role == "toolResult":
        data: dict[str, Any] = {"tool_result": h.text or "", "id": h.tool_call_id, "name": h.tool_name}
        if h.is_error:
            data["is_error"] = True
        return data
    data = {"assistant": h.text}
    if h.calls:
        data["calls"] = [_call_data(c) for c in h.calls]
    return data


def _history_from(data: Any, where: str) -> HistoryMessage:
    if not isinstance(data, Mapping):
        raise ScenarioError(
            f"{where}: a history message is {{user: TEXT}}, {{assistant: TEXT, calls: [...]}} "
            "or {tool_result: TEXT, id: ..., name: ...}"
        )
    if "user" in data:
        _expect_keys(data, {"user"}, where)
        return HistoryMessage("user", text=_text(data["user"] or "", where))
    if "tool_result" in data:
        _expect_keys(data, {"tool_result", "id", "name", "is_error"}, where)
        return HistoryMessage(
            "toolResult",
            text=_text(data["tool_result"] or "", where),
            tool_call_id=str(data.get("id", "")),
            tool_name=str(data.get("name", "")),
            is_error=bool(data.get("is_error", False)),
        )
    if "assistant" in data:
        _expect_keys(data, {"assistant", "calls"}, where)
        calls = data.get("calls") or []
        return HistoryMessage(
            "assistant",
            text=_str_or_none(data["assistant"], where),
            calls=tuple(_call_from(c, f"{where}, call {i + 1}") for i, c in enumerate(calls)),
        )
    raise ScenarioError(f"{where}: a history message has one of user, assistant, tool_result")


def _scenario_data(s: Scenario) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if s.name:
        data["name"] = s.name
    if s.notes:
        data["notes"] = s.notes
    if s.meta:
        data["meta"] = _jsonish(s.meta)
    data["prompts"] = list(s.prompts)
    if s.resume is not None:
        data["resume"] = s.resume
    if s.history:
        data["history"] = [_history_data(h) for h in s.history]
    if s.tools:
        data["tools"] = [_tool_data(t) for t in s.tools]
    data["turns"] = [_turn_data(t) for t in s.turns]
    if s.steering:
        data["steering"] = _schedule_data(s.steering)
    if s.follow_ups:
        data["follow_ups"] = _schedule_data(s.follow_ups)
    config = {}
    c = s.config
    if c.max_iterations is not None:
        config["max_iterations"] = c.max_iterations
    if c.tool_choice is not None:
        config["tool_choice"] = _jsonish(c.tool_choice)
    if c.parallel_tool_calls is not None:
        config["parallel_tool_calls"] = c.parallel_tool_calls
    if c.model is not None:
        config["model"] = c.model
    if c.system_prompt:
        config["system_prompt"] = c.system_prompt
    if config:
        data["config"] = config
    return data


def _expect_keys(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def _str_or_none(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ScenarioError(f"{where}: expected text, got {value!r:.60} (quote it in YAML)")


def _text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    raise ScenarioError(f"{where}: expected text, got {value!r:.60} (quote it in YAML)")


def _call_from(data: Any, where: str) -> Call:
    if not isinstance(data, Mapping) or "name" not in data:
        raise ScenarioError(f"{where}: a call is {{name: TOOL, args: {{...}}}} or {{name: TOOL, raw: TEXT}}")
    _expect_keys(data, {"name", "args", "raw", "id"}, where)
    if "raw" in data and "args" in data:
        raise ScenarioError(f"{where}: give args or raw, not both")
    args = data.get("args") or {}
    if not isinstance(args, Mapping):
        raise ScenarioError(f"{where}: args must be a mapping; for argument text that is not an object use raw:")
    return Call(
        name=_text(data["name"], where),
        args=dict(args),
        raw=_str_or_none(data.get("raw"), where),
        id=None if data.get("id") is None else str(data["id"]),
    )


def _turn_from(data: Any, where: str) -> ModelTurn:
    if isinstance(data, str):
        return ModelTurn(text=data)
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: a turn is a text, or a mapping with text/thinking/calls, error or aborted")
    if "error" in data or "aborted" in data:
        kind = "error" if "error" in data else "aborted"
        _expect_keys(data, {kind}, where)
        return ModelTurn(kind=kind, message=_text(data[kind] or "", where))
    _expect_keys(data, {"text", "thinking", "calls", "stop", "raise", "hang_up", "empty", "cancel"}, where)
    calls = data.get("calls") or []
    if not isinstance(calls, list):
        raise ScenarioError(f"{where}: calls is a list of {{name: ..., args: ...}}")
    stop = data.get("stop", "stop")
    if stop not in ("stop", "length"):
        raise ScenarioError(f"{where}: stop is 'stop' or 'length', got {stop!r}")
    kind: TurnKind = "reply"
    message = ""
    if "raise" in data:
        kind, message = "raise", _text(data["raise"] or "", where)
    elif data.get("hang_up"):
        kind = "hang_up"
    result = ModelTurn(
        kind=kind,
        text=_str_or_none(data.get("text"), where),
        thinking=_str_or_none(data.get("thinking"), where),
        calls=tuple(_call_from(c, f"{where}, call {i + 1}") for i, c in enumerate(calls)),
        stop=stop,
        message=message,
        cancel=bool(data.get("cancel", False)),
    )
    if data.get("empty") and result.has_content:
        raise ScenarioError(f"{where}: empty: true, but the turn has content")
    return result


def _turns_from(data: Any, where: str) -> tuple[ModelTurn, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        raise ScenarioError(f"{where}: turns is a list")
    return tuple(_turn_from(t, f"{where} {i + 1}") for i, t in enumerate(data))


def _nested_from(data: Any, where: str) -> NestedRun:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: exec takes {{prompt: ..., tools: [...] | inherit, turns: [...]}}")
    _expect_keys(data, {"prompt", "tools", "turns", "steering", "follow_ups", "max_iterations", "sync"}, where)
    tools = data.get("tools", [])
    if tools == "inherit":
        tools = None
    elif tools is None:
        tools = ()
    elif not isinstance(tools, list):
        raise ScenarioError(f"{where}: tools is a list of tool names, [] for none, or inherit")
    return NestedRun(
        prompt=_text(data.get("prompt", "nested task"), where),
        tools=None if tools is None else tuple(str(t) for t in tools),
        turns=_turns_from(data.get("turns"), f"{where}: turn"),
        steering=_schedule(data.get("steering"), f"{where}: steering"),
        follow_ups=_schedule(data.get("follow_ups"), f"{where}: follow_ups"),
        max_iterations=data.get("max_iterations"),
        sync=bool(data.get("sync", False)),
    )


def _behaviour_from(data: Any, where: str) -> Behaviour:
    if not isinstance(data, Mapping):
        raise ScenarioError(
            f"{where}: a plan entry is {{return: VALUE}}, {{error: TEXT}}, {{raise: TEXT}} or {{exec: ...}}"
        )
    _expect_keys(data, {"return", "error", "raise", "exec", "updates", "cancel", "details", "base"}, where)
    kinds = [k for k in ("return", "error", "raise", "exec") if k in data]
    if len(kinds) != 1:
        raise ScenarioError(f"{where}: give exactly one of return, error, raise, exec")
    kind = kinds[0]
    updates = data.get("updates") or []
    if not isinstance(updates, list):
        raise ScenarioError(f"{where}: updates is a list of partial results")
    if kind == "exec":
        return Behaviour(
            "exec", updates=tuple(updates), cancel=bool(data.get("cancel")), nested=_nested_from(data["exec"], where)
        )
    value = data[kind]
    if kind in ("error", "raise"):
        value = _text("" if value is None else value, where)
    return Behaviour(
        kind,
        value=value,
        updates=tuple(updates),
        cancel=bool(data.get("cancel")),
        details=data.get("details"),
        base=bool(data.get("base")),
    )


def _tool_from(data: Any, where: str) -> ToolDef:
    if not isinstance(data, Mapping) or "name" not in data:
        raise ScenarioError(f"{where}: a tool is {{name: ..., parameters: {{JSON Schema}}, plan: [...]}}")
    _expect_keys(data, {"name", "description", "parameters", "plan", "python"}, where)
    parameters = data.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(parameters, Mapping):
        raise ScenarioError(f"{where}: parameters is a JSON Schema mapping")
    plan = data.get("plan") or []
    if not isinstance(plan, list):
        raise ScenarioError(f"{where}: plan is a list of behaviours")
    return ToolDef(
        name=_text(data["name"], where),
        parameters=dict(parameters),
        description=_text(data.get("description", ""), where),
        plan=tuple(_behaviour_from(b, f"{where}, plan {i + 1}") for i, b in enumerate(plan)),
        python=_str_or_none(data.get("python"), where),
    )


def _scenario_from(data: Mapping[str, Any]) -> Scenario:
    _expect_keys(
        data,
        {"name", "notes", "meta", "prompts", "resume", "history", "tools", "turns", "steering", "follow_ups", "config"},
        "scenario",
    )
    prompts = data.get("prompts", [])
    if isinstance(prompts, str):
        prompts = [prompts]
    if not isinstance(prompts, list):
        raise ScenarioError("prompts is a list of texts")
    tools = data.get("tools") or []
    if not isinstance(tools, list):
        raise ScenarioError("tools is a list")
    config = data.get("config") or {}
    if not isinstance(config, Mapping):
        raise ScenarioError("config is a mapping")
    _expect_keys(config, {"max_iterations", "tool_choice", "parallel_tool_calls", "model", "system_prompt"}, "config")
    meta = data.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise ScenarioError("meta is a mapping")
    return Scenario(
        prompts=tuple(_text(p, "prompts") for p in prompts),
        tools=tuple(_tool_from(t, f"tool {i + 1}") for i, t in enumerate(tools)),
        turns=_turns_from(data.get("turns"), "turn"),
        steering=_schedule(data.get("steering"), "steering"),
        follow_ups=_schedule(data.get("follow_ups"), "follow_ups"),
        config=Config(
            max_iterations=config.get("max_iterations"),
            tool_choice=config.get("tool_choice"),
            parallel_tool_calls=config.get("parallel_tool_calls"),
            model=_str_or_none(config.get("model"), "config.model"),
            system_prompt=_text(config.get("system_prompt", ""), "config.system_prompt"),
        ),
        name=_text(data.get("name", ""), "name"),
        notes=_text(data.get("notes", ""), "notes"),
        meta=dict(meta),
        history=tuple(_history_from(h, f"history {i + 1}") for i, h in enumerate(data.get("history") or [])),
        resume=None if data.get("resume") is None else bool(data["resume"]),
    )


# ---------------------------------------------------------------------------------------------
# `harness run FILE...`
# ---------------------------------------------------------------------------------------------


@click.command("run")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=True, path_type=Path))
@click.option("--show", is_flag=True, help="Print each run's trace as a readable timeline.")
def run_command(files: tuple[Path, ...], show: bool) -> None:
    """Run scenario YAML files against the loop; check the reference model and the invariants.

    A directory runs every *.yaml file in it. Exits 1 if any scenario shows a violation.
    """
    paths: list[Path] = []
    for path in files:
        paths.extend(sorted(path.glob("*.y*ml")) if path.is_dir() else [path])
    if not invariants_available():
        click.echo("note: harness.invariants is not available; checking against the reference model only", err=True)
    failed = 0
    for path in paths:
        try:
            scenario = Scenario.from_yaml(path)
            result = scenario.check()
        except ScenarioError as exc:
            click.echo(f"ERROR {exc}")
            failed += 1
            continue
        from harness.regressions import check_expectations

        result.problems.extend(check_expectations(scenario, result.trace))
        status = "ok  " if result.ok else "FAIL"
        click.echo(f"{status} {path} (reason={result.trace.reason}, requests={len(result.trace.requests)})")
        for problem in result.problems:
            click.echo(f"  violation [{problem.name}]:")
            click.echo("    " + problem.message.replace("\n", "\n    "))
        if show:
            click.echo("    " + result.trace.render().replace("\n", "\n    "))
        failed += not result.ok
    if failed:
        click.echo(f"{failed} of {len(paths)} scenario(s) failed")
        raise SystemExit(1)
    click.echo(f"all {len(paths)} scenario(s) passed")
