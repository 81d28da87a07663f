"""What the SDK backends (OpenAI, Anthropic, Gemini, Bedrock) have in common, written once.

Each backend speaks its own wire format; everything around the wire format lives here, so the
four cannot drift apart on it:

- :class:`SDKProvider`: the ``Provider.stream`` skeleton (start event, the missing-model and
  cancelled-before-start errors, every failure turned into an ``error`` event) and the lazily
  built SDK client (each backend names its SDK's constructor in ``client_factory``).
- :class:`Decoder`: the one shape of every backend's wire decoder (``feed``, ``finish``, ``whole``).
- :class:`PerLoopClients` (from ``_clients.py``): one SDK client per event loop, for SDKs whose
  async HTTP pool is bound to the loop that first used it.
- :class:`CancelRace`: races each network wait against the caller's cancel event.
- :func:`http_error_text`, :func:`retry_after`, :func:`error_body_fields`: the one shape of an
  HTTP failure's text, ``HTTP <status> <type>: <message> (retry after <delay>)``.
- :func:`is_replayable` and :func:`merge_same_role`: history rules more than one API imposes.
- :func:`usage_with_cached_prompt`: token counts from APIs whose prompt count includes the cache.
- :func:`model_request_refusal`: the real-request guard every backend checks before it sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import math
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import aclosing
from typing import Any, ClassVar, Generic, TypeVar
from urllib.parse import urlsplit

from openprogram import providers as _switch
from openprogram.errors import describe_exception
from openprogram.providers import ModelRequest
from openprogram.providers._clients import PerLoopClients
from openprogram.providers.builder import MessageBuilder
from openprogram.types import AssistantMessage, AssistantMessageEvent, Message, Usage

_T = TypeVar("_T")
_ClientT = TypeVar("_ClientT")
_PartT = TypeVar("_PartT")

ABORTED_MESSAGE = "Request was aborted"
"""``error_message`` of every aborted reply, whichever backend produced it."""

END: Any = object()
"""Returned in place of an item by ``anext(iterator, END)`` / ``next(iterator, END)`` at the end."""


class Aborted(Exception):
    """The caller's cancel event fired while a backend was waiting on the network."""


# ---------------------------------------------------------------------------------------------
# Cancellation
# ---------------------------------------------------------------------------------------------


class CancelRace:
    """Races network waits against one cancel event, so a stalled server cannot delay an abort.

    One instance serves every wait of one reply (it keeps a single waiter on the event rather than
    one per streamed chunk); :meth:`close` it when the reply is over.
    """

    def __init__(self, cancel_event: asyncio.Event | None) -> None:
        self._event = cancel_event
        self._waiter: asyncio.Future[Any] | None = None

    @property
    def cancelled(self) -> bool:
        return self._event is not None and self._event.is_set()

    def raise_if_cancelled(self) -> None:
        """Raise :class:`Aborted` if the cancel event has fired."""
        if self.cancelled:
            raise Aborted

    async def wait(self, work: asyncio.Future[Any]) -> None:
        """Return once ``work`` is done or the cancel event fires, whichever comes first.

        ``work`` is left as it is: deciding what to do with unfinished work is the caller's part.
        """
        if self._event is None:
            await asyncio.wait({work})
            return
        if self._waiter is None or (self._waiter.done() and not self._event.is_set()):
            self._waiter = asyncio.ensure_future(self._event.wait())
        await asyncio.wait({work, self._waiter}, return_when=asyncio.FIRST_COMPLETED)

    async def run(self, awaitable: Awaitable[_T]) -> _T:
        """Await ``awaitable``, or cancel it and raise :class:`Aborted` as soon as the event fires.

        The abandoned work is cancelled and awaited (so its HTTP request or response is closed)
        before this returns, also when the calling task itself is cancelled.
        """
        if self._event is None:
            return await awaitable
        if self._event.is_set():
            _discard(awaitable)
            raise Aborted
        work = asyncio.ensure_future(awaitable)
        try:
            await self.wait(work)
        finally:
            if not work.done():
                work.cancel()
                await asyncio.wait({work})
        if work.cancelled():
            raise Aborted
        return work.result()

    def close(self) -> None:
        if self._waiter is not None:
            self._waiter.cancel()
            self._waiter = None


def _discard(awaitable: Awaitable[Any]) -> None:
    """Drop work that will never be awaited, without a "never awaited" warning."""
    if isinstance(awaitable, asyncio.Future):
        awaitable.cancel()
    elif asyncio.iscoroutine(awaitable):
        awaitable.close()


# ---------------------------------------------------------------------------------------------
# The real-request guard
# ---------------------------------------------------------------------------------------------

