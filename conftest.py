"""Suite-wide pytest configuration.

The suite must pass on a machine with no network and must never spend a real API key by accident,
so the first thing it does is cut every socket that would leave the machine (see
``install_offline_guard``). Loopback stays open: the emulator and several tests run local servers.

The suite also spreads itself over the machine's CPUs with pytest-xdist unless told otherwise
(``spread_over_the_cpus``): ``python -m pytest`` alone, the README's command, runs on every core;
``-n 0`` or ``-p no:xdist`` runs in this one process, for ``--pdb``, ``-s`` or one test.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from typing import Any

import pytest


class OfflineNetworkError(RuntimeError):
    """Raised instead of opening a non-loopback connection.

    Not an ``OSError`` on purpose: SDKs retry ``OSError``s with back-off and wrap them into their own
    connection errors, which would hide this message and slow a failing test down.
    """


_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
_WILDCARDS = frozenset({"", "0.0.0.0", "::"})  # resolving a bind address does not reach anything


def _is_local_host(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")  # the idna codec has no "replace" handler
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%", 1)[0].rstrip(".").lower()
    if name in _LOCAL_NAMES or name.endswith(".localhost") or name in _WILDCARDS:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _refuse(host: Any, port: Any) -> OfflineNetworkError:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    return OfflineNetworkError(f"the test suite is offline: attempted connection to {host}:{port}")


def _inet_target(sock: socket.socket, address: Any) -> tuple[Any, Any] | None:
    """(host, port) of an internet connect, or None for socket families that stay on the machine."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return None
    if isinstance(address, tuple) and len(address) >= 2:
        return address[0], address[1]
    return address, None


def install_offline_guard() -> Callable[[], None]:
    """Make every non-loopback connection raise ``OfflineNetworkError``; returns the undo function.

    Patches ``socket.socket.connect`` / ``connect_ex`` (which asyncio and ``ssl`` also go through),
    ``socket.create_connection`` and ``socket.getaddrinfo`` (so DNS is never queried for a public
    name either). Unix sockets and loopback addresses are untouched.
    """
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_create_connection = socket.create_connection
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        target = _inet_target(self, address)
        if target is not None and not _is_local_host(target[0]):
            raise _refuse(*target)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        target = _inet_target(self, address)
        if target is not None and not _is_local_host(target[0]):
            raise _refuse(*target)
        return real_connect_ex(self, address)

    def create_connection(address: tuple[Any, Any], *args: Any, **kwargs: Any) -> socket.socket:
        host, port = address[0], address[1]
        if not _is_local_host(host):
            raise _refuse(host, port)
        return real_create_connection(address, *args, **kwargs)

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_local_host(host):
            raise _refuse(host, port)
        return real_getaddrinfo(host, port, *args, **kwargs)

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.create_connection = create_connection  # type: ignore[assignment]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]

    def uninstall() -> None:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
        socket.create_connection = real_create_connection  # type: ignore[assignment]
        socket.getaddrinfo = real_getaddrinfo  # type: ignore[assignment]

    return uninstall


_uninstall_offline_guard: Callable[[], None] | None = None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own pytest_cmdline_main turns "auto" into workers
def pytest_cmdline_main(config: pytest.Config) -> None:
    spread_over_the_cpus(config)


def spread_over_the_cpus(config: pytest.Config) -> None:
    """Run the suite on one xdist worker per CPU (``-n auto --dist loadgroup``) when the command
    line says nothing of its own.

    Done here rather than in pyproject's ``addopts`` so that ``-p no:xdist`` still works (an
    ``-n`` in addopts is an unknown option without the plugin). Nothing changes when the run
    names ``-n``, ``--dist`` or ``--tx``, debugs (``--pdb``, ``--trace``, ``-s``), only collects,
    or is itself an xdist worker. Every test is xdist-safe: each uses its own ``tmp_path``, free
    port and environment; tests that must share one worker say so with
    ``@pytest.mark.xdist_group(name)``. Under ``CI`` every worker loads the ``harness-ci`` Hypothesis
    profile (derandomized), as the serial run does.
    """
    option = config.option
    if not config.pluginmanager.has_plugin("xdist") or hasattr(config, "workerinput"):
        return
    if option.numprocesses is not None or option.dist != "no" or getattr(option, "tx", None):
        return
    if option.usepdb or getattr(option, "trace", False) or option.capture == "no" or option.collectonly:
        return
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a pytest run started by a test that runs in a worker
        return
    option.numprocesses = "auto"
    option.dist = "loadgroup"


def pytest_configure(config: pytest.Config) -> None:
    # At configure time rather than in a fixture, so imports during collection are covered too.
    global _uninstall_offline_guard
    if _uninstall_offline_guard is None:
        _uninstall_offline_guard = install_offline_guard()


def pytest_unconfigure(config: pytest.Config) -> None:
    global _uninstall_offline_guard
    if _uninstall_offline_guard is not None:
        _uninstall_offline_guard()
        _uninstall_offline_guard = None
