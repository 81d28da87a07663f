"""The fixtures that pin time: ``clock`` for the loop's own stamps, ``frozen_time`` for the wall clock.

``frozen_time`` is freezegun, safe inside ``@given``: the collection hook here lets a Hypothesis
test use it (the freeze is shared by all its examples on purpose). Hypothesis and freezegun are
imported only when a test asks for the fixtures.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from harness.clock import DeterministicClock, Freezer

FROZEN_MARK = "harness_frozen_time"
CLOCK_MARK = "harness_clock"
MARKERS = (
    f"{FROZEN_MARK}(when): the instant the frozen_time fixture freezes (default 2024-01-01T00:00:00+00:00)",
    f"{CLOCK_MARK}(start=..., step=...): configure the clock fixture",
)
"""The markers these fixtures read, as ``pytest_configure`` registers them."""


@pytest.fixture
def clock(request: pytest.FixtureRequest) -> Iterator[DeterministicClock]:
    """A deterministic millisecond clock: starts at 2024-01-01T00:00:00Z, +1 ms per call.
    ``@pytest.mark.harness_clock(start=..., step=...)`` changes both. Bound with
    ``runtime.use_clock`` for the test, so an ``exec`` that passes no ``clock=`` uses it too."""
    from harness.clock import DeterministicClock  # here, not at import: a session without the fixture skips it
    from openprogram import runtime

    marker = request.node.get_closest_marker(CLOCK_MARK)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        kwargs.setdefault("start", marker.args[0])
    deterministic = DeterministicClock(**kwargs)
    with runtime.use_clock(deterministic):
        yield deterministic


@pytest.fixture
def frozen_time(request: pytest.FixtureRequest) -> Iterator[Freezer]:
    """freezegun frozen at 2024-01-01T00:00:00Z (or ``@pytest.mark.harness_frozen_time(WHEN)``);
    yields the freezer (``.tick()``, ``.move_to()``). Works inside ``@given`` tests."""
    from harness.clock import FROZEN_AT, frozen

    marker = request.node.get_closest_marker(FROZEN_MARK)
    when = marker.args[0] if marker is not None and marker.args else FROZEN_AT
    with frozen(when) as freezer:
        yield freezer


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Let ``@given`` tests use ``frozen_time``: the freeze is shared by all examples on purpose."""
    if "hypothesis" not in sys.modules or not any("frozen_time" in getattr(i, "fixturenames", ()) for i in items):
        return  # no test module imported Hypothesis, so there is no @given test: nothing to import here
    try:
        from hypothesis import HealthCheck, is_hypothesis_test
        from hypothesis import settings as Settings

        from harness._hypothesis_compat import settings_of, use_settings
    except ImportError:  # pragma: no cover - hypothesis is a dependency
        return
    for item in items:
        if "frozen_time" not in getattr(item, "fixturenames", ()):
            continue
        function = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        if function is None or not is_hypothesis_test(function):
            continue
        current = settings_of(function) or Settings.default
        if current is None or HealthCheck.function_scoped_fixture in current.suppress_health_check:
            continue
        suppressed = [*current.suppress_health_check, HealthCheck.function_scoped_fixture]
        use_settings(function, Settings(parent=current, suppress_health_check=suppressed))
