"""The file forms of a scenario's parts: model turns (calls, replies, provider endings, nested
runs), tool behaviour plans, tools, history messages, the loop's config and how the consumer leaves.

One pydantic form per mapping a person writes in a scenario file; ``ScenarioForm`` in
``harness.scenarios._scenario`` puts them together into the file as a whole. Validating one checks
its keys and types and builds its value (so a ``ScenarioError`` a value raises is located too);
``of`` (and ``turn_entry``) is the way back, setting only the keys a readable file would have.
The values themselves are in ``harness.scenarios._scenario_parts``; this module sits below
``harness.scenarios._scenario`` and never imports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union, get_args

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Discriminator, Field, StrictBool, StrictInt, Tag

from harness.scenarios._scenario_parts import (
    FAULTS,
    WIRE_FAULTS,
    Behaviour,
    BehaviourKind,
    Call,
    Config,
    Fault,
    HistoryMessage,
    Leave,
    LeavePoint,
    ModelTurn,
    NestedRun,
    ScenarioError,
    ToolDef,
    TurnKind,
    schedule,
)
from harness.scenarios._yamlform import Form, jsonish, plain_scalar, tagger


def poll_number(number: int) -> int:
    if number < 1:
        raise ValueError(f"poll numbers start at 1, got {number}")
    return number


def not_bool(value: Any) -> Any:
    if isinstance(value, bool):  # YAML reads `yes`/`true` as a bool, which int() would take as 1
        raise ValueError(f"poll numbers are positive integers, got {value!r}")
    return value


Schedule = Annotated[
    dict[Annotated[int, BeforeValidator(not_bool), AfterValidator(poll_number)], str | list[str]] | None,
    Field(json_schema_extra={"propertyNames": {"pattern": "^[1-9][0-9]*$"}}),
]
"""``{poll number: [messages]}``; one message may be given bare: ``{2: stop}``."""


def schedule_data(schedule: Mapping[int, tuple[str, ...]]) -> dict[int, list[str]] | None:
    return {int(k): list(v) for k, v in schedule.items()} or None


class CallForm(Form):
    """One tool call: ``{name: TOOL, args: {...}}``, or ``{name: TOOL, raw: TEXT}`` for argument text."""

    shape = "a call is {name: TOOL, args: {...}} or {name: TOOL, raw: TEXT}"
    name: str
    """The tool the model picks (it need not exist: an unknown name is a case worth testing)."""
    raw: str | None = None
    """Argument text sent verbatim, maybe not JSON."""
    args: dict[str, Any] | None = None
    """The arguments, sent as JSON."""
    id: str | int | None = None
    """The call id; none: the scripted provider numbers calls call_1, call_2, ... per run."""

    def build(self) -> Call:
        if {"raw", "args"} <= self.model_fields_set:
            raise ScenarioError("give args or raw, not both")
        return Call(self.name, dict(self.args or {}), self.raw, None if self.id is None else str(self.id))

    @classmethod
    def of(cls, c: Call) -> CallForm:
        given: dict[str, Any] = {"raw": c.raw} if c.raw is not None else {"args": jsonish(c.args)} if c.args else {}
        ident: dict[str, Any] = {"id": c.id} if c.id is not None else {}
        return cls.model_construct(name=c.name, **given, **ident)


_WIRE_DEFAULTS: Mapping[str, Any] = {
    "drop_mid_stream": 1,
    "slow": 0.05,
    "error_event": 500,
    "split": (1,),
    "stall": 1,
    "slow_first_byte": 0.3,
    "redacted_thinking": "EmulatedRedactedThinking",
}
"""A wire fault named without a parameter: dropped after one chunk, chunks 50 ms apart, an in-band
error of a 500's type, redacted thinking with stand-in data; the others are flags."""


