"""Recorded backends: any real openprogram backend over a vcrpy cassette, recorded once, replayed forever.

A test talks to a provider once (a live one, or the loopback emulator), the exchange is saved as
a scrubbed vcrpy cassette, and every later run replays it offline, event by event. How:

- :func:`open_recording` opens one cassette (:class:`Recording`) in a record mode: vcrpy's
  ``none`` / ``once`` / ``new_episodes`` / ``all``, and ``rewrite``: record the whole cassette
  anew, the old file staying in place until the new one replaces it (atomically, and by
  default only when the test passes).
- :func:`recorded_backend` builds the real backend for ``(provider, endpoint)`` over an SDK
  client whose HTTP layer is the recording itself: an ``httpx2`` transport for OpenAI,
  Anthropic and Gemini, a botocore ``before-send`` handler for Bedrock. No global patching, so
  it works next to anything else a test does. The SDK always addresses the provider's real
  host; when recording, ``upstream`` (the emulator's base URL, say) is where requests are
  really sent. So the cassette names ``api.openai.com`` whether it was recorded against
  OpenAI or against ``127.0.0.1:53117``, and replays anywhere: the recorded URI is normalised
  at the source rather than matched loosely later.
- Replies reach the SDK split at their event boundaries (SSE events, AWS event-stream
  messages), while recording as on every replay: a streaming consumer sees the same events in
  the same order each time (vcrpy's own httpx stub joins a stream into one chunk, vcrpy#597).
- A request that matches no recorded one raises :class:`CassetteMismatchError`: the cassette,
  the request number and a unified diff against the closest recorded request.

The pytest workflow (the ``recorded`` fixture, pytest-recording's ``--record-mode``) lives in
``harness.pytest_plugin``; ``docs/record-replay.md`` is the guide.
"""

from __future__ import annotations

import asyncio
import copy
import difflib
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast
from urllib.parse import urlsplit

import httpx2

import harness._jsondiff as jsondiff
import harness.recording._clients as backends
import harness.recording._vcr._vcr_compat as vcr_compat
from harness.recording._age import AgeLimit
from harness.recording._live import base_url_from_env
from harness.recording._scrub import honest_encoding
from harness.recording._vcr import (
    VOLATILE_FIELDS,
    AtomicPersister,
    EventChunks,
    configure_vcr,
    cut_stream_error,
    first_difference,
    json_body,
    normalized_body,
    reply_parts,
    request_text,
    stream_cut,
)
from openprogram.providers import Provider

RECORD_MODES: Final[tuple[str, ...]] = ("none", "once", "new_episodes", "all", "rewrite")
"""pytest-recording's modes: vcrpy's four and ``rewrite`` (see the module docstring)."""

DEFAULT_ENDPOINTS: Final[Mapping[str, str]] = {
    "openai": "chat.completions",
    "anthropic": "messages",
    "gemini": "generateContent",
    "bedrock": "converse",
}
"""The endpoint ``recorded(provider)`` means when none is named."""

HARNESS_KEYS: Final[frozenset[str]] = frozenset(
    {"allow_unused", "keep_failed_recording", "ignore_fields", "max_age", "max_age_action"}
)
"""``vcr_config`` / ``vcr`` marker keys the harness reads (vcrpy ignores them); every accepted key is
checked by ``harness.pytest_plugin._recording.known_options``."""


class RecordingError(Exception):
    """A recording that cannot go on as asked (bad mode, unknown provider)."""


