"""One SDK client per event loop, and closing a loop's clients before the loop ends.

Apart from ``_shared.py`` so that ``openprogram.providers`` can export
:func:`close_loop_clients` (``runtime`` calls it) without importing the backend machinery.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

_ClientT = TypeVar("_ClientT")


class PerLoopClients(Generic[_ClientT]):
    """One lazily built client per event loop, safe to use from several threads.

    An async SDK client's connection pool belongs to the loop that first used it; a sync
    ``runtime.exec`` nested in a tool runs a second loop on a helper thread, and reusing the first
    loop's client there fails. Clients of loops that have closed since (a finished ``asyncio.run``)
    are dropped whenever a client is asked for, so they do not pile up.
    """

    def __init__(self, build: Callable[[], _ClientT]) -> None:
        self._build = build
        self._clients: dict[asyncio.AbstractEventLoop, _ClientT] = {}
        self._lock = threading.Lock()
        _all_per_loop_clients.add(self)

    def get(self) -> _ClientT:
        """The running loop's client, built on its first use; call it from inside a coroutine."""
        loop = asyncio.get_running_loop()
        with self._lock:
            for stale in [known for known in self._clients if known.is_closed()]:
                del self._clients[stale]
            client = self._clients.get(loop)
            if client is None:
                client = self._build()
                self._clients[loop] = client
            return client

    def __len__(self) -> int:
        return len(self._clients)

    async def aclose_running(self) -> None:
        """Close and forget the running loop's client, while that loop can still close it."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._clients.pop(loop, None)
        if client is None:
            return
        close = getattr(client, "aclose", None) or getattr(client, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                result = close()
                if inspect.isawaitable(result):
                    await result


_all_per_loop_clients: weakref.WeakSet[PerLoopClients[Any]] = weakref.WeakSet()


async def close_loop_clients() -> None:
    """Close every SDK client the backends built for the running loop.

    Call it before a short-lived loop ends (``runtime`` does, for a nested ``runtime.exec`` on a
    helper loop; so does code that runs backends under its own ``asyncio.run``): an async client's
    connections belong to the loop that made them, and closing them once the loop is gone fails or
    leaks them. Clients passed to a backend's constructor are the caller's and are left alone."""
    for clients in list(_all_per_loop_clients):
        await clients.aclose_running()
