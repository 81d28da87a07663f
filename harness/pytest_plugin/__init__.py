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
    ``harness_vcr`` (ini option)     ``strict``: the project's plain ``@pytest.mark.vcr`` tests get
                                     the harness's matching, scrubbing and checks; the default,
                                     ``plain``, leaves their outcomes to pytest-recording and vcrpy.

The plugin is loaded in every pytest session of every project that has the package installed,
so loading it costs next to nothing: the loop package, Hypothesis, pydantic and jsonschema are
imported by the fixtures and hooks that need them, never at import.

This module is the entry point pytest finds, and only that: pytest looks for hooks and fixtures
on it, so it names each one here, from the module holding its concept (each imports pytest and
the standard library only): ``_run_fixtures`` (``scripted``, ``trace``), ``_time_fixtures``
(``clock``, ``frozen_time``), ``_request_gate`` (the real-request guard and its opt-in fixture;
``_gate_handoff`` hands it to openprogram), ``_live_runs`` (``--live``, ``live_backend``),
``_hypothesis_session`` (the profile and the shared example database), ``_scenario_dir``,
``_trace_report`` (the failing test's ``harness trace`` section), ``_html`` (pytest-html's
timelines) and ``_cassette_fixtures`` (``recorded`` and pytest-recording's hook, a plugin of its
own). Configuring and unconfiguring the session, in order, is what stays here.
"""

from __future__ import annotations

import pytest

from harness.campaigns import CI_PROFILE, DEEP_PROFILE
from harness.pytest_plugin import (
    _hypothesis_session,
    _live_runs,
    _request_gate,
    _run_fixtures,
    _scenario_dir,
    _time_fixtures,
)
from harness.pytest_plugin._cassette_fixtures import refuse_under_hypofuzz
from harness.pytest_plugin._live_runs import live_backend as live_backend
from harness.pytest_plugin._request_gate import harness_allow_model_requests as harness_allow_model_requests
from harness.pytest_plugin._request_gate import model_request_refusal as model_request_refusal
from harness.pytest_plugin._request_gate import pytest_runtest_protocol as pytest_runtest_protocol
from harness.pytest_plugin._run_fixtures import ScriptedFixture
from harness.pytest_plugin._run_fixtures import _harness_collector as _harness_collector
from harness.pytest_plugin._run_fixtures import scripted as scripted
from harness.pytest_plugin._run_fixtures import trace as trace
from harness.pytest_plugin._scenario_dir import harness_scenario_dir as harness_scenario_dir
from harness.pytest_plugin._scenario_dir import scenario_dir as scenario_dir
from harness.pytest_plugin._time_fixtures import clock as clock
from harness.pytest_plugin._time_fixtures import frozen_time as frozen_time
from harness.pytest_plugin._time_fixtures import pytest_collection_modifyitems as pytest_collection_modifyitems
from harness.pytest_plugin._trace_report import pytest_runtest_makereport as pytest_runtest_makereport

__all__ = ["CI_PROFILE", "DEEP_PROFILE", "ScriptedFixture"]

# The record-replay fixture and pytest-recording's hook live in a plugin module of their own,
# registered with this one (as cheap to import: pytest and the standard library).
pytest_plugins = ("harness.pytest_plugin._cassette_fixtures",)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Every option in its concept's words, in the order ``pytest --help`` lists them."""
    group = parser.getgroup("harness", "openprogram harness")
    _hypothesis_session.add_profile_options(group, parser)
    _scenario_dir.add_options(group, parser)
    _live_runs.add_options(group)
    _request_gate.add_options(parser)
    _hypothesis_session.add_database_options(group, parser)


def pytest_configure(config: pytest.Config) -> None:
    for line in (*_run_fixtures.MARKERS, *_time_fixtures.MARKERS, *_request_gate.MARKERS, *_live_runs.MARKERS):
        config.addinivalue_line("markers", line)
    refuse_under_hypofuzz(config)
    config.pluginmanager.register(_live_runs.LiveRuns(), "harness-live-runs")
    _request_gate.register(config)
    if config.pluginmanager.hasplugin("html") and config.getoption("htmlpath", None):
        from harness.pytest_plugin._html import HtmlTimelines  # only when pytest-html writes a report

        timelines = HtmlTimelines(_run_fixtures.COLLECTOR, _run_fixtures.CALL_FAILED)
        config.pluginmanager.register(timelines, "harness-html-timelines")
    _hypothesis_session.load_profile(config)
    _scenario_dir.configure(config)
    _hypothesis_session.load_example_database(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    _request_gate.unregister(config)
    _hypothesis_session.restore(config)
    _scenario_dir.restore(config)


def pytest_report_header(config: pytest.Config) -> str | None:
    parts = [
        *_hypothesis_session.profile_header(config),
        *_scenario_dir.header(config),
        *_hypothesis_session.database_header(config),
    ]
    return "harness: " + ", ".join(parts) if parts else None