def wire_faults(value: Any) -> tuple[tuple[str, Any], ...]:
    """``wire:`` as ``(name, parameter)`` pairs: a name, a list of names, or ``{name: parameter}``."""
    if isinstance(value, str):
        given: list[tuple[Any, Any]] = [(value, None)]
    elif isinstance(value, list):
        given = [(name, None) for name in value]
    elif isinstance(value, Mapping):
        given = list(value.items())
    else:
        raise ScenarioError(f"wire takes a fault name, a list of them or {{name: parameter}}, got {value!r:.60}")
    pairs = []
    for name, parameter in given:
        if name not in WIRE_FAULTS:
            raise ScenarioError(
                f"unknown wire fault {name!r}; known: {', '.join(WIRE_FAULTS)} (an HTTP error reply is status: N)"
            )
        default = _WIRE_DEFAULTS.get(name, True)
        if parameter is None or (parameter is True and default is not True):
            parameter = default
        if default is True and parameter is not True:
            raise ScenarioError(f"wire fault {name} takes no parameter (true), got {parameter!r:.60}")
        number = not isinstance(parameter, bool) and isinstance(parameter, int | float) and parameter >= 0
        if name == "drop_mid_stream" and not (number and isinstance(parameter, int)):
            raise ScenarioError(f"drop_mid_stream takes how many chunks come first (0 or more), got {parameter!r:.60}")
        if name == "error_event" and not (
            isinstance(parameter, int) and not isinstance(parameter, bool) and 400 <= parameter <= 599
        ):
            raise ScenarioError(f"error_event takes the HTTP error status its type is (400-599), got {parameter!r:.60}")
        if name == "redacted_thinking" and not (isinstance(parameter, str) and parameter):
            raise ScenarioError(f"redacted_thinking takes the block's opaque data (a string), got {parameter!r:.60}")
        if name == "slow" and not number:
            raise ScenarioError(f"slow takes the seconds before each chunk (0 or more), got {parameter!r:.60}")
        parameter = _delivery_parameter(name, parameter, number)
        pairs.append((name, parameter))
    return tuple(pairs)


def _delivery_parameter(name: str, parameter: Any, number: bool) -> Any:
    """``split``, ``stall`` and ``slow_first_byte``'s parameter checked (the piece sizes as a tuple)."""
    if name == "split":
        sizes = parameter if isinstance(parameter, list | tuple) else [parameter]
        if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes):
            raise ScenarioError(
                f"split takes the sizes in bytes of the pieces the body is cut into, in turn (each 1 or more),"
                f" such as [1] or [3, 200], got {parameter!r:.60}"
            )
        return tuple(sizes)
    if name == "stall" and not (number and isinstance(parameter, int)):
        raise ScenarioError(
            f"stall takes how many events come before the stream stalls (0 or more), got {parameter!r:.60}"
        )
    if name == "slow_first_byte" and not number:
        raise ScenarioError(
            f"slow_first_byte takes the seconds before the status is sent (0 or more), got {parameter!r:.60}"
        )
    return parameter


def wire_data(pairs: tuple[tuple[str, Any], ...]) -> Any:
    """The readable ``wire:`` of delivery-fault pairs: a name when one fault has its default."""
    if len(pairs) == 1 and pairs[0][1] == _WIRE_DEFAULTS.get(pairs[0][0], True):
        return pairs[0][0]
    return {name: list(value) if isinstance(value, tuple) else value for name, value in pairs}


