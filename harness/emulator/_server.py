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
import dataclasses
import importlib
import inspect
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl

import httpx2

from harness.emulator._exchange import IdSource, WireReply, WireRequest
from harness.emulator._faults import (
    AsyncStream,
    ConnectionDropped,
    Delivery,
    Fault,
    ReadTimeout,
    SyncStream,
    apply,
    deliver,
    read_timeout_of,
    timed_out,
    wait_async,
    wait_sync,
)
from harness.emulator._journal import JournalFile, record
from harness.emulator._loopback import FrontDoor, LoopbackServer
from harness.emulator._scenario_file import AFTER_LAST, AfterLast, load_script
from harness.script import Turn, as_turn
from harness.wire import Route, is_credential_header, path_pattern, read_json
from openprogram.providers import register_fake_base_url, register_in_process_transport

PROVIDER_MODULES: tuple[str, ...] = ("openai", "anthropic", "gemini", "bedrock", "ollama")
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
        after_last: AfterLast = "error",
        journal: str | Path | None = None,
    ) -> None:
        if after_last not in AFTER_LAST:
            raise ValueError(f"after_last must be one of {', '.join(AFTER_LAST)}, got {after_last!r}")
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
            _Handler(route, path_pattern(route.path), module)
            for module in self.modules.values()
            for route in getattr(module, "ROUTES", ())
        ]
        self._lock = threading.Lock()
        self._journal: list[dict[str, Any]] = []
        self._run, self._received = 1, 0
        self._journal_file = JournalFile(journal) if journal is not None else None
        """``journal=FILE``: every request also written to FILE as a JSON line, flushed as it is answered."""
        self._loopback: LoopbackServer | None = None
        self._undeclare: Callable[[], None] = lambda: None
        self._stalled: list[Delivery] = []
        self.door = FrontDoor()
        """Whom the port answers (``harness emulate --allow-origin``, ``--allow-remote``)."""

    @classmethod
    def from_file(cls, path: str | Path, *, after_last: AfterLast | None = None, **kwargs: Any) -> Emulator:
        """An emulator serving the ``turns:`` of a scenario file, as ``harness emulate --script``
        does: a shrunk wire regression replayed in a test, or a hand-written script kept in YAML.

        ``after_last`` defaults to the file's ``meta.emulate.after_last``; the other keywords are
        the constructor's. A file that cannot be used raises ``harness.scenarios.ScenarioError``
        in one line naming the file and what is wrong."""
        entries, from_meta = load_script(path)
        return cls(entries, after_last=after_last or from_meta, **kwargs)

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
        """Every request received since the script last started, in order, refused ones too, as
        JSON records (``docs/emulator.md``): what ``GET /_emulator/requests`` answers and what
        ``journal=FILE`` writes, so a test driving ``harness emulate`` from another process can see
        what its agent sent and what it got."""
        with self._lock:
            return list(self._journal)

    def reset_script(self) -> None:
        """Forget the requests, so the next one gets the script's first entry again (``POST
        /_emulator/reset``): one served scenario, run against an agent as often as wanted. The
        journal restarts with it; a journal file keeps everything, its records' ``run`` counting
        the resets."""
        with self._lock:
            self.requests = []
            self.ids = IdSource()
            self._journal = []
            self._run += 1
            self._received = 0

    def close_journal(self) -> None:
        """Close the journal file (``stop()`` does); its every record is already on disk."""
        if self._journal_file is not None:
            self._journal_file.close()

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

    def _find_path(self, path: str) -> tuple[_Handler, dict[str, str]] | None:
        for handler in self._handlers:
            match = handler.pattern.match(path)
            if match:
                return handler, match.groupdict()
        return None

    def answer(self, method: str, path: str, query: str, headers: Iterable[tuple[str, str]], body: bytes) -> Delivery:
        """The delivery for one HTTP request: matched to a provider, captured, given its script
        entry, and journaled (refused requests too) with the status it got."""
        received = time.time()
        headers = list(headers)
        with self._lock:
            self._received += 1
            run, number = self._run, self._received
        note: dict[str, Any] = {"turn": None, "entry": None, "request": None}
        status = 500
        try:
            delivery = self._answer(method, path, query, headers, body, note)
            status = delivery.reply.status
            return delivery
        finally:
            request: WireRequest | None = note["request"]
            kept = request.headers if request else {k.lower(): v for k, v in headers if not is_credential_header(k)}
            self._record(
                record(
                    run=run,
                    number=number,
                    received=received,
                    method=method.upper(),
                    path=path,
                    query=request.query if request else dict(parse_qsl(query, keep_blank_values=True)),
                    headers=kept,
                    body=request.body if request else decode_body(None, body)[0],
                    route=request.route if request else None,
                    streaming=request.streaming if request else None,
                    turn=note["turn"],
                    entry=note["entry"],
                    status=status,
                )
            )

    def _answer(
        self, method: str, path: str, query: str, headers: Iterable[tuple[str, str]], body: bytes, note: dict[str, Any]
    ) -> Delivery:
        found = self._find(method, path)
        if found is None:
            return self._unrouted(method, path, query, headers)
        handler, params = found
        module = handler.module
        kept = _kept_headers(headers)
        parsed, problem = decode_body(kept.get("content-type"), body)
        request = WireRequest(
            method=method.upper(),
            path=path,
            query=dict(parse_qsl(query, keep_blank_values=True)),
            headers=kept,
            body=parsed,
            route=handler.route,
            path_params=params,
        )
        note["request"] = request
        if problem is not None:  # what the provider would refuse takes no turn of the script
            return Delivery(module.error_reply(400, f"emulator: {problem}", request))
        with self._lock:
            self.requests.append(request)
            number = len(self.requests)
        entry = self.entry(number, request)
        if entry is None:
            message = (
                f"emulator: request {number} is beyond the script ({len(self.script)} entr"
                f"{'y' if len(self.script) == 1 else 'ies'} scripted); add a turn or check why the client asked again"
            )
            return Delivery(module.error_reply(400, message, request))
        repeated = number > len(self.script) and self.after_last == "repeat" and bool(self.script)
        note["turn"] = len(self.script) if repeated and entry is self.script[-1] else number
        note["entry"] = entry.describe()
        return self._deliver(module, entry, request, number)

    def _unrouted(self, method: str, path: str, query: str, headers: Iterable[tuple[str, str]]) -> Delivery:
        """A request no route takes: the provider's 405 naming the verb its path takes, else a 404 of the routes."""
        other = self._find_path(path)
        if other is not None:  # the provider's path, another verb
            handler, params = other
            request = WireRequest(
                method=method.upper(),
                path=path,
                query=dict(parse_qsl(query, keep_blank_values=True)),
                headers=_kept_headers(headers),
                body={},
                route=handler.route,
                path_params=params,
            )
            message = f"emulator: {method.upper()} {path}: this path takes {handler.route.method} only"
            refused = handler.module.error_reply(405, message, request)
            return Delivery(dataclasses.replace(refused, headers={**refused.headers, "allow": handler.route.method}))
        known = ", ".join(f"{r.method} {r.path}" for r in self.routes)
        text = json.dumps({"error": {"message": f"emulator: no provider serves {method} {path} (served: {known})"}})
        return Delivery(WireReply(404, {"content-type": "application/json"}, text.encode()))

    def _deliver(self, module: ModuleType, entry: Turn | Fault, request: WireRequest, number: int) -> Delivery:
        """The script's entry for request ``number`` on the request's wire: a fault applied to its turn, or the turn."""
        if isinstance(entry, Fault):
            if entry.status is not None:
                return Delivery(
                    _error_reply(module, entry.status, entry.message, request, entry.retry_after, entry.code)
                )
            scripted = self._resolve(entry.turn, request, number)
            rendered = _render(module, scripted, request, self.ids)
            if isinstance(rendered, Delivery):
                return rendered
            delivery = apply(entry, rendered, request, module)
            if delivery.stalls:
                with self._lock:
                    self._stalled.append(delivery)
            return delivery
        rendered = _render(module, self._resolve(entry, request, number), request, self.ids)
        return rendered if isinstance(rendered, Delivery) else Delivery(rendered)

    def release_stalls(self) -> None:
        """Close every stalled stream still held open (``stop`` does; so does a campaign whose
        conversation is over): its client sees the connection close, nothing is left waiting."""
        with self._lock:
            stalled, self._stalled = self._stalled, []
        for delivery in stalled:
            delivery.released.set()

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._journal.append(entry)
        if self._journal_file is not None:
            self._journal_file.write(entry)

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
            respond: Callable[[Any], Any] = scripted.respond  # typed for the loop's ModelRequest
            scripted = as_turn(respond(request), f"script entry {number} (respond)")
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
            if delivery.first_byte:
                await asyncio.sleep(delivery.first_byte)
            if reply.chunks is None and not delivery.delay and delivery.drop_after is None:
                return Response(reply.body or b"", status_code=reply.status, headers=reply.headers)
            return StreamingResponse(
                deliver(delivery, ConnectionDropped), status_code=reply.status, headers=reply.headers
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

    STOP_WAIT = 10.0
    """Seconds ``stop`` waits for the server's thread to end (uvicorn looks every 0.1 s)."""

    @property
    def base_url(self) -> str:
        if self._loopback is None:
            raise RuntimeError("the emulator is not serving: use `with Emulator(...) as emu:` or emu.start()")
        return f"http://{self.host}:{self.port}"

    @property
    def serving(self) -> bool:
        return self._loopback is not None and self._loopback.alive

    def start(self) -> str:
        """Serve on ``host:port`` (port 0: a free one) in a background thread; returns the base URL."""
        if self._loopback is not None:
            return self.base_url
        loopback = LoopbackServer(self.app(), self.host, self.port, name="emulator", door=self.door)
        self.port = loopback.start()
        self._loopback = loopback
        # the guard lets requests to a loopback URL through only when it is declared a double
        self._undeclare = register_fake_base_url(self.base_url)
        return self.base_url

    def stop(self) -> None:
        """Stop serving (waiting for the server thread, ``STOP_WAIT``) and close the journal file."""
        loopback, self._loopback = self._loopback, None
        self.release_stalls()  # uvicorn waits for open responses: a stalled one must end first
        if loopback is not None:
            self._undeclare()
            loopback.stop(timeout=self.STOP_WAIT)
        self.close_journal()

    def __enter__(self) -> Emulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _error_reply(
    module: ModuleType,
    status: int,
    message: str,
    request: WireRequest,
    retry_after: float | None,
    code: str | None = None,
) -> WireReply:
    """A scripted error status with its ``retry-after`` header; a renderer whose ``error_reply``
    takes ``retry_after=`` also says it in its body (Gemini's ``RetryInfo.retryDelay``), one that
    takes ``code=`` the error's code (OpenAI's ``insufficient_quota``)."""
    reply: WireReply
    accepts = inspect.signature(module.error_reply).parameters
    extra: dict[str, Any] = {"retry_after": retry_after} if retry_after is not None and "retry_after" in accepts else {}
    if code is not None and "code" in accepts:
        extra["code"] = code
    reply = module.error_reply(status, message, request, **extra)
    if retry_after is not None:
        reply.headers["retry-after"] = f"{retry_after:g}"
    return reply


def _kept_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers if not is_credential_header(k)}


