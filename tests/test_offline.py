"""The suite-wide network guard (root conftest.py): public addresses fail loudly, loopback still works.

Every address used here is unroutable or reserved for documentation (TEST-NET-3, 2001:db8::/32), so
even if the guard were missing these tests would fail rather than reach a real host.
"""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
import threading
import time

import pytest

OFFLINE = "the test suite is offline: attempted connection to "


def _assert_refused(excinfo: pytest.ExceptionInfo[BaseException], target: str) -> None:
    assert type(excinfo.value).__name__ == "OfflineNetworkError"
    assert str(excinfo.value) == OFFLINE + target


def test_connect_to_a_public_ipv4_address_is_refused() -> None:
    started = time.monotonic()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(RuntimeError) as excinfo:
        sock.connect(("203.0.113.1", 443))
    _assert_refused(excinfo, "203.0.113.1:443")
    assert time.monotonic() - started < 1.0  # refused on the spot, no connect timeout was waited out


def test_connect_ex_to_a_public_ipv4_address_is_refused() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(RuntimeError) as excinfo:
        sock.connect_ex(("203.0.113.7", 80))
    _assert_refused(excinfo, "203.0.113.7:80")


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 support in this Python build")
def test_connect_to_a_public_ipv6_address_is_refused() -> None:
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock, pytest.raises(RuntimeError) as excinfo:
        sock.connect(("2001:db8::1", 443, 0, 0))
    _assert_refused(excinfo, "2001:db8::1:443")


def test_create_connection_to_a_provider_hostname_is_refused_before_dns() -> None:
    with pytest.raises(RuntimeError) as excinfo:
        socket.create_connection(("api.openai.com", 443), timeout=5)
    _assert_refused(excinfo, "api.openai.com:443")


def test_dns_lookup_of_a_public_name_is_refused() -> None:
    with pytest.raises(RuntimeError) as excinfo:
        socket.getaddrinfo("api.anthropic.com", 443)
    _assert_refused(excinfo, "api.anthropic.com:443")


def test_dns_lookup_of_a_public_name_given_as_bytes_is_refused() -> None:
    """httpx-style clients pass host names as bytes; the refusal must name them, not crash decoding."""
    with pytest.raises(RuntimeError) as excinfo:
        socket.getaddrinfo(b"api.anthropic.com", 443)
    _assert_refused(excinfo, "api.anthropic.com:443")


def test_asyncio_connection_to_a_public_name_is_refused() -> None:
    """The SDK clients are async; asyncio resolves and connects through the same guarded calls."""

    async def connect() -> None:
        await asyncio.open_connection("generativelanguage.googleapis.com", 443)

    with pytest.raises(RuntimeError) as excinfo:
        asyncio.run(connect())
    _assert_refused(excinfo, "generativelanguage.googleapis.com:443")


def test_sdk_request_to_a_provider_fails_without_reaching_it() -> None:
    """What a forgotten cassette looks like: the SDK call fails, and the error names the guard."""
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(api_key="fake", base_url="https://api.openai.com/v1", max_retries=0)
    try:
        client.models.list()
    except Exception as exc:  # the SDK may pass the guard's error through or wrap it; both must name it
        chain: BaseException | None = exc
        while chain is not None and type(chain).__name__ != "OfflineNetworkError":
            chain = chain.__cause__ or chain.__context__
        assert chain is not None, f"unexpected failure: {exc!r}"
        assert str(chain) == OFFLINE + "api.openai.com:443"
    else:
        pytest.fail("the request went out")


def _echo_once(server: socket.socket) -> None:
    conn, _ = server.accept()
    with conn:
        conn.sendall(conn.recv(1024).upper())


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_server_started_by_a_test_still_works(host: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        thread = threading.Thread(target=_echo_once, args=(server,), daemon=True)
        thread.start()
        with socket.create_connection((host, port), timeout=5) as client:
            client.sendall(b"ping")
            assert client.recv(1024) == b"PING"
        thread.join(timeout=5)


def test_an_asyncio_loopback_server_still_works() -> None:
    async def exchange() -> bytes:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write((await reader.readline()).upper())
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            reader, writer = await asyncio.open_connection("localhost", port)
            writer.write(b"pong\n")
            await writer.drain()
            reply = await reader.readline()
            writer.close()
            await writer.wait_closed()
        return reply

    assert asyncio.run(exchange()) == b"PONG\n"


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no unix sockets on this platform")
def test_unix_sockets_still_work() -> None:
    folder = tempfile.mkdtemp(prefix="offline-")  # short path: AF_UNIX paths are limited to ~100 bytes
    path = os.path.join(folder, "s.sock")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(path)
            server.listen(1)
            thread = threading.Thread(target=_echo_once, args=(server,), daemon=True)
            thread.start()
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.connect(path)
                client.sendall(b"unix")
                assert client.recv(1024) == b"UNIX"
            thread.join(timeout=5)
    finally:
        os.unlink(path)
        os.rmdir(folder)