class ReplyForm(Form):
    """A reply: thinking, text and calls, in that order; or an ending the provider makes instead."""

    thinking: str | None = None
    text: str | None = None
    calls: list[CallForm] | None = None
    stop: Literal["stop", "length"] = "stop"
    """``length``: the reply was cut off (a reply with calls that stops normally is ``toolUse``)."""
    raise_: str | None = Field(None, alias="raise")
    """The provider streams the content, then raises ``ConnectionError(TEXT)``."""
    hang_up: bool = False
    """The provider streams the content and ends without a done or error event."""
    empty: bool = False
    """A reply with no content at all, said explicitly (``{}`` means the same)."""
    cancel: bool = False
    """The user presses stop as this reply starts streaming."""
    fault: Fault | None = None
    """A provider that misbehaves after streaming the content: ``error_keeps_stop``, ``bad_done``,
    ``cancelled_error`` or ``after_done``; ``error_keeps_stop`` takes its error text from ``message``."""
    message: str | None = None

    def build(self) -> ModelTurn:
        kind: TurnKind = "raise" if "raise_" in self.model_fields_set else "hang_up" if self.hang_up else "reply"
        if self.fault is not None:
            if kind != "reply":
                raise ScenarioError("a fault is its own ending: drop raise/hang_up")
            kind = self.fault
        elif self.message is not None:
            raise ScenarioError("message goes with fault: error_keeps_stop")
        result = ModelTurn(
            kind=kind,
            text=self.text,
            thinking=self.thinking,
            calls=tuple(c.value for c in self.calls or ()),
            stop=self.stop,
            message=self.raise_ or self.message or "",
            cancel=self.cancel,
        )
        if self.empty and result.has_content:
            raise ScenarioError("empty: true, but the turn has content")
        return result


class ErrorForm(Form):
    """``{error: MESSAGE}``: the provider reports an error; the run ends."""

    error: str | None

    def build(self) -> ModelTurn:
        return ModelTurn(kind="error", message=self.error or "")


class AbortedForm(Form):
    """``{aborted: MESSAGE}``: the provider reports the request aborted; the run ends."""

    aborted: str | None

    def build(self) -> ModelTurn:
        return ModelTurn(kind="aborted", message=self.aborted or "")


class StatusForm(Form):
    """``{status: N, message?, retry_after?}``: for ``harness emulate``, the provider answers with
    HTTP ``N`` and its own error body holding ``message``; ``harness run`` plays an ``error`` turn."""

    status: StrictInt
    """An HTTP error status, 400-599."""
    message: str | None = None
    retry_after: Annotated[float, Field(ge=0)] | None = None
    """The ``retry-after`` header, in seconds, real rate limits send."""
    code: str | None = None
    """The error's code beside its status: ``insufficient_quota`` (with 429) is OpenAI's account
    out of credit, which no retry fixes."""

    def build(self) -> ModelTurn:
        if not 400 <= self.status <= 599:
            raise ScenarioError(f"status takes an HTTP error status (400-599), got {self.status}")
        retry = (("retry_after", self.retry_after),) if self.retry_after is not None else ()
        code = (("code", self.code),) if self.code else ()
        return ModelTurn(kind="error", message=self.message or "", wire=(("status", self.status), *retry, *code))


class WireForm(Form):
    """``{wire: FAULT, turn: TURN}``: for ``harness emulate``, the reply ``turn`` delivered with a
    wire fault; ``harness run`` plays ``turn`` as it is."""

    wire: Any
    """``drop_mid_stream`` (chunks first, default 1), ``truncate``, ``cut_mid_event``,
    ``error_event`` (the HTTP status whose error type the in-band event carries, default 500),
    ``slow`` (seconds per chunk, default 0.05), ``malformed_chunk``, ``bad_checksum``,
    ``unknown_event``, ``gzip``, ``unknown_fields``, ``interleaved``, ``split`` (the sizes of the
    pieces the body's bytes are cut into, in turn, default ``[1]``), ``stall`` (events before the
    stream stalls, open and silent, default 1), ``slow_first_byte`` (seconds before the status,
    default 0.3), ``refusal`` (the reply as the model's refusal), ``content_filter`` (as the
    provider's filter withheld it), and ``redacted_thinking`` (Anthropic's encrypted reasoning, its
    opaque data; not a fault): a name, a list of names or ``{name: parameter}``."""
    turn: TurnEntry

    def build(self) -> ModelTurn:
        inner = turn_value(self.turn)
        if inner.kind != "reply" or inner.wire:
            raise ScenarioError(
                "a wire fault wraps a reply: no error, aborted, status, raise, hang_up or fault in its turn"
                " (the emulator already serves raise as a dropped connection and hang_up as a truncated stream)"
            )
        return dataclasses.replace(inner, wire=wire_faults(self.wire))


