"""One conversation of the agent under test with the emulator, every reply chosen as its request arrives.

The agent runs on a worker thread (a coroutine function on one shared event loop); each
request it sends reaches :class:`WireEmulator` (in process through the ``httpx2`` transport, or on
loopback), which hands it to the thread that started the conversation and waits for the reply.
That thread is the test's: Hypothesis draws only there, so every reply is a draw of the test's
own, shrinkable like any other. A run that outlives its time bound is reported, never waited for:
an async run is cancelled, a synchronous one abandoned (its thread is a daemon).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.emulator import Emulator, Fault, IdSource, WireRequest, fault, script_of
from harness.recording import Body, Request, Said, conversation
from harness.scenarios._parts import ModelTurn
from harness.script import Turn

IN_PROCESS_BASE = "http://emulator.invalid"
"""The base URL an agent that takes ``http_client`` is given: its client answers in process, and a
request that bypasses that client fails loudly instead of reaching anything."""

API_KEY = "sk-emulated"


class Agent(Protocol):
    """``agent(prompt, *, base_url, api_key[, http_client]) -> str``, or a coroutine function."""

    def __call__(self, prompt: str, *, base_url: str, api_key: str) -> Any: ...


def takes_http_client(agent: Callable[..., Any]) -> bool:
    """Whether the agent accepts ``http_client`` (then it is served in process, with no socket)."""
    try:
        parameters = inspect.signature(agent).parameters
    except (TypeError, ValueError):
        return False
    return "http_client" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def check_signature(agent: Callable[..., Any]) -> None:
    """Raise ``TypeError`` when no run could call ``agent`` as ``agent(prompt, *, base_url, api_key)``
    (``http_client`` too, when it names it: served in process, so it may be required). Otherwise
    every run would raise the same ``TypeError`` and the campaign test nothing."""
    try:
        signature = inspect.signature(agent)
    except (TypeError, ValueError):  # a builtin or extension callable: its runs will tell
        return
    given = {"http_client": None} if "http_client" in signature.parameters else {}
    try:
        signature.bind("p", base_url="", api_key="", **given)
    except TypeError as exc:
        raise TypeError(
            f"it cannot be called as agent(prompt, *, base_url, api_key) ({exc}); write it as "
            "def run(prompt: str, *, base_url: str, api_key: str) -> str (docs/wire-campaigns.md)"
        ) from None


def is_async(agent: Callable[..., Any]) -> bool:
    """A coroutine function, or an object whose ``__call__`` is one: it runs on an event loop of its own."""
    return inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(type(agent).__call__)


@dataclass
class Exchange:
    """One request and what answered it, with the two instants W6 compares."""

    number: int
    request: WireRequest
    arrived: float
    reply: ModelTurn | None = None
    """``None``: the request came after the run's request bound and was refused with a 400."""
    answered: float = 0.0
    response_id: str | None = None
    """The id the emulator gave a Responses reply (``previous_response_id`` names it)."""

    @property
    def delivered(self) -> bool:
        """Whether the reply reached the agent whole: not an error (an HTTP status or an in-band
        error event), not cut, not broken, not dropped. A reply that is not streamed comes whole
        whatever a stream fault says, except the in-band error, served to it as its HTTP status."""
        reply = self.reply
        if reply is None or reply.kind in ("error", "raise", "aborted"):
            return False
        faults = dict(reply.wire)
        if "error_event" in faults:
            return False
        if not self.request.streaming:
            return True
        return reply.kind != "hang_up" and not ({"malformed_chunk", "bad_checksum", "cut_mid_event"} & faults.keys())

    def messages(self) -> tuple[Said, ...]:
        """The conversation the request carried, normalized across wires."""
        return conversation(as_recorded(self.request)).messages


_HOSTS = {
    "openai": "api.openai.com",
    "anthropic": "api.anthropic.com",
    "gemini": "generativelanguage.googleapis.com",
    "bedrock": "bedrock-runtime.us-east-1.amazonaws.com",
}


def as_recorded(request: WireRequest) -> Request:
    """The captured request as if recorded from the provider it speaks to: the form the cassette
    readers (conversation, tools) take, so the two read every wire the same way."""
    query = "&".join(f"{k}={v}" for k, v in request.query.items())
    uri = f"https://{_HOSTS[request.route.provider]}{request.path}" + (f"?{query}" if query else "")
    body = json.dumps(request.body, ensure_ascii=False).encode() if request.body is not None else b""
    return Request(request.method, uri, body=Body.of(body))


