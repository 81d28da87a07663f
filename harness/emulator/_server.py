"""The emulator: scripted turns served on every provider's real wire, in process or on a port.

``Emulator(script)`` answers request N (whichever provider it is for) with script entry N: a
turn (the ``harness.script.turn`` vocabulary) rendered by the provider module that owns the
request's path, or a fault (``harness.emulator.faults.fault``). Every request is kept, with
credentials removed, in ``emu.requests``. Two ways to reach it:

- ``emu.http_client()`` / ``emu.transport()``: an ``httpx2`` transport that calls the emulator
  directly (no socket), for SDK clients built with ``http_client=``. Streams really stream and
  a dropped connection raises the transport error a socket would.
- ``with Emulator(script) as emu:``: a uvicorn server on ``127.0.0.1`` in a background thread;
  ``emu.base_url`` is its root (OpenAI clients take ``base_url + "/v1"``, the others the root).

Provider modules are found by name in :data:`PROVIDER_MODULES`; a module that is not there yet
(the Gemini and Bedrock renderers are written apart) is skipped, and serving its paths answers 404.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal
from urllib.parse import parse_qsl

import httpx2

from harness.emulator._faults import Delivery, Fault, apply, fault
from harness.emulator._wire import CREDENTIAL_HEADERS, IdSource, Route, WireReply, WireRequest
from harness.script import Turn, as_turn
from openprogram.providers import register_fake_base_url, register_in_process_transport

PROVIDER_MODULES: tuple[str, ...] = ("openai", "anthropic", "gemini", "bedrock")
"""The provider modules under ``harness.emulator``, imported when present."""

ScriptEntry = Any  # Turn | ScriptedCall | str | Fault

JOURNAL_PATH = "/_emulator/requests"
"""``GET``: the requests received so far (:meth:`Emulator.journal`), on the loopback server."""
RESET_PATH = "/_emulator/reset"
"""``POST``: start the script over (:meth:`Emulator.reset_script`)."""


def load_providers(names: Iterable[str] = PROVIDER_MODULES) -> dict[str, ModuleType]:
    """The provider modules that exist, by name; a missing one is skipped, a broken one raises."""
    modules = {}
    for name in names:
        qualified = f"harness.emulator._{name}"
        try:
            modules[name] = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name != qualified:
                raise
    return modules


def _pattern(path: str) -> re.Pattern[str]:
    """A starlette-style path (``/model/{model}/converse``, ``{rest:path}``) as an anchored regex."""
    out, position = [], 0
    for match in re.finditer(r"\{(\w+)(?::(\w+))?\}", path):
        out.append(re.escape(path[position : match.start()]))
        out.append(f"(?P<{match.group(1)}>{'.+?' if match.group(2) == 'path' else '[^/]+?'})")
        position = match.end()
    out.append(re.escape(path[position:]))
    return re.compile("^" + "".join(out) + "$")


@dataclass(frozen=True)
class _Handler:
    route: Route
    pattern: re.Pattern[str]
    module: ModuleType


class Emulator:
    """Scripted provider replies over HTTP; see the module docstring."""

    def __init__(
        self,
        *script: ScriptEntry,
        host: str = "127.0.0.1",
        port: int = 0,
        providers: Iterable[str] = PROVIDER_MODULES,
        after_last: Literal["error", "repeat"] = "error",
    ) -> None:
        if len(script) == 1 and isinstance(script[0], list | tuple):
            script = tuple(script[0])
        self.script: list[Turn | Fault] = [
            entry if isinstance(entry, Fault) else as_turn(entry, f"script entry {i + 1}")
            for i, entry in enumerate(script)
        ]
        self.requests: list[WireRequest] = []
        self.after_last = after_last
        """``error``: a request beyond the script is answered 400; ``repeat``: the last entry again
        (a scenario whose agent asks forever must be served forever to show it)."""
        self.ids = IdSource()
        self.host, self.port = host, port
        self.modules = load_providers(providers)
        self._handlers = [
            _Handler(route, _pattern(route.path), module)
            for module in self.modules.values()
            for route in getattr(module, "ROUTES", ())
        ]
        self._lock = threading.Lock()
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._undeclare: Callable[[], None] = lambda: None

    answers_off_loop = False
    """Whether the server calls :meth:`answer` off its event loop (a subclass whose ``entry`` blocks)."""

    def __repr__(self) -> str:
        return f"Emulator({len(self.script)} entries, {len(self.requests)} request(s), {sorted(self.modules)})"

    # -- the script -----------------------------------------------------------------------
    def add(self, *entries: ScriptEntry) -> None:
        """Extend the script (for tests that build it as they go)."""
        with self._lock:
            start = len(self.script)
            self.script.extend(
                e if isinstance(e, Fault) else as_turn(e, f"script entry {start + i + 1}")
                for i, e in enumerate(entries)
            )

    @property
    def remaining(self) -> list[Turn | Fault]:
        return self.script[len(self.requests) :]

    def assert_complete(self) -> None:
        """Fail if the clients asked more, or less, of the emulator than the script says."""
        problems = []
        asked, scripted = len(self.requests), len(self.script)
        if asked > scripted:
            problems.append(f"{asked - scripted} request(s) beyond the script of {scripted}")
        unused = self.remaining
        if unused:
            listed = "; ".join(f"entry {asked + i + 1}: {e.describe()}" for i, e in enumerate(unused))
            problems.append(
                f"{len(unused)} scripted entr{'y' if len(unused) == 1 else 'ies'} never requested ({listed})"
            )
        if problems:
            raise AssertionError("Emulator script not followed: " + " | ".join(problems))

    def journal(self) -> list[dict[str, Any]]:
        """Every request so far, in order, as JSON data: what ``GET /_emulator/requests`` answers,
        so a test driving ``harness emulate`` from another process can see what its agent sent."""
        with self._lock:
            requests = list(self.requests)
        return [
            {
                "number": number,
                "provider": request.route.provider,
                "endpoint": request.route.endpoint,
                "method": request.method,
                "path": request.path,
                "query": dict(request.query),
                "streaming": request.streaming,
                "body": request.body,
            }
            for number, request in enumerate(requests, 1)
        ]

    def reset_script(self) -> None:
        """Forget the requests, so the next one gets the script's first entry again (``POST
        /_emulator/reset``): one served scenario, run against an agent as often as wanted."""
        with self._lock:
            self.requests = []
            self.ids = IdSource()

    @property
    def routes(self) -> list[Route]:
        return [handler.route for handler in self._handlers]

    # -- answering --------------------------------------------------------------------------
    def _find(self, method: str, path: str) -> tuple[_Handler, dict[str, str]] | None:
        for handler in self._handlers:
            if handler.route.method != method.upper():
                continue
            match = handler.pattern.match(path)
            if match:
                return handler, match.groupdict()
        return None

    def answer(self, method: str, path: str, query: str, headers: Iterable[tuple[str, str]], body: bytes) -> Delivery:
        """The delivery for one HTTP request: matched to a provider, captured, given its script entry."""
        found = self._find(method, path)
        if found is None:
            known = ", ".join(f"{r.method} {r.path}" for r in self.routes)
            text = json.dumps({"error": {"message": f"emulator: no provider serves {method} {path} (served: {known})"}})
            return Delivery(WireReply(404, {"content-type": "application/json"}, text.encode()))
        handler, params = found
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        request = WireRequest(
            method=method.upper(),
            path=path,
            query=dict(parse_qsl(query, keep_blank_values=True)),
            headers={k.lower(): v for k, v in headers if k.lower() not in CREDENTIAL_HEADERS},
            body=parsed,
            route=handler.route,
            path_params=params,
        )
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
        entry = self.entry(number, request)
        module = handler.module
        if entry is None:
            message = (
                f"emulator: request {number} is beyond the script ({len(self.script)} entr"
                f"{'y' if len(self.script) == 1 else 'ies'} scripted); add a turn or check why the client asked again"
            )
            return Delivery(module.error_reply(400, message, request))
        if isinstance(entry, Fault):
            if entry.status is not None:
                reply = module.error_reply(entry.status, entry.message, request)
                if entry.retry_after is not None:
                    reply.headers["retry-after"] = f"{entry.retry_after:g}"
                return Delivery(reply)
            inner = entry.turn
            rendered = module.render(self._resolve(inner, request, number), request, self.ids)
            return apply(entry, rendered, request, module)
        return Delivery(module.render(self._resolve(entry, request, number), request, self.ids))

    def entry(self, number: int, request: WireRequest) -> Turn | Fault | None:
        """What answers request ``number`` (``None``: it is beyond the script).

        A hook, called outside the emulator's lock: a campaign that decides each reply only when
        its request arrives (``harness.agents``) overrides it and may block here while it draws."""
        with self._lock:
            if number <= len(self.script):
                return self.script[number - 1]
            if self.after_last == "repeat" and self.script:
                return self.script[-1]
        return None

    def _resolve(self, entry: Any, request: WireRequest, number: int) -> Turn:
        scripted = as_turn(entry, f"script entry {number}")
        if scripted.respond is not None:  # respond functions receive the WireRequest here
            scripted = as_turn(scripted.respond(request), f"script entry {number} (respond)")
        return scripted

    # -- in process -------------------------------------------------------------------------
    def transport(self) -> EmulatorTransport:
        """An ``httpx2`` async transport answering from this emulator, with no socket."""
        return EmulatorTransport(self)

    def http_client(self, **kwargs: Any) -> httpx2.AsyncClient:
        """An ``httpx2.AsyncClient`` on :meth:`transport`, for an SDK's ``http_client=``."""
        return httpx2.AsyncClient(transport=self.transport(), **kwargs)

    def sync_http_client(self, **kwargs: Any) -> httpx2.Client:
        """An ``httpx2.Client`` on :meth:`transport`, for a synchronous SDK client's ``http_client=``."""
        return httpx2.Client(transport=self.transport(), **kwargs)

    # -- on a port ----------------------------------------------------------------------------
    def app(self) -> Any:
        """The starlette app serving every provider route (needs the ``emulator`` extra)."""
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response, StreamingResponse
        from starlette.routing import Route as StarletteRoute

        async def endpoint(request: Request) -> Response:
            body = await request.body()
            arguments = (request.method, request.url.path, request.url.query, request.headers.items(), body)
            if self.answers_off_loop:
                delivery = await asyncio.to_thread(self.answer, *arguments)
            else:
                delivery = self.answer(*arguments)
            reply = delivery.reply
            if reply.chunks is None and not delivery.delay and delivery.drop_after is None:
                return Response(reply.body or b"", status_code=reply.status, headers=reply.headers)
            return StreamingResponse(
                _deliver(delivery, _ConnectionDropped), status_code=reply.status, headers=reply.headers
            )

        async def journal(request: Request) -> Response:
            return Response(json.dumps(self.journal(), ensure_ascii=False), media_type="application/json")

        async def reset(request: Request) -> Response:
            self.reset_script()
            return Response(status_code=204)

        methods = ["GET", "POST", "PUT", "DELETE", "PATCH"]
        return Starlette(
            routes=[
                StarletteRoute(JOURNAL_PATH, journal, methods=["GET"]),
                StarletteRoute(RESET_PATH, reset, methods=["POST"]),
                StarletteRoute("/{path:path}", endpoint, methods=methods),
            ]
        )

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the emulator is not serving: use `with Emulator(...) as emu:` or emu.start()")
        return f"http://{self.host}:{self.port}"

    def start(self) -> str:
        """Serve on ``host:port`` (port 0: a free one) in a background thread; returns the base URL."""
        import uvicorn

        if self._server is not None:
            return self.base_url
        # proto=IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
        # and without it a reply written in two parts (headers, then body) waits for the client's
        # delayed ACK: 40 ms on every kept-alive request (Nagle). Set on the listener too, which
        # the accepted connections inherit.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app(), log_level="critical", access_log=False, lifespan="off")
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="emulator")
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the emulator's server did not start")
            time.sleep(0.01)
        # the guard lets requests to a loopback URL through only when it is declared a double
        self._undeclare = register_fake_base_url(self.base_url)
        return self.base_url

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self._undeclare()
        server.should_exit = True
        if thread is not None:
            thread.join(timeout=10)
        self._server = self._thread = None

    def __enter__(self) -> Emulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _ConnectionDropped(Exception):
    """Raised inside a streamed body to make the server hang up mid-reply."""


