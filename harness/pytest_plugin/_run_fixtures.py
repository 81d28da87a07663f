"""The fixtures that watch and script the loop: ``scripted``, ``trace`` and the collector under them.

One ``RunCollector`` per test, subscribed to every run the test starts, is what both fixtures
stand on: ``trace`` hands it to the test, ``scripted`` tells it which providers it bound. What a
failing test's report shows of it is ``_trace_report``'s; the stash keys here are how the
report hooks (and pytest-html's timelines) find a test's collector and learn that its call failed.
Imports only pytest and the standard library until a fixture runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from harness.script import ScriptedProvider, Turn, TurnLike
    from harness.trace import RunCollector
    from openprogram.providers import ModelRequest

INCOMPLETE_OK = "harness_incomplete_ok"
MARKERS = (f"{INCOMPLETE_OK}: the scripted fixture does not fail the test when scripted turns are left unused",)
"""The markers these fixtures read, as ``pytest_configure`` registers them."""

COLLECTOR = pytest.StashKey["RunCollector"]()
"""A test's collector, on its item: set by the fixtures (or pytest-html's timelines) that watch it."""
CALL_FAILED = pytest.StashKey[bool]()
"""Set on an item whose call failed, so teardown does not report the same test twice."""


class ScriptedFixture:
    """What the ``scripted`` fixture gives a test: call it with turns to get a bound provider.

    ``scripted(*turns, strict=True, model=None, chunk_size=16)`` builds a ``ScriptedProvider``,
    binds it with ``runtime.override`` for the rest of the test (so every ``runtime.exec`` uses
    it, nested ones too, even one that passes ``provider=`` or sits in its own ``runtime.use``)
    and returns it. At teardown each provider's ``assert_complete()`` is checked
    unless the test passed ``@pytest.mark.harness_incomplete_ok`` or set ``incomplete_ok = True``;
    a test that already failed is not checked again.
    """

    def __init__(self, collector: RunCollector) -> None:
        self.providers: list[ScriptedProvider] = []
        self.incomplete_ok = False
        self._collector = collector
        self._stack = contextlib.ExitStack()

    def __call__(
        self, *turns: TurnLike | Turn, strict: bool = True, model: str | None = None, chunk_size: int = 16
    ) -> ScriptedProvider:
        from harness.script import ScriptedProvider
        from openprogram import runtime

        provider = ScriptedProvider(*turns, strict=strict, chunk_size=chunk_size)
        self._stack.enter_context(runtime.override(provider, model=model))
        self._collector.watch(provider)
        self.providers.append(provider)
        return provider

    @property
    def provider(self) -> ScriptedProvider:
        """The most recently scripted provider."""
        if not self.providers:
            raise LookupError("scripted.provider: call scripted(*turns) first")
        return self.providers[-1]

    @property
    def requests(self) -> list[ModelRequest]:
        """Every request the scripted providers received, in order."""
        return [request for provider in self.providers for request in provider.requests]

    def _close(self) -> None:
        try:
            self._stack.close()
        except ValueError:
            # runtime.override was entered inside an async test's task context, which is gone by
            # teardown; the binding went with it, so there is nothing left to undo
            pass

    def _problems(self) -> list[str]:
        problems = []
        for number, provider in enumerate(self.providers, 1):
            label = f"scripted provider {number}" if len(self.providers) > 1 else "scripted provider"
            for violation in provider.violations:
                problems.append(f"{label}: {violation.message}")
            unused = provider.remaining
            if unused and not self.incomplete_ok:
                first = len(provider.turns) - len(unused) + 1
                listed = "\n".join(f"    turn {first + i}: {t.describe()}" for i, t in enumerate(unused))
                problems.append(
                    f"{label}: {len(unused)} of {len(provider.turns)} scripted turn(s) were never requested "
                    f"(the agent made {len(provider.requests)} request(s)):\n{listed}"
                )
        return problems


@pytest.fixture
def _harness_collector(request: pytest.FixtureRequest) -> Iterator[RunCollector]:
    from harness.oracle import check_all
    from harness.trace import RunCollector
    from openprogram import runtime
    from openprogram.agent.events import observe_runs

    collector = RunCollector(checker=check_all, bound_provider=runtime.current_provider)
    request.node.stash[COLLECTOR] = collector
    with observe_runs(collector.on_event):
        yield collector


@pytest.fixture
def trace(_harness_collector: RunCollector) -> RunCollector:
    """Every agent run the test starts: ``trace.runs`` (one ``Trace`` each), ``trace.last``,
    ``trace.events``, ``trace.requests``, ``trace.check()``; ``str(trace)`` reads as a timeline and
    is added to the report when the test fails."""
    return _harness_collector


@pytest.fixture
def scripted(request: pytest.FixtureRequest, _harness_collector: RunCollector) -> Iterator[ScriptedFixture]:
    """``scripted(*turns, strict=True)`` → a ``ScriptedProvider`` bound for the test; its script
    must be used up by teardown unless marked ``@pytest.mark.harness_incomplete_ok``."""
    fixture = ScriptedFixture(_harness_collector)
    if request.node.get_closest_marker(INCOMPLETE_OK) is not None:
        fixture.incomplete_ok = True
    try:
        yield fixture
    finally:
        fixture._close()
    if request.node.stash.get(CALL_FAILED, False):
        return  # the failure is already reported; its trace section shows how far the script got
    problems = fixture._problems()
    if problems:
        hint = (
            "\n(if the agent may legitimately stop early, mark the test "
            "@pytest.mark.harness_incomplete_ok or set scripted.incomplete_ok = True)"
            if any("never requested" in p for p in problems)
            else ""
        )
        pytest.fail("the scripted model was not used as scripted:\n" + "\n".join(problems) + hint, pytrace=False)