@dataclass
class Run:
    """What one conversation did: its exchanges and how the agent ended."""

    prompt: str
    exchanges: list[Exchange] = field(default_factory=list)
    returned: str | None = None
    raised: BaseException | None = None
    timed_out: bool = False
    seconds: float = 0.0
    """Wall time of the run, the replies' choosing included."""
    choosing: float = 0.0
    """Time spent choosing replies (Hypothesis drawing them): the harness's share of ``seconds``."""
    request_bound: int = 0
    time_bound: float = 0.0

    @property
    def ended(self) -> str:
        if self.timed_out:
            return "did not end"
        if self.raised is not None:
            return f"raised {type(self.raised).__name__}"
        return "returned"

    @property
    def replies(self) -> list[ModelTurn]:
        """The replies served, in order (the ``turns:`` of the scenario this run is)."""
        return [e.reply for e in self.exchanges if e.reply is not None]


Chooser = Callable[[int, WireRequest], "ModelTurn | None"]
"""Request number and request -> the reply (``None``: refuse it, the run is over its bound)."""


_RESPONSE_ID = re.compile(rb'"id":\s*"(resp_[A-Za-z0-9_-]+)"')


def response_id(body: bytes) -> str | None:
    """The Responses API id a reply's body (whole or streamed) names: what the next request's
    ``previous_response_id`` refers to, served or recorded."""
    found = _RESPONSE_ID.search(body)
    return found.group(1).decode() if found else None


class WireEmulator(Emulator):
    """An emulator whose replies come from a chooser on another thread, one per request."""

    def __init__(self) -> None:
        super().__init__()
        self._inbox: queue.Queue[Any] | None = None
        self.exchanges: list[Exchange] = []

    answers_off_loop = True
    """Its answers block until the campaign's thread has chosen: the loopback server must not wait
    on its event loop, or one waiting request would stall every other connection."""

    def reset(self, inbox: queue.Queue[Any] | None) -> None:
        """A fresh conversation on the same server (no requests, ids from 1 again); ``None``: none."""
        with self._lock:
            self.requests = []
            self.exchanges = []
            self.ids = IdSource()
            self._inbox = inbox

    def entry(self, number: int, request: WireRequest) -> Turn | Fault | None:
        exchange = Exchange(number, request, time.monotonic())
        answer: queue.Queue[Turn | Fault] = queue.Queue(maxsize=1)
        with self._lock:
            inbox = self._inbox
            if inbox is None:
                return fault.status(400, "harness: no conversation is running")
            inbox.put(("request", exchange, answer))
        try:
            return answer.get(timeout=600)
        except queue.Empty:  # the campaign gave up on this run
            return fault.status(400, "harness: the campaign stopped serving this run")

    def answer(self, method: str, path: str, query: str, headers: Any, body: bytes) -> Any:
        delivery = super().answer(method, path, query, headers, body)
        if path.endswith("/responses") and delivery.reply.status == 200:
            found = response_id(delivery.reply.body or b"".join(delivery.reply.chunks or []))
            with self._lock:
                if found and self.exchanges:
                    self.exchanges[-1].response_id = found
        return delivery


def converse(
    agent: Callable[..., Any],
    emulator: WireEmulator,
    choose: Chooser,
    *,
    prompt: str,
    base_url: str | None,
    request_bound: int,
    time_bound: float,
) -> Run:
    """Run the agent once against ``emulator``, answering each request with ``choose`` on this thread.

    ``base_url`` ``None``: the agent takes ``http_client`` and is served in process."""
    inbox: queue.Queue[Any] = queue.Queue()
    emulator.reset(inbox)
    run = Run(prompt, request_bound=request_bound, time_bound=time_bound)
    started = time.monotonic()
    cancel = _start(agent, emulator, prompt, base_url, inbox)
    ended = False
    try:
        ended = _serve(run, emulator, choose, inbox, started + time_bound)
    finally:
        # Also when choosing raised (Hypothesis stops a draw that runs past its buffer, or replays
        # a shorter prefix while shrinking): the waiting request is refused and the run cancelled,
        # else it would hold the shared event loop, and every later run, for good.
        if not ended:
            cancel()
        run.seconds = time.monotonic() - started
        with emulator._lock:
            run.exchanges = list(emulator.exchanges)
        emulator.reset(None)  # a request the agent still sends (a leftover task) is refused at once
        _refuse_pending(inbox, wait=0.0 if ended else 2.0)
    return run


