"""The vocabulary every other module speaks: content blocks, messages, tool specs, stream events.

Messages are frozen once built: the loop, the providers and the harness share them by reference
(a recorded request is a tuple of the very messages the loop sent), so immutability is what makes
that sharing safe and keeps history copies O(1) per message instead of deep copies per request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Protocol, Self, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_validator, model_serializer

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
"""Why a model turn ended. ``toolUse``: the message holds tool calls the loop must run."""

# defer_build: a model's validator is made when something first validates one, not at import;
# the loop's hot path builds most of them with ``trusted`` and never needs it (import openprogram
# was a quarter pydantic schema building).
_FROZEN = ConfigDict(frozen=True, extra="forbid", defer_build=True)
FROZEN_ANY = ConfigDict(**_FROZEN, arbitrary_types_allowed=True)
"""The config of the package's other frozen models (events, requests, tool results), which hold
values of any type (a tool's ``details``, a request's ``extra``)."""

_Model = TypeVar("_Model", bound=BaseModel)
_new = object.__new__
_setattr = object.__setattr__
# BaseModel's four slots, set through their descriptors: a third of what ``object.__setattr__``
# costs by name, and a round builds two dozen models.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def trusted(cls: type[_Model], values: dict[str, Any], fields_set: Iterable[str] | None = None) -> _Model:
    """An instance of ``cls`` from values this package made itself, without validating them again.

    The loop's hot path builds a dozen frozen models a round from values that are valid by
    construction (an id it just read, a tuple of blocks it already holds); pydantic's validation
    of those costs more than the rest of the round. ``values`` must hold every field, in field
    order (the order a dump shows them in); ``fields_set`` is what a keyword call would have set
    (default: every key), so ``exclude_unset`` dumps stay the same. Never for outside input.
    """
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields(obj, set(values if fields_set is None else fields_set))
    _set_extra(obj, None)
    _set_private(obj, None)
    return obj


def trusted_copy(model: _Model, **changes: Any) -> _Model:
    """``model.model_copy(update=changes)`` without its generic machinery: same result, a fifth of the cost."""
    values = model.__dict__.copy()
    values.update(changes)
    fields = set(model.__pydantic_fields_set__)
    fields.update(changes)
    return trusted(type(model), values, fields)


class LazyField(BaseModel):
    """A frozen model one of whose fields (``_lazy_field``) is computed on first use.

    Why: a streaming reply of N deltas has N events, each carrying the message as it stood; built
    eagerly that is N copies of a growing text, quadratic in time and memory. A lazy instance
    holds a small recipe in ``_recipe`` instead and builds the value when it is first read, as an
    attribute, in a dump, a comparison, a copy or a pickle; from then on it is an ordinary model.
    Built only by :meth:`lazy`; instances made the usual way hold the value from the start.
    """

    __slots__ = ("_recipe",)
    _lazy_field: ClassVar[str] = ""

    @classmethod
    def lazy(cls, values: dict[str, Any], recipe: Any) -> Self:
        """An instance whose ``_lazy_field`` is ``cls._build(recipe)``, computed when first read."""
        fields = set(values)
        fields.add(cls._lazy_field)
        obj = _new(cls)  # trusted(), inlined: a streamed reply makes one per delta
        _set_dict(obj, values)
        _set_fields(obj, fields)
        _set_extra(obj, None)
        _set_private(obj, None)
        _set_recipe(obj, recipe)
        return obj

    @staticmethod
    def _build(recipe: Any) -> Any:  # pragma: no cover - every lazy class defines it
        raise NotImplementedError

    def _materialize(self) -> None:
        values = self.__dict__
        name = self._lazy_field
        if name in values:
            return
        value = self._build(object.__getattribute__(self, "_recipe"))
        fields = type(self).__pydantic_fields__
        if next(reversed(fields)) == name:
            values[name] = value  # the last field: appending keeps the dict in field order
        else:
            _setattr(self, "__dict__", {key: value if key == name else values[key] for key in fields})
        _setattr(self, "_recipe", None)

    def __getattr__(self, name: str) -> Any:
        if name == self._lazy_field and name not in self.__dict__:
            self._materialize()
            return self.__dict__[name]
        # BaseModel defines __getattr__ (its private attributes) only when not TYPE_CHECKING
        return super().__getattr__(name)  # type: ignore[misc]

    @model_serializer(mode="wrap")
    def _serialize_built(self, handler: SerializerFunctionWrapHandler) -> Any:
        self._materialize()
        return handler(self)

    def __eq__(self, other: object) -> bool:
        self._materialize()
        if isinstance(other, LazyField):
            other._materialize()
        return super().__eq__(other)

    def __hash__(self) -> int:
        self._materialize()
        return hash((type(self), *self.__dict__.values()))

    def __repr_args__(self) -> Any:
        self._materialize()
        return super().__repr_args__()

    def __iter__(self) -> Any:
        self._materialize()
        return super().__iter__()

    def __copy__(self) -> Any:
        self._materialize()
        return super().__copy__()

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        self._materialize()
        return super().__deepcopy__(memo)

    def __getstate__(self) -> dict[Any, Any]:
        self._materialize()
        return super().__getstate__()


_set_recipe = LazyField.__dict__["_recipe"].__set__


class TextContent(BaseModel):
    model_config = _FROZEN
    type: Literal["text"] = "text"
    text: str


class ThinkingContent(BaseModel):
    """Reasoning the model showed; kept so providers that sign it (Anthropic) can be sent it back.

    The provider fields each say one thing, so a history can be sent back as it came:
    ``signature`` is the provider's signature over the thinking (Anthropic, Bedrock, Gemini; for a
    ``redacted`` block, Anthropic's opaque ``data``); ``redacted`` marks Anthropic's
    ``redacted_thinking``; ``item_id`` and ``encrypted_content`` are an OpenAI Responses reasoning
    item's id and its encrypted reasoning.
    """

    model_config = _FROZEN
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str | None = None
    redacted: bool = False
    item_id: str | None = None
    encrypted_content: str | None = None


class ToolCall(BaseModel):
    """The model's pick of a function.

    ``raw_arguments`` is set only when the provider's argument text was not a JSON object; then
    ``arguments`` is ``{}`` and the loop answers with an error instead of running the tool.
    ``thought_signature`` is Gemini's signature on the function-call part (base64), which Gemini
    requires back on the same call in the next request.
    """

    model_config = _FROZEN
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None
    thought_signature: str | None = None


AssistantContent = Annotated[Union[TextContent, ThinkingContent, ToolCall], Field(discriminator="type")]


def _text_blocks(value: Any) -> Any:
    if isinstance(value, str):
        return (TextContent(text=value),)
    return value


class Usage(BaseModel):
    model_config = _FROZEN
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0


class UserMessage(BaseModel):
    """A user turn. A plain string is accepted and kept as a string (the common case)."""

    model_config = _FROZEN
    role: Literal["user"] = "user"
    content: str | tuple[TextContent, ...]
    timestamp: int | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(block.text for block in self.content)


class AssistantMessage(BaseModel):
    model_config = _FROZEN
    role: Literal["assistant"] = "assistant"
    content: tuple[AssistantContent, ...] = ()
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str = ""
    provider: str = ""
    timestamp: int | None = None

    @property
    def text(self) -> str:
        """The reply's visible text (thinking excluded), which is what ``runtime.exec`` returns."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [block for block in self.content if isinstance(block, ToolCall)]


