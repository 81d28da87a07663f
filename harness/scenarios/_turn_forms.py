"""The file form of a scenario's model turns: calls, replies, provider endings, nested runs.

These are the pydantic forms ``harness.scenarios._scenario`` builds a scenario file from (``turns:``,
``nested_turns:`` and ``exec:``), with the poll-number schedules (``steering:``,
``follow_ups:``) they share. Validating one checks its keys and types and builds its value;
``of`` (and ``turn_entry``) is the way back, setting only the keys a readable file would have.
This module sits below ``harness.scenarios._scenario`` and never imports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BeforeValidator, Discriminator, Field, StrictBool, StrictInt, Tag

from harness.scenarios._parts import FAULTS, WIRE_FAULTS, Call, ModelTurn, NestedRun, ScenarioError, TurnKind
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
        return cls.model_construct(name=c.name, **given, **({"id": c.id} if c.id is not None else {}))


_WIRE_DEFAULTS: Mapping[str, Any] = {"drop_mid_stream": 1, "slow": 0.05}
"""A wire fault named without a parameter: dropped after one chunk, chunks 50 ms apart; the others are flags."""


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
        if name == "slow" and not number:
            raise ScenarioError(f"slow takes the seconds before each chunk (0 or more), got {parameter!r:.60}")
        pairs.append((name, parameter))
    return tuple(pairs)


def wire_data(pairs: tuple[tuple[str, Any], ...]) -> Any:
    """The readable ``wire:`` of delivery-fault pairs: a name when one fault has its default."""
    if len(pairs) == 1 and pairs[0][1] == _WIRE_DEFAULTS.get(pairs[0][0], True):
        return pairs[0][0]
    return dict(pairs)


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
    fault: Literal[FAULTS] | None = None  # type: ignore[valid-type]
    """A provider that misbehaves after streaming the content (``harness.scenarios._parts.FAULTS``);
    ``error_keeps_stop`` takes its error text from ``message``."""
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

    def build(self) -> ModelTurn:
        if not 400 <= self.status <= 599:
            raise ScenarioError(f"status takes an HTTP error status (400-599), got {self.status}")
        retry = (("retry_after", self.retry_after),) if self.retry_after is not None else ()
        return ModelTurn(kind="error", message=self.message or "", wire=(("status", self.status), *retry))


class WireForm(Form):
    """``{wire: FAULT, turn: TURN}``: for ``harness emulate``, the reply ``turn`` delivered with a
    wire fault; ``harness run`` plays ``turn`` as it is."""

    wire: Any
    """``drop_mid_stream`` (chunks first, default 1), ``truncate``, ``slow`` (seconds per chunk,
    default 0.05), ``malformed_chunk``, ``unknown_event``, ``gzip``: a name, a list of names or
    ``{name: parameter}``."""
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


def turn_entry(t: ModelTurn) -> str | Form:
    wire = dict(t.wire)
    if t.kind == "error" and "status" in wire:
        status = {"status": wire["status"], "message": t.message or None, "retry_after": wire.get("retry_after")}
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
    return ReplyForm.model_construct(**given, **({"cancel": True} if t.cancel else {}))


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
            steering=self.steering or {},
            follow_ups=self.follow_ups or {},
            max_iterations=self.max_iterations,
            sync=self.sync,
        )

    @classmethod
    def of(cls, n: NestedRun) -> NestedForm:
        given = {
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
