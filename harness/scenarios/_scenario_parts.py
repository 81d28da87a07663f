"""The parts a scenario is made of: model turns and their calls, tools and their behaviour plans,
nested runs, history messages, the loop's config. Small frozen values, built by hand, by
Hypothesis (``harness.strategies``) or from a scenario file (``harness.scenarios._scenario``), which
re-exports every name here: import them from there.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal, get_args

from harness.script import ScriptedCall, Turn, turn
from openprogram.providers import tool_choice as tool_choice_table
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

MAX_NESTING = 3
"""Nested runs deeper than this raise instead of running, so a self-calling plan always ends."""

DEFAULT_BEHAVIOUR_TEXT = "ok"
"""What a tool with an empty plan returns."""

TurnKind = Literal[
    "reply", "error", "aborted", "raise", "hang_up", "error_keeps_stop", "bad_done", "cancelled_error", "after_done"
]
TURN_KINDS: tuple[TurnKind, ...] = get_args(TurnKind)
Fault = Literal["error_keeps_stop", "bad_done", "cancelled_error", "after_done"]
FAULTS: tuple[Fault, ...] = get_args(Fault)
"""Misbehaving providers (DESIGN 4, Robustness): an ``error`` event whose message keeps the
default ``stop_reason`` (``error_keeps_stop``), a ``done`` event without a message
(``bad_done``), a ``CancelledError`` the provider raises though nobody cancelled the run
(``cancelled_error``), and more events after ``done`` (``after_done``). Each streams the reply's
content first."""
WIRE_FAULTS = (
    "drop_mid_stream",
    "gzip",
    "malformed_chunk",
    "slow",
    "truncate",
    "unknown_event",
    "cut_mid_event",
    "error_event",
    "bad_checksum",
    "split",
    "stall",
    "slow_first_byte",
    "unknown_fields",
    "interleaved",
    "refusal",
    "content_filter",
    "redacted_thinking",
)
"""How a turn is delivered on a provider's wire, for ``harness emulate`` (``harness.emulator._faults``):
the connection dropped after N chunks, a gzip body, broken JSON in a delta, chunks S seconds apart,
a stream cut before its terminal event, an event of an unknown type, a stream cut cleanly in the
middle of an event, the provider's own in-band error event (of HTTP status N's type) in place of
the stop reason, an event-stream frame with a wrong checksum (on SSE wires: broken JSON), fields no
client knows in every event, several calls streamed apart (chat's deltas alternating by index,
Gemini's one call a chunk, Ollama's one a line); the body's bytes re-cut into pieces of the listed
sizes in turn (as TCP delivers them), a stream that stalls without closing after N events, the
status sent S seconds late; the reply as the model's
refusal (``refusal``: Anthropic's ``stop_reason: refusal``, OpenAI's ``refusal`` field or part,
Gemini's ``SAFETY``, Bedrock's ``content_filtered``) or as the provider's content filter withheld it
(``content_filter``: OpenAI's ``finish_reason: content_filter``, Responses' ``incomplete``, Gemini's
blocked prompt, Bedrock's ``guardrail_intervened``); and ``redacted_thinking``, not a fault:
Anthropic's encrypted reasoning (its opaque data) served before the reply's text and calls, which the
agent must send back unchanged. A turn with ``status`` is an
HTTP error reply instead. ``harness run`` has no wire: it plays the turn such a fault wraps as it is
(and a ``status`` turn as an ``error`` turn with its message)."""
SteeringShape = Literal["list", "str", "message", "assistant", "dict", "int"]
STEERING_SHAPES: tuple[SteeringShape, ...] = get_args(SteeringShape)
"""How the steering getter hands over a poll's messages: a list of strs (the usual), a bare str,
a single ``UserMessage``; or the list followed by junk the loop must refuse with a ``TypeError``
after committing the valid items: an ``AssistantMessage``, a dict, an int."""
BehaviourKind = Literal["return", "error", "raise", "exec"]


class ScenarioError(ValueError):
    """A scenario (or its YAML) is malformed; the message says where and what would work."""


class UserImportError(ImportError):
    """A module of the user's (``--tools``, a scenario's ``python:``) cannot be imported; the message
    is one line saying which module, where it was looked for and what went wrong."""


def import_user_module(name: str) -> ModuleType:
    """Import ``name`` the way ``python -m`` would: the current directory first on ``sys.path``.

    A console script's ``sys.path`` starts with its own bin directory, so without this a user's
    ``myagent.tools`` in the project root is not found. Every failure, including a module that
    raises (or calls ``sys.exit``) while importing, becomes a ``UserImportError``.
    """
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    if not name or any(not part.isidentifier() for part in name.split(".")):
        raise UserImportError(f"{name!r} is not a module name (write package.module)")
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise UserImportError(
                f"no module named {exc.name!r} (looked in the current directory {here} and the installed packages)"
            ) from None
        raise UserImportError(f"importing {name} failed: {_describe_failure(exc)}") from None
    except (Exception, SystemExit) as exc:
        raise UserImportError(f"importing {name} failed: {_describe_failure(exc)}") from None


def _describe_failure(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"SyntaxError: {exc.msg} ({exc.filename}:{exc.lineno})"
    frames = traceback.extract_tb(exc.__traceback__)
    user = [f for f in frames if "importlib" not in f.filename]
    where = f" ({user[-1].filename}:{user[-1].lineno})" if user else ""
    return f"{type(exc).__name__}: {text}{where}"


def import_user_object(path: str) -> Any:
    """``package.module:attribute`` (the attribute may be dotted) imported as ``import_user_module`` does."""
    module_name, _, attribute = path.partition(":")
    if not attribute:
        raise UserImportError(f"expected 'package.module:attribute', got {path!r}")
    entry: Any = import_user_module(module_name)
    for part in attribute.split("."):
        try:
            entry = getattr(entry, part)
        except AttributeError:
            raise UserImportError(f"{module_name} has no attribute {attribute!r}") from None
    return entry


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
        return self._scripted

    @functools.cached_property
    def _scripted(self) -> ScriptedCall:
        # Once per call, kept on the (frozen) value: the provider, a nested run's provider each
        # time its tool runs and the reference model all ask for it; a ScriptedCall never changes.
        if self.raw is not None:
            return turn.raw_tool_call(self.name, self.raw, call_id=self.id)
        return turn.tool_call(self.name, dict(self.args), call_id=self.id)

    def arguments_text(self) -> str:
        """The exact argument text the model streams."""
        return self._scripted.arguments_text()


@dataclass(frozen=True)
class ModelTurn:
    """One model reply.

    ``reply``: thinking, text and calls in that order, finishing with ``stop`` (``stop`` or
    ``length``; a ``stop`` reply with calls is reported as ``toolUse``). ``error`` / ``aborted``:
    the provider reports that outcome with ``message``. ``raise``: the provider streams the
    content, then raises ``ConnectionError(message)`` (before anything when there is no
    content). ``hang_up``: it streams the content and stops without a done or error event.
    The ``FAULTS`` kinds are providers that misbehave after streaming the content.
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
    wire: tuple[tuple[str, Any], ...] = ()
    """``(name, value)`` pairs for ``harness emulate``: ``("status", 429)`` and ``("retry_after", S)``
    on an ``error`` turn, or :data:`WIRE_FAULTS` names with their parameter."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", tuple(self.calls))
        object.__setattr__(self, "wire", tuple((str(k), v) for k, v in self.wire))
        if self.kind in ("error", "aborted") and (self.text is not None or self.thinking is not None or self.calls):
            raise ScenarioError(f"an {self.kind} turn has no content; drop text/thinking/calls")
        if self.kind not in TURN_KINDS:
            raise ScenarioError(f"unknown turn kind {self.kind!r}")
        if self.cancel and self.kind != "reply":
            raise ScenarioError("only a reply can be cancelled while it streams")

    @property
    def has_content(self) -> bool:
        return self.text is not None or self.thinking is not None or bool(self.calls)

    def scripted(self) -> Turn:
        """The ScriptedProvider turn (a placeholder for ``raise`` / ``hang_up``, streamed by hand)."""
        return self._scripted

    @functools.cached_property
    def _scripted(self) -> Turn:
        # once per turn, kept on the (frozen) value, as Call's: a Turn never changes
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
    raises ``harness.checking._runner.ToolKilled(value)``, a ``BaseException`` the loop does not catch (the run's stream
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
    mutate: bool = False
    """The tool rewrites its arguments in place (nested values too) before acting."""
    late_update: bool = False
    """The tool keeps its ``on_update`` and calls it after returning: during every later tool
    execution and once the run has ended (the loop must drop those)."""
    unprintable: bool = False
    """With ``raise``: the exception's ``str()`` itself raises (reported by its type name)."""
    wait: bool = False
    """The tool waits until the run's ``cancel_event`` is set, which the user (the harness) does
    from outside once the tool waits: like ``cancel``, but set while the tool is suspended."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "updates", tuple(self.updates))
        if self.unprintable and (self.kind != "raise" or self.base):
            raise ScenarioError("unprintable: true goes with raise (not base)")
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
    nested_turns: tuple[ModelTurn, ...] = ()
    """A real tool's model: what a nested ``runtime.exec`` in its body (an ``@agentic_function``)
    is answered with, one turn per request over the whole run; past the end, the scripted
    provider's error."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", tuple(self.plan))
        object.__setattr__(self, "nested_turns", tuple(self.nested_turns))
        if self.is_real and self.plan:
            raise ScenarioError(f"tool {self.name!r} is real (python/impl) and cannot also have a plan")
        if self.nested_turns and not self.is_real:
            raise ScenarioError(
                f"tool {self.name!r}: nested_turns go with a real (python) tool; a planned one uses exec"
            )
        cancelled = [i for i, t in enumerate(self.nested_turns, start=1) if t.cancel]
        if cancelled:
            # The nested run shares the outer run's cancel_event, so the stop would end the outer
            # run too, from inside a body the reference model cannot see: every run would be
            # reported as a violation that is not the loop's.
            raise ScenarioError(
                f"tool {self.name!r}: nested_turns {', '.join(map(str, cancelled))} cancel(s) the reply "
                "(cancel: true), which would stop the whole run from inside the tool's own code, where the "
                "reference model cannot follow; cancel a top-level reply instead, or use a planned tool "
                "with exec"
            )

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
            entry = _real_entry(self.name, self.python)
        tool = _as_tool(self.name, entry)
        if (
            tool.name != self.name
            or dict(tool.parameters) != dict(self.parameters)
            or (tool.description != self.description)
        ):
            tool = AgentTool(
                name=self.name,
                description=self.description,
                parameters=dict(self.parameters),
                execute=tool.execute,
                source=tool.source,
            )
        return tool

    @classmethod
    def real(
        cls,
        name: str | None,
        python: str,
        parameters: Mapping[str, Any] | None = None,
        description: str | None = None,
        nested_turns: tuple[ModelTurn, ...] = (),
    ) -> ToolDef:
        """A ``python:`` tool: its name, schema and description are the function's unless given here."""
        entry = _real_entry(name or python, python)
        tool = _as_tool(name or python, entry)
        return cls(
            name=tool.name if name is None else name,
            parameters=dict(tool.parameters) if parameters is None else parameters,
            description=tool.description if description is None else description,
            python=python,
            impl=entry,
            nested_turns=nested_turns,
        )

    @property
    def is_agentic(self) -> bool:
        """An ``@agentic_function``: its body asks a model, so it needs ``nested_turns`` to run."""
        return getattr(self.impl, "kind", None) == "agentic_function"

    @classmethod
    def from_tool(cls, entry: Any, python: str | None = None, nested_turns: tuple[ModelTurn, ...] = ()) -> ToolDef:
        """A real tool from an ``@function`` / ``AgentTool`` / dict entry, with its real schema."""
        tool = as_agent_tool(entry)
        return cls(
            name=tool.name,
            parameters=dict(tool.parameters),
            description=tool.description,
            python=python,
            impl=entry,
            nested_turns=nested_turns,
        )


