"""Helpers every provider test uses: drive one ``Provider.stream`` call, read its final message."""

from __future__ import annotations

import asyncio
from typing import Any

from openprogram.providers import ModelRequest
from openprogram.types import AssistantMessage


def collect(
    provider: Any, request: ModelRequest, cancel_event: asyncio.Event | None = None, *, timeout: float = 20
) -> list[Any]:
    """Every event of one ``stream`` call, in a fresh event loop; a stream that hangs fails the test."""

    async def events() -> list[Any]:
        return [event async for event in provider.stream(request, cancel_event)]

    return asyncio.run(asyncio.wait_for(events(), timeout=timeout))


def final(events: list[Any]) -> AssistantMessage:
    """The message of the one ``done`` or ``error`` event, which must be the last."""
    last = events[-1]
    assert last.type in ("done", "error")
    assert sum(event.type in ("done", "error") for event in events) == 1
    return last.message if last.type == "done" else last.error


__all__ = ["collect", "final"]
