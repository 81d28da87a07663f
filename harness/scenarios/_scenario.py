"""Scenario: one value that fully determines a run of the loop, and its YAML form.

A scenario is what a property test generates, what a shrunk failure is saved as, and what a
person writes by hand to pin a rule: the prompts, the tools (a JSON Schema and a per-call
behaviour plan each), the model's turns, when steering and follow-up messages arrive (keyed by
poll number), and the loop's config. ``harness.checking._runner`` runs it and ``harness.checking._check`` judges the
run; this module holds only the value (its parts are in ``harness.scenarios._scenario_parts``, re-exported
here), so everything else can import it. The file forms of the parts are in
``harness.scenarios._forms``, the ``meta.expect`` checks in ``harness.scenarios._expectations``.

The file form is meant to be read and edited by people (``docs/scenarios.md``)::

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

It is declared once, as the pydantic models below (``ScenarioForm`` and the forms it is made
of): they check a file's keys and types, build the value, name what is wrong in the file's own
words (``turn 2, call 1: ...``), and are the JSON Schema an editor checks a file against
(``json_schema()``, ``harness schema``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)

import harness._yaml as bounded_yaml
from harness._contract import effective_cap
from harness.scenarios._expectations import expectation_errors, meta_schema
from harness.scenarios._forms import (
    AbortedForm,
    AssistantForm,
    BehaviourForm,
    CallForm,
    ConfigForm,
    ErrorForm,
    HistoryEntry,
    LeaveForm,
    NestedForm,
    ReplyForm,
    Schedule,
    ToolForm,
    ToolResultForm,
    TurnEntry,
    UserForm,
    history_entry,
    not_bool,
    poll_number,
    schedule_data,
    turn_entry,
    turn_value,
)
from harness.scenarios._scenario_parts import (
    STEERING_SHAPES,
    Config,
    HistoryMessage,
    Leave,
    ModelTurn,
    NestedRun,
    ScenarioError,
    SteeringShape,
    ToolDef,
    schedule,
)
from harness.scenarios._yamlform import Form, describe_fields, dump_yaml, jsonish, located


@dataclass(frozen=True)
class Scenario:
    """Everything that determines one run; ``harness.checking._runner.run(scenario)`` drives the real loop."""

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
    cancel_at: str | int | None = None
    """When the user presses stop from outside: ``"start"`` (before the run starts) or a steering
    poll number (the N-th poll sets ``cancel_event``: between tools, or before a model call)."""
    steering_as: Mapping[int, str] = field(default_factory=dict)
    """``{poll number: shape}``: how the getter returns that poll's messages (``STEERING_SHAPES``)."""
    consumers: int = 1
    """2: a second consumer iterates the stream concurrently with the first (it must get every
    event too, or be refused at once)."""
    leave: Leave | None = None
    """The consumer stops reading early, while the run is in the middle of a reply, a tool or a
    poll (``Leave``): the run must be cancelled and nothing start after it left."""

    def __post_init__(self) -> None:
        if (
            self.cancel_at is not None
            and self.cancel_at != "start"
            and (isinstance(self.cancel_at, bool) or not isinstance(self.cancel_at, int) or self.cancel_at < 1)
        ):
            raise ScenarioError(f"cancel_at is 'start' or a steering poll number, got {self.cancel_at!r:.60}")
        shapes = dict(self.steering_as)
        for poll, shape in shapes.items():
            if shape not in STEERING_SHAPES:
                raise ScenarioError(f"steering_as: poll {poll}: a shape is one of {', '.join(STEERING_SHAPES)}")
        object.__setattr__(self, "steering_as", {int(k): v for k, v in sorted(shapes.items()) if v != "list"})
        if self.consumers not in (1, 2):
            raise ScenarioError(f"consumers is 1 or 2, got {self.consumers!r:.60}")
        if self.leave is not None and self.consumers != 1:
            raise ScenarioError("leave: a consumer that leaves early is the stream's only consumer (consumers: 1)")
        object.__setattr__(self, "prompts", tuple(self.prompts))
        object.__setattr__(self, "history", tuple(self.history))
        if self.resume is not None and self.resume == (bool(self.history) and not self.prompts):
            object.__setattr__(self, "resume", None)  # one spelling per scenario: YAML round-trips exactly
        if self.resume and self.prompts:
            raise ScenarioError("a resumed run (agent_loop_continue) takes no prompts")
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "turns", tuple(self.turns))
        object.__setattr__(self, "steering", schedule(self.steering, "steering"))
        object.__setattr__(self, "follow_ups", schedule(self.follow_ups, "follow_ups"))
        for poll, shape in self.steering_as.items():
            count = len(self.steering.get(poll, ()))
            if shape in ("str", "message") and count != 1:
                raise ScenarioError(f"steering_as: poll {poll} is handed over as one {shape}: schedule one message")
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

    def notes_for_run(self) -> list[str]:
        """What is legal but likely unintended, for ``harness run`` to say: calls that name a tool
        the menu lacks (a fine way to test the not-found path, and an easy typo to make)."""
        notes = []
        menu = [t.name for t in self.tools]
        for number, model_turn in enumerate(self.turns, start=1):
            for index, call in enumerate(model_turn.calls, start=1):
                if call.name not in menu:
                    offered = ", ".join(menu) or "none"
                    notes.append(
                        f"turn {number}, call {index} names tool {call.name!r}, which is not on the menu "
                        f"(tools: {offered}): the loop answers it with the not-found error"
                    )
        return notes

    def tool(self, name: str) -> ToolDef | None:
        return next((t for t in self.tools if t.name == name), None)

    def with_(self, **changes: Any) -> Scenario:
        return replace(self, **changes)

    # -- YAML -------------------------------------------------------------------------------
    def to_data(self) -> dict[str, Any]:
        """The plain data of the YAML form (what ``to_yaml`` writes)."""
        return ScenarioForm.of(self).model_dump(mode="python", by_alias=True, exclude_unset=True)

    @classmethod
    def from_data(cls, data: Any) -> Scenario:
        """From plain data (a parsed YAML document); a ``ScenarioError`` names each problem's place."""
        try:
            scenario: Scenario = ScenarioForm.model_validate(data).value
            return scenario
        except ValidationError as exc:
            lines = located(exc, _FIELDS, _ITEMS, _KEYED, _HINTS)
            raise ScenarioError(
                lines[0] if len(lines) == 1 else f"{len(lines)} problems:\n  " + "\n  ".join(lines)
            ) from None

    def to_yaml(self) -> str:
        """Readable, canonical YAML; ``Scenario.from_yaml(s.to_yaml()) == s``."""
        return dump_yaml(self.to_data())

    @classmethod
    def from_yaml(cls, source: str | Path) -> Scenario:
        """From YAML text or a path (a ``Path``, or a str naming an existing ``.yaml``/``.yml`` file)."""
        text, where = _read_source(source)
        try:
            data = bounded_yaml.load(text)
        except yaml.YAMLError as exc:
            raise ScenarioError(f"{where}: not valid YAML: {bounded_yaml.reason(exc)}") from None
        try:
            return cls.from_data(data)
        except ScenarioError as exc:
            raise ScenarioError(f"{where}: {exc}") from None


