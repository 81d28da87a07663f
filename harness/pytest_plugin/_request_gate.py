"""The real-request guard's answer: which running test allows real model requests, and why.

openprogram's backends ask ``model_request_refusal`` before they send; it is handed to
``openprogram.providers.register_request_gate`` when pytest configures the plugin, without
importing openprogram for it (``_gate_handoff``). A test is let through by a marker
(``allow_model_requests``), by its cassette (``_cassette_fixtures``), by being a live test run with
``--live`` (``_live_runs``), or by the ``harness_allow_model_requests`` fixture; loopback base URLs
and the project's own doubles (the ``harness_fake_base_urls`` ini option) always are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from harness.pytest_plugin._cassette_fixtures import recorded_allows
from harness.pytest_plugin._gate_handoff import register_gate
from harness.pytest_plugin._live_runs import live_allowed_by

_ALLOW_MARKS = ("allow_model_requests",)
MARKERS = ("allow_model_requests: the test's real backends may send requests to model providers",)
"""The markers the guard reads, as ``pytest_configure`` registers them."""

_REGISTRATION = pytest.StashKey[Callable[[], None]]()


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
    return recorded_allows(item) or live_allowed_by(item)


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


def add_options(parser: pytest.Parser) -> None:
    parser.addini(
        "harness_fake_base_urls",
        "base URLs of doubles (an emulator or fake server this project starts itself) that tests may reach "
        "without opting in to real model requests; a loopback URL is not one by itself",
        type="linelist",
        default=[],
    )


def register(config: pytest.Config) -> None:
    """Hand the gate, and the project's doubles, to openprogram for this session."""
    fakes = tuple(config.getini("harness_fake_base_urls") or ())
    config.stash[_REGISTRATION] = register_gate(model_request_refusal, fake_base_urls=fakes)


def unregister(config: pytest.Config) -> None:
    unregister_gate = config.stash.get(_REGISTRATION, None)
    if unregister_gate is not None:
        unregister_gate()
        del config.stash[_REGISTRATION]