def decode_body(content_type: str | None, body: bytes) -> tuple[Any, str | None]:
    """The request's JSON object, or the body as text and why a provider would refuse it: every
    route takes a JSON object, and a client's malformed request must get the provider's 400, not
    a server error (an empty body, another content type, and what ``harness.wire.read_json``
    refuses: bytes that are not UTF-8, text that is not JSON or nests too deeply, an integer too
    long to read, a lone surrogate; then JSON that is not an object)."""
    text = body.decode("utf-8", "replace")
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media and media != "application/json" and not media.endswith("+json"):
        return text, f"the body must be JSON sent as application/json, not {media}"
    if not body.strip():
        return text, "the request has no body; send a JSON object"
    parsed, problem = read_json(body)
    if problem is not None:
        return text, problem
    if not isinstance(parsed, dict):
        return parsed, f"the body must be a JSON object, got {_json_kind(parsed)}"
    return parsed, None


def _json_kind(value: Any) -> str:
    kinds = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else kinds.get(type(value), type(value).__name__)


def _render(module: ModuleType, scripted: Turn, request: WireRequest, ids: IdSource) -> WireReply | Delivery:
    """The provider's rendering of ``scripted``; a request whose fields the renderer cannot read (a
    ``messages`` that is a number, a depth past the interpreter's) is the client's, so it gets
    the provider's 400 naming what failed, never a 500."""
    try:
        rendered: WireReply | Delivery = module.render(scripted, request, ids)
        return rendered
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
        reason = f"emulator: cannot answer this {request.route.endpoint} request: {type(exc).__name__}: {exc}"
        return Delivery(module.error_reply(400, reason, request))


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
        if delivery.first_byte:  # the status comes late: within the client's read timeout, or it gives up
            try:
                await wait_async(delivery, delivery.first_byte, read_timeout_of(request))
            except ReadTimeout as exc:
                raise timed_out(request, exc) from None
        reply = delivery.reply
        return httpx2.Response(
            reply.status, headers=reply.headers, stream=AsyncStream(delivery, request), request=request
        )

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        delivery = self._answer(request, request.read())
        if delivery.first_byte:
            try:
                wait_sync(delivery, delivery.first_byte, read_timeout_of(request))
            except ReadTimeout as exc:
                raise timed_out(request, exc) from None
        reply = delivery.reply
        stream = SyncStream(delivery, request)
        return httpx2.Response(reply.status, headers=reply.headers, stream=stream, request=request)