def _real_entry(name: str, python: str) -> Any:
    try:
        return import_user_object(python)
    except UserImportError as exc:
        raise ScenarioError(f"tool {name!r}: python: {exc}") from None


def _as_tool(name: str, entry: Any) -> AgentTool:
    try:
        return as_agent_tool(entry)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(f"tool {name!r}: python: {exc}") from None


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

    def __post_init__(self) -> None:
        # The checks exec makes, so a scenario cannot pin a config no caller could pass.
        if self.max_iterations is not None and (
            isinstance(self.max_iterations, bool) or not isinstance(self.max_iterations, int)
        ):
            raise ScenarioError(f"max_iterations is an integer or null, got {self.max_iterations!r:.60}")
        if self.parallel_tool_calls is not None and not isinstance(self.parallel_tool_calls, bool):
            raise ScenarioError(f"parallel_tool_calls is true, false or null, got {self.parallel_tool_calls!r:.60}")
        try:
            tool_choice_table.normalize(self.tool_choice)
        except ValueError as exc:
            raise ScenarioError(str(exc)) from None


LeavePoint = Literal["reply", "tool", "poll"]
LEAVE_POINTS: tuple[LeavePoint, ...] = get_args(LeavePoint)
"""Where the run is when the consumer leaves: streaming a reply, running a tool, polling steering."""
LEAVE_HOWS = ("aclose", "break", "with")
"""How the consumer leaves: ``await stream.aclose()`` inside its ``async for``, ``break`` then
``aclose()``, or ``break`` out of ``async with agent_loop(...) as stream:``."""


