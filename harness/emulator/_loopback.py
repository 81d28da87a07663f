"""An ASGI app served on a loopback port from a background thread: the emulator's and the proxy's
one way to listen, so both get the same socket options, start-up wait, shutdown and front door
(:class:`FrontDoor`: only requests addressed to the server, from no web page it was not told of)."""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
"""The names a request to a loopback listener may address it by (with its port)."""


def is_loopback(host: str) -> bool:
    """Whether listening on ``host`` keeps the server to this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def remote_warning(host: str, port: int, name: str) -> str:
    """What listening beyond loopback exposes, said before it does (``--allow-remote``)."""
    return (
        f"harness {name}: listening on {host}:{port}, beyond this machine: whoever reaches it gets the replies it"
        " serves"
        + (
            " (recorded content), and has requests forwarded with the keys it sends and Bedrock's signed with"
            " this machine's AWS credentials"
            if name == "proxy"
            else ""
        )
        + "; it answers requests addressed to it by an IP address or by --host, never by another name"
    )


@dataclass(frozen=True)
class FrontDoor:
    """Who a loopback server answers: requests addressed to it, from no web page but ``allow_origins``.

    A page in a browser can reach 127.0.0.1 two ways: by a name it points at 127.0.0.1 (DNS
    rebinding: the ``Host`` header is that name) and by a cross-origin request (``Origin``,
    ``Sec-Fetch-Site``). Either would have the server replay recorded content, record, or forward
    with the keys and credentials of its environment. ``allow_remote``: a listener beyond
    loopback also answers a ``Host`` that is an IP address or its own ``--host``.
    """

    allow_origins: frozenset[str] = frozenset()
    allow_remote: bool = False

    @classmethod
    def of(cls, origins: Iterable[str] = (), *, allow_remote: bool = False) -> FrontDoor:
        """A door from the commands' ``--allow-origin`` values; ``ValueError`` (one line) for one
        that is not an origin (``scheme://host[:port]``, as a browser sends it)."""
        allowed = set()
        for origin in origins:
            parts = urlsplit(origin.strip().rstrip("/"))
            if not parts.scheme or not parts.netloc or parts.path or parts.query or parts.fragment:
                raise ValueError(
                    f"--allow-origin {origin!r} is not an origin: say scheme://host[:port], such as http://localhost:3000"
                )
            allowed.add(f"{parts.scheme}://{parts.netloc}".lower())
        return cls(frozenset(allowed), allow_remote)

    def guard(self, app: Any, host: str, port: int, name: str) -> Any:
        """``app`` behind this door, for a server listening on ``host:port``."""
        return _Guard(app, self, host, port, name)


class _Guard:
    """The pure-ASGI check in front of the app: headers only, nothing read before it passes."""

    def __init__(self, app: Any, door: FrontDoor, host: str, port: int, name: str) -> None:
        self.app, self.door, self.name, self.port = app, door, name, port
        names = [*LOOPBACK_NAMES, host.lower()] if door.allow_remote else list(LOOPBACK_NAMES)
        self.hosts = frozenset(f"{each}:{port}".encode() for each in names)
        if port == 80:
            self.hosts |= {each.encode() for each in names}
        self.origins = frozenset(origin.encode() for origin in door.allow_origins)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = origin = None
        fetched = False
        for header, value in scope["headers"]:
            if header == b"host":
                host = value.lower() if host is None else b""  # two Host headers: neither is believed
            elif header == b"origin":
                origin = value
            elif header == b"sec-fetch-site":
                # none: typed in the address bar, no page asked. Sec-Fetch-Mode alone is no browser's
                # (a browser sends both): Node's own fetch sends "Sec-Fetch-Mode: cors" on every request
                fetched = value != b"none"
        refused = self._refused(scope, host, origin, fetched)
        if refused is not None:
            await _refuse(scope, send, refused, self.name)
        elif origin is None:
            await self.app(scope, receive, send)
        elif scope["method"] == "OPTIONS" and any(h == b"access-control-request-method" for h, _ in scope["headers"]):
            await _preflight(scope, send, origin)
        else:
            await self.app(scope, receive, _with_cors(send, origin))

    def _refused(self, scope: dict[str, Any], host: bytes | None, origin: bytes | None, fetched: bool) -> str | None:
        """Why the request is refused, or ``None``."""
        if not (scope.get("raw_path") or b"/").startswith(b"/"):
            return "a request target must be a path (this is no forward proxy; send the path alone)"
        if host is None or (host not in self.hosts and not self._remote_address(host)):
            where = f"127.0.0.1:{self.port}, localhost:{self.port} or [::1]:{self.port}"
            return f"the Host header must name this server ({where}); a request for another name is not served"
        if origin is not None and origin not in self.origins:
            return "requests from web pages are refused; allow the page's origin with --allow-origin ORIGIN"
        if origin is None and fetched:
            return "requests a browser sends for a page are refused; allow the page's origin with --allow-origin ORIGIN"
        return None

    def _remote_address(self, host: bytes) -> bool:
        """With ``allow_remote``: a ``Host`` that is an IP address with this server's port (no name to rebind)."""
        if not self.door.allow_remote:
            return False
        address, _, port = host.decode("latin-1").rpartition(":")
        try:
            ipaddress.ip_address(address.strip("[]"))
        except ValueError:
            return False
        return port == str(self.port)


async def _refuse(scope: dict[str, Any], send: Any, reason: str, name: str) -> None:
    """403, in no provider's envelope: the request is not one the server takes, whatever its path."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    body = json.dumps({"error": {"type": "harness_forbidden", "message": f"harness {name}: {reason}"}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 403, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _preflight(scope: dict[str, Any], send: Any, origin: bytes) -> None:
    """A browser's CORS preflight from an allowed origin: the method and headers it asks for, allowed."""
    asked = next((value for header, value in scope["headers"] if header == b"access-control-request-headers"), b"")
    headers = [
        *_cors(origin),
        (b"access-control-allow-methods", b"GET, POST"),
        (b"access-control-allow-headers", asked),
        (b"access-control-max-age", b"600"),
        (b"content-length", b"0"),
    ]
    await send({"type": "http.response.start", "status": 204, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def _cors(origin: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"access-control-allow-origin", origin), (b"vary", b"origin")]


def _with_cors(send: Any, origin: bytes) -> Any:
    """``send`` adding the allowed origin to the reply's headers, so the page may read it."""

    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *_cors(origin)]}
        await send(message)

    return sending


