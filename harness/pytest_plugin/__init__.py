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
    ``clock``          a deterministic millisecond clock, bound for the test: every ``exec`` that
                       passes no ``clock=`` stamps its messages with it.
    ``harness_allow_model_requests``  lets the test's real backends send requests (see below).
    ``frozen_time``    freezegun for code that reads the wall clock, safe inside ``@given``.
    ``harness_scenario_dir``  where shrunk regression scenarios are saved.
    ``live_backend``   the real backend of the test's live provider, from the environment
                       (``harness.recording._live``); makes the test a live test.

No accidental real requests
    While a test runs, the SDK backends refuse to send to a model provider (an ``error`` finish
    naming the test; no connection is made) unless it is marked
    ``@pytest.mark.allow_model_requests``, uses ``harness_allow_model_requests``, or is a live test
    run with ``--live`` (see "Live runs" below). Loopback base
    URLs are always let through. ``scripted`` binds with ``runtime.override``, so it wins over a
    backend the app code names itself.

Options
    ``--harness-profile NAME``       load a Hypothesis profile (``harness-ci``, ``harness-deep``,
                                     or any registered one); also the ``harness_profile`` ini
                                     option, and ``harness_ci_profile`` (loaded only when the
                                     ``CI`` environment variable is set). Without any of them
                                     Hypothesis is left exactly as the project configured it.
    ``--harness-scenario-dir DIR``   where regression scenarios go; exported as
                                     ``HARNESS_SCENARIO_DIR`` for the property helpers.
    ``--live``                       run the live tests (``@pytest.mark.live``, ``live_backend``):
                                     without it, or without the provider's key, they are skipped.
    ``--harness-example-db URL``     the Hypothesis example database shared between machines
                                     (``redis://host:port/db`` or a directory); also
                                     ``HARNESS_EXAMPLE_DB`` and the ``harness_example_db`` ini
                                     option; ``--harness-example-db-readonly`` (or
                                     ``HARNESS_EXAMPLE_DB_READONLY=1``) only reads it, as CI does.

The plugin is loaded in every pytest session of every project that has the package installed,
so loading it costs next to nothing: the loop package, Hypothesis, pydantic and jsonschema are
imported by the fixtures and hooks that need them, never at import.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import harness.campaigns._profiles as profiles
from harness.campaigns import CI_PROFILE, DEEP_PROFILE
from harness.pytest_plugin._cassette_fixtures import recorded_allows as _recorded_allows
from harness.pytest_plugin._gate import register_gate as _register_gate

if TYPE_CHECKING:
    from pluggy import Result

    from harness.clock import DeterministicClock, Freezer
    from harness.script import ScriptedProvider, Turn, TurnLike
    from harness.trace import RunCollector
    from openprogram.providers import ModelRequest

__all__ = ["CI_PROFILE", "DEEP_PROFILE", "ScriptedFixture"]

# The record-replay fixture and pytest-recording's hook live in a plugin module of their own,
# registered with this one (as cheap to import: pytest and the standard library).
pytest_plugins = ("harness.pytest_plugin._cassette_fixtures",)

_INCOMPLETE_OK = "harness_incomplete_ok"
_FROZEN_MARK = "harness_frozen_time"
_CLOCK_MARK = "harness_clock"
_ALLOW_MARKS = ("allow_model_requests",)


# ---------------------------------------------------------------------------------------------
# scripted
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------

_COLLECTOR = pytest.StashKey["RunCollector"]()
_CALL_FAILED = pytest.StashKey[bool]()
_PROFILE_STATE = pytest.StashKey[dict[str, Any]]()
_GATE_REGISTRATION = pytest.StashKey[Callable[[], None]]()


@pytest.fixture
def _harness_collector(request: pytest.FixtureRequest) -> Iterator[RunCollector]:
    from harness.oracle import check_all
    from harness.trace import RunCollector
    from openprogram import runtime
    from openprogram.agent.events import observe_runs

    collector = RunCollector(checker=check_all, bound_provider=runtime.current_provider)
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
def clock(request: pytest.FixtureRequest) -> Iterator[DeterministicClock]:
    """A deterministic millisecond clock: starts at 2024-01-01T00:00:00Z, +1 ms per call.
    ``@pytest.mark.harness_clock(start=..., step=...)`` changes both. Bound with
    ``runtime.use_clock`` for the test, so an ``exec`` that passes no ``clock=`` uses it too."""
    from harness.clock import DeterministicClock  # here, not at import: a session without the fixture skips it
    from openprogram import runtime

    marker = request.node.get_closest_marker(_CLOCK_MARK)
    kwargs = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        kwargs.setdefault("start", marker.args[0])
    deterministic = DeterministicClock(**kwargs)
    with runtime.use_clock(deterministic):
        yield deterministic


# ---------------------------------------------------------------------------------------------
# The real-request guard: what the running test allows (openprogram's backends ask
# ``model_request_refusal``, registered with openprogram.providers.register_request_gate when
# pytest configures the plugin, without importing openprogram for it: see _gate.py)
# ---------------------------------------------------------------------------------------------


class _RequestGate:
    """The running test and whether it allows real model requests (one test runs at a time per
    process; a stack, because a pytester run inside a test runs tests of its own)."""

    def __init__(self) -> None:
        self.stack: list[list[Any]] = []  # [nodeid, why it is allowed or None]

    def refusal(self) -> str | None:
        if not self.stack:
            return None  # no test running (collection, a plain script): the plugin has no say
        nodeid, allowed_by = self.stack[-1]
        if allowed_by is not None:
            return None
        return (
            f"the test {nodeid} does not allow real requests; script the model with the scripted fixture, "
            "or allow them with @pytest.mark.allow_model_requests, @pytest.mark.live (run with --live) or the "
            "harness_allow_model_requests fixture"
        )


_GATE = _RequestGate()


def model_request_refusal() -> str | None:
    """Why the running test refuses a real model request, or None (allowed, or no test running)."""
    return _GATE.refusal()


def _allowed_by(item: pytest.Item) -> str | None:
    """What lets ``item`` send real requests before any fixture runs: one of its markers.

    The hook for request modes: a mode that records from the real provider adds its check here
    (or its fixture depends on ``harness_allow_model_requests``, as a loopback emulator needs no
    opt-in at all).
    """
    for name in _ALLOW_MARKS:
        if item.get_closest_marker(name) is not None:
            return f"@pytest.mark.{name}"
    return _recorded_allows(item) or _live_allowed_by(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    _GATE.stack.append([item.nodeid, _allowed_by(item)])
    try:
        yield
    finally:
        _GATE.stack.pop()


@pytest.fixture
def harness_allow_model_requests() -> Iterator[None]:
    """Let this test's real backends send requests to model providers (the guard's opt-in);
    a fixture that records real exchanges depends on it."""
    if not _GATE.stack:
        yield
        return
    entry = _GATE.stack[-1]
    before, entry[1] = entry[1], entry[1] or "the harness_allow_model_requests fixture"
    try:
        yield
    finally:
        entry[1] = before


@pytest.fixture
def frozen_time(request: pytest.FixtureRequest) -> Iterator[Freezer]:
    """freezegun frozen at 2024-01-01T00:00:00Z (or ``@pytest.mark.harness_frozen_time(WHEN)``);
    yields the freezer (``.tick()``, ``.move_to()``). Works inside ``@given`` tests."""
    from harness.clock import FROZEN_AT, frozen

    marker = request.node.get_closest_marker(_FROZEN_MARK)
    when = marker.args[0] if marker is not None and marker.args else FROZEN_AT
    with frozen(when) as freezer:
        yield freezer


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
# Live runs (harness.recording._live): the --live option, the live marker and the live_backend fixture.
# A live test is one marked ``@pytest.mark.live(*providers)`` (no argument: openai) or using
# ``live_backend``. It runs only when ``--live`` is given and every provider it names has its
# credentials in the environment; otherwise it is skipped with a reason naming what is missing.
# The real-request guard lets a live test through when it runs, and no other test, --live or not.
# ---------------------------------------------------------------------------------------------

_LIVE_MARK = "live"
_LIVE_FIXTURE = "live_backend"
_LIVE_DEFAULT_PROVIDER = "openai"


def _add_live_option(group: Any) -> None:
    group.addoption(
        "--live",
        dest="harness_live",
        action="store_true",
        default=False,
        help=(
            "run live tests (@pytest.mark.live, the live_backend fixture) against real providers, with the "
            "credentials in the environment (OPENAI_API_KEY...); without it they are skipped"
        ),
    )


def _live_providers(item: pytest.Item) -> tuple[str, ...] | None:
    """The providers a live test talks to, in order, or None for a test that is not live."""
    marker = item.get_closest_marker(_LIVE_MARK)
    if marker is None:
        return (_LIVE_DEFAULT_PROVIDER,) if _LIVE_FIXTURE in getattr(item, "fixturenames", ()) else None
    named = list(marker.args) + ([marker.kwargs["provider"]] if "provider" in marker.kwargs else [])
    return tuple(str(name) for name in named) or (_LIVE_DEFAULT_PROVIDER,)


def _live_skip_reason(item: pytest.Item) -> str | None:
    """Why a live test may not run (``needs --live and OPENAI_API_KEY``), or None when it may.

    Raises ``LookupError`` for a provider name ``harness.recording._live`` does not know."""
    providers = _live_providers(item)
    if providers is None:
        return None
    from harness.recording._live import LIVE

    missing = [] if item.config.getoption("harness_live", False) else ["--live"]
    for name in providers:
        if name not in LIVE:
            raise LookupError(f"@pytest.mark.live({name!r}): no such provider (known: {', '.join(sorted(LIVE))})")
        needs = LIVE[name].missing(os.environ)
        if needs is not None:
            missing.append(needs)
    return "live test: needs " + " and ".join(missing) if missing else None


def _live_allowed_by(item: pytest.Item) -> str | None:
    """What lets a live test through the guard (``--live``), or None (not live, or it may not run)."""
    try:
        if _live_providers(item) is None or _live_skip_reason(item) is not None:
            return None
    except LookupError:
        return None
    return "@pytest.mark.live with --live"


class _LiveRuns:
    """The block's hooks, as a plugin object of their own (registered by ``pytest_configure``), so
    they add to hooks of the same name elsewhere in this module instead of replacing them."""

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Mark a live test skipped unless --live and its credentials are there (a skip marker, so
        the report points at the test, not at this plugin)."""
        for item in items:
            try:
                reason = _live_skip_reason(item)
            except LookupError:
                continue  # failed, naming the provider, when the test sets up
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Fail a live test naming a provider harness.recording._live does not know, before its fixtures run."""
        try:
            _live_skip_reason(item)
        except LookupError as exc:
            pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def live_backend(request: pytest.FixtureRequest) -> Any:
    """The real backend of the test's first live provider (default openai), built from the
    environment by ``harness.recording._live.live_backend``: keys, ``*_BASE_URL``, ``HARNESS_*_MODEL``."""
    from harness.recording import LiveError
    from harness.recording import live_backend as build

    providers = _live_providers(request.node) or (_LIVE_DEFAULT_PROVIDER,)
    try:
        return build(providers[0])
    except LiveError as exc:
        pytest.fail(f"live_backend: {exc}", pytrace=False)


# ----------------------------- end of the live-runs block ------------------------------------


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
            f"load this Hypothesis settings profile: {CI_PROFILE} (derandomized, {profiles.CI_EXAMPLES} examples, "
            f"no deadline, no database), {DEEP_PROFILE} ({profiles.DEEP_EXAMPLES} examples), or any registered "
            "profile. Default: the harness_profile ini option, else harness_ci_profile when the CI environment "
            "variable is set (and --hypothesis-profile is not given), else Hypothesis is left alone."
        ),
    )
    group.addoption(
        "--harness-scenario-dir",
        dest="harness_scenario_dir",
        default=None,
        metavar="DIR",
        help="directory for shrunk regression scenarios (default: cassettes/scenarios); sets HARNESS_SCENARIO_DIR",
    )
    _add_live_option(group)
    parser.addini("harness_profile", "Hypothesis profile to load (like --harness-profile)", default=None)
    parser.addini(
        "harness_ci_profile",
        f"Hypothesis profile to load when the CI environment variable is set (e.g. {CI_PROFILE}); "
        "opt-in: without it CI changes nothing",
        default=None,
    )
    parser.addini(
        "harness_scenario_dir", "directory for regression scenarios (like --harness-scenario-dir)", default=None
    )
    # the shared example database (docs/distributed-campaigns.md)
    group.addoption(
        "--harness-example-db",
        dest="harness_example_db",
        default=None,
        metavar="URL",
        help=(
            "Hypothesis example database shared between machines, loaded on top of the active profile: "
            "redis://HOST:PORT/DB (needs the distributed extra), a directory, or none. Default: "
            f"${profiles.DB_ENV_VAR}, else the harness_example_db ini option"
        ),
    )
    group.addoption(
        "--harness-example-db-readonly",
        dest="harness_example_db_readonly",
        action="store_true",
        default=None,
        help=(
            "only read the shared example database (CI); this run's own failures go to .hypothesis/examples "
            f"(also ${profiles.DB_READ_ONLY_ENV_VAR}=1 or the harness_example_db_readonly ini option)"
        ),
    )
    parser.addini(
        "harness_fake_base_urls",
        "base URLs of doubles (an emulator or fake server this project starts itself) that tests may reach "
        "without opting in to real model requests; a loopback URL is not one by itself",
        type="linelist",
        default=[],
    )
    parser.addini("harness_example_db", "shared Hypothesis example database (like --harness-example-db)", default=None)
    parser.addini("harness_example_db_readonly", "only read the shared example database", type="bool", default=False)


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("0", "false", "no", "off", "")