class CassetteMismatchError(AssertionError):
    """A request the cassette has no (whole) recording for, while the record mode forbids recording it."""

    def __init__(self, path: Path, number: int, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.number = number


@dataclass(eq=False)
class Recording:
    """One cassette opened for one test: what the transports ask, and what teardown checks.

    ``cassette`` is the :class:`vcr.cassette.Cassette` (vcrpy does the record-mode logic and
    the matching); ``persister`` scrubs, scans and writes it atomically.
    """

    path: Path
    mode: str
    cassette: Any
    persister: AtomicPersister
    allow_unused: bool = False
    ignore_fields: frozenset[str] = VOLATILE_FIELDS
    requests_seen: int = 0
    failures: list[Exception] = field(default_factory=list)
    """What the transports refused (a mismatch, a cut stream, a request that could not be sent for
    recording): each fails the test once, in its own words, whatever the code under test made of it."""

    @property
    def records(self) -> bool:
        """True when a request the cassette lacks would be sent and recorded (any mode but a replay)."""
        return not self.cassette.write_protected

    @property
    def loaded(self) -> int:
        """How many interactions the cassette held when it was opened."""
        return vcr_compat.loaded_count(self.cassette)

    def respond(self, vcr_request: Any) -> dict[str, Any] | None:
        """The recorded response for a request, ``None`` to send and record it, or a mismatch raised."""
        self.requests_seen += 1
        cassette = self.cassette
        if cassette.can_play_response_for(vcr_request):
            return self._whole(vcr_request, cassette.play_response(vcr_request))
        if cassette.write_protected:
            error = self._mismatch(vcr_request)
            self.failures.append(error)
            raise error
        return None

    def record(self, vcr_request: Any, response: dict[str, Any]) -> dict[str, Any]:
        """Append a live exchange; returns the response as stored (scrubbed, decoded), which the SDK then gets."""
        before = len(self.cassette.data)
        self.cassette.append(vcr_request, response)
        if len(self.cassette.data) > before:  # a project's own filter may have decoded the body, not the header
            return copy.deepcopy(honest_encoding(self.cassette.data[-1][1]))
        return response

    def unused(self) -> list[str]:
        """The recorded interactions no request used, as ``interaction N (METHOD URI)``."""
        counts = self.cassette.play_counts
        return [
            f"interaction {index} ({request.method} {request.uri})"
            for index, (request, _) in enumerate(self.cassette.data[: self.loaded])
            if counts[index] == 0
        ]

    @property
    def dirty(self) -> bool:
        return bool(self.cassette.dirty)

    def save(self) -> None:
        """Write what was recorded (nothing when nothing changed); raises on a credential found."""
        vcr_compat.save(self.cassette)

    def unsent(self, method: str, url: str, exc: BaseException) -> RecordingError:
        """The error for a request that could not be sent to be recorded, kept as one of :attr:`failures`.

        An HTTP stack reports a refused connection as ``ExceptionGroup: unhandled errors in a
        TaskGroup``; the innermost cause is what the user needs, and ``--block-network`` (which
        blocks recording for tests without a ``vcr`` marker) is named as the likely reason.
        """
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        cause = " ".join(f"{type(exc).__name__}: {exc}".split())
        hint = (
            "; --block-network blocks recording: record without it, replay with it"
            if "network is disabled" in cause.lower()
            else ""
        )
        error = RecordingError(
            f"{self.path}: request {self.requests_seen} ({method} {url}) could not be sent to be recorded: "
            f"{cause}{hint}"
        )
        self.failures.append(error)
        return error

    def _whole(self, request: Any, response: dict[str, Any]) -> dict[str, Any]:
        """``response`` if its stream ends whole; else the test fails rather than replay a shorter reply."""
        cut = stream_cut(response)
        if not cut:
            return response
        index = next((i for i, (_, r) in enumerate(self.cassette.data) if r is response), None)
        message = str(cut_stream_error(self.path, index, request, self.requests_seen, cut))
        error = CassetteMismatchError(self.path, self.requests_seen, message)
        self.failures.append(error)
        raise error

    def _mismatch(self, request: Any) -> CassetteMismatchError:
        number = self.requests_seen
        where = f"{self.path}: request {number} ({request.method} {request.uri})"
        hint = "record it with --record-mode=once (new cassette), new_episodes (add) or rewrite (replace)"
        if not self.path.exists():
            return CassetteMismatchError(
                self.path, number, f"{where}: there is no cassette and the record mode is {self.mode!r}; {hint}"
            )
        stored = [r for r, _ in self.cassette.data]
        if not stored:
            return CassetteMismatchError(self.path, number, f"{where}: the cassette has no interactions; {hint}")
        filtered = self.cassette.filter_request(copy.deepcopy(request)) or request
        sent = request_text(filtered, self.ignore_fields)
        index = max(range(len(stored)), key=lambda i: _closeness(filtered, stored[i], sent, self.ignore_fields))
        diff = "\n".join(
            difflib.unified_diff(
                request_text(stored[index], self.ignore_fields).splitlines(),
                sent.splitlines(),
                f"recorded interaction {index}",
                f"request {number}",
                lineterm="",
            )
        )
        if not diff:
            diff = f"(interaction {index} is this request, but it was already replayed: the code asked twice)"
        sent_body = normalized_body(filtered.body, self.ignore_fields)
        recorded_body = normalized_body(stored[index].body, self.ignore_fields)
        first = (
            f"first difference: {first_difference(sent_body, recorded_body)}\n"
            if not jsondiff.same(sent_body, recorded_body)
            else ""
        )
        return CassetteMismatchError(
            self.path,
            number,
            f"{where} matches no unused recorded interaction (record mode {self.mode!r}); "
            f"the closest is interaction {index}:\n{first}{diff}\n"
            f"If the change is intended, re-record: --record-mode=rewrite",
        )


def _closeness(request: Any, stored: Any, sent: str, ignore: Iterable[str]) -> tuple[int, float]:
    same_place = request.method == stored.method and urlsplit(request.uri)[1:3] == urlsplit(stored.uri)[1:3]
    return int(same_place), difflib.SequenceMatcher(None, request_text(stored, ignore), sent).ratio()


def open_recording(
    path: str | Path,
    mode: str = "none",
    config: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    extra_secrets: Iterable[str] = (),
) -> Recording:
    """Open ``path`` in ``mode`` with a ``vcr_config``-style ``config``; a corrupt file raises, untouched.

    ``config`` takes vcrpy's ``use_cassette`` options (``match_on``, ``before_record_request``,
    ``filter_headers``, ``allow_playback_repeats``...) plus ``allow_unused``, ``ignore_fields``.
    ``environ`` (default ``os.environ``) and ``extra_secrets`` feed the credential scan.
    """
    from vcr import VCR
    from vcr.cassette import Cassette
    from vcr.persisters.filesystem import CassetteNotFoundError

    if mode not in RECORD_MODES:
        raise RecordingError(f"record mode {mode!r} is not one of {', '.join(RECORD_MODES)}")
    config = dict(config or {})
    ignore = frozenset(VOLATILE_FIELDS | set(config.get("ignore_fields", ())))
    vcr = VCR(record_mode="all" if mode == "rewrite" else mode)
    persister = configure_vcr(vcr, persister=AtomicPersister(environ=environ, extra=extra_secrets))
    try:
        age = AgeLimit.from_options(config, may_record=mode != "none")
    except ValueError as exc:
        raise RecordingError(str(exc)) from None
    if ignore != VOLATILE_FIELDS:
        vcr.register_matcher("harness_body", _named(functools.partial(json_body, ignore=ignore), "harness_body"))
    options = {key: value for key, value in config.items() if key not in HARNESS_KEYS}
    options.pop("record_mode", None)
    options.pop("cassette_library_dir", None)
    merged = vcr.get_merged_config(**options)
    kwargs = {
        key: value
        for key, value in merged.items()
        if key not in ("path_transformer", "func_path_generator", "record_on_exception")
    }
    kwargs["path"] = str(path)
    if mode == "rewrite":
        cassette = Cassette(**kwargs)
        try:  # nothing of the old file is replayed, but a corrupt one is still refused, not replaced
            persister.load_cassette(str(path), kwargs["serializer"])
            persister.forget(str(path))  # nor is its date kept: everything in the new file is recorded now
        except CassetteNotFoundError:
            pass
    else:
        persister.age = age if mode in ("none", "once", "new_episodes") else None  # all: recorded anew anyway
        cassette = Cassette.load(**kwargs)
    return Recording(
        Path(path), mode, cassette, persister, allow_unused=bool(config.get("allow_unused")), ignore_fields=ignore
    )


def _named(function: Any, name: str) -> Any:
    def matcher(r1: Any, r2: Any) -> Any:
        return function(r1, r2)

    matcher.__name__ = name
    return matcher


# ---------------------------------------------------------------------------------------------
# The transports: httpx2 (OpenAI, Anthropic, Gemini) and botocore (Bedrock)
# ---------------------------------------------------------------------------------------------


def _upstream_url(url: str, upstream: str | None) -> str:
    if not upstream:
        return url
    target, parts = urlsplit(upstream), urlsplit(url)
    path = target.path.rstrip("/") + parts.path
    return parts._replace(scheme=target.scheme, netloc=target.netloc, path=path).geturl()


def _on_loopback(upstream: str | None) -> bool:
    host = urlsplit(upstream).hostname if upstream else None
    return host is not None and (host == "localhost" or host.startswith("127.") or host == "::1")


class _InStep:
    """The requests ``new_episodes`` answered from the cassette, still to be shown to ``upstream``.

    A scripted upstream (the emulator) answers each request with the next turn of its script; the
    requests the cassette answered never reached it, so the first new request would get its first
    turn again. Before a new request is sent, the replayed ones are sent too (their replies
    dropped), and the script is where a whole recording would have left it. Only for an upstream
    on loopback that the test named (``upstream=``): a provider, or a gateway read from
    ``OPENAI_BASE_URL``..., is never sent a request twice.
    """

    def __init__(self, recording: Recording, upstream: str | None, keep_in_step: bool | None) -> None:
        wanted = _on_loopback(upstream) if keep_in_step is None else keep_in_step
        self.active = bool(upstream) and wanted and recording.mode == "new_episodes"
        self.pending: list[Any] = []

    def replayed(self, request: Any) -> None:
        if self.active:
            self.pending.append(request)

    def take(self) -> list[Any]:
        pending, self.pending = self.pending, []
        return pending


class CassetteTransport(httpx2.AsyncBaseTransport):
    """The SDK client's HTTP layer: answers from the recording, or sends upstream and records."""

    def __init__(self, recording: Recording, upstream: str | None = None, keep_in_step: bool | None = None) -> None:
        self.recording = recording
        self.upstream = upstream
        self._real: dict[int, httpx2.AsyncHTTPTransport] = {}
        self._in_step = _InStep(recording, upstream, keep_in_step)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        from vcr.request import Request as VcrRequest

        body = await request.aread()
        vcr_request = VcrRequest(request.method, str(request.url), body, dict(request.headers))
        played = self.recording.respond(vcr_request)
        if played is None:
            for replayed, replayed_body in self._in_step.take():
                await self._send(replayed, replayed_body)
            played = self.recording.record(vcr_request, await self._send(request, body))
        else:
            self._in_step.replayed((request, body))
        headers, chunks = reply_parts(played)
        status = played["status"]
        message = status.get("message") or ""
        return httpx2.Response(
            int(status["code"]),
            headers=headers,
            stream=cast("httpx2.AsyncByteStream", EventChunks.for_httpx(httpx2, chunks)),  # both kinds, by its bases
            request=request,
            extensions={"reason_phrase": message.encode("ascii", "replace")} if message else {},
        )

    async def _send(self, request: httpx2.Request, body: bytes) -> dict[str, Any]:
        loop = id(asyncio.get_running_loop())
        real = self._real.get(loop)
        if real is None:  # a connection pool belongs to one event loop
            real = self._real[loop] = httpx2.AsyncHTTPTransport()
        url = _upstream_url(str(request.url), self.upstream)
        forwarded = httpx2.Request(request.method, url, headers=request.headers, content=body)
        try:
            response = await real.handle_async_request(forwarded)
        except Exception as exc:
            raise self.recording.unsent(request.method, url, exc) from None
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)  # what an async transport hands back
        try:
            content = b"".join([part async for part in stream])
        finally:
            await response.aclose()
        headers: dict[str, list[str]] = {}
        for name, value in response.headers.multi_items():
            headers.setdefault(name, []).append(value)
        return {
            "status": {"code": response.status_code, "message": response.reason_phrase},
            "headers": headers,
            "body": {"string": content},
        }

    async def aclose(self) -> None:
        for real in self._real.values():
            try:
                await real.aclose()
            except Exception:  # a pool of an event loop that is gone: nothing left to release
                pass
        self._real.clear()