class LoopbackServer:
    """uvicorn serving ``app`` on ``host:port`` (port 0: a free one) in a daemon thread.

    The listening socket is made here, not by uvicorn: with ``IPPROTO_TCP`` (asyncio sets
    TCP_NODELAY only on sockets that say they are TCP) and TCP_NODELAY on the listener, which
    accepted connections inherit. Without it a reply written in two parts (headers, then body)
    waits for the client's delayed ACK: 40 ms on every kept-alive request (Nagle).

    Only the listener has ``door`` in front of the app: an app driven in process has no socket a
    browser could reach."""

    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        *,
        name: str,
        graceful: int | None = None,
        door: FrontDoor | None = None,
    ) -> None:
        self.app, self.host, self.port, self.name, self.graceful = app, host, port, name, graceful
        self.door = door or FrontDoor()
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> int:
        """Listen and serve; the port it listens on. ``OSError`` if the port cannot be bound,
        ``RuntimeError`` if the server did not start within 10 s."""
        import uvicorn

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.door.guard(self.app, self.host, self.port, self.name),
            log_level="critical",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=self.graceful,
        )
        self._server = server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=self.name)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the {self.name}'s server did not start")
            time.sleep(0.01)
        return self.port

    def stop(self, timeout: float = 10) -> None:
        """Ask the server to exit and wait for its thread (at most ``timeout`` seconds)."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.should_exit = True
        if thread is not None:
            thread.join(timeout=timeout)
        self._server = self._thread = None