class ToolResultMessage(BaseModel):
    model_config = _FROZEN
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: tuple[TextContent, ...] = ()
    is_error: bool = False
    details: Any = None
    timestamp: int | None = None

    _coerce_content = field_validator("content", mode="before")(_text_blocks)

    if TYPE_CHECKING:
        # What callers pass: a str becomes one text block (``_text_blocks``). Declared for type
        # checkers only, so pydantic's own __init__ (and the fields a call sets) is untouched.
        def __init__(
            self,
            *,
            role: Literal["toolResult"] = ...,
            tool_call_id: str,
            tool_name: str,
            content: str | Iterable[TextContent] = ...,
            is_error: bool = ...,
            details: Any = ...,
            timestamp: int | None = ...,
        ) -> None: ...

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content)


Message = Annotated[Union[UserMessage, AssistantMessage, ToolResultMessage], Field(discriminator="role")]


class ToolSpec(BaseModel):
    """What the model is shown of a tool: a name, why to pick it, and a JSON Schema of its arguments."""

    model_config = _FROZEN
    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


# ---------------------------------------------------------------------------------------------
# Assistant-message stream events: what a provider yields while one reply streams in.
# ``partial`` is the message as it stands after the event, so a consumer never has to rebuild it.
# ---------------------------------------------------------------------------------------------