TurnEntry = Annotated[
    Union[
        Annotated[str, Tag("text")],
        Annotated[ErrorForm, Tag("ErrorForm")],
        Annotated[AbortedForm, Tag("AbortedForm")],
        Annotated[StatusForm, Tag("StatusForm")],
        Annotated[WireForm, Tag("WireForm")],
        Annotated[ReplyForm, Tag("ReplyForm")],
    ],
    Discriminator(
        tagger(
            {"error": "ErrorForm", "aborted": "AbortedForm", "status": "StatusForm", "wire": "WireForm"},
            default="ReplyForm",
            text="text",
        ),
        custom_error_type="shape",
        custom_error_message="a turn is a text, or a mapping with text/thinking/calls, error or aborted",
    ),
]
"""A model turn; a bare string is a text reply."""
WireForm.model_rebuild()


def turn_value(entry: str | Form) -> ModelTurn:
    return ModelTurn(text=entry) if isinstance(entry, str) else entry.value


def turn_entry(t: ModelTurn) -> TurnEntry:
    wire = dict(t.wire)
    if t.kind == "error" and "status" in wire:
        status: dict[str, Any] = {
            "status": wire["status"],
            "message": t.message or None,
            "retry_after": wire.get("retry_after"),
            "code": wire.get("code"),
        }
        return StatusForm.model_construct(**{k: v for k, v in status.items() if v is not None})
    if wire:
        return WireForm.model_construct(wire=wire_data(t.wire), turn=turn_entry(dataclasses.replace(t, wire=())))
    if t.kind == "error":
        return ErrorForm.model_construct(error=t.message)
    if t.kind == "aborted":
        return AbortedForm.model_construct(aborted=t.message)
    if t.kind == "reply" and t.thinking is None and not t.calls and t.stop == "stop" and t.text is not None:
        if not t.cancel and t.text == t.text.strip() and "\n" not in t.text and plain_scalar(t.text):
            return t.text  # a bare string is a text reply: the most readable form
    given: dict[str, Any] = {
        "thinking": t.thinking,
        "text": t.text,
        "calls": [CallForm.of(c) for c in t.calls] or None,
        "stop": None if t.stop == "stop" else t.stop,
        "raise_": t.message if t.kind == "raise" else None,
        "hang_up": t.kind == "hang_up" or None,
        "fault": t.kind if t.kind in FAULTS else None,
        "message": t.message if t.kind in FAULTS and t.message else None,
    }
    given = {k: v for k, v in given.items() if v is not None}
    if not given:
        given["empty"] = True
    cancel: dict[str, Any] = {"cancel": True} if t.cancel else {}
    return ReplyForm.model_construct(**given, **cancel)


class NestedForm(Form):
    """``exec:``: the tool body runs ``runtime.aexec`` (``sync: true``: ``runtime.exec``) with its own script."""

    shape = "exec takes {prompt: ..., tools: [...] | inherit, turns: [...]}"
    prompt: str = "nested task"
    tools: list[str | int] | Literal["inherit"] | None = Field(default_factory=list)
    """Names of planned tools, ``[]`` for none, or ``inherit``: the outer run's menu."""
    turns: list[TurnEntry] | None = None
    steering: Schedule = None
    follow_ups: Schedule = None
    max_iterations: StrictInt | None = None
    sync: StrictBool = False

    def build(self) -> NestedRun:
        tools = None if self.tools == "inherit" else tuple(str(t) for t in self.tools or ())
        return NestedRun(
            prompt=self.prompt,
            tools=tools,
            turns=tuple(turn_value(t) for t in self.turns or ()),
            steering=schedule(self.steering, "nested steering"),
            follow_ups=schedule(self.follow_ups, "nested follow_ups"),
            max_iterations=self.max_iterations,
            sync=self.sync,
        )

    @classmethod
    def of(cls, n: NestedRun) -> NestedForm:
        given: dict[str, Any] = {
            "steering": schedule_data(n.steering),
            "follow_ups": schedule_data(n.follow_ups),
            "max_iterations": n.max_iterations,
            "sync": n.sync or None,
        }
        return cls.model_construct(
            prompt=n.prompt,
            tools="inherit" if n.tools is None else list(n.tools),
            turns=[turn_entry(t) for t in n.turns],
            **{k: v for k, v in given.items() if v is not None},
        )