class ScenarioForm(Form):
    """A scenario file: everything that determines one run of the loop."""

    model_config = ConfigDict(title="harness scenario")
    shape = "a scenario is a mapping (prompts:, tools:, turns:, ...)"
    name: str = ""
    notes: str = ""
    meta: Annotated[dict[str, Any] | None, Field(json_schema_extra=lambda schema: meta_schema(schema))] = None
    """Kept as is; ``meta.expect`` pins an outcome, ``meta.violation`` is written by a failing property."""
    prompts: str | list[str] = Field(default_factory=list)
    """The user messages the run starts with; one may be given bare."""
    resume: bool | None = None
    """Force (true) or forbid (false) resuming the history with agent_loop_continue."""
    history: list[HistoryEntry] | None = None
    """Messages already in the context; with no prompts the run resumes them."""
    tools: list[ToolForm] | None = None
    turns: list[TurnEntry] | None = None
    """The model's replies, one per request; a bare string is a text reply."""
    steering: Schedule = None
    """``{poll number: [messages]}``: what the N-th get_steering_messages call returns."""
    follow_ups: Schedule = None
    """``{poll number: [messages]}``: what the N-th get_follow_up_messages call returns."""
    config: ConfigForm | None = None
    cancel_at: Literal["start"] | Annotated[int, BeforeValidator(not_bool), AfterValidator(poll_number)] | None = None
    """The user presses stop from outside: ``start`` (before the run) or at steering poll N."""
    steering_as: (
        Annotated[
            dict[Annotated[int, BeforeValidator(not_bool), AfterValidator(poll_number)], SteeringShape],
            Field(json_schema_extra={"propertyNames": {"pattern": "^[1-9][0-9]*$"}}),
        ]
        | None
    ) = None
    """``{poll number: shape}``: how the steering getter returns that poll (str, message, or junk)."""
    consumers: Literal[1, 2] = 1
    """2: a second consumer iterates the stream at the same time."""
    leave: LeaveForm | None = None
    """The consumer stops reading early: ``{reply: N, after: K}``, ``{tool: N}`` or ``{poll: N}``, ``how:``."""

    def build(self) -> Scenario:
        errors = expectation_errors((self.meta or {}).get("expect"))
        if errors:
            raise ScenarioError("; ".join(errors))
        return Scenario(
            prompts=(self.prompts,) if isinstance(self.prompts, str) else tuple(self.prompts),
            tools=tuple(t.value for t in self.tools or ()),
            turns=tuple(turn_value(t) for t in self.turns or ()),
            steering=schedule(self.steering, "steering"),
            follow_ups=schedule(self.follow_ups, "follow_ups"),
            config=self.config.value if self.config is not None else Config(),
            name=self.name,
            notes=self.notes,
            meta=dict(self.meta or {}),
            history=tuple(h.value for h in self.history or ()),
            resume=self.resume,
            cancel_at=self.cancel_at,
            steering_as=self.steering_as or {},
            consumers=self.consumers,
            leave=self.leave.value if self.leave is not None else None,
        )

    @classmethod
    def of(cls, s: Scenario) -> ScenarioForm:
        given: dict[str, Any] = {
            "name": s.name or None,
            "notes": s.notes or None,
            "meta": jsonish(s.meta) or None,
            "prompts": list(s.prompts),
            "resume": s.resume,
            "history": [history_entry(h) for h in s.history] or None,
            "tools": [ToolForm.of(t) for t in s.tools] or None,
            "turns": [turn_entry(t) for t in s.turns],
            "steering": schedule_data(s.steering),
            "follow_ups": schedule_data(s.follow_ups),
            "config": ConfigForm.of(s.config),
            "cancel_at": s.cancel_at,
            "steering_as": dict(s.steering_as) or None,
            "consumers": s.consumers if s.consumers != 1 else None,
            "leave": LeaveForm.of(s.leave) if s.leave is not None else None,
        }
        return cls.model_construct(**{k: v for k, v in given.items() if v is not None})