class _Event(BaseModel):
    model_config = _FROZEN


class _PartialEvent(LazyField):
    """An event carrying ``partial``; the builder makes it lazy (see :class:`LazyField`)."""

    model_config = _FROZEN
    _lazy_field: ClassVar[str] = "partial"

    @staticmethod
    def _build(recipe: Callable[[], AssistantMessage]) -> AssistantMessage:
        return recipe()


class _HasPartial(Protocol):
    """What the loop reads of a streaming event: every event but done and error, a provider's own included."""

    @property
    def partial(self) -> AssistantMessage: ...


class StartEvent(_PartialEvent):
    type: Literal["start"] = "start"
    partial: AssistantMessage


class TextStartEvent(_PartialEvent):
    type: Literal["text_start"] = "text_start"
    content_index: int
    partial: AssistantMessage


class TextDeltaEvent(_PartialEvent):
    type: Literal["text_delta"] = "text_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


class TextEndEvent(_PartialEvent):
    type: Literal["text_end"] = "text_end"
    content_index: int
    content: str
    partial: AssistantMessage


class ThinkingStartEvent(_PartialEvent):
    type: Literal["thinking_start"] = "thinking_start"
    content_index: int
    partial: AssistantMessage


class ThinkingDeltaEvent(_PartialEvent):
    type: Literal["thinking_delta"] = "thinking_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


class ThinkingEndEvent(_PartialEvent):
    type: Literal["thinking_end"] = "thinking_end"
    content_index: int
    content: str
    partial: AssistantMessage


class ToolCallStartEvent(_PartialEvent):
    type: Literal["toolcall_start"] = "toolcall_start"
    content_index: int
    partial: AssistantMessage


class ToolCallDeltaEvent(_PartialEvent):
    type: Literal["toolcall_delta"] = "toolcall_delta"
    content_index: int
    delta: str
    partial: AssistantMessage


class ToolCallEndEvent(_PartialEvent):
    type: Literal["toolcall_end"] = "toolcall_end"
    content_index: int
    tool_call: ToolCall
    partial: AssistantMessage


class DoneEvent(_Event):
    type: Literal["done"] = "done"
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    reason: Literal["error", "aborted"]
    error: AssistantMessage


AssistantMessageEvent = Annotated[
    Union[
        StartEvent,
        TextStartEvent,
        TextDeltaEvent,
        TextEndEvent,
        ThinkingStartEvent,
        ThinkingDeltaEvent,
        ThinkingEndEvent,
        ToolCallStartEvent,
        ToolCallDeltaEvent,
        ToolCallEndEvent,
        DoneEvent,
        ErrorEvent,
    ],
    Field(discriminator="type"),
]


def parse_tool_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """Turn a provider's argument text into ``(arguments, raw_arguments)``.

    Empty text means "no arguments" (providers stream ``""`` for parameterless tools); anything
    that is not a JSON object is kept verbatim in ``raw_arguments`` so the loop can show the model
    exactly what it sent.
    """
    if not text.strip():
        return {}, None
    body = text.strip(" \t\n\r")  # JSON's whitespace, which json.loads allows around a value
    try:
        value, end = _DECODER.raw_decode(body)  # json.loads without its two regex passes
    except ValueError:
        return {}, text
    if end != len(body) or not isinstance(value, dict):
        return {}, text
    return value, None


_DECODER = json.JSONDecoder()


__all__ = [
    "FROZEN_ANY",
    "AssistantContent",
    "AssistantMessage",
    "AssistantMessageEvent",
    "DoneEvent",
    "ErrorEvent",
    "LazyField",
    "Message",
    "StartEvent",
    "StopReason",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "parse_tool_arguments",
    "trusted",
    "trusted_copy",
]
