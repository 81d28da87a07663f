"""What the agent under test prints, logs and warns, kept per conversation instead of on the console.

A framework that prints sixty lines of model names per reply, or warns on every invalid-arguments
reply, would bury a campaign's summary; what it said belongs with the conversation that made it
say it, shown when that conversation fails. Each run's output goes to its own log: the run sets
:func:`capturing` on its own thread, or in its own task (an async run: a context variable, so two
tasks on the shared event loop never mix); a thread the agent starts itself (an executor's) has no
such mark and writes to the conversation that is running. The campaign's own thread writes
through, as if nothing were installed (its progress bar, its summary).
"""

from __future__ import annotations

import contextvars
import logging
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

MAX_KEPT = 200_000
"""Characters kept per conversation; past them, the rest is counted, not kept."""

_LOG: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("harness_agent_log", default=None)
_fallback: list[str] | None = None
"""The running conversation's log: where a thread the agent started itself writes."""
_campaign_thread: int | None = None


def current_log() -> list[str] | None:
    """The log this thread or task writes to (``None``: writes go through)."""
    return _LOG.get()


@contextmanager
def capturing(log: list[str] | None) -> Iterator[None]:
    """Writes of this thread or task go to ``log``."""
    token = _LOG.set(log)
    try:
        yield
    finally:
        _LOG.reset(token)


@contextmanager
def conversation_output(log: list[str]) -> Iterator[None]:
    """While a conversation runs, threads without a log of their own write to ``log``."""
    global _fallback
    before, _fallback = _fallback, log
    try:
        yield
    finally:
        _fallback = before


def _target() -> list[str] | None:
    log = _LOG.get()
    if log is not None:
        return log
    if _campaign_thread is not None and threading.get_ident() != _campaign_thread:
        return _fallback
    return None


def _keep(log: list[str], text: str) -> None:
    size = sum(len(part) for part in log)
    if size < MAX_KEPT:
        log.append(text[: MAX_KEPT - size])


class _Router:
    """A stand-in for ``sys.stdout``/``sys.stderr``: the agent's writes to its log, the rest through."""

    def __init__(self, through: TextIO) -> None:
        self._through = through

    def write(self, text: str) -> int:
        log = _target()
        if log is None:
            return self._through.write(text)
        _keep(log, text)
        return len(text)

    def flush(self) -> None:
        if _target() is None:
            self._through.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._through, name)


class _Handler(logging.Handler):
    def __init__(self, alone: bool) -> None:
        super().__init__()
        self.alone = alone
        """The root logger had no handler: a record written through goes to Python's last resort."""
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        log = _target()
        if log is not None:
            _keep(log, self.format(record) + "\n")
        elif self.alone and logging.lastResort is not None and record.levelno >= logging.lastResort.level:
            logging.lastResort.handle(record)


def _not_the_agents(record: logging.LogRecord) -> bool:
    return _target() is None


@contextmanager
def agent_output() -> Iterator[None]:
    """For a whole campaign: the agent's prints, log records and warnings go to its conversations'
    logs; everything else is as it was. Restored on the way out."""
    global _campaign_thread
    if _campaign_thread is not None:  # nested (a replay inside a campaign): installed already
        yield
        return
    root = logging.getLogger()
    handler = _Handler(alone=not root.handlers)
    others = list(root.handlers)
    out, err, show = sys.stdout, sys.stderr, warnings.showwarning

    def showwarning(
        message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        log = _target()
        if log is None:
            show(message, category, filename, lineno, file, line)
        else:
            _keep(log, warnings.formatwarning(message, category, filename, lineno, line))

    _campaign_thread = threading.get_ident()
    for other in others:
        other.addFilter(_not_the_agents)
    root.addHandler(handler)
    sys.stdout, sys.stderr = _Router(out), _Router(err)
    warnings.showwarning = showwarning
    try:
        yield
    finally:
        warnings.showwarning = show
        sys.stdout, sys.stderr = out, err
        root.removeHandler(handler)
        for other in others:
            other.removeFilter(_not_the_agents)
        _campaign_thread = None


def shown(log: list[str], limit: int = 40) -> str:
    """The log's last ``limit`` lines, saying how many came before them."""
    lines = "".join(log).splitlines()
    if len(lines) <= limit:
        return "\n".join(lines)
    return f"({len(lines) - limit} earlier line(s) left out)\n" + "\n".join(lines[-limit:])
