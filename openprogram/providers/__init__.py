"""The seam between the loop and a model: one request in, one stream of events out.

Every backend (the real SDK ones here, the harness's scripted and recorded ones) implements the
same two-line protocol, which is why a test double can stand anywhere a real model does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, Literal, Protocol, Union, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from openprogram.providers.builder import MessageBuilder
from openprogram.types import AssistantMessageEvent, Message, ToolSpec

ToolChoice = Union[Literal["auto", "required", "none"], dict[str, Any]]
"""``"auto"``, ``"required"``, ``"none"`` or ``{"type": "function", "name": X}`` (force X)."""


class ModelRequest(BaseModel):
    """Everything a provider needs for one model call, frozen so a recorded copy cannot drift.

    ``messages`` holds the loop's own (immutable) message objects: recording a request costs one
    tuple, not a deep copy of the history.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    model: str | None = None
    system_prompt: str = ""
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    extra: Mapping[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Provider(Protocol):
    """A model backend.

    ``stream`` yields assistant-message events and must finish with exactly one ``done`` or
    ``error`` event. It should report failures as an ``error`` event; if it raises instead, the
    loop still turns that into an error finish, but the event is the polite way.
    """

    def stream(
        self, request: ModelRequest, cancel_event: asyncio.Event | None = None
    ) -> AsyncIterator[AssistantMessageEvent]: ...


__all__ = ["MessageBuilder", "ModelRequest", "Provider", "ToolChoice"]