@dataclass(frozen=True)
class Leave:
    """The consumer stops reading before the run ends (DESIGN 4, Robustness: the run is cancelled,
    no tool starts after the consumer has gone).

    The run is held where the consumer leaves, as a slow network or tool would hold it, so the
    consumer is gone while the run is in the middle of something: ``reply``: the ``number``-th
    top-level model request, after ``after`` of its ``message_update`` events (fewer when the
    reply has fewer; only a plain streamed reply, not a cancelled one or a provider fault);
    ``tool``: the ``number``-th top-level execution of a planned tool, after its updates;
    ``poll``: the ``number``-th top-level steering poll. A run that ends before that point is
    read to its end. ``how``: one of ``LEAVE_HOWS``.
    """

    at: LeavePoint
    number: int = 1
    after: int = 0
    how: Literal["aclose", "break", "with"] = "aclose"

    def __post_init__(self) -> None:
        if self.at not in LEAVE_POINTS:
            raise ScenarioError(f"the consumer leaves at one of {', '.join(LEAVE_POINTS)}, got {self.at!r:.60}")
        if self.how not in LEAVE_HOWS:
            raise ScenarioError(f"how is one of {', '.join(LEAVE_HOWS)}, got {self.how!r:.60}")
        for name, value, least in (("number", self.number, 1), ("after", self.after, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ScenarioError(f"{name} is an integer >= {least}, got {value!r:.60}")
        if self.at != "reply":
            object.__setattr__(self, "after", 0)  # it counts a reply's events: one spelling per scenario

    def streams(self, turn: ModelTurn) -> bool:
        """Whether a reply leave can happen on ``turn``: a plain streamed reply (runner and
        reference model both hold the run only there)."""
        return turn.kind == "reply" and not turn.cancel


def schedule(value: Any, where: str) -> dict[int, tuple[str, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: a schedule maps poll numbers to messages, e.g. {{2: [stop]}}")
    out: dict[int, tuple[str, ...]] = {}
    for key, messages in sorted(value.items(), key=lambda kv: str(kv[0]).zfill(12)):
        if isinstance(key, bool) or not isinstance(key, (int, str)) or (isinstance(key, str) and not key.isdigit()):
            raise ScenarioError(f"{where}: poll number {key!r} is not an integer")
        number = int(key)
        if number < 1:
            raise ScenarioError(f"{where}: poll numbers start at 1, got {number}")
        if isinstance(messages, str):
            messages = (messages,)
        if not all(isinstance(m, str) for m in messages):
            raise ScenarioError(f"{where}: poll {number}: messages are strings")
        if messages:
            out[number] = tuple(messages)
    return out