def json_schema() -> dict[str, Any]:
    """The scenario file format as a JSON Schema, for editors (``docs/scenarios.md``) and validators."""
    schema = describe_fields(ScenarioForm.model_json_schema(), ScenarioForm)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


# The file's own words for a place in it (see ``harness.scenarios._yamlform.located``).
_ITEMS = {"turns": "turn", "calls": "call", "tools": "tool", "plan": "plan", "history": "history", "prompts": "prompt"}
_KEYED = {"steering": "poll", "follow_ups": "poll"}
_HINTS = {"args": "for argument text that is not an object use raw:"}
_FORMS: list[type[Form]] = [
    CallForm,
    ReplyForm,
    ErrorForm,
    AbortedForm,
    NestedForm,
    BehaviourForm,
    ToolForm,
    UserForm,
    AssistantForm,
    LeaveForm,
    ToolResultForm,
    ConfigForm,
    ScenarioForm,
]
_FIELDS = frozenset(f.alias or n for form in _FORMS for n, f in form.model_fields.items())


def _read_source(source: str | Path) -> tuple[str | bytes, str]:
    if isinstance(source, Path):
        return source.read_bytes(), str(source)
    if "\n" not in source and source.endswith((".yaml", ".yml")) and Path(source).is_file():
        return Path(source).read_bytes(), source
    return source, "scenario"