# ---------------------------------------------------------------------------------------------
# The YAML form, declared: one pydantic model per mapping of a scenario file. Validating one
# checks its keys and types and builds its value (so a ScenarioError a value raises is located
# too); ``of`` is the way back, setting only the keys a readable file would have.
# ---------------------------------------------------------------------------------------------


BEHAVIOUR_KINDS: tuple[BehaviourKind, ...] = get_args(BehaviourKind)


class BehaviourForm(Form):
    """What one execution of a tool does: exactly one of ``return``, ``error``, ``raise``, ``exec``."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": [k]} for k in BEHAVIOUR_KINDS]})
    shape = "a plan entry is {return: VALUE}, {error: TEXT}, {raise: TEXT} or {exec: ...}"
    return_: Any = Field(None, alias="return")
    """Return this value: a text as is, null as "", other JSON values as JSON text."""
    error: str | None = None
    """Return an is_error result with this text."""
    raise_: str | None = Field(None, alias="raise")
    """Raise ``RuntimeError(TEXT)`` (with ``base: true`` a BaseException the loop does not catch)."""
    exec_: NestedForm | None = Field(None, alias="exec")
    base: bool = False
    details: Any = None
    """Goes into the result's ``details`` (with return or error)."""
    updates: list[Any] | None = None
    """Partial results reported with ``on_update`` first."""
    cancel: bool = False
    """Set the run's ``cancel_event`` first (a user pressing stop while the tool runs)."""
    mutate: bool = False
    """Rewrite the arguments in place first (the committed history must not change)."""
    late_update: bool = False
    """Call ``on_update`` again after returning (the loop must drop it)."""
    unprintable: bool = False
    """With raise: an exception whose ``str()`` raises."""
    wait: bool = False
    """Wait until the user (the harness) sets ``cancel_event`` from outside."""

    def build(self) -> Behaviour:
        kinds = [k for k in BEHAVIOUR_KINDS if f"{k}_" in self.model_fields_set or k in self.model_fields_set]
        if len(kinds) != 1:
            raise ScenarioError("give exactly one of return, error, raise, exec")
        kind = kinds[0]
        value = {"return": self.return_, "error": self.error or "", "raise": self.raise_ or "", "exec": None}[kind]
        return Behaviour(
            kind,
            value=value,
            updates=tuple(self.updates or ()),
            cancel=self.cancel,
            nested=None if self.exec_ is None else self.exec_.value,
            details=self.details,
            base=self.base,
            mutate=self.mutate,
            late_update=self.late_update,
            unprintable=self.unprintable,
            wait=self.wait,
        )

    @classmethod
    def of(cls, b: Behaviour) -> BehaviourForm:
        given: dict[str, Any] = {"exec_": NestedForm.of(b.nested)} if b.nested is not None else {}
        if b.kind != "exec":
            given[f"{b.kind}_" if b.kind != "error" else "error"] = jsonish(b.value)
        if b.base:
            given["base"] = True
        if b.details is not None:
            given["details"] = jsonish(b.details)
        if b.updates:
            given["updates"] = jsonish(list(b.updates))
        for flag in ("cancel", "mutate", "late_update", "unprintable", "wait"):
            if getattr(b, flag):
                given[flag] = True
        return cls.model_construct(**given)


