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
