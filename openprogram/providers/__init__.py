"""The seam between the loop and a model: one request in, one stream of events out.

Every backend (the real SDK ones here, the harness's scripted and recorded ones) implements the
same two-line protocol, which is why a test double can stand anywhere a real model does.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Literal, Protocol, Union, runtime_checkable
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from openprogram.providers._clients import close_loop_clients
from openprogram.providers.builder import MessageBuilder
from openprogram.types import FROZEN_ANY, AssistantMessageEvent, Message, ToolSpec

ToolChoice = Union[Literal["auto", "required", "none"], dict[str, Any]]
"""``"auto"``, ``"required"``, ``"none"`` or ``{"type": "function", "name": X}`` (force X)."""


class ModelRequest(BaseModel):
    """Everything a provider needs for one model call, frozen so a recorded copy cannot drift.

    ``messages`` holds the loop's own (immutable) message objects: recording a request costs one
    tuple, not a deep copy of the history.
    """

    model_config = FROZEN_ANY

    model: str | None = None
    system_prompt: str = ""
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    extra: Mapping[str, Any] = Field(default_factory=dict)


@runtime_checkable
class Provider(Protocol):
    """A model backend.

    ``stream`` yields assistant-message events and must finish with exactly one ``done`` or
    ``error`` event. It should report failures as an ``error`` event; if it raises instead, the
    loop still turns that into an error finish, but the event is the polite way.
    """

    def stream(
        self, request: ModelRequest, cancel_event: asyncio.Event | None = None
    ) -> AsyncIterator[AssistantMessageEvent]: ...


# ---------------------------------------------------------------------------------------------
# The real-request guard (the switch; SDKProvider.stream in _shared.py applies it)
# ---------------------------------------------------------------------------------------------

ALLOW_MODEL_REQUESTS: bool = True
"""Whether the SDK backends may send a request to a model provider: set it to ``False`` (or the
environment variable ``OPENPROGRAM_ALLOW_MODEL_REQUESTS`` to ``0``) and every one of them ends
its reply with an ``error`` finish instead, before any connection is made. Requests to a base
URL declared a double (``register_fake_base_url``, ``OPENPROGRAM_FAKE_BASE_URLS``; the harness's
emulator declares its own) or through an in-process transport are not refused; a loopback URL as
such is, since a real model server may listen there (Ollama, vLLM, LM Studio). Under the
harness's pytest plugin a test refuses them unless it opts in; see ``docs/pytest-plugin.md``."""

ALLOW_MODEL_REQUESTS_ENV = "OPENPROGRAM_ALLOW_MODEL_REQUESTS"

FAKE_BASE_URLS_ENV = "OPENPROGRAM_FAKE_BASE_URLS"
"""Base URLs (separated by commas or white space) that reach doubles, not models: a process that
serves an emulator or a fake for another one (``harness emulate`` in a second terminal, a CI
service) declares them here, and the guard lets requests to them through."""

_allowed_here: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "openprogram_allow_model_requests", default=None
)


@contextlib.contextmanager
def allow_model_requests(allow: bool = True) -> Iterator[None]:
    """Decide, for the code inside, whether real model requests may be sent, whatever
    ``ALLOW_MODEL_REQUESTS``, the environment variable or the running test say.

    The innermost one wins; it follows the code the way context variables do (into tasks and
    into a sync ``runtime.exec``), not into threads the code starts by hand.
    """
    token = _allowed_here.set(bool(allow))
    try:
        yield
    finally:
        _allowed_here.reset(token)


# ---------------------------------------------------------------------------------------------
# Seams: what code outside openprogram (a test harness, say) plugs into the guard
# ---------------------------------------------------------------------------------------------

RequestGate = Callable[[], Union[str, None]]
"""A zero-argument callable: why a real model request must not be sent now, or None."""

InProcessTransport = Union[type, Callable[[Any], bool]]
"""An ``httpx2`` transport class, or a predicate ``(transport) -> bool``."""

_registry_lock = threading.Lock()
_request_gates: list[tuple[object, RequestGate]] = []
_in_process_transports: list[tuple[object, InProcessTransport]] = []
_fake_base_urls: list[tuple[object, str]] = []


def _register(entries: list[tuple[object, Any]], value: Any) -> Callable[[], None]:
    """Add ``value`` under a token of its own, so registering one value twice needs two removals
    (a pytest session inside a test registers the same gate as the outer one)."""
    token = object()
    with _registry_lock:
        entries.append((token, value))

    def unregister() -> None:
        with _registry_lock:
            entries[:] = [entry for entry in entries if entry[0] is not token]

    return unregister