async def _deliver(delivery: Delivery, drop: Callable[[str], Exception]) -> AsyncIterator[bytes]:
    """The reply's parts, each after the fault's delay; at the drop point, ``drop(reason)`` is
    raised: uvicorn then closes the socket mid-body, the in-process stream raises it to httpx2."""
    parts = delivery.parts
    cut = None if delivery.drop_after is None else min(delivery.drop_after, max(len(parts) - 1, 0))
    for sent, part in enumerate(parts):
        if cut is not None and sent >= cut:
            raise drop(f"emulator: connection dropped after {sent} chunk(s)")
        if delivery.delay:
            await asyncio.sleep(delivery.delay)
        yield part


class _Stream(httpx2.AsyncByteStream):
    def __init__(self, delivery: Delivery) -> None:
        self._delivery = delivery

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for part in _deliver(self._delivery, httpx2.RemoteProtocolError):
            yield part


class _SyncStream(httpx2.SyncByteStream):
    def __init__(self, delivery: Delivery) -> None:
        self._delivery = delivery

    def __iter__(self) -> Iterator[bytes]:
        parts = self._delivery.parts
        drop = self._delivery.drop_after
        cut = None if drop is None else min(drop, max(len(parts) - 1, 0))
        for sent, part in enumerate(parts):
            if cut is not None and sent >= cut:
                raise httpx2.RemoteProtocolError(f"emulator: connection dropped after {sent} chunk(s)")
            if self._delivery.delay:
                time.sleep(self._delivery.delay)
            yield part