def _serve(run: Run, emulator: WireEmulator, choose: Chooser, inbox: queue.Queue[Any], deadline: float) -> bool:
    """Answer the run's requests until it ends (``True``) or its time bound passes (``False``)."""
    request_bound = run.request_bound
    while True:
        try:
            item = inbox.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            run.timed_out = True
            return False
        if item[0] == "done":
            _, run.returned, run.raised = item
            return True
        _, exchange, answer = item
        with emulator._lock:
            emulator.exchanges.append(exchange)
        before = time.monotonic()
        try:
            reply = choose(exchange.number, exchange.request) if exchange.number <= request_bound else None
        except BaseException:
            answer.put(fault.status(400, "harness: the campaign stopped this run"))
            raise
        run.choosing += time.monotonic() - before
        exchange.reply = reply
        entry: Turn | Fault = (
            script_of([reply])[0]
            if reply is not None
            else fault.status(400, f"harness: request {exchange.number} is beyond the run's bound of {request_bound}")
        )
        exchange.answered = time.monotonic()
        answer.put(entry)


def _refuse_pending(inbox: queue.Queue[Any], wait: float) -> None:
    """Refuse what is still waiting; with ``wait``, for that long or until the run says it ended."""
    deadline = time.monotonic() + wait
    while True:
        try:
            item = inbox.get(timeout=max(0.0, deadline - time.monotonic())) if wait else inbox.get_nowait()
        except queue.Empty:
            return
        if item[0] == "request":
            item[2].put(fault.status(400, "harness: this conversation is over"))
        elif item[0] == "done":
            wait = 0.0


def _start(
    agent: Callable[..., Any], emulator: WireEmulator, prompt: str, base_url: str | None, inbox: queue.Queue[Any]
) -> Callable[[], None]:
    """Start the run; returns how to cancel it (an async run's task; a sync thread cannot be)."""
    kwargs: dict[str, Any] = {"base_url": base_url or IN_PROCESS_BASE, "api_key": API_KEY}

    def finish(returned: Any, raised: BaseException | None) -> None:
        inbox.put(
            ("done", None if raised is not None else (returned if isinstance(returned, str) else str(returned)), raised)
        )

    if is_async(agent):

        async def call() -> None:
            if base_url is None:
                kwargs["http_client"] = emulator.http_client()
            try:
                value = await agent(prompt, **kwargs)
            except BaseException as exc:  # the agent's failure is an outcome the invariants judge
                finish(None, exc)
                if not isinstance(exc, Exception):
                    raise
            else:
                finish(value, None)

        future = asyncio.run_coroutine_threadsafe(call(), _shared_loop())
        return lambda: future.cancel() and None

    def work() -> None:
        if base_url is None:
            kwargs["http_client"] = emulator.sync_http_client()
        try:
            value = agent(prompt, **kwargs)
        except BaseException as exc:  # the agent's failure is an outcome the invariants judge
            finish(None, exc)
        else:
            finish(value, None)

    threading.Thread(target=work, daemon=True, name="agent-under-test").start()
    return lambda: None


_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def _shared_loop() -> asyncio.AbstractEventLoop:
    """One event loop, on a daemon thread, for every async run of the process, as an application
    has one: frameworks cache clients bound to the loop they were made on (LangChain's Anthropic
    client, LiteLLM's), and a fresh loop per run would find them bound to a closed one and hang."""
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, daemon=True, name="agents-under-test").start()
            _LOOP = loop
        return _LOOP


def scripted(replies: Sequence[ModelTurn]) -> Chooser:
    """Replies from a scenario's turns, the last one repeated (as ``harness emulate`` serves it)."""

    def choose(number: int, request: WireRequest) -> ModelTurn | None:
        if not replies:
            return None
        return replies[min(number, len(replies)) - 1]

    return choose
