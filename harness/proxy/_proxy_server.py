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

Requests are served concurrently. Every credential a request carries becomes a secret of its
cassette (refused by the pre-write scan, redacted from every message: ``harness.recording``'s
``request_secrets``), a stream the upstream cut reaches the client cut and is not recorded, and a
request a stop cuts short is named (docs/record-replay.md, "Threat model").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from harness.emulator import FrontDoor, LoopbackServer
from harness.proxy._cassette_select import CassetteChoiceError, Cassettes, Outcome, split_selection
from harness.proxy._forwarding import HOP_BY_HOP, TRANSPORT_CUT, Forwarder, kept_headers, recorded_uri
from harness.proxy._intake import MAX_BODY, ClientLeft, IntakeError, body_of, checked_path
from harness.proxy._sigv4 import SigningError
from harness.recording import (
    CassetteError,
    CassetteMismatchError,
    RecordingError,
    is_secret_header,
    redact,
    request_secrets,
)
from harness.recording._vcr import reply_parts  # the one private import: a stored reply split at its events
from harness.wire import ROUTES, Destination, Route, RouteError, check_values, route_by_path

NO_MATCH: Final = "harness proxy: no recorded interaction matches"
"""How the message of a request the cassette cannot answer starts (DESIGN section 6)."""

_CUT: Final = "a stream cut inside its last event"
_CUT_SAID: Final = "inside the last event (%d bytes end no event); not recorded, and its client got the stream cut"
_CUT_MARK: Final = "harness_proxy_cut"
"""Set on a reply (never stored) whose stream the upstream cut: the client gets it cut too."""

EXPLAIN_SECONDS: Final = 10.0
"""How long the diff of an unmatched request may take (in a thread) before its one line is said alone."""


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
        self.in_flight: dict[int, str] = {}
        """The requests being answered, as ``METHOD PATH``: named when a stop cuts them short."""
        if upstream:
            self.cassettes.secrets.update(request_secrets((), upstream, None))  # a gateway's key in --upstream
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
            except Exception as exc:  # said to the client and in the report in one line, never a bare 500
                status, message = _failure(exc)
                message = redact(message, self.cassettes.secrets)
                self.cassettes.refused.append(f"{request.method} {request.url.path}: {message}")
                return Response(_neutral(message), status_code=status, media_type="application/json")
            return answered

        methods = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]
        return _Tracked(self, Starlette(routes=[StarletteRoute("/{path:path}", endpoint, methods=methods)]))

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
            return _neutral_response("harness proxy: the client went away before its body was whole", 499)
        try:
            cassette = self.cassettes.path_for(name)
        except CassetteChoiceError as exc:
            return self._refusal(destination, 400, f"harness proxy: {exc}")
        async with self._turn(cassette):
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

    def _turn(self, cassette: Path) -> Any:
        """Requests are served concurrently; only a scripted upstream kept in step under ``new_episodes``
        (it answers by its script's order) takes one request of a cassette at a time."""
        if self.cassettes.mode == "new_episodes" and self.forwarder.scripted:
            return self.cassettes.lock(cassette)
        return contextlib.nullcontext()

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
        refused = self.cassettes.refused
        try:
            recording = self.cassettes.recording(cassette)
        except (CassetteError, RecordingError) as exc:
            refused.append(f"{method} {path} ({cassette}): {exc}")
            return 500, f"harness proxy: {exc}"
        kept = kept_headers(headers)
        vcr_request = self._stored_request(
            recording, method, recorded_uri(destination, path, query, self.environ), kept, body
        )
        try:
            played: dict[str, Any] | None = recording.respond(vcr_request, explain=False)
        except CassetteMismatchError as exc:
            return await self._mismatch(recording, vcr_request, exc, method, path, cassette)
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
            text = redact(str(error), self.cassettes.secrets)
            refused.append(f"{method} {path} ({cassette}): {text}")
            return 502, f"harness proxy: {text}"
        return self._kept(recording, vcr_request, response, f"{method} {path} ({cassette})")

    def _kept(self, recording: Any, vcr_request: Any, response: dict[str, Any], said: str) -> dict[str, Any]:
        """The upstream's reply recorded and handed on, unless the upstream cut it (short of its framing,
        or inside its last event): then it is kept out of the cassette, named, and the client gets it cut."""
        framing = response.pop(TRANSPORT_CUT, None)
        if framing is not None:
            how = redact(str(framing), self.cassettes.secrets)
            self.cassettes.refused.append(f"{said}: the upstream cut its reply ({how}); not recorded")
            return {**response, _CUT_MARK: True}
        recorded: dict[str, Any]
        recorded, cut = recording.record_whole(vcr_request, response)
        if cut:
            self.cassettes.refused.append(f"{said}: the upstream cut its streamed reply {_CUT_SAID % cut}")
            return {**recorded, _CUT_MARK: True}
        return recorded

    def _stored_request(self, recording: Any, method: str, uri: str, kept: dict[str, str], body: bytes) -> Any:
        """The request as the cassette keeps it: every credential it carries made a secret of the cassette
        (refused by its pre-write scan from now on, redacted from every message) and its secret headers
        left out, a gateway's included."""
        from vcr.request import Request as VcrRequest

        secrets = request_secrets(kept.items(), uri, body)
        if secrets:
            recording.add_secrets(secrets)
            self.cassettes.secrets.update(secrets)
        stored = {name: value for name, value in kept.items() if not is_secret_header(name, value)}
        return VcrRequest(method, uri, body, stored)

    async def _mismatch(
        self, recording: Any, request: Any, exc: CassetteMismatchError, method: str, path: str, cassette: Path
    ) -> tuple[int, str]:
        """A request the cassette cannot answer: the fixture's words, led by one line naming the first difference.

        The diff is worked out in a thread, bounded (:data:`EXPLAIN_SECONDS`): other clients go on being served.
        """
        text = str(exc)
        if _CUT in text:
            self.cassettes.refused.append(f"{method} {path} ({cassette}): {text}")
            return 400, f"harness proxy: {text}"
        number, uri = exc.number, request.uri
        try:
            explained = asyncio.to_thread(recording.explain, request, number)
            text = str(await asyncio.wait_for(explained, EXPLAIN_SECONDS))
        except TimeoutError:
            text += f" (the difference was not worked out within {EXPLAIN_SECONDS:g} s: the request is too large)"
        text = redact(text, self.cassettes.secrets)
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

        message = redact(message, self.cassettes.secrets)
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
        """Stop, then save every cassette that changed and say what went unmatched, unused or unanswered."""
        self.stop()
        for what in list(self.in_flight.values()):  # the server's thread did not end (stop's timeout)
            self.cassettes.refused.append(f"{what}: still unanswered when the proxy stopped")
        self.in_flight.clear()
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
    """A stored reply as the client gets it: one body, or its events sent one by one; a stream the
    upstream cut (:data:`_CUT_MARK`) ends as it did, the connection closed with no clean end."""
    from starlette.responses import Response, StreamingResponse

    pairs, chunks = reply_parts(played)
    status = int(played["status"]["code"])
    headers = _merged(pairs)
    cut = bool(played.get(_CUT_MARK))
    if len(chunks) <= 1 and not cut:
        return Response(b"".join(chunks), status_code=status, headers=headers)

    async def events() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk
        if cut:
            raise _UpstreamCut("the upstream cut this stream")

    return StreamingResponse(events(), status_code=status, headers=headers)


