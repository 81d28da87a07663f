"""The event loop a scenario runs on: ``run_coroutine``, ``asyncio.run`` as the harness needs it.

Every run gets what ``asyncio.run`` gives, a loop nothing ran on before, and leaves as it does (its
leftover tasks cancelled, its async generators closed), but without ``asyncio.run``'s SIGINT
handler, whose set-up reprs the whole task on every call (milliseconds for a long run). Making and
closing a loop cost a twentieth of checking a scenario, so a thread keeps its loop between runs
for as long as each run leaves it exactly as a new one is (``_IdleLoop.as_new``); a run that
leaves anything behind gets its loop closed, and the next run a new one.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from typing import Any

__all__ = ["run_coroutine"]


def run_coroutine(coroutine: Any) -> Any:
    """Run ``coroutine`` to its end on this thread's loop, as ``asyncio.run`` would on a new one
    (this module's docstring says what differs and why)."""
    idle, _idle.loop = getattr(_idle, "loop", None), None
    loop = idle.loop if idle is not None and idle.pid == os.getpid() and not idle.loop.is_closed() else None
    if loop is None:
        if idle is not None:
            idle.close()
        idle = _IdleLoop(asyncio.new_event_loop())
        loop = idle.loop
    kept = False
    try:
        return loop.run_until_complete(coroutine)
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            generators = getattr(loop, "_asyncgens", None)
            if isinstance(generators, weakref.WeakSet):  # what shutdown_asyncgens closes, closed the same way
                closing = list(generators)
                generators.clear()
                loop.run_until_complete(_close_generators(closing))  # also runs the callbacks left due
                kept = idle.as_new()
            else:  # pragma: no cover - not CPython's loop: a new one every run
                loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            if kept:
                _idle.loop = idle
            else:
                idle.close()


async def _close_generators(generators: list[Any]) -> None:
    """``loop.shutdown_asyncgens()``'s work, without marking the loop as shut down."""
    results = await asyncio.gather(*[g.aclose() for g in generators], return_exceptions=True)
    loop = asyncio.get_running_loop()
    for result, generator in zip(results, generators, strict=True):
        if isinstance(result, Exception):
            loop.call_exception_handler(
                {
                    "message": f"an error occurred during closing of asynchronous generator {generator!r}",
                    "exception": result,
                    "asyncgen": generator,
                }
            )


_idle = threading.local()  # .loop: this thread's _IdleLoop, between runs


class _IdleLoop:
    """An event loop kept between runs, and what it was like when new."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pid = os.getpid()  # after a fork the loop's selector is shared with the parent: not reused
        self.debug = loop.get_debug()

    def as_new(self) -> bool:
        """Whether the run left nothing behind that a new loop would not have: no task, no
        callback due, no live timer, no file descriptor watched but the loop's own wake-up pipe,
        no signal handler, and the loop's settings (exception handler, task factory, debug, the
        default executor) as they were. A loop that is not gets closed, as every loop was before."""
        loop: Any = self.loop
        try:
            return (
                not asyncio.all_tasks(loop)
                and not loop._ready
                and all(timer.cancelled() for timer in loop._scheduled)
                and len(loop._selector.get_map()) == 1
                and not getattr(loop, "_signal_handlers", None)
                and loop.get_exception_handler() is None
                and loop.get_task_factory() is None
                and loop.get_debug() == self.debug
                and loop._default_executor is None
            )
        except AttributeError:  # pragma: no cover - not CPython's loop
            return False

    def close(self) -> None:
        if not self.loop.is_closed():
            self.loop.close()

    def __del__(self) -> None:  # a thread that ran scenarios has ended: its loop goes with it
        try:
            self.close()
        except Exception:  # pragma: no cover - at interpreter exit asyncio may be gone already
            pass
