"""Suite-wide pytest configuration.

The suite must pass on a machine with no network and must never spend a real API key by accident,
so the first thing it does is cut every socket that would leave the machine (see
``install_offline_guard``). Loopback stays open: the emulator and several tests run local servers.
"""

from __future__ import annotations

import ipaddress
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
