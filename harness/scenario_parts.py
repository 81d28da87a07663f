"""The parts a scenario is made of: model turns and their calls, tools and their behaviour plans,
nested runs, history messages, the loop's config. Small frozen values, built by hand, by
Hypothesis (``harness.strategies``) or from a scenario file (``harness.scenario``), which
re-exports every name here: import them from there.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.script import ScriptedCall, Turn, turn
from openprogram.tools import AgentTool, as_agent_tool
from openprogram.types import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    parse_tool_arguments,
)

__all__ = [
    "DEFAULT_BEHAVIOUR",
    "MAX_NESTING",
    "Behaviour",
    "BehaviourKind",
    "Call",
    "Config",
    "HistoryMessage",
    "ModelTurn",
    "NestedRun",
    "ScenarioError",
    "ToolDef",
    "TurnKind",
    "schedule",
]

MAX_NESTING = 3
"""Nested runs deeper than this raise instead of running, so a self-calling plan always ends."""

DEFAULT_BEHAVIOUR_TEXT = "ok"
"""What a tool with an empty plan returns."""

TurnKind = Literal["reply", "error", "aborted", "raise", "hang_up"]
BehaviourKind = Literal["return", "error", "raise", "exec"]


class ScenarioError(ValueError):
    """A scenario (or its YAML) is malformed; the message says where and what would work."""


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
            return turn.raw_tool_call(self.name, self.raw, call_id=self.id)
        return turn.tool_call(self.name, dict(self.args), call_id=self.id)

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
        object.__setattr__(self, "steering", schedule(self.steering, "nested steering"))
        object.__setattr__(self, "follow_ups", schedule(self.follow_ups, "nested follow_ups"))


@dataclass(frozen=True)
class Behaviour:
    """What one execution of a tool does.

    ``return``: return ``value`` (a str as is, ``None`` as ``""``, other JSON values as JSON
    text). ``error``: return an ``is_error`` result with text ``value``. ``raise``: raise
    ``RuntimeError(value)`` (``value=""`` raises it without a message); with ``base=True`` it
    raises ``harness.runner.ToolKilled(value)``, a ``BaseException`` the loop does not catch (the run's stream
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


def schedule(value: Any, where: str) -> dict[int, tuple[str, ...]]:
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
