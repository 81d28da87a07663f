"""An ASGI app served on a loopback port from a background thread: the emulator's and the proxy's
one way to listen, so both get the same socket options, start-up wait and shutdown."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any


class LoopbackServer:
    """uvicorn serving ``app`` on ``host:port`` (port 0: a free one) in a daemon thread.

    The listening socket is made here, not by uvicorn: with ``IPPROTO_TCP`` (asyncio sets
    TCP_NODELAY only on sockets that say they are TCP) and TCP_NODELAY on the listener, which
    accepted connections inherit. Without it a reply written in two parts (headers, then body)
    waits for the client's delayed ACK: 40 ms on every kept-alive request (Nagle)."""

    def __init__(self, app: Any, host: str, port: int, *, name: str, graceful: int | None = None) -> None:
        self.app, self.host, self.port, self.name, self.graceful = app, host, port, name, graceful
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
            self.app, log_level="critical", access_log=False, lifespan="off", timeout_graceful_shutdown=self.graceful
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