class LeaveForm(Form):
    """``{reply: N, after: K}``, ``{tool: N}`` or ``{poll: N}``, with ``how:``: where the run is
    when its consumer stops reading (see ``Leave``)."""

    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": [k]} for k in ("reply", "tool", "poll")]})
    shape = "leave is {reply: N, after: K}, {tool: N} or {poll: N}, with how: aclose, break or with"
    reply: Annotated[int, BeforeValidator(not_bool), AfterValidator(poll_number)] | None = None
    """Leave while the N-th top-level model request streams its reply (a plain reply)."""
    tool: Annotated[int, BeforeValidator(not_bool), AfterValidator(poll_number)] | None = None
    """Leave while the N-th top-level execution of a planned tool runs (after its updates)."""
    poll: Annotated[int, BeforeValidator(not_bool), AfterValidator(poll_number)] | None = None
    """Leave while the loop waits on its N-th steering poll."""
    after: Annotated[int, BeforeValidator(not_bool), Field(ge=0)] = 0
    """With reply: after this many of its message_update events (fewer when the reply has fewer)."""
    how: Literal["aclose", "break", "with"] = "aclose"
    """``aclose``: ``await stream.aclose()`` inside the ``async for``; ``break``: break, then
    ``aclose()``; ``with``: break out of ``async with agent_loop(...) as stream:``."""

    def build(self) -> Leave:
        given: tuple[tuple[LeavePoint, int | None], ...] = (
            ("reply", self.reply),
            ("tool", self.tool),
            ("poll", self.poll),
        )
        points = [(at, number) for at, number in given if number is not None]
        if len(points) != 1:
            raise ScenarioError("give exactly one of reply, tool, poll")
        if self.after and self.reply is None:
            raise ScenarioError("after counts a reply's message_update events: give it only with reply")
        (at, number), how = points[0], self.how
        return Leave(at, number, self.after, how)

    @classmethod
    def of(cls, leave: Leave) -> LeaveForm:
        given: dict[str, Any] = {leave.at: leave.number}
        if leave.after:
            given["after"] = leave.after
        if leave.how != "aclose":
            given["how"] = leave.how
        return cls.model_construct(**given)


class ToolForm(Form):
    """A tool on the menu: its spec and a behaviour plan, or ``python:`` naming a real tool."""

    shape = "a tool is {name: ..., parameters: {JSON Schema}, plan: [...]} or {python: package.module:attribute}"
    name: str | None = None
    """Required for a planned tool; a ``python:`` tool takes its function's tool name unless given."""
    description: str = ""
    parameters: dict[str, Any] | None = None
    """The arguments' JSON Schema; none: an object with no properties."""
    python: str | None = None
    """``package.module:attribute`` of a real tool (an ``@function``, ``AgentTool`` or dict)."""
    plan: list[BehaviourForm] | None = None
    """Execution N follows entry N; past the end the last repeats; none: every execution returns "ok"."""
    nested_turns: list[TurnEntry] | None = None
    """With ``python:``: the model that answers a nested exec in the tool's body (an ``@agentic_function``)."""

    def build(self) -> ToolDef:
        nested = tuple(turn_value(t) for t in self.nested_turns or ())
        if self.name is None and self.python is None:
            raise ScenarioError("name: required (or python: package.module:attribute, whose tool names itself)")
        if self.python is not None:
            if self.plan:
                raise ScenarioError(f"tool {self.name!r} is real (python) and cannot also have a plan")
            given = self.model_fields_set  # what the file says wins over the function's own spec
            return ToolDef.real(
                self.name,
                self.python,
                parameters=dict(self.parameters or {}) if "parameters" in given else None,
                description=self.description if "description" in given else None,
                nested_turns=nested,
            )
        assert self.name is not None  # checked above
        return ToolDef(
            name=self.name,
            parameters=dict(self.parameters or {"type": "object", "properties": {}}),
            description=self.description,
            plan=tuple(b.value for b in self.plan or ()),
            nested_turns=nested,
        )

    @classmethod
    def of(cls, t: ToolDef) -> ToolForm:
        given: dict[str, Any] = {"description": t.description} if t.description else {}
        if t.is_real:
            given["python"] = t.python
            if t.nested_turns:
                given["nested_turns"] = [turn_entry(n) for n in t.nested_turns]
        elif t.plan:
            given["plan"] = [BehaviourForm.of(b) for b in t.plan]
        return cls.model_construct(name=t.name, parameters=jsonish(t.parameters), **given)