_OFF = frozenset({"0", "false", "no", "off"})
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    try:
        host = urlsplit(url if "//" in url else f"//{url}").hostname
    except ValueError:
        return False
    if not host:
        return False
    host = host.rstrip(".").lower()
    if host in _LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def client_base_url(client: Any) -> str | None:
    """Where an SDK client sends its requests, for the SDKs the backends use; None if unknown."""
    readers: tuple[Callable[[], Any], ...] = (
        lambda: client.base_url,  # openai, anthropic
        lambda: client.meta.endpoint_url,  # boto3
        lambda: client._api_client._http_options.base_url,  # google-genai
    )
    for read in readers:
        try:
            value = read()
        except Exception:
            continue
        if value:
            return str(value)
    return None


def answers_in_process(client: Any) -> bool:
    """Whether ``client`` sends over an in-process ``httpx2`` transport: a mock, or one registered
    with ``register_in_process_transport``. Read, not assumed: any other client may reach the network."""
    readers: tuple[Callable[[], Any], ...] = (
        lambda: client._client._transport,  # openai, anthropic: their http_client's transport
        lambda: client._api_client._async_httpx_client._transport,  # google-genai
    )
    for read in readers:
        try:
            transport = read()
        except Exception:
            continue
        if transport is None:
            continue
        import httpx2  # the SDKs' own HTTP library, loaded already once a client exists

        return isinstance(transport, httpx2.MockTransport) or _switch._registered_in_process(transport)
    return False


def _switch_off() -> str | None:
    """Why the process-wide switch refuses real requests, or None if it allows them."""
    env = os.environ.get(_switch.ALLOW_MODEL_REQUESTS_ENV)
    if env is not None and env.strip().lower() in _OFF:
        return f"{_switch.ALLOW_MODEL_REQUESTS_ENV}={env} turns them off (unset it or set it to 1)"
    if not _switch.ALLOW_MODEL_REQUESTS:
        return (
            "openprogram.providers.ALLOW_MODEL_REQUESTS is False (set it to True, or wrap the call in "
            "openprogram.providers.allow_model_requests())"
        )
    return None


def model_request_refusal(target: Callable[[], str | None]) -> str | None:
    """The ``error_message`` a backend ends with instead of sending, or None to send.

    In order: ``allow_model_requests(flag)`` around the call decides alone; else the switch
    (``ALLOW_MODEL_REQUESTS``, ``OPENPROGRAM_ALLOW_MODEL_REQUESTS``) may refuse; else a gate
    registered with ``register_request_gate`` (a test framework's, which knows the running test)
    may. Whatever refuses, the request still goes when ``target()`` (called only then) lies below
    a base URL declared a double (``register_fake_base_url``, ``OPENPROGRAM_FAKE_BASE_URLS``), or
    is None: no SDK client could be read or built, or it answers in process, so nothing can reach
    a model. A loopback URL is not let through as such: a real model server may listen there.
    """
    forced = _switch._allowed_here.get()
    why: str | None
    if forced is True:
        return None
    if forced is False:
        why = "openprogram.providers.allow_model_requests(False) is in force around this call"
    else:
        why = _switch_off() or _switch._gate_refusal()
    if why is None:
        return None
    url = target()
    if url is None or _switch._is_fake_base_url(url):
        return None
    refusal = f"real model request refused, nothing was sent to {url}: {why}"
    if is_loopback_url(url):
        refusal += (
            f" (a server on this machine may be a real model; if {url} is a double, declare it: "
            f"openprogram.providers.register_fake_base_url(URL), {_switch.FAKE_BASE_URLS_ENV}, or the "
            "harness_fake_base_urls ini option)"
        )
    return refusal


# ---------------------------------------------------------------------------------------------
# Decoders
# ---------------------------------------------------------------------------------------------


class Decoder:
    """Turns one reply's wire objects into builder events; one instance per reply.

    Every backend's decoder has this shape, so the four read alike: :meth:`feed` takes one item of
    a stream (an SSE event, a chunk, an event-stream frame), :meth:`finish` ends a stream that
    ran out, and :meth:`whole` reads a reply that came in one piece (streaming off), finish
    included. Block bookkeeping (wire indexes, closing what is open) is the builder's.
    """

    started = False
    """Whether any wire item has been read: a transport failure before that is the request's."""
    finished = False
    """Whether the reply's done or error event has been produced."""

    def __init__(self, builder: MessageBuilder) -> None:
        self.builder = builder

    def feed(self, item: Any) -> list[AssistantMessageEvent]:
        raise NotImplementedError

    def finish(self) -> list[AssistantMessageEvent]:
        raise NotImplementedError

    def whole(self, response: Any) -> list[AssistantMessageEvent]:
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------
# The Provider.stream skeleton
# ---------------------------------------------------------------------------------------------