def _chosen_profile(config: pytest.Config) -> tuple[str | None, str]:
    explicit = config.getoption("harness_profile", None)
    if explicit:
        return explicit, "--harness-profile"
    ini = config.getini("harness_profile")
    if ini:
        return str(ini), "harness_profile ini option"
    ci = config.getini("harness_ci_profile")
    if ci and _truthy(os.environ.get("CI")) and not config.getoption("hypothesis_profile", None):
        return str(ci), "harness_ci_profile ini option, CI is set"
    return None, ""


@pytest.hookimpl(trylast=True)  # after Hypothesis' own plugin, so an explicit choice here wins
def _refuse_hypofuzz_with_recording(config: pytest.Config) -> None:
    """HypoFuzz collects inside ``pytest.main`` and sets fixtures up after it returns, and
    pytest-recording's autouse ``vcr`` fixture reads ``Node.fspath``, which pytest removes when
    ``pytest.main`` returns: every test would fail its setup, and HypoFuzz would report "a failing
    input for every test". Said once, with the fix, before anything runs."""
    manager = config.pluginmanager
    if manager.has_plugin("recording") and any(
        type(plugin).__module__.startswith("hypofuzz.") for plugin in manager.get_plugins()
    ):
        raise pytest.UsageError(
            "HypoFuzz cannot set up pytest-recording's fixtures (they read Node.fspath, which pytest removes "
            "once its collection returns), so every test would fail its setup: disable pytest-recording for "
            "the campaign, e.g. hypothesis fuzz -- tests/property -p no:recording"
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{_INCOMPLETE_OK}: the scripted fixture does not fail the test when scripted turns are left unused",
    )
    config.addinivalue_line(
        "markers",
        f"{_FROZEN_MARK}(when): the instant the frozen_time fixture freezes (default 2024-01-01T00:00:00+00:00)",
    )
    config.addinivalue_line("markers", f"{_CLOCK_MARK}(start=..., step=...): configure the clock fixture")
    config.addinivalue_line(
        "markers", "allow_model_requests: the test's real backends may send requests to model providers"
    )
    config.addinivalue_line(
        "markers",
        "live(*providers): the test talks to live model providers (default openai); it runs only with --live "
        "and their credentials in the environment, and then the real-request guard lets it through",
    )

    _refuse_hypofuzz_with_recording(config)
    config.pluginmanager.register(_LiveRuns(), "harness-live-runs")
    fakes = tuple(config.getini("harness_fake_base_urls") or ())
    config.stash[_GATE_REGISTRATION] = _register_gate(model_request_refusal, fake_base_urls=fakes)
    if config.pluginmanager.hasplugin("html") and config.getoption("htmlpath", None):
        from harness.pytest_plugin._html import HtmlTimelines  # only when pytest-html writes a report

        config.pluginmanager.register(HtmlTimelines(_COLLECTOR, _CALL_FAILED), "harness-html-timelines")

    state: dict[str, Any] = {"profile": None, "source": "", "previous_profile": None, "previous_env": None}
    config.stash[_PROFILE_STATE] = state
    name, source = _chosen_profile(config)
    if name:
        # Hypothesis is imported only here, when the session asked for a profile
        from hypothesis import settings
        from hypothesis.errors import InvalidArgument

        profiles.register()
        state["previous_profile"] = settings.get_current_profile_name()
        try:
            settings.get_profile(name)  # first: load_profile records an unknown name as current before refusing it
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
    _load_example_database(config, state)