def attach_botocore(
    client: Any, recording: Recording, upstream: str | None = None, keep_in_step: bool | None = None
) -> None:
    """Make a boto3 client's requests go through ``recording`` (its ``before-send`` event)."""
    from botocore.awsrequest import AWSResponse
    from vcr.request import Request as VcrRequest

    in_step = _InStep(recording, upstream, keep_in_step)

    def send(request: Any, **_: Any) -> Any:
        body = request.body if isinstance(request.body, bytes) else (request.body or "").encode("utf-8")
        headers = {
            str(name): value.decode("latin-1") if isinstance(value, bytes) else str(value)
            for name, value in request.headers.items()
        }
        vcr_request = VcrRequest(request.method, request.url, body, headers)
        played = recording.respond(vcr_request)
        if played is None:
            try:
                for replayed in in_step.take():
                    _send_boto(replayed, upstream)
                sent = _send_boto(request, upstream)
            except Exception as exc:
                raise recording.unsent(request.method, _upstream_url(request.url, upstream), exc) from None
            played = recording.record(vcr_request, sent)
        else:
            in_step.replayed(copy.copy(request))
        pairs, chunks = reply_parts(played)
        merged: dict[str, str] = {}
        for name, value in pairs:
            merged[name] = f"{merged[name]}, {value}" if name in merged else value
        # botocore reads the headers as a mapping; its stub asks for the HTTPHeaders it builds itself
        return AWSResponse(request.url, int(played["status"]["code"]), cast("Any", merged), EventChunks(chunks))

    client.meta.events.register("before-send.bedrock-runtime.*", send)


