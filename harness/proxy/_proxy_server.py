"""The proxy: every provider's wire on one loopback port, answered from vcrpy cassettes.

A request addressed to the proxy (the listener's front door, ``harness.emulator.FrontDoor``)
comes in on a provider's path (``harness.wire.route_by_path``, the one route table), is taken
in whole and checked (``_intake``: bounded, decoded, JSON; a region that names no other host),
names its cassette (``_cassette_select``) and is handed, as the URI the provider's own host would
have seen (``_forwarding.recorded_uri``), to that cassette's ``harness.recording`` Recording:
the ``recorded`` fixture's matching, cut-stream check, scrubbing and persister. A recorded reply
goes back split at its events (SSE events, AWS event-stream messages), each sent as it is taken,
so a streaming client sees a stream; a request the cassette lacks is forwarded
(``_forwarding``) when the record mode allows, and recorded. What cannot be answered is said in
the provider's own error envelope (the emulator's renderers), its message starting
``harness proxy:``; a path no provider serves is a 404 in a neutral one and is never forwarded.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from harness.emulator import FrontDoor, LoopbackServer
from harness.proxy._cassette_select import CassetteChoiceError, Cassettes, Outcome, split_selection
from harness.proxy._forwarding import HOP_BY_HOP, Forwarder, kept_headers, recorded_uri
from harness.proxy._intake import MAX_BODY, ClientLeft, IntakeError, body_of, checked_path
from harness.proxy._sigv4 import SigningError
from harness.recording import CassetteError, CassetteMismatchError, RecordingError
from harness.recording._vcr import reply_parts  # the one private import: a stored reply split at its events
from harness.wire import ROUTES, Destination, Route, RouteError, check_values, route_by_path

NO_MATCH: Final = "harness proxy: no recorded interaction matches"
"""How the message of a request the cassette cannot answer starts (DESIGN section 6)."""

_CUT: Final = "a stream cut inside its last event"


class ProxyError(Exception):
    """The proxy cannot start as asked (a cassette it cannot open, a port it cannot take); one line."""


def _envelopes() -> dict[str, ModuleType]:
    """Each provider's error renderer, by provider: the emulator's, so errors look as the provider's do."""
    from harness.emulator import Emulator

    return dict(Emulator().modules)