def _load_example_database(config: pytest.Config, state: dict[str, Any]) -> None:
    """Put the shared example database on top of the active profile (every xdist worker does the
    same, so they all read and write the one database)."""
    url, source = config.getoption("harness_example_db", None), "--harness-example-db"
    if url is None and os.environ.get(profiles.DB_ENV_VAR) is not None:
        url, source = os.environ[profiles.DB_ENV_VAR], profiles.DB_ENV_VAR
    if url is None and config.getini("harness_example_db"):
        url, source = str(config.getini("harness_example_db")), "harness_example_db ini option"
    if url is None:
        return
    read_only = bool(
        config.getoption("harness_example_db_readonly", None)
        or _truthy(os.environ.get(profiles.DB_READ_ONLY_ENV_VAR))
        or config.getini("harness_example_db_readonly")
    )
    from hypothesis import settings

    try:
        database = profiles.example_database(url, read_only=read_only)
    except profiles.ExampleDatabaseError as exc:
        raise pytest.UsageError(f"{source}: {exc}") from None
    if state.get("previous_profile") is None:
        state["previous_profile"] = settings.get_current_profile_name()
    profiles.use_database(database)
    state["database"] = f"{_without_password(url)}{' (read-only)' if read_only else ''} (from {source})"


def _without_password(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    return parts._replace(netloc=f"***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")).geturl()


def pytest_unconfigure(config: pytest.Config) -> None:
    unregister_gate = config.stash.get(_GATE_REGISTRATION, None)
    if unregister_gate is not None:
        unregister_gate()
        del config.stash[_GATE_REGISTRATION]
    state = config.stash.get(_PROFILE_STATE, None)
    if state is None:
        return
    if (state.get("profile") or state.get("database")) and state.get("previous_profile"):
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
    if state.get("database"):
        parts.append(f"example database {state['database']}")
    return "harness: " + ", ".join(parts) if parts else None


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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Result[Any], None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        item.stash[_CALL_FAILED] = True
    if not report.failed:
        return
    collector = item.stash.get(_COLLECTOR, None)
    if collector is not None and len(collector):
        report.sections.append(("harness trace", str(collector)))
