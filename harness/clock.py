"""The deterministic clock: every place in the harness that needs time takes it from here.

A run stamps each message it commits with ``config.clock``; a clock that reads the same
sequence every time is what makes one scenario give a byte-identical trace. Scenarios, the
reference model's prediction of those stamps, the ``clock`` fixture and the demo all use this
one class, so "the scenario clock" means one thing. Code that reads the wall clock itself gets
``frozen``: freezegun at the same instant the ``clock`` fixture starts.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from freezegun.api import FrozenDateTimeFactory, StepTickTimeFactory, TickingDateTimeFactory

    Freezer: TypeAlias = FrozenDateTimeFactory | StepTickTimeFactory | TickingDateTimeFactory
    """What freezegun yields: ``.tick()``, ``.move_to()``."""

__all__ = [
    "DEFAULT_EPOCH_MS",
    "FROZEN_AT",
    "HYPOTHESIS_IGNORE",
    "SCENARIO_START_MS",
    "DeterministicClock",
    "frozen",
]

DEFAULT_EPOCH_MS = 1_704_067_200_000
"""2024-01-01T00:00:00Z: the ``clock`` fixture's first reading, a plausible wall-clock time."""

FROZEN_AT = datetime.fromtimestamp(DEFAULT_EPOCH_MS / 1000, UTC).isoformat()
"""``DEFAULT_EPOCH_MS`` as ISO text (``2024-01-01T00:00:00+00:00``): where ``frozen`` stops time."""

HYPOTHESIS_IGNORE = ("hypothesis", "_hypothesis_pytestplugin", "_hypothesis_globals", "_pytest")
"""Modules whose own direct clock reads see real time under ``frozen``: Hypothesis measures
deadlines and pytest measures durations with them, and a frozen or jumping clock breaks both."""

SCENARIO_START_MS = 1_000
"""A scenario run's first reading: small numbers keep saved traces and diffs readable."""


class DeterministicClock:
    """A millisecond clock that reads ``start``, then ``start + step``, ... one step per call.

    Pass it as ``AgentLoopConfig(clock=...)`` or ``runtime.exec(..., clock=...)``: every timestamp
    the loop stamps then comes from it, so the same scenario gives byte-identical traces.
    """

    def __init__(self, start: int = DEFAULT_EPOCH_MS, step: int = 1) -> None:
        if step < 0:
            raise ValueError("a clock must not run backwards: step must be >= 0")
        self.start = int(start)
        self.step = int(step)
        self._now = self.start
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            value = self._now
            self._now += self.step
            self.calls += 1
            return value

    @property
    def now(self) -> int:
        """The value the next call returns (reading it does not advance the clock)."""
        return self._now

    def advance(self, ms: int) -> int:
        """Move the clock forward by ``ms`` milliseconds (simulated waiting); returns the new ``now``."""
        if ms < 0:
            raise ValueError("a clock must not run backwards: advance by ms >= 0")
        with self._lock:
            self._now += int(ms)
            return self._now

    def reset(self) -> None:
        """Back to ``start`` (for ``@given`` tests that want a fresh clock per example)."""
        with self._lock:
            self._now, self.calls = self.start, 0

    def __repr__(self) -> str:
        return f"DeterministicClock(now={self._now}, step={self.step}, calls={self.calls})"


@contextlib.contextmanager
def frozen(when: str | datetime | date | timedelta = FROZEN_AT) -> Iterator[Freezer]:
    """freezegun frozen at ``when`` for the code under test, real time for Hypothesis and pytest
    (and for asyncio); yields freezegun's freezer (``.tick()``, ``.move_to()``)."""
    import freezegun
    import freezegun.api

    # freezegun decides "real or frozen" by looking up the call stack for ignored modules. With
    # its default depth of 5, code called from a Hypothesis test body would count as called from
    # Hypothesis and see real time; depth 1 looks only at the direct caller, so Hypothesis' own
    # deadline and pytest's own durations are real while everything the test runs is frozen.
    previous = freezegun.api.call_stack_inspection_limit
    freezegun.api.call_stack_inspection_limit = 1
    try:
        with freezegun.freeze_time(when, ignore=list(HYPOTHESIS_IGNORE), real_asyncio=True) as freezer:
            yield freezer
    finally:
        freezegun.api.call_stack_inspection_limit = previous
