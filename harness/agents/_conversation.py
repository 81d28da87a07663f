"""One conversation of the agent under test with the emulator, every reply chosen as its request arrives.

The agent runs on a worker thread (a coroutine function on one shared event loop); each
request it sends reaches :class:`WireEmulator` (in process through the ``httpx2`` transport, or on
loopback), which hands it to the thread that started the conversation and waits for the reply.
Each conversation has a base URL of its own (the root plus ``/conversation/<n>``): a request is
judged in the conversation that sent it, and one that names a conversation already over (a run
abandoned at its time bound, waking from its back-off) is refused and counted, never judged as
the running conversation's.
That thread is the test's: Hypothesis draws only there, so every reply is a draw of the test's
own, shrinkable like any other. A run that outlives its time bound is reported, never waited for:
an async run is cancelled, a synchronous one abandoned (its thread is a daemon).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import queue
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from harness.agents._agent_output import agent_output, capturing, conversation_output
from harness.emulator import Emulator, EmulatorTransport, Fault, IdSource, WireRequest, fault, script_of
from harness.recording import Body, Call, Request, Said, conversation
from harness.scenarios import ModelTurn
from harness.script import Turn
from harness.wire import output_items, referenced, response_id

IN_PROCESS_BASE = "http://emulator.invalid"
"""The base URL an agent that takes ``http_client`` is given: its client answers in process, and a
request that bypasses that client fails loudly instead of reaching anything."""

API_KEY = "sk-emulated"
REQUEST_SLACK = 4
"""Requests a run may send beyond its drawn replies and the final answer before W3 calls it endless."""
DEFAULT_TIME_BOUND = 20.0
"""Seconds a run may take before it is abandoned (W3); ``--time-bound`` / ``time_bound=``."""
DEFAULT_PROMPT = "What is 2 + 3? Use your tools."


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
    output_items: dict[str, Any] = field(default_factory=dict)
    """A Responses reply's output items by id: what a later request's ``item_reference`` names."""
    rendered_here: ClassVar[bool] = True
    """The emulator rendered the reply, so the reasoning it carried (signatures, encrypted content)
    is derived from the reply itself; a recorded reply's is the provider's own, opaque bytes."""

    @property
    def delivered(self) -> bool:
        """Whether the reply reached the agent whole: not an error (an HTTP status or an in-band
        error event), not cut, not broken, not dropped. A reply that is not streamed comes whole
        whatever a stream fault says, except the in-band error, served to it as its HTTP status."""
        reply = self.reply
        if reply is None or reply.kind in ("error", "raise", "aborted"):
            return False
        faults = dict(reply.wire)
        if "error_event" in faults or "stall" in faults:  # a stall's stop reason never comes, streamed or not
            return False
        if not self.request.streaming:
            return True
        return reply.kind != "hang_up" and not ({"malformed_chunk", "bad_checksum", "cut_mid_event"} & faults.keys())

    def messages(self, items: Mapping[str, Any] | None = None) -> tuple[Said, ...]:
        """The conversation the request carried, normalized across wires; on Responses, an
        ``item_reference`` is read as the item of an earlier reply it names (``items``), as OpenAI
        reads it from what it stored."""
        request = self.request
        if items and isinstance(request.body, Mapping) and isinstance(request.body.get("input"), list):
            given = [referenced(item, items) for item in request.body["input"]]
            request = dataclasses.replace(request, body={**request.body, "input": given})
        return conversation(as_recorded(request)).messages


def reply_messages(reply: ModelTurn) -> tuple[Said, ...]:
    """A served reply as the assistant message the next request should repeat."""
    if not reply.text and not reply.calls:
        return ()
    calls = []
    for call in reply.calls:
        if call.raw is None:
            calls.append(Call(call.id or "", call.name, dict(call.args)))
            continue
        parsed = _json_or_none(call.raw)
        if isinstance(parsed, dict):
            calls.append(Call(call.id or "", call.name, parsed))
        else:
            calls.append(Call(call.id or "", call.name, {}, call.raw))
    return (Said("assistant", reply.text or "", tuple(calls)),)


def carried(exchange: Exchange) -> ModelTurn | None:
    """The reply as its wire carried it. Gemini's ``functionCall.args`` can only be a JSON object:
    the emulator answers a call whose argument text is not one as Gemini does, with the finish
    reason ``MALFORMED_FUNCTION_CALL`` and no call from there on, so no result is owed for it."""
    reply = exchange.reply
    if reply is None or exchange.request.route.provider != "gemini":
        return reply
    calls = []
    for call in reply.calls:
        if call.raw is not None and not isinstance(_json_or_none(call.raw), dict):
            break
        calls.append(call)
    return reply if len(calls) == len(reply.calls) else dataclasses.replace(reply, calls=tuple(calls))


def _json_or_none(text: str | bytes) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def request_histories(exchanges: Sequence[Exchange]) -> list[tuple[Said, ...]]:
    """Each request's whole conversation; a Responses ``previous_response_id`` brings back the
    history stored with that response (the request before it and the reply it got), and an
    ``item_reference`` the item of a reply delivered earlier that it names."""
    stored: dict[str, tuple[Said, ...]] = {}
    items: dict[str, Any] = {}
    out: list[tuple[Said, ...]] = []
    for exchange in exchanges:
        messages = exchange.messages(items)
        body = exchange.request.body if isinstance(exchange.request.body, Mapping) else {}
        previous = body.get("previous_response_id")
        if isinstance(previous, str) and previous in stored:
            messages = stored[previous] + messages
        out.append(messages)
        if exchange.response_id and exchange.delivered and exchange.reply is not None:
            stored[exchange.response_id] = messages + reply_messages(exchange.reply)
        if exchange.delivered:
            items.update(exchange.output_items)
    return out


_ORIGINS = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "bedrock": "https://bedrock-runtime.us-east-1.amazonaws.com",
    "ollama": "http://127.0.0.1:11434",  # Ollama's own default host: a local server, no provider host
}


WIRES_WITHOUT_IDS: tuple[str, ...] = ("gemini", "ollama")
"""Wires whose calls need no id (Gemini's are optional, Ollama's clients drop the one its server sends):
a call is matched to its result by name (W1), and one sent back without its id is the same call (W2)."""


def as_recorded(request: WireRequest) -> Request:
    """The captured request as if recorded from the provider it speaks to: the form the cassette
    readers (conversation, tools) take, so the two read every wire the same way. Made once per request
    (read by the plan for its menu, the judge for its messages), so its body is written and parsed once."""
    found = _RECORDED.get(id(request))
    if found is not None and found[0] is request:  # the request is held, so its id is still its own
        return found[1]
    query = "&".join(f"{k}={v}" for k, v in request.query.items())
    uri = f"{_ORIGINS[request.route.provider]}{request.path}" + (f"?{query}" if query else "")
    body = json.dumps(request.body, ensure_ascii=False).encode() if request.body is not None else b""
    recorded = Request(request.method, uri, body=Body.of(body))
    if len(_RECORDED) >= 512:
        _RECORDED.clear()
    _RECORDED[id(request)] = (request, recorded)
    return recorded


_RECORDED: dict[int, tuple[WireRequest, Request]] = {}


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
    log: list[str] = field(default_factory=list)
    """What the agent printed, logged and warned during the run (shown with a failing one)."""
    in_process: int = 0
    """Requests that came through the ``http_client`` the run was given."""

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


CONVERSATION_PATH = "/conversation/"
"""What begins each conversation's base URL path: ``<root>/conversation/<n>``. A request is judged
in the conversation its path names, whatever else is running when it arrives."""
_CONVERSATION = re.compile(r"^/conversation/(\d+)(?=/|$)")


@dataclass
class _Live:
    """One conversation on the wire: where its requests go, and what they were."""

    number: int
    inbox: queue.Queue[Any]
    exchanges: list[Exchange] = field(default_factory=list)
    requests: int = 0
    over: bool = False
    came_in_process: int = 0
    """Requests that came through the ``http_client`` the run was given (not over loopback)."""


class WireEmulator(Emulator):
    """An emulator whose replies come from a chooser on another thread, one per request, each
    conversation under a path of its own (:data:`CONVERSATION_PATH`)."""

    def __init__(self) -> None:
        super().__init__()
        self._conversations: dict[int, _Live] = {}
        self._opened = 0
        self._serving = threading.local()
        self.late = 0
        """Requests that named a conversation already over (a run the campaign had abandoned)."""
        self.unnamed = 0
        """Requests whose path named no conversation (a client that drops its base URL's path)."""
        self.abandoned: set[int] = set()
        """Conversations whose run was abandoned at its bound: a request naming one later is late."""
        self.stale: list[tuple[int, int]] = []
        """(named, running): requests that named a conversation whose run had ended, not abandoned,
        while another one ran: state the agent shares across conversations (a cached client)."""

    answers_off_loop = True
    """Its answers block until the campaign's thread has chosen: the loopback server must not wait
    on its event loop, or one waiting request would stall every other connection."""

    def open(self, inbox: queue.Queue[Any]) -> _Live:
        """A new conversation: its own number, so its own base URL path."""
        with self._lock:
            self._opened += 1
            live = _Live(self._opened, inbox)
            self._conversations = {live.number: live}  # one at a time: the one before is over
            self.requests = []
            self.ids = IdSource()
        return live

    def close(self, live: _Live, abandoned: bool = False) -> None:
        """The conversation is over: a request that names it from now on is refused and counted, as
        late (its run was ``abandoned``) or as state shared across conversations (it had ended)."""
        with self._lock:
            live.over = True
            if abandoned:
                self.abandoned.add(live.number)
            self._conversations.pop(live.number, None)
        self.release_stalls()  # a stream still stalled is this conversation's: its connection closes

    def answer(self, method: str, path: str, query: str, headers: Any, body: bytes) -> Any:
        found = _CONVERSATION.match(path)
        self._serving.refusal = None
        with self._lock:
            if found is None:  # a client that ignores the base URL's path: judged where it arrives
                self.unnamed += 1
                live = next(iter(self._conversations.values()), None)
            else:
                path = path[found.end() :] or "/"
                named = int(found.group(1))
                live = self._conversations.get(named)
                if live is None and named in self.abandoned:
                    self.late += 1
                elif live is None:
                    self.stale.append((named, self._opened))
                    self._serving.refusal = (
                        f"harness: this request came under the base URL of conversation {named}, which has ended, "
                        f"while conversation {self._opened} runs: state kept from an earlier conversation?"
                    )
            if live is not None and getattr(self._serving, "in_process", False):
                live.came_in_process += 1
        self._serving.live = live
        try:
            delivery = super().answer(method, path, query, headers, body)
        finally:
            self._serving.live = None
        if live is not None and path.endswith("/responses") and delivery.reply.status == 200:
            served = delivery.reply.body or b"".join(delivery.reply.chunks or [])
            found_id = response_id(served)
            with self._lock:
                if live.exchanges:
                    live.exchanges[-1].response_id = found_id or live.exchanges[-1].response_id
                    live.exchanges[-1].output_items = output_items(served)
        return delivery

    def entry(self, number: int, request: WireRequest) -> Turn | Fault | None:
        live: _Live | None = getattr(self._serving, "live", None)
        if live is None:
            refusal = (
                getattr(self._serving, "refusal", None) or "harness: this request belongs to no running conversation"
            )
            self._serving.refusal = None
            return fault.status(400, refusal)
        answer: queue.Queue[Turn | Fault] = queue.Queue(maxsize=1)
        with self._lock:
            if live.over:
                return fault.status(400, "harness: this conversation is over")
            live.requests += 1
            exchange = Exchange(live.requests, request, time.monotonic())
            live.inbox.put(("request", exchange, answer))
        try:
            return answer.get(timeout=600)
        except queue.Empty:  # the campaign gave up on this run
            return fault.status(400, "harness: the campaign stopped serving this run")

    def transport(self) -> EmulatorTransport:
        return _InProcess(self)

    STOP_WAIT = 0.0
    """Stop serving without waiting for the server's thread (a daemon) to notice: uvicorn looks
    every 0.1 s, which a campaign, a replay and every regression of ``agent_test`` would wait."""


class _InProcess(EmulatorTransport):
    """The in-process transport, telling the emulator that a request came through the client
    the run was given (an agent that ignores it reaches the loopback server instead)."""

    def _answer(self, request: Any, body: bytes) -> Any:
        emulator = self.emulator
        assert isinstance(emulator, WireEmulator)  # this transport is only made for a WireEmulator
        serving = emulator._serving
        serving.in_process = True
        try:
            return super()._answer(request, body)
        finally:
            serving.in_process = False


class LeftBehind:
    """Runs the campaign abandoned (their time bound passed, or Hypothesis discarded them) that
    may still be running: counted at the verdict, never waited for."""

    def __init__(self) -> None:
        self._alive: list[Callable[[], bool]] = []
        self._lock = threading.Lock()

    def add(self, alive: Callable[[], bool]) -> None:
        with self._lock:
            self._alive.append(alive)

    def count(self) -> int:
        """How many abandoned runs are still running now."""
        with self._lock:
            self._alive = [alive for alive in self._alive if alive()]
            return len(self._alive)


def converse(
    agent: Callable[..., Any],
    emulator: WireEmulator,
    choose: Chooser,
    *,
    prompt: str,
    base_url: str | None,
    request_bound: int,
    time_bound: float,
    in_process: bool | None = None,
    left_behind: LeftBehind | None = None,
) -> Run:
    """Run the agent once against ``emulator``, answering each request with ``choose`` on this thread.

    ``base_url`` is the emulator's root (``None``: served in process only, on :data:`IN_PROCESS_BASE`);
    the run is given the root plus its conversation's path. ``in_process`` (default: when
    ``base_url`` is ``None``) hands it an ``http_client`` answering in process as well."""
    inbox: queue.Queue[Any] = queue.Queue()
    live = emulator.open(inbox)
    run = Run(prompt, request_bound=request_bound, time_bound=time_bound)
    root = (base_url or IN_PROCESS_BASE).rstrip("/")
    served_in_process = base_url is None if in_process is None else in_process
    started = time.monotonic()
    with conversation_output(run.log):
        url = f"{root}{CONVERSATION_PATH}{live.number}"
        cancel, alive = _start(agent, emulator, prompt, url, served_in_process, inbox, run.log)
        ended = False
        try:
            ended = _serve(run, live, choose, inbox, started + time_bound)
        finally:
            # Also when choosing raised (Hypothesis stops a draw that runs past its buffer, or replays
            # a shorter prefix while shrinking): the waiting request is refused and the run cancelled,
            # else it would hold the shared event loop, and every later run, for good.
            if not ended:
                cancel()
            run.seconds = time.monotonic() - started
            with emulator._lock:
                run.exchanges = list(live.exchanges)
                run.in_process = live.came_in_process
            emulator.close(live, abandoned=not ended)  # a request the run still sends is refused at once, counted
            ended = _refuse_pending(inbox, wait=0.0 if ended else 2.0) or ended
            if not ended and left_behind is not None:
                left_behind.add(alive)
    return run


def _serve(run: Run, live: _Live, choose: Chooser, inbox: queue.Queue[Any], deadline: float) -> bool:
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
        live.exchanges.append(exchange)
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


def _refuse_pending(inbox: queue.Queue[Any], wait: float) -> bool:
    """Refuse what is still waiting; with ``wait``, for that long or until the run says it ended
    (then ``True``)."""
    deadline = time.monotonic() + wait
    ended = False
    while True:
        try:
            item = inbox.get(timeout=max(0.0, deadline - time.monotonic())) if wait else inbox.get_nowait()
        except queue.Empty:
            return ended
        if item[0] == "request":
            item[2].put(fault.status(400, "harness: this conversation is over"))
        elif item[0] == "done":
            wait, ended = 0.0, True


def _start(
    agent: Callable[..., Any],
    emulator: WireEmulator,
    prompt: str,
    base_url: str,
    in_process: bool,
    inbox: queue.Queue[Any],
    log: list[str],
) -> tuple[Callable[[], None], Callable[[], bool]]:
    """Start the run; returns how to cancel it and whether it is still running. An async run's task
    is cancelled; a synchronous thread cannot be, unless the agent says how (``wire_cancel``: an
    agent run as a process kills its process group, and the thread returns)."""
    kwargs: dict[str, Any] = {"base_url": base_url, "api_key": API_KEY}

    def finish(returned: Any, raised: BaseException | None) -> None:
        inbox.put(
            ("done", None if raised is not None else (returned if isinstance(returned, str) else str(returned)), raised)
        )

    if is_async(agent):
        return _start_async(agent, emulator, prompt, kwargs, in_process, log, finish)

    def work() -> None:
        if in_process:
            kwargs["http_client"] = emulator.sync_http_client()
        try:
            with capturing(log):
                value = agent(prompt, **kwargs)
        except BaseException as exc:  # the agent's failure is an outcome the invariants judge
            finish(None, exc)
        else:
            finish(value, None)

    thread = threading.Thread(target=work, daemon=True, name="agent-under-test")
    thread.start()
    cancel = getattr(agent, "wire_cancel", None)
    return ((lambda: cancel(base_url)) if callable(cancel) else (lambda: None)), thread.is_alive


def _start_async(
    agent: Callable[..., Any],
    emulator: WireEmulator,
    prompt: str,
    kwargs: dict[str, Any],
    in_process: bool,
    log: list[str],
    finish: Callable[[Any, BaseException | None], None],
) -> tuple[Callable[[], None], Callable[[], bool]]:
    """The run as a task on the shared event loop: cancelled at its time bound."""

    async def call() -> None:
        if in_process:
            kwargs["http_client"] = emulator.http_client()
        try:
            with capturing(log):
                value = await agent(prompt, **kwargs)
        except BaseException as exc:  # the agent's failure is an outcome the invariants judge
            finish(None, exc)
            if not isinstance(exc, Exception):
                raise
        else:
            finish(value, None)

    future = asyncio.run_coroutine_threadsafe(call(), _shared_loop())

    def cancel() -> None:
        future.cancel()

    return cancel, (lambda: not future.done())


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
        return replies[min(number, len(replies)) - 1] if replies else None

    return choose


def agent_name(agent: Callable[..., Any], name: str | None = None) -> str:
    """``module:name``, as ``--agent`` takes it (a function made by a factory: its ``__name__``).

    ``name``, when given, is the answer: the ``MODULE:CALLABLE`` the user typed, which a factory's
    function cannot tell (its ``__module__`` is the factory's, not the one that re-exports it)."""
    if name:
        return name
    named = getattr(agent, "wire_name", None)  # an agent run as a command: the command
    if isinstance(named, str):
        return named
    module = getattr(agent, "__module__", None) or "agent"
    qualified = getattr(agent, "__qualname__", None) or ""
    name = qualified if qualified and "<locals>" not in qualified else getattr(agent, "__name__", "agent")
    namespace = vars(sys.modules[module]) if module in sys.modules else {}
    if namespace.get(name) is not agent:  # made by a factory: the name it is importable by, if any
        name = next((key for key, value in namespace.items() if value is agent), name)
    return f"{module}:{name}"


class Serving:
    """One emulator for a whole campaign, each conversation under its own path. An agent that takes
    ``http_client`` is served in process; it is given the loopback root as well (when the
    ``emulator`` extra is installed), so a framework that ignores the client it was handed (one that
    wants an ``httpx`` client, say) is served anyway, and the campaign says so."""

    def __init__(self, agent: Callable[..., Any]) -> None:
        self.in_process = takes_http_client(agent)
        self.emulator = WireEmulator()
        self.left_behind = LeftBehind()
        self.bypassed = 0
        """Conversations whose requests all came over loopback though the agent was given a client."""
        self.base_url: str | None = None
        try:
            self.base_url = self.emulator.start()
        except ImportError:  # no uvicorn: in process only (a client it ignores fails loudly instead)
            if not self.in_process:
                raise

    def converse(self, agent: Callable[..., Any], choose: Any, **kwargs: Any) -> Run:
        return converse(
            agent,
            self.emulator,
            choose,
            base_url=self.base_url,
            in_process=self.in_process,
            left_behind=self.left_behind,
            **kwargs,
        )

    def close(self) -> None:
        self.emulator.stop()


@contextmanager
def serving(agent: Callable[..., Any]) -> Iterator[Serving]:
    with agent_output():
        served = Serving(agent)
        try:
            yield served
        finally:
            served.close()
            close = getattr(agent, "wire_close", None)  # an agent run as a long-lived process: ended now
            if callable(close):
                close()