class EmulatorTransport(httpx2.AsyncBaseTransport, httpx2.BaseTransport):
    """An ``httpx2`` transport that hands each request to an :class:`Emulator`, from an async client
    or a synchronous one (a synchronous SDK client takes only a synchronous ``http_client``)."""

    def __init__(self, emulator: Emulator) -> None:
        self.emulator = emulator

    def _answer(self, request: httpx2.Request, body: bytes) -> Any:
        """The emulator's delivery for ``request``: the one path both the async and the sync client take."""
        query = request.url.query
        return self.emulator.answer(
            request.method,
            request.url.path,
            query.decode() if isinstance(query, bytes) else str(query),
            request.headers.items(),
            body,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        delivery = self._answer(request, await request.aread())
        reply = delivery.reply
        return httpx2.Response(reply.status, headers=reply.headers, stream=_Stream(delivery), request=request)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        delivery = self._answer(request, request.read())
        reply = delivery.reply
        return httpx2.Response(reply.status, headers=reply.headers, stream=_SyncStream(delivery), request=request)


register_in_process_transport(EmulatorTransport)  # no socket, so no provider: the real-request guard lets it send


# ---------------------------------------------------------------------------------------------
# Serving a scenario file's turns
# ---------------------------------------------------------------------------------------------


def script_of(turns: Sequence[Any]) -> list[Turn | Fault]:
    """A scenario's ``turns:`` as emulator entries: replies as ``ModelTurn.scripted()`` makes them
    (what ``ScenarioProvider`` plays), ``raise`` as a connection dropped mid-stream, ``hang_up`` as
    a stream cut before its terminal event, ``status: N`` as that HTTP error, and a ``wire:``
    fault (``harness.scenarios._parts.WIRE_FAULTS``) wrapped around its reply."""
    entries: list[Turn | Fault] = []
    for model_turn in turns:
        wire = dict(model_turn.wire)
        scripted: Any = model_turn.scripted()
        if "status" in wire:
            entries.append(fault.status(wire["status"], model_turn.message, retry_after=wire.get("retry_after")))
            continue
        if model_turn.kind == "raise":
            scripted = fault.drop_mid_stream(1 if model_turn.has_content else 0, scripted)
        elif model_turn.kind == "hang_up":
            scripted = fault.truncate(scripted)
        for name, parameter in reversed(model_turn.wire):  # the first one written wraps the others
            scripted = _WIRE[name](parameter, scripted)
        entries.append(scripted)
    return entries


_WIRE: dict[str, Callable[[Any, Any], Fault]] = {
    "drop_mid_stream": lambda chunks, inner: fault.drop_mid_stream(chunks, inner),
    "truncate": lambda _, inner: fault.truncate(inner),
    "cut_mid_event": lambda _, inner: fault.cut_mid_event(inner),
    "error_event": lambda status, inner: fault.error_event(status, inner=inner),
    "bad_checksum": lambda _, inner: fault.bad_checksum(inner),
    "slow": lambda seconds, inner: fault.slow(seconds, inner),
    "malformed_chunk": lambda _, inner: fault.malformed_chunk(inner),
    "unknown_event": lambda _, inner: fault.unknown_event(inner),
    "gzip": lambda _, inner: fault.gzip(inner),
}
"""Each ``wire:`` fault name of a scenario file -> its ``harness.emulator._faults`` builder."""


def serve(script_path: str | Path, host: str = "127.0.0.1", port: int = 8765) -> None:
    """Serve the ``turns:`` of a scenario file on every provider's wire until interrupted,
    printing the base URL (flushed) first: ``harness emulate`` runs this. With
    ``meta.emulate.after_last: repeat`` (what a wire campaign saves) every request after the last
    turn gets the last turn again, as the campaign answered, instead of a 400."""
    from harness.scenarios._scenario import Scenario

    scenario = Scenario.from_yaml(Path(script_path))
    after_last = "repeat" if (scenario.meta.get("emulate") or {}).get("after_last") == "repeat" else "error"
    emulator = Emulator(script_of(scenario.turns), host=host, port=port, after_last=after_last)
    with emulator:
        print(emulator.base_url, flush=True)
        try:
            while emulator._thread is not None and emulator._thread.is_alive():
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