class _UpstreamCut(Exception):
    """Raised after a cut stream's last bytes: the server then closes the connection, as the upstream did."""


def _failure(exc: Exception) -> tuple[int, str]:
    """The status and one line for what ``_answer`` raised: the environment's doing said as such, else a bug."""
    from starlette.requests import ClientDisconnect

    if isinstance(exc, ClientDisconnect):
        return 499, "harness proxy: the client went away before its request was read; nothing was answered"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return 500, f"harness proxy: {exc.strerror or type(exc).__name__}{where}"
    return 500, f"harness proxy: internal error: {type(exc).__name__}: {exc} (this is a bug in the harness)"


class _Tracked:
    """The app, with each request in flight known to the proxy: one a stop cuts short is named in the
    report, and its client gets the provider's envelope saying so (or, mid-reply, a closed connection),
    not the server's plain-text 500 that looks like the provider failing."""

    def __init__(self, proxy: Proxy, app: Any) -> None:
        self.proxy, self.app = proxy, app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Any) -> None:
            nonlocal started
            started = started or message.get("type") == "http.response.start"
            await send(message)

        key, what = id(scope), f"{scope.get('method')} {scope.get('path')}"
        self.proxy.in_flight[key] = what
        try:
            await self.app(scope, receive, sending)
        except asyncio.CancelledError:
            reply = "its reply cut" if started else "a 503 saying so"
            self.proxy.cassettes.refused.append(
                f"{what}: still unanswered when the proxy stopped; its client got {reply}"
            )
            if started:
                raise
            raw = (scope.get("raw_path") or b"").decode("latin-1") or str(scope.get("path"))
            message = f"harness proxy: the proxy stopped before {what} was answered; nothing was recorded for it"
            await self.proxy._refusal(_provider_of(raw), 503, message)(scope, receive, send)
        finally:
            self.proxy.in_flight.pop(key, None)