def register_request_gate(gate: RequestGate) -> Callable[[], None]:
    """Let ``gate`` refuse real model requests; returns the function that takes it back.

    openprogram's backends ask every registered gate before they send (after
    ``allow_model_requests`` and the ``ALLOW_MODEL_REQUESTS`` switch, which win). A test framework
    uses it to refuse requests from tests that did not opt in: the gate knows which test is
    running, openprogram does not, and openprogram must not know the framework either, so the
    framework registers itself instead of being looked up. ``gate()`` returns the reason for the
    refusal (it ends up in the reply's ``error_message``) or None to let the request go; it is
    called only when a backend is about to send, never on the loop's own path. The returned
    callable is idempotent; calling it undoes this registration only, not another of the same gate.
    """
    if not callable(gate):
        raise TypeError(f"register_request_gate() takes a callable, got {gate!r}")
    return _register(_request_gates, gate)


def register_in_process_transport(transport: InProcessTransport) -> Callable[[], None]:
    """Tell the real-request guard that clients on ``transport`` never reach the network.

    The guard lets a request go to a loopback URL without any opt-in, since no model provider can
    receive it; a transport that answers requests itself, in process (an emulator, a mock), is
    just as safe, but the guard cannot see that from outside: an arbitrary custom transport may
    well forward to the network. So such a transport says so here, once: pass its class (its
    instances and its subclasses' count) or a predicate ``(transport) -> bool``. ``httpx2``'s own
    ``MockTransport`` needs no registration. Returns the function that takes the registration back.
    """
    if not callable(transport):
        raise TypeError(f"register_in_process_transport() takes a class or a predicate, got {transport!r}")
    return _register(_in_process_transports, transport)


def register_fake_base_url(url: str) -> Callable[[], None]:
    """Tell the real-request guard that ``url`` (a base URL, and everything below it) reaches a
    double, not a model; returns the function that takes the registration back.

    Loopback alone proves nothing: a model server on this machine (Ollama, vLLM, LM Studio) answers
    on ``localhost`` too, and a test that reached it without opting in would send real requests
    unasked. Only the code that started a double knows it is one, so it says so here (the harness's
    emulator does when it starts serving). A request goes through when its target has the same
    scheme, host and port and its path starts with this URL's path.
    """
    if not isinstance(url, str) or _url_key(url) is None:
        raise ValueError(f"register_fake_base_url() takes a URL with a scheme and a host, got {url!r}")
    return _register(_fake_base_urls, url)


def _url_key(url: str) -> tuple[str, str, int | None, str] | None:
    """``(scheme, host, port, path)`` of ``url``, normalized for comparing; None if it has no host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    scheme = parts.scheme.lower()
    default = {"http": 80, "https": 443}.get(scheme)
    return scheme, parts.hostname.rstrip(".").lower(), port if port is not None else default, parts.path.rstrip("/")


def _is_fake_base_url(url: str) -> bool:
    """Whether ``url`` lies below a base URL declared a double (registered, or in the environment)."""
    target = _url_key(url)
    if target is None:
        return False
    declared = [u for _, u in tuple(_fake_base_urls)]
    declared += [u for u in os.environ.get(FAKE_BASE_URLS_ENV, "").replace(",", " ").split() if u]
    for base in declared:
        key = _url_key(base)
        if key is not None and key[:3] == target[:3] and (target[3] + "/").startswith(key[3] + "/"):
            return True
    return False


def _gate_refusal() -> str | None:
    """The first refusal of a registered gate, or None (the guard in ``_shared.py`` asks)."""
    for _, gate in tuple(_request_gates):
        why = gate()
        if why is not None:
            return why
    return None


def _registered_in_process(transport: object) -> bool:
    """Whether ``transport`` was registered with ``register_in_process_transport`` (by class or
    predicate): the guard's question, asked of the transport an SDK client sends through."""
    for _, kind in tuple(_in_process_transports):
        if isinstance(kind, type):
            if isinstance(transport, kind):
                return True
        elif kind(transport):
            return True
    return False


__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "ALLOW_MODEL_REQUESTS_ENV",
    "FAKE_BASE_URLS_ENV",
    "InProcessTransport",
    "MessageBuilder",
    "ModelRequest",
    "Provider",
    "RequestGate",
    "ToolChoice",
    "allow_model_requests",
    "close_loop_clients",
    "register_fake_base_url",
    "register_in_process_transport",
    "register_request_gate",
]