register_in_process_transport(EmulatorTransport)  # no socket, so no provider: the real-request guard lets it send


def serve(
    script: str | Path | Emulator,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    after_last: AfterLast | None = None,
    journal: str | Path | None = None,
) -> None:
    """Serve a scenario file's ``turns:`` (or an :class:`Emulator` built already) on every
    provider's wire until interrupted (SIGINT or SIGTERM), printing the base URL (flushed) first:
    ``harness emulate`` runs this. For a file, ``after_last`` defaults to its
    ``meta.emulate.after_last`` (what a wire campaign saves: ``repeat``) and ``journal`` names
    the JSON-lines journal file. Stopping closes the journal, every request in it."""
    emulator = (
        script
        if isinstance(script, Emulator)
        else Emulator.from_file(script, host=host, port=port, after_last=after_last, journal=journal)
    )
    previous = None
    if threading.current_thread() is threading.main_thread():  # SIGTERM (kill, docker stop) ends it as Ctrl-C does
        previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with emulator:
            print(emulator.base_url, flush=True)
            print(client_settings(emulator.base_url), file=sys.stderr, flush=True)
            while emulator.serving:
                time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        emulator.close_journal()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


CLIENT_BASE_URLS: tuple[tuple[str, str, str], ...] = (
    ("OpenAI SDK (and pydantic-ai, OpenAI Agents, ChatOpenAI, LiteLLM openai/)", "base_url", "/v1"),
    ("Anthropic SDK (and pydantic-ai, ChatAnthropic, LiteLLM anthropic/)", "base_url", ""),
    ("google-genai", "http_options.base_url", ""),
    ("boto3 bedrock-runtime", "endpoint_url", ""),
    ("LiteLLM gemini/", "api_base", "/v1beta"),
)
"""What each client takes to reach the emulator at BASE: (who, the setting, the suffix to BASE)."""