def _send_boto(request: Any, upstream: str | None) -> dict[str, Any]:
    from botocore.httpsession import URLLib3Session

    forwarded = copy.copy(request)
    forwarded.url = _upstream_url(request.url, upstream)
    session = URLLib3Session(timeout=backends.TIMEOUT_SECONDS)  # type: ignore[arg-type]  # the stub says int; urllib3 takes seconds as a float
    try:
        response = session.send(forwarded)
        content = response.content
    finally:
        session.close()
    return {
        "status": {"code": response.status_code, "message": ""},
        "headers": {str(name): [str(value)] for name, value in response.headers.items()},
        "body": {"string": content},
    }


# ---------------------------------------------------------------------------------------------
# The backend
# ---------------------------------------------------------------------------------------------


def recorded_client(
    provider: str,
    recording: Recording,
    *,
    upstream: str | None = None,
    connection: backends.Connection | None = None,
    keep_in_step: bool | None = None,
) -> backends.SDKClient:
    """An SDK client for ``provider`` whose every request goes through ``recording``.

    ``connection`` chooses credentials and the provider's URL (default: test keys when replaying
    or recording against ``upstream``, the environment's keys when recording from the provider);
    its ``base_url`` must be unset, since the SDK must address the real host. ``keep_in_step``:
    in ``new_episodes``, send ``upstream`` the requests the cassette answered before the next new
    one, so a scripted upstream answers it with the turn that follows them (default: when
    ``upstream`` is on loopback).
    """
    if connection is None:
        live = recording.records and upstream is None
        connection = backends.Connection.from_env() if live else backends.Connection.test()
    if connection.base_url:
        raise RecordingError("a recorded backend addresses the provider itself; pass the emulator as upstream=")
    if provider == "bedrock":
        sdk = backends.sdk_client("bedrock", connection)
        attach_botocore(sdk.client, recording, upstream, keep_in_step)
        return sdk
    kwargs = backends.client_kwargs(provider, connection)
    transport = CassetteTransport(recording, upstream, keep_in_step)
    http = httpx2.AsyncClient(transport=transport, timeout=backends.TIMEOUT_SECONDS)
    if provider == "gemini":
        kwargs["http_options"] = {**kwargs["http_options"], "httpx_async_client": http}
    else:
        kwargs["http_client"] = http
    built = backends.PROVIDERS[provider].build(kwargs)

    async def close() -> None:
        await built.aclose()
        await http.aclose()

    return backends.SDKClient(provider, built.client, close)