class SDKProvider(Generic[_ClientT]):
    """Base of the SDK backends: the constructor, the client for the running loop, and ``stream``.

    ``client`` is used as given. Without one, :meth:`_build_client` makes one from
    ``client_kwargs`` (and the SDK's own environment variables) once per event loop: see
    :class:`PerLoopClients`. A backend whose client is bound to no loop overrides
    :meth:`_client_for_running_loop`.

    ``stream`` yields the start event, then the events of :meth:`_reply`. It never raises into the
    loop: a missing model, a cancel that came before the call, a request the real-request guard
    refuses (:func:`model_request_refusal`, checked before any connection), a cancel during the
    call and every exception end as one ``error`` event, described by :meth:`_describe`.
    """

    name: ClassVar[str]
    client_factory: ClassVar[Callable[..., Any]]
    """The SDK's client constructor; :meth:`_build_client` calls it with ``client_kwargs``."""
    model_example: ClassVar[str | None] = None
    """A model name quoted in the "no model given" error, as a hint."""

    def __init__(
        self,
        client: _ClientT | None = None,
        *,
        model: str | None = None,
        stream: bool = True,
        max_tokens: int | None = None,
        **client_kwargs: Any,
    ) -> None:
        self.model = model
        self.streaming = stream
        self.max_tokens = max_tokens
        self._client = client
        self._client_kwargs = client_kwargs
        self._loop_clients: PerLoopClients[_ClientT] = PerLoopClients(self._build_client)

    @property
    def client(self) -> _ClientT | None:
        """The client given to the constructor (None: one is built per event loop)."""
        return self._client

    @client.setter
    def client(self, client: _ClientT | None) -> None:
        self._client = client

    # -- what each backend defines ---------------------------------------------------------
    def _build_client(self) -> _ClientT:
        """A new SDK client from ``client_kwargs`` (and the SDK's own environment variables)."""
        client: _ClientT = type(self).client_factory(**self._client_kwargs)
        return client

    def _reply(
        self, request: ModelRequest, model: str, builder: MessageBuilder, race: CancelRace
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        """Call the API and yield the reply's events through ``builder``, ending in done or error.

        Wait on the network only through ``race``; raising is fine (see :meth:`_describe`).
        """
        raise NotImplementedError

    def _describe(self, exc: Exception) -> str:
        """The ``error_message`` for an exception ``_reply`` raised; end with :func:`describe_exception`
        for what the backend does not know, so a :class:`ReplyError` keeps its own text."""
        return describe_exception(exc)

    # -- shared ----------------------------------------------------------------------------
    def _client_for_running_loop(self) -> _ClientT:
        """The client given to the constructor, else the running loop's own lazily built one."""
        if self._client is not None:
            return self._client
        return self._loop_clients.get()

    def _target_url(self) -> str | None:
        """Where a request would go, for the real-request guard; None when no SDK client can send it."""
        for key in ("base_url", "endpoint_url"):
            if self._client is None and self._client_kwargs.get(key):
                return str(self._client_kwargs[key])
        options = self._client_kwargs.get("http_options")
        if self._client is None and options is not None:
            url = options.get("base_url") if isinstance(options, Mapping) else getattr(options, "base_url", None)
            if url:
                return str(url)
        try:
            client = self._client_for_running_loop()
        except Exception:  # no key in the environment, say: the request cannot be sent anyway
            return None
        if answers_in_process(client):
            return None  # an in-process transport (the emulator's, a mock): no provider can receive it
        return client_base_url(client)  # None for an object that is no SDK's client: a test double

    def _missing_model_message(self) -> str:
        example = f" (e.g. {self.model_example!r})" if self.model_example else ""
        return f"No model given: pass model= to {type(self).__name__}(...) or set ModelRequest.model{example}."

    async def stream(
        self, request: ModelRequest, cancel_event: asyncio.Event | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        model = request.model or self.model
        builder = MessageBuilder(model=model or "", provider=self.name)
        yield builder.start()
        if not model:
            yield builder.error("error", self._missing_model_message())
            return
        if cancel_event is not None and cancel_event.is_set():
            yield builder.error("aborted", ABORTED_MESSAGE)
            return
        refusal = model_request_refusal(self._target_url)
        if refusal is not None:
            yield builder.error("error", refusal)
            return
        race = CancelRace(cancel_event)
        try:
            async with aclosing(self._reply(request, model, builder, race)) as events:
                async for event in events:
                    yield event
        except Aborted:
            yield builder.error("aborted", ABORTED_MESSAGE)
        except Exception as exc:  # HTTP, transport, SDK and conversion failures: never raise into the loop
            yield builder.error("error", self._describe(exc))
        finally:
            race.close()


# ---------------------------------------------------------------------------------------------
# Error text
# ---------------------------------------------------------------------------------------------


def http_error_text(status: int | str, kind: str | None, message: str, retry_after: str | None = None) -> str:
    """``HTTP <status> <kind>: <message> (retry after <retry_after>)``; ``kind`` and the retry only when known.

    ``kind`` is the provider's error type or code (``rate_limit_error``, ``RESOURCE_EXHAUSTED``,
    ``ThrottlingException``); ``retry_after`` is a delay as :func:`retry_after` renders it.
    """
    text = f"HTTP {status} {kind}: {message}" if kind else f"HTTP {status}: {message}"
    if retry_after:
        text += f" (retry after {retry_after})"
    return text


def retry_after(headers: Mapping[str, Any]) -> str | None:
    """The delay a rate-limited reply asks for: ``"20s"``, ``"1.5s"``, or an HTTP date as sent.

    ``retry-after-ms`` (OpenAI, Anthropic) is preferred over ``retry-after`` (seconds or a date).
    ``headers`` must find lower-case names: an ``httpx.Headers``, or a dict with lower-case keys.
    """
    millis = _seconds(headers.get("retry-after-ms"), scale=1000)
    if millis is not None:
        return millis
    value = headers.get("retry-after")
    if value is None or not str(value).strip():
        return None
    return _seconds(value) or str(value).strip()


def _seconds(value: Any, *, scale: float = 1) -> str | None:
    """``"<n>s"`` for a finite number of ``scale``-ths of a second, else None."""
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        seconds = float(str(value).strip()) / scale
        if math.isfinite(seconds):
            return f"{int(seconds)}s" if seconds.is_integer() else f"{seconds:g}s"
    return None


def error_body_fields(body: object) -> tuple[str | None, str | None]:
    """``(type or code, message)`` from an HTTP error body, whichever common shape it came in.

    Reads ``{"error": {"type"|"code", "message"}}`` (OpenAI, Anthropic), the same object without
    the ``error`` wrapper, ``{"error": "<text>"}``, and a plain text body (a proxy's HTML page,
    cut to 500 characters). Missing parts are None, so the caller can fall back to the SDK's text.
    """
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            kind = inner.get("type") or inner.get("code")
            message = inner.get("message")
            return (str(kind) if kind else None, str(message) if message else None)
        if isinstance(inner, str):
            return None, inner
    if isinstance(body, str) and body.strip():
        return None, body.strip()[:500]
    return None, None


# ---------------------------------------------------------------------------------------------
# Usage
# ---------------------------------------------------------------------------------------------


def usage_with_cached_prompt(prompt: int, output: int, cached: int, total: int | None = None) -> Usage:
    """``Usage`` from an API whose prompt count includes the cached tokens (OpenAI, Gemini).

    Our ``input`` counts the uncached prompt only, as Anthropic and Bedrock report it; ``total``
    falls back to prompt plus output when the API sent none.
    """
    return Usage(
        input=max(prompt - cached, 0),
        output=output,
        cache_read=cached,
        cache_write=0,
        total_tokens=total or prompt + output,
    )


# ---------------------------------------------------------------------------------------------
# History rules
# ---------------------------------------------------------------------------------------------


def is_replayable(message: AssistantMessage) -> bool:
    """Whether an assistant turn may be sent back to a model.

    Turns that ended in ``error`` or ``aborted`` are not: their tool calls never got results, and
    every provider rejects a tool call without its result.
    """
    return message.stop_reason not in ("error", "aborted")


def merge_same_role(
    messages: Iterable[Message], convert: Callable[[Message], tuple[str, list[_PartT]]]
) -> list[tuple[str, list[_PartT]]]:
    """The history as ``(role, parts)`` turns, for APIs whose roles must alternate (Gemini, Bedrock).

    ``convert`` maps one message to its role and parts. Assistant turns that are not
    :func:`replayable <is_replayable>` and messages with no parts are left out, and neighbours of
    the same role are merged into one turn, which puts a batch of tool results (and a steering
    message that follows it) into a single user turn.
    """
    turns: list[tuple[str, list[_PartT]]] = []
    for message in messages:
        if isinstance(message, AssistantMessage) and not is_replayable(message):
            continue
        role, parts = convert(message)
        if not parts:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(parts)
        else:
            turns.append((role, list(parts)))
    return turns


__all__ = [
    "ABORTED_MESSAGE",
    "END",
    "Aborted",
    "CancelRace",
    "Decoder",
    "PerLoopClients",
    "SDKProvider",
    "error_body_fields",
    "client_base_url",
    "http_error_text",
    "is_loopback_url",
    "is_replayable",
    "model_request_refusal",
    "merge_same_role",
    "retry_after",
    "usage_with_cached_prompt",
]