SURFACE_BASE_URLS: tuple[tuple[str, str, str], ...] = (
    ("AzureOpenAI (or AZURE_OPENAI_ENDPOINT)", "azure_endpoint", ""),
    ("Azure OpenAI's v1 API and Groq, through the OpenAI SDK", "base_url", "/openai/v1"),
    ("OpenRouter, through the OpenAI SDK", "base_url", "/api/v1"),
    ("AnthropicVertex (or ANTHROPIC_VERTEX_BASE_URL)", "base_url", "/v1"),
    ("AnthropicBedrock (or ANTHROPIC_BEDROCK_BASE_URL)", "base_url", ""),
    ("the AI SDK's Anthropic provider (Messages served at the root too)", "baseURL", ""),
    ("ollama (or OLLAMA_HOST)", "host", ""),
)
"""The same for the services serving these wires under their paths (``harness.wire.Route.surface``,
Ollama), printed after the journal's line: the lines scripts read first keep their places."""


def client_settings(base_url: str) -> str:
    """The lines ``harness emulate`` prints under its base URL (to stderr, so stdout stays the URL
    alone): each client's setting for this server, and the journal and reset endpoints."""
    lines = [f"  {who}: {setting}={base_url}{suffix}" for who, setting, suffix in CLIENT_BASE_URLS]
    lines.append(
        f"  requests received: GET {base_url}{JOURNAL_PATH}; start the script over: POST {base_url}{RESET_PATH}"
    )
    lines.extend(f"  {who}: {setting}={base_url}{suffix}" for who, setting, suffix in SURFACE_BASE_URLS)
    return "\n".join(lines)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
