"""The seam between the loop and a model: one request in, one stream of events out.

Every backend (the real SDK ones here, the harness's scripted and recorded ones) implements the
same two-line protocol, which is why a test double can stand anywhere a real model does.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Literal, Protocol, Union, runtime_checkable

from pydantic import BaseModel, Field

from openprogram.providers.builder import MessageBuilder
from openprogram.types import FROZEN_ANY, AssistantMessageEvent, Message, ToolSpec

ToolChoice = Union[Literal["auto", "required", "none"], dict[str, Any]]
"""``"auto"``, ``"required"``, ``"none"`` or ``{"type": "function", "name": X}`` (force X)."""


class ModelRequest(BaseModel):
    """Everything a provider needs for one model call, frozen so a recorded copy cannot drift.

    ``messages`` holds the loop's own (immutable) message objects: recording a request costs one
    tuple, not a deep copy of the history.
    """

    model_config = FROZEN_ANY

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


# ---------------------------------------------------------------------------------------------
# The real-request guard (the switch; SDKProvider.stream in _shared.py applies it)
# ---------------------------------------------------------------------------------------------

ALLOW_MODEL_REQUESTS: bool = True
"""Whether the SDK backends may send a request to a model provider: set it to ``False`` (or the
environment variable ``OPENPROGRAM_ALLOW_MODEL_REQUESTS`` to ``0``) and every one of them ends
its reply with an ``error`` finish instead, before any connection is made. Requests to a
loopback base URL (an emulator, a fake server a test started) are not refused. Under the
harness's pytest plugin a test refuses them unless it opts in; see ``docs/pytest-plugin.md``."""

ALLOW_MODEL_REQUESTS_ENV = "OPENPROGRAM_ALLOW_MODEL_REQUESTS"

_allowed_here: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "openprogram_allow_model_requests", default=None
)


@contextlib.contextmanager
def allow_model_requests(allow: bool = True) -> Iterator[None]:
    """Decide, for the code inside, whether real model requests may be sent, whatever
    ``ALLOW_MODEL_REQUESTS``, the environment variable or the running test say.

    The innermost one wins; it follows the code the way context variables do (into tasks and
    into a sync ``runtime.exec``), not into threads the code starts by hand.
    """
    token = _allowed_here.set(bool(allow))
    try:
        yield
    finally:
        _allowed_here.reset(token)


__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "ALLOW_MODEL_REQUESTS_ENV",
    "MessageBuilder",
    "ModelRequest",
    "Provider",
    "ToolChoice",
    "allow_model_requests",
]
