"""What every record-replay test needs around it."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _keep_the_suite_offline_guard() -> Iterator[None]:
    """pytest-recording's ``--block-network``, when an in-process pytester run ends, puts back the
    socket functions it saw at import, which would undo the suite's own offline guard (the root
    conftest): keep ours."""
    saved = socket.socket.connect, socket.socket.connect_ex, socket.socketpair
    yield
    socket.socket.connect, socket.socket.connect_ex, socket.socketpair = saved  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _projects_ask_for_the_strict_vcr_marker(request: pytest.FixtureRequest) -> None:
    """The pytester projects here check the harness's behaviour under the plain ``vcr`` marker, which
    a project gets by asking (``harness_vcr = strict``): each one asks. A test that writes an ini of
    its own says it there too. tests/harness/pytest_plugin/test_good_citizen.py checks a project
    that does not ask."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester").makeini("[pytest]\nharness_vcr = strict\n")