def recorded_backend(
    provider: str,
    recording: Recording,
    endpoint: str | None = None,
    *,
    model: str | None = None,
    stream: bool | None = None,
    upstream: str | None = None,
    connection: backends.Connection | None = None,
    keep_in_step: bool | None = None,
) -> tuple[Provider, backends.SDKClient]:
    """The real backend for ``(provider, endpoint)`` over :func:`recorded_client`, and that client (to close)."""
    if provider not in backends.PROVIDERS:
        raise RecordingError(
            f"no backend for the provider {provider!r} (known: {', '.join(sorted(backends.PROVIDERS))})"
        )
    endpoint = endpoint or DEFAULT_ENDPOINTS[provider]
    if stream and provider == "gemini" and endpoint == "generateContent":
        endpoint = "streamGenerateContent"
    if stream and provider == "bedrock" and endpoint == "converse":
        endpoint = "converse-stream"
    client = recorded_client(provider, recording, upstream=upstream, connection=connection, keep_in_step=keep_in_step)
    return backends.backend(provider, endpoint, model=model, stream=stream, client=client), client


# ---------------------------------------------------------------------------------------------
# What the ``recorded`` fixture gives a test (the plugin opens and finishes it)
# ---------------------------------------------------------------------------------------------


class RecordedFixture:
    """``recorded(provider, endpoint=None, *, model=None, stream=None, upstream=None, keys=None)`` -> a backend.

    Every backend of one test shares the test's cassette (``recorded.path``), in the session's
    record mode (``recorded.mode``). ``recorded.records`` says whether a request the cassette
    lacks would be sent: a test recording against the emulator starts it only then, so a
    replay needs no server. ``keys="env"`` records with the environment's credentials even
    against ``upstream`` (the default there is the harness's test key); a replay (record mode
    ``none``, or ``once`` with the cassette there) uses the test key whatever ``keys`` says.
    """

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.clients: list[backends.SDKClient] = []
        self.discarded: str | None = None

    @property
    def path(self) -> Path:
        return self.recording.path

    @property
    def mode(self) -> str:
        return self.recording.mode

    @property
    def records(self) -> bool:
        return self.recording.records

    def __call__(
        self,
        provider: str,
        endpoint: str | None = None,
        *,
        model: str | None = None,
        stream: bool | None = None,
        upstream: str | None = None,
        keys: backends.Keys | None = None,
        connection: backends.Connection | None = None,
    ) -> Provider:
        keep_in_step = None
        if upstream is None and connection is None and self.recording.records:
            # the provider's base-URL variable (OPENAI_BASE_URL...) says where a live request goes,
            # as live_backend reads it; the cassette still names the provider's host
            upstream = base_url_from_env(provider)
            keys = "env" if upstream is not None and keys is None else keys
            keep_in_step = False  # a gateway to the provider: never sent a request twice
        if connection is None and keys is not None:
            # a replay sends nothing, so it needs no key: CI replays with none in its environment
            live_keys = keys == "env" and self.recording.records
            connection = backends.Connection.from_env() if live_keys else backends.Connection.test()
        backend, client = recorded_backend(
            provider,
            self.recording,
            endpoint,
            model=model,
            stream=stream,
            upstream=upstream,
            connection=connection,
            keep_in_step=keep_in_step,
        )
        self.clients.append(client)
        return backend

    def finish(self, *, failed: bool, keep_failed: bool = False) -> list[str]:
        """Close the clients, save or withhold the recording, check use; the problems that fail the test."""
        self._close_clients()
        recording = self.recording
        problems = [str(error) for error in recording.failures]
        if recording.dirty:
            if failed and not keep_failed:
                self.discarded = (
                    f"{recording.path}: the new recording was not saved because the test failed "
                    "(keep it with --harness-keep-failed-recordings or vcr_config keep_failed_recording=True)"
                )
            else:
                from harness.recording._scrub import CredentialLeakError

                try:
                    recording.save()
                except CredentialLeakError as exc:
                    problems.append(str(exc))
        checks_use = recording.mode in ("none", "once", "new_episodes") and not recording.allow_unused
        unused = recording.unused() if checks_use and not failed and not recording.failures else []
        if unused:
            listed = "\n".join(f"  - {entry}" for entry in unused)
            problems.append(
                f"{recording.path}: {len(unused)} of {recording.loaded} recorded interaction(s) were never "
                f"requested:\n{listed}\n(the code under test asked less than when it was recorded; re-record with "
                "--record-mode=rewrite, or allow it with vcr_config allow_unused=True or "
                "@pytest.mark.recorded(allow_unused=True))"
            )
        return problems

    def _close_clients(self) -> None:
        clients, self.clients = self.clients, []
        if not clients:
            return

        async def close_all() -> None:
            for client in clients:
                try:
                    await client.aclose()
                except Exception:  # a client bound to a loop that is gone has nothing left to release
                    pass

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(close_all())
        else:  # finishing inside a running loop (an async fixture's teardown): leave them to the GC
            return