class UserForm(Form):
    """``{user: TEXT}``: a user message already in the context."""

    user: str | None

    def build(self) -> HistoryMessage:
        return HistoryMessage("user", text=self.user or "")


class AssistantForm(Form):
    """``{assistant: TEXT or null, calls: [...]}``: an assistant message; its calls need ids."""

    assistant: str | None
    calls: list[CallForm] | None = None

    def build(self) -> HistoryMessage:
        return HistoryMessage("assistant", text=self.assistant, calls=tuple(c.value for c in self.calls or ()))


class ToolResultForm(Form):
    """``{tool_result: TEXT, id: CALL_ID, name: TOOL}``: a tool result already in the context."""

    tool_result: str | None
    id: str | int = ""
    name: str | int = ""
    is_error: bool = False

    def build(self) -> HistoryMessage:
        return HistoryMessage(
            "toolResult",
            text=self.tool_result or "",
            tool_call_id=str(self.id),
            tool_name=str(self.name),
            is_error=self.is_error,
        )


HistoryEntry = Annotated[
    Union[
        Annotated[UserForm, Tag("UserForm")],
        Annotated[AssistantForm, Tag("AssistantForm")],
        Annotated[ToolResultForm, Tag("ToolResultForm")],
    ],
    Discriminator(
        tagger({"user": "UserForm", "tool_result": "ToolResultForm", "assistant": "AssistantForm"}, default=None),
        custom_error_type="shape",
        custom_error_message="a history message is {user: TEXT}, {assistant: TEXT, calls: [...]} "
        "or {tool_result: TEXT, id: ..., name: ...}",
    ),
]


def history_entry(h: HistoryMessage) -> Form:
    if h.role == "user":
        return UserForm.model_construct(user=h.text or "")
    if h.role == "toolResult":
        flag: dict[str, Any] = {"is_error": True} if h.is_error else {}
        return ToolResultForm.model_construct(tool_result=h.text or "", id=h.tool_call_id, name=h.tool_name, **flag)
    calls: dict[str, Any] = {"calls": [CallForm.of(c) for c in h.calls]} if h.calls else {}
    return AssistantForm.model_construct(assistant=h.text, **calls)


class ToolChoiceForm(Form):
    """``{type: function, name: TOOL}``: the model must call TOOL."""

    shape = "tool_choice is auto, required, none or {type: function, name: TOOL}"
    type: Literal["function"]
    name: str = Field(min_length=1)

    def build(self) -> dict[str, str]:
        return {"type": self.type, "name": self.name}


class ConfigForm(Form):
    """The loop's knobs."""

    max_iterations: StrictInt | None = None
    """Passed through unclamped (null, 0, -3, 99 ...); the loop's cap is min(50, it), floored at 1."""
    tool_choice: Literal["auto", "required", "none"] | ToolChoiceForm | None = None
    """``auto``, ``required``, ``none`` or ``{type: function, name: TOOL}`` (checked as exec checks it)."""
    parallel_tool_calls: StrictBool | None = None
    model: str | None = None
    system_prompt: str = ""

    def build(self) -> Config:
        choice = self.tool_choice.value if isinstance(self.tool_choice, ToolChoiceForm) else self.tool_choice
        return Config(self.max_iterations, choice, self.parallel_tool_calls, self.model, self.system_prompt)

    @classmethod
    def of(cls, c: Config) -> ConfigForm | None:
        choice = c.tool_choice
        given: dict[str, Any] = {
            "max_iterations": c.max_iterations,
            "tool_choice": ToolChoiceForm.model_construct(**choice) if isinstance(choice, Mapping) else choice,
            "parallel_tool_calls": c.parallel_tool_calls,
            "model": c.model,
            "system_prompt": c.system_prompt or None,
        }
        given = {k: v for k, v in given.items() if v is not None}
        return cls.model_construct(**given) if given else None