class Proxy:
    """Record and replay any process's model traffic; see the module docstring and docs/record-replay.md.

    ``cassette`` is a cassette file (requests naming none go there; named ones beside it) or a
    directory of them; ``mode`` one of the ``recorded`` fixture's record modes; ``config`` the
    ``open_recording`` options the command passes on (``max_age``, ``max_age_action``,
    ``allow_unused``); ``environ`` (default ``os.environ``) feeds the credential scan and the
    Bedrock signature; ``origins`` stands a server in for a provider's own host, per provider (a
    test's loopback AWS: requests to it are treated as to the provider, Bedrock's signed again);
    ``max_body`` the largest request body taken (``--max-body``); ``door`` whom the port answers
    (``--allow-origin``, ``--allow-remote``; docs/record-replay.md, "Threat model").
    """

    def __init__(
        self,
        cassette: str | Path,
        *,
        mode: str = "once",
        upstream: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        config: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        origins: Mapping[str, str] | None = None,
        max_body: int = MAX_BODY,
        door: FrontDoor | None = None,
    ) -> None:
        environ = dict(os.environ if environ is None else environ)
        self.max_body, self.door = max_body, door or FrontDoor()
        self.cassettes = Cassettes(Path(cassette), mode, dict(config or {}), environ)
        self.forwarder = Forwarder(upstream, environ, origins)
        self.environ = environ
        self.host, self.port = host, port
        self.served = 0
        self._modules = _envelopes()
        self._in_step: dict[Path, list[tuple[str, Destination, str, str, dict[str, str], bytes]]] = {}
        """Per cassette, what ``new_episodes`` replayed since a scripted upstream last heard from it."""
        self._loopback: LoopbackServer | None = None
        self._undeclare: Any = lambda: None

    def open_default(self) -> None:
        """Open the cassette a request naming none goes to, so a corrupt or expired one is said at start."""
        try:
            path = self.cassettes.path_for(None)
        except CassetteChoiceError:
            return  # a directory: each cassette opens with its first request
        try:
            self.cassettes.recording(path)
        except (CassetteError, RecordingError) as exc:
            raise ProxyError(str(exc)) from None

    # -- answering ------------------------------------------------------------------------------
    def app(self) -> Any:
        """The ASGI app (starlette, the ``emulator`` extra)."""
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response
        from starlette.routing import Route as StarletteRoute

        async def endpoint(request: Request) -> Response:
            try:
                answered: Response = await self._answer(request)
            except Exception as exc:  # a bug of ours: said to the client and in the report, never a bare 500
                message = f"harness proxy: internal error: {type(exc).__name__}: {exc} (this is a bug in the harness)"
                self.cassettes.refused.append(f"{request.method} {request.url.path}: {message}")
                return Response(_neutral(message), status_code=500, media_type="application/json")
            return answered

        methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
        return Starlette(routes=[StarletteRoute("/{path:path}", endpoint, methods=methods)])

    async def _answer(self, request: Any) -> Any:
        self.served += 1
        raw = request.scope.get("raw_path") or request.url.path.encode()
        raw_path, query = raw.decode("latin-1"), request.scope.get("query_string", b"").decode("latin-1")
        method, headers = request.method.upper(), list(request.headers.items())
        try:
            name, path = split_selection(raw_path, headers)
        except CassetteChoiceError as exc:
            return self._refusal(_provider_of(raw_path), 400, f"harness proxy: {exc}")
        destination = route_by_path(path.partition("?")[0], headers)
        if method != "POST" or destination is None or destination.base_url:
            return _not_found(method, path)
        try:
            body, headers = await self._taken(request, destination, path, headers)
        except IntakeError as exc:
            return self._refusal(destination, exc.status, str(exc))
        except ClientLeft:
            self.served -= 1  # nobody to answer: not a request answered, nor one the harness failed
            return _neutral_response("harness proxy: the client went away before its body was whole", 400)
        try:
            cassette = self.cassettes.path_for(name)
        except CassetteChoiceError as exc:
            return self._refusal(destination, 400, f"harness proxy: {exc}")
        async with self.cassettes.lock(cassette):
            answered = await self._played(method, destination, path, query, headers, body, cassette)
        if isinstance(answered, tuple):
            status, message = answered
            return self._refusal(destination, status, message)
        return _replay(answered)

    async def _taken(
        self, request: Any, destination: Destination, path: str, headers: list[tuple[str, str]]
    ) -> tuple[bytes, list[tuple[str, str]]]:
        """The body and headers to match, store and forward: the request's values and body checked
        (``_intake``: a path and region that name nothing else, a bounded, decoded JSON body)."""
        checked_path(path)
        try:
            check_values(destination)
        except RouteError as exc:
            raise IntakeError(400, f"harness proxy: {exc}; nothing was sent") from None
        return await body_of(request, headers, self.max_body)

    async def _played(
        self,
        method: str,
        destination: Destination,
        path: str,
        query: str,
        headers: list[tuple[str, str]],
        body: bytes,
        cassette: Path,
    ) -> dict[str, Any] | tuple[int, str]:
        """The vcrpy response to send back, or the status and message refusing the request."""
        from vcr.request import Request as VcrRequest

        refused = self.cassettes.refused
        try:
            recording = self.cassettes.recording(cassette)
        except (CassetteError, RecordingError) as exc:
            refused.append(f"{method} {path} ({cassette}): {exc}")
            return 500, f"harness proxy: {exc}"
        kept = kept_headers(headers)
        vcr_request = VcrRequest(method, recorded_uri(destination, path, query, self.environ), body, dict(kept))
        try:
            played: dict[str, Any] | None = recording.respond(vcr_request)
        except CassetteMismatchError as exc:
            return self._mismatch(exc, method, path, cassette, recording.requests_seen, vcr_request.uri)
        pending = self._in_step.setdefault(cassette, [])
        if played is not None:
            if self.cassettes.mode == "new_episodes" and self.forwarder.scripted:
                pending.append((method, destination, path, query, kept, body))
            return played
        try:
            while pending:  # the replayed requests a scripted upstream never saw, so it answers this one in step
                await self.forwarder.send(*pending.pop(0))
            response = await self.forwarder.send(method, destination, path, query, kept, body)
        except SigningError as exc:
            refused.append(f"{method} {path} ({cassette}): {exc}")
            return 502, f"harness proxy: {exc}"
        except Exception as exc:
            error: RecordingError = recording.unsent(method, self.forwarder.target(destination, path, query), exc)
            refused.append(f"{method} {path} ({cassette}): {error}")
            return 502, f"harness proxy: {error}"
        recorded: dict[str, Any] = recording.record(vcr_request, response)
        return recorded

    def _mismatch(
        self, exc: Exception, method: str, path: str, cassette: Path, number: int, uri: str
    ) -> tuple[int, str]:
        """A request the cassette cannot answer: the fixture's words, led by one line naming the first difference."""
        text = str(exc)
        if _CUT in text:
            self.cassettes.refused.append(f"{method} {path} ({cassette}): {text}")
            return 400, f"harness proxy: {text}"
        lines = text.splitlines()
        first = next((line for line in lines if line.startswith("first difference: ")), None)
        head = lines[0].removeprefix(f"{cassette}: request {number} ({method} {uri})").strip(" :;")
        summary = first or head
        self.cassettes.refused.append(f"{method} {path} ({cassette}, request {number}): {summary}")
        return 400, f"{NO_MATCH} {method} {path} ({cassette}, request {number}): {summary}\n{text}"

    def _refusal(self, where: Destination | str | None, status: int, message: str) -> Any:
        """``message`` in the provider's error envelope (a neutral one when the provider is unknown)."""
        from starlette.responses import Response

        from harness.emulator import WireRequest

        provider = where.provider if isinstance(where, Destination) else where
        module = self._modules.get(provider or "")
        if module is None:
            return Response(_neutral(message), status_code=status, media_type="application/json")
        route = _route_of(where) if isinstance(where, Destination) else _first_route(provider or "")
        request = WireRequest(method="POST", path=route.path, query={}, headers={}, body={}, route=route)
        reply = module.error_reply(status, message, request)
        return Response(reply.body or b"", status_code=reply.status, headers=reply.headers)

    # -- serving --------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self._loopback is None:
            raise RuntimeError("the proxy is not serving: use `with Proxy(...) as proxy:` or proxy.start()")
        return f"http://{self.host}:{self.port}"

    def start(self) -> str:
        """Serve on ``host:port`` (port 0: a free one) in a background thread; returns the base URL."""
        from openprogram.providers import register_fake_base_url

        if self._loopback is not None:
            return self.base_url
        # requests in flight get a few seconds to finish when it stops
        loopback = LoopbackServer(self.app(), self.host, self.port, name="proxy", graceful=5, door=self.door)
        try:
            self.port = loopback.start()
        except OSError as exc:
            raise ProxyError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from None
        except RuntimeError as exc:
            raise ProxyError(str(exc)) from None
        self._loopback = loopback
        self._undeclare = register_fake_base_url(self.base_url)  # a double, as the emulator: the guard lets it by
        return self.base_url

    @property
    def serving(self) -> bool:
        return self._loopback is not None and self._loopback.alive

    def stop(self) -> None:
        """Stop serving, letting requests in flight finish (a few seconds at most)."""
        loopback, self._loopback = self._loopback, None
        if loopback is not None:
            self._undeclare()
            loopback.stop(timeout=15)

    def finish(self) -> Outcome:
        """Stop, then save every cassette that changed and say what went unmatched or unused."""
        self.stop()
        return self.cassettes.finish()

    def __enter__(self) -> Proxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _route_of(destination: Destination) -> Route:
    found = next((r for r in ROUTES if (r.provider, r.endpoint) == (destination.provider, destination.endpoint)), None)
    return found or _first_route(destination.provider)


