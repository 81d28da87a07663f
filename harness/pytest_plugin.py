"""The harness as a pytest plugin: fixtures, markers, Hypothesis profiles and options.

Installed with the package and loaded through the ``pytest11`` entry point, so a user's project
gets it by installing ``openprogram``; nothing to add to ``conftest.py``. See
``docs/pytest-plugin.md`` for a guide.

Fixtures
    ``scripted``       ``scripted(*turns, strict=True)`` → a ``ScriptedProvider`` bound with
                       ``runtime.use`` for the rest of the test; its script must be used up by
                       teardown (opt out with ``@pytest.mark.harness_incomplete_ok``).
    ``trace``          every run the test starts, as ``Trace`` objects; shown in the report of a
                       failing test.
    ``clock``          a deterministic millisecond clock for ``AgentLoopConfig.clock`` / ``exec``.
    ``frozen_time``    freezegun for code that reads the wall clock, safe inside ``@given``.
    ``harness_scenario_dir``  where shrunk regression scenarios are saved.

Options
    ``--harness-profile NAME``       load a Hypothesis profile (``harness-ci``, ``harness-deep``,
                                     or any registered one); default ``harness-ci`` when the
                                     ``CI`` environment variable is set, else untouched.
    ``--harness-scenario-dir DIR``   where regression scenarios go; exported as
                                     ``HARNESS_SCENARIO_DIR`` for the property helpers.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.clock import DEFAULT_EPOCH_MS, DeterministicClock
from harness.invariants import check_all
from harness.script import ScriptedProvider, Turn, TurnLike
from harness.trace import Trace, render_message
from openprogram import runtime
from openprogram.agent.events import observe_runs
from openprogram.types import AssistantMessage

__all__ = [
    "CI_PROFILE",
    "DEEP_PROFILE",
    "DEFAULT_EPOCH_MS",
    "FROZEN_AT",
    "HYPOTHESIS_IGNORE",
    "DeterministicClock",
    "RunCollector",
    "ScriptedFixture",
    "render_trace",
]

CI_PROFILE = "harness-ci"
DEEP_PROFILE = "harness-deep"

"""2024-01-01T00:00:00Z in epoch milliseconds: where ``clock`` starts, and the instant ``frozen_time`` freezes."""

FROZEN_AT = "2024-01-01T00:00:00+00:00"

HYPOTHESIS_IGNORE = ("hypothesis", "_hypothesis_pytestplugin", "_hypothesis_globals", "_pytest")
"""Modules whose own direct clock reads see real time under ``frozen_time``: Hypothesis measures
deadlines and pytest measures durations with them, and a frozen or jumping clock breaks both."""

_INCOMPLETE_OK = "harness_incomplete_ok"
_FROZEN_MARK = "harness_frozen_time"
_CLOCK_MARK = "harness_clock"


def _register_profiles() -> None:
    from hypothesis import settings

    # parented on Hypothesis' plain "default" profile, not on whatever is active at import (under
    # CI Hypothesis activates its own "ci" profile first), so each profile means the same everywhere
    default = settings.get_profile("default")
    settings.register_profile(
        CI_PROFILE, default, derandomize=True, max_examples=50, deadline=None, database=None, print_blob=True
    )
    settings.register_profile(DEEP_PROFILE, default, max_examples=5_000, deadline=None, print_blob=True)


_register_profiles()  # at import, so `settings.load_profile("harness-ci")` also works outside pytest


# ---------------------------------------------------------------------------------------------
# clock
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# trace: collecting every run of a test
# ---------------------------------------------------------------------------------------------


class _Record:
    """The events and requests of one top-level run (its nested runs' included, inline)."""

    def __init__(self, collector: RunCollector) -> None:
        self.collector = collector
        self.events: list[Any] = []
        self.requests: list[Any] = []
        self.depth = 0  # open nested runs
        self.ended = False

    def trace(self) -> Trace:
        end = next((e for e in reversed(self.events) if e.type == "agent_end"), None)
        return Trace(
            events=list(self.events),
            requests=list(self.requests),
            ledger=None,
            new_messages=list(end.messages) if end is not None else [],
            reason=end.reason if end is not None else None,
            error=None if end is not None else "no agent_end seen: the run raised, or had not finished when read",
        )


# The top-level run whose task (or tool body, or nested run) is executing. Set in the run's own
# task context at its agent_start, so everything its tools start inherits it: that is how a
# nested run is told apart from a concurrent top-level one.
_current_record: contextvars.ContextVar[_Record | None] = contextvars.ContextVar("_harness_record", default=None)


class RunCollector:
    """What the ``trace`` fixture gives a test: every run started during it, as ``Trace`` objects.

    ``runs`` has one ``Trace`` per top-level run, in start order, with nested runs' events inline
    (between the outer tool's start and end) and their requests included. ``events`` is every
    event in arrival order. Requests come from the providers being watched: the ``scripted``
    fixture's, the one bound by ``runtime.use`` when a run calls it, and any passed to ``watch``.
    """

    def __init__(self) -> None:
        self._records: list[_Record] = []
        self.events: list[Any] = []
        self._watched: list[tuple[Any, list[int]]] = []
        self._lock = threading.RLock()

    # -- recording ------------------------------------------------------------------------
    def watch(self, provider: Any) -> Any:
        """Collect this provider's captured ``requests`` (anything with a ``requests`` list)."""
        with self._lock:
            if not any(p is provider for p, _ in self._watched):
                seen = len(getattr(provider, "requests", ()) or ())
                self._watched.append((provider, [seen]))
        return provider

    def on_event(self, event: Any) -> None:
        with self._lock:
            self.events.append(event)
            record = _current_record.get()
            if record is not None and (record.collector is not self or record.ended):
                record = None
            if event.type == "agent_start":
                if record is None:
                    record = _Record(self)
                    self._records.append(record)
                    _current_record.set(record)
                else:
                    record.depth += 1
            elif record is None:
                record = next((r for r in reversed(self._records) if not r.ended), None)
                if record is None:
                    record = _Record(self)
                    self._records.append(record)
            record.events.append(event)
            if event.type == "message_start" and isinstance(event.message, AssistantMessage):
                self._collect_requests(record)
            elif event.type == "agent_end":
                if record.depth:
                    record.depth -= 1
                else:
                    record.ended = True

    def _collect_requests(self, record: _Record) -> None:
        bound = runtime.current_provider()
        if bound is not None and isinstance(getattr(bound, "requests", None), (list, tuple)):
            if not any(p is bound for p, _ in self._watched):
                self._watched.append((bound, [max(0, len(bound.requests) - 1)]))
        for provider, seen in self._watched:
            requests = getattr(provider, "requests", None) or []
            if len(requests) > seen[0]:
                record.requests.extend(requests[seen[0] :])
                seen[0] = len(requests)

    # -- reading --------------------------------------------------------------------------
    @property
    def runs(self) -> list[Trace]:
        with self._lock:
            return [record.trace() for record in self._records]

    @property
    def last(self) -> Trace:
        runs = self.runs
        if not runs:
            raise LookupError(
                "trace.last: no run was observed in this test (did the agent run? runs started in "
                "another thread without copying the context are not seen)"
            )
        return runs[-1]

    @property
    def requests(self) -> list[Any]:
        """Every captured request of every run, in order."""
        return [request for run in self.runs for request in run.requests]

    def check(self) -> None:
        """Assert every invariant of ``harness.invariants`` on every observed run."""
        for trace in self.runs:
            check_all(trace)

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[Trace]:
        return iter(self.runs)

    def __str__(self) -> str:
        runs = self.runs
        if not runs:
            return "(no agent runs observed)"
        parts = []
        for number, trace in enumerate(runs, 1):
            header = f"=== run {number} of {len(runs)}: reason={trace.reason}, {len(trace.requests)} request(s) ==="
            parts.append(header + "\n" + render_trace(trace))
        return "\n".join(parts)

    def __repr__(self) -> str:
        return f"<RunCollector {len(self._records)} run(s), {len(self.events)} event(s)>"


def render_trace(trace: Trace) -> str:
    """A run as a conversation timeline, nested runs indented under the tool that started them."""
    lines: list[str] = []
    depth = 0
    turns: list[int] = [0]
    calls: list[int] = [0]
    for event in trace.events:
        kind = event.type
        pad = "  " * depth
        if kind == "agent_start":
            if lines:
                depth += 1
                turns.append(0)
                calls.append(0)
                lines.append(f"{'  ' * depth}agent_start (nested run)")
            else:
                lines.append("agent_start")
        elif kind == "turn_start":
            turns[-1] += 1
            lines.append(f"{pad}-- turn {turns[-1]} --")
        elif kind == "message_end":
            if isinstance(event.message, AssistantMessage):
                calls[-1] += 1
                lines.append(f"{pad}  [request {calls[-1]}] {render_message(event.message)}")
            else:
                lines.append(f"{pad}  {render_message(event.message)}")
        elif kind == "tool_execution_update":
            partial = str(event.partial_result).replace("\n", "\\n")[:100]
            lines.append(f"{pad}    ~ {event.tool_name} update: {partial}")
        elif kind == "agent_end":
            lines.append(f"{pad}agent_end reason={event.reason} ({len(event.messages)} new messages)")
            if depth:
                depth -= 1
                turns.pop()
                calls.pop()
    if trace.error is not None:
        lines.append(f"({trace.error})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# scripted
# ---------------------------------------------------------------------------------------------


class ScriptedFixture:
    """What the ``scripted`` fixture gives a test: call it with turns to get a bound provider.

    ``scripted(*turns, strict=True, model=None, chunk_size=16)`` builds a ``ScriptedProvider``,
    binds it with ``runtime.use`` for the rest of the test (so every ``runtime.exec`` uses it,
    nested ones too) and returns it. At teardown each provider's ``assert_complete()`` is checked
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
        provider = ScriptedProvider(*turns, strict=strict, chunk_size=chunk_size)
        self._stack.enter_context(runtime.use(provider, model=model))
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
    def requests(self) -> list[Any]:
        """Every request the scripted providers received, in order."""
        return [request for provider in self.providers for request in provider.requests]

    def _close(self) -> None:
        try:
            self._stack.close()
        except ValueError:
            # runtime.use was entered inside an async test's task context, which is gone by
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


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------

_COLLECTOR = pytest.StashKey[RunCollector]()
_CALL_FAILED = pytest.StashKey[bool]()
_PROFILE_STATE = pytest.StashKey[dict[str, Any]]()


@pytest.fixture
def _harness_collector(request: pytest.FixtureRequest) -> Iterator[RunCollector]:
    collector = RunCollector()
    request.node.stash[_COLLECTOR] = collector
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
    if request.node.get_closest_marker(_INCOMPLETE_OK) is not None:
        fixture.incomplete_ok = True
    try:
        yield fixture
    finally:
        fixture._close()
    if request.node.stash.get(_CALL_FAILED, False):
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


@pytest.fixture
def clock(request: pytest.FixtureRequest) -> DeterministicClock:
    """A deterministic millisecond clock: starts at 2024-01-01T00:00:00Z, +1 ms per call.
    ``@pytest.mark.harness_clock(start=..., step=...)`` changes both."""
    marker = request.node.get_closest_marker(_CLOCK_MARK)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        kwargs.setdefault("start", marker.args[0])
    return DeterministicClock(**kwargs)


@contextlib.contextmanager
def _frozen(when: Any) -> Iterator[Any]:
    import freezegun
    import freezegun.api

    # freezegun decides "real or frozen" by looking up the call stack for ignored modules. With
    # its default depth of 5, code called from a Hypothesis test body would count as called from
    # Hypothesis and see real time; depth 1 looks only at the direct caller, so Hypothesis' own
    # deadline and pytest's own durations are real while everything the test runs is frozen.
    previous = freezegun.api.call_stack_inspection_limit
    freezegun.api.call_stack_inspection_limit = 1
    try:
        with freezegun.freeze_time(when, ignore=list(HYPOTHESIS_IGNORE), real_asyncio=True) as frozen:
            yield frozen
    finally:
        freezegun.api.call_stack_inspection_limit = previous


@pytest.fixture
def frozen_time(request: pytest.FixtureRequest) -> Iterator[Any]:
    """freezegun frozen at 2024-01-01T00:00:00Z (or ``@pytest.mark.harness_frozen_time(WHEN)``);
    yields the freezer (``.tick()``, ``.move_to()``). Works inside ``@given`` tests."""
    marker = request.node.get_closest_marker(_FROZEN_MARK)
    when = marker.args[0] if marker is not None and marker.args else FROZEN_AT
    with _frozen(when) as frozen:
        yield frozen


@pytest.fixture(scope="session")
def harness_scenario_dir(pytestconfig: pytest.Config) -> Path:
    """Where shrunk regression scenarios are saved (``--harness-scenario-dir``)."""
    return scenario_dir(pytestconfig)


def scenario_dir(config: pytest.Config) -> Path:
    state = config.stash.get(_PROFILE_STATE, {})
    if state.get("scenario_dir") is not None:
        return Path(state["scenario_dir"])
    if os.environ.get("HARNESS_SCENARIO_DIR"):
        return Path(os.environ["HARNESS_SCENARIO_DIR"])
    return Path(config.rootpath) / "cassettes" / "scenarios"


# ---------------------------------------------------------------------------------------------
# Hooks
# ---------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "openprogram harness")
    group.addoption(
        "--harness-profile",
        dest="harness_profile",
        default=None,
        metavar="NAME",
        help=(
            f"load this Hypothesis settings profile: {CI_PROFILE} (derandomized, 50 examples, no deadline, "
            f"no database), {DEEP_PROFILE} (5000 examples), or any registered profile. Default: {CI_PROFILE} "
            "when the CI environment variable is set (and --hypothesis-profile is not given), else untouched."
        ),
    )
    group.addoption(
        "--harness-scenario-dir",
        dest="harness_scenario_dir",
        default=None,
        metavar="DIR",
        help="directory for shrunk regression scenarios (default: cassettes/scenarios); sets HARNESS_SCENARIO_DIR",
    )
    parser.addini("harness_profile", "Hypothesis profile to load (like --harness-profile)", default=None)
    parser.addini(
        "harness_scenario_dir", "directory for regression scenarios (like --harness-scenario-dir)", default=None
    )


def _truthy(value: str | None) -> bool:
    return bool(value) and value.strip().lower() not in ("0", "false", "no", "off", "")  # type: ignore[union-attr]


def _chosen_profile(config: pytest.Config) -> tuple[str | None, str]:
    explicit = config.getoption("harness_profile", None)
    if explicit:
        return explicit, "--harness-profile"
    ini = config.getini("harness_profile")
    if ini:
        return str(ini), "harness_profile ini option"
    if _truthy(os.environ.get("CI")) and not config.getoption("hypothesis_profile", None):
        return CI_PROFILE, "CI environment variable"
    return None, ""


@pytest.hookimpl(trylast=True)  # after Hypothesis' own plugin, so an explicit choice here wins
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_INCOMPLETE_OK}: the scripted fixture does not fail the test when scripted turns are left unused",
    )
    config.addinivalue_line(
        "markers", f"{_FROZEN_MARK}(when): the instant the frozen_time fixture freezes (default {FROZEN_AT})"
    )
    config.addinivalue_line("markers", f"{_CLOCK_MARK}(start=..., step=...): configure the clock fixture")

    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    state: dict[str, Any] = {"profile": None, "source": "", "previous_profile": None, "previous_env": None}
    config.stash[_PROFILE_STATE] = state
    name, source = _chosen_profile(config)
    if name:
        state["previous_profile"] = getattr(settings, "_current_profile", None)
        try:
            settings.load_profile(name)
        except InvalidArgument:
            raise pytest.UsageError(
                f"{source}: no Hypothesis profile named {name!r}; the harness registers {CI_PROFILE!r} and "
                f"{DEEP_PROFILE!r} (register your own with hypothesis.settings.register_profile)"
            ) from None
        state["profile"], state["source"] = name, source

    directory = config.getoption("harness_scenario_dir", None)
    base = Path(config.invocation_params.dir)
    if not directory and config.getini("harness_scenario_dir"):
        directory, base = config.getini("harness_scenario_dir"), Path(config.rootpath)
    if directory:
        path = (base / directory).resolve()
        state["scenario_dir"] = str(path)
        state["previous_env"] = os.environ.get("HARNESS_SCENARIO_DIR")
        state["env_set"] = True
        os.environ["HARNESS_SCENARIO_DIR"] = str(path)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_PROFILE_STATE, None)
    if state is None:
        return
    if state.get("profile") and state.get("previous_profile"):
        from hypothesis import settings

        settings.load_profile(state["previous_profile"])
    if state.get("env_set"):
        if state.get("previous_env") is None:
            os.environ.pop("HARNESS_SCENARIO_DIR", None)
        else:
            os.environ["HARNESS_SCENARIO_DIR"] = state["previous_env"]


def pytest_report_header(config: pytest.Config) -> str | None:
    state = config.stash.get(_PROFILE_STATE, {})
    parts = []
    if state.get("profile"):
        parts.append(f"hypothesis profile {state['profile']!r} (from {state['source']})")
    if state.get("scenario_dir"):
        parts.append(f"scenario dir {state['scenario_dir']}")
    return "harness: " + ", ".join(parts) if parts else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Let ``@given`` tests use ``frozen_time``: the freeze is shared by all examples on purpose."""
    try:
        from hypothesis import HealthCheck, is_hypothesis_test
        from hypothesis import settings as Settings
    except ImportError:  # pragma: no cover - hypothesis is a dependency
        return
    for item in items:
        if "frozen_time" not in getattr(item, "fixturenames", ()):
            continue
        function = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        if function is None or not is_hypothesis_test(function):
            continue
        current = getattr(function, "_hypothesis_internal_use_settings", None) or Settings.default
        if HealthCheck.function_scoped_fixture in current.suppress_health_check:
            continue
        function._hypothesis_internal_use_settings = Settings(
            parent=current,
            suppress_health_check=[*current.suppress_health_check, HealthCheck.function_scoped_fixture],
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        item.stash[_CALL_FAILED] = True
    if not report.failed:
        return
    collector = item.stash.get(_COLLECTOR, None)
    if collector is not None and len(collector):
        report.sections.append(("harness trace", str(collector)))