def _first_route(provider: str) -> Route:
    return next(route for route in ROUTES if route.provider == provider)


def _provider_of(raw_path: str) -> str | None:
    """The provider a request's path names past a cassette prefix, for a refusal in its envelope."""
    rest = raw_path.split("/", 3)[-1] if raw_path.startswith("/cassette/") else raw_path
    found = route_by_path("/" + rest.lstrip("/"))
    return found.provider if found is not None else None


def _neutral(message: str) -> bytes:
    return json.dumps({"error": {"type": "harness_proxy_error", "message": message}}).encode()


def _neutral_response(message: str, status: int) -> Any:
    from starlette.responses import Response

    return Response(_neutral(message), status_code=status, media_type="application/json")


def _not_found(method: str, path: str) -> Any:
    from starlette.responses import Response

    served = ", ".join(sorted({f"{route.method} {route.path}" for route in ROUTES}))
    message = f"harness proxy: no provider serves {method} {path}; nothing was forwarded (served: {served})"
    return Response(_neutral(message), status_code=404, media_type="application/json")


def _merged(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for name, value in pairs:
        if name.lower() in HOP_BY_HOP:
            continue
        merged[name] = f"{merged[name]}, {value}" if name in merged else value
    return merged


def _replay(played: dict[str, Any]) -> Any:
    """A stored reply as the client gets it: one body, or its events sent one by one."""
    from starlette.responses import Response, StreamingResponse

    pairs, chunks = reply_parts(played)
    status = int(played["status"]["code"])
    headers = _merged(pairs)
    if len(chunks) <= 1:
        return Response(b"".join(chunks), status_code=status, headers=headers)

    async def events() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return StreamingResponse(events(), status_code=status, headers=headers)
