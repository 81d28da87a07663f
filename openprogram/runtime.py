"""``runtime.exec``: the entry point an agentic function uses to hand a question to a model.

It resolves the menu (explicit ``tools=``, a named ``toolset=``, the outer call's menu when nested,
or the whole registry), trims it by policy, runs ``agent_loop`` with the provider bound by
``runtime.use``, and returns the final text. Context variables carry the provider and the menu
into tool bodies, which is what lets a nested ``exec`` inherit them without being told.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import difflib
import os
import threading
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict, TypeVar, Unpack

from openprogram.agent.agent_loop import AgentContext, AgentLoopConfig, MessageSource, agent_loop, inherited
from openprogram.agent.events import AgentEvent, EndReason
from openprogram.functions import matches, registry
from openprogram.providers import Provider, ToolChoice, close_loop_clients
from openprogram.providers import tool_choice as tool_choice_table
from openprogram.tools import AgentTool, as_agent_tool
from openprogram.types import AssistantMessage, Message, Usage, UserMessage

__all__ = [
    "ExecError",
    "ExecOptions",
    "ExecResult",
    "aexec",
    "aexec_result",
    "current_provider",
    "exec",
    "exec_result",
    "inherit_tools",
    "override",
    "resolve_tools",
    "total_usage",
    "use",
    "use_clock",
]

_T = TypeVar("_T")

# What a nested exec inherits (the outer run's provider object, model, menu, clock and cancel
# event) lives in one context variable that agent_loop sets for its own task, so it carries over
# however the outer run was started; use(), use_clock() and inherit_tools() set the same variable.
#
# override() is a second variable, read by every exec before anything else: agent_loop's scope
# would hand a nested run whatever provider the outer exec chose, and an inner use() or an
# explicit provider= would beat a binding made in `inherited`, so a test's binding lives apart
# from both. It travels the same way (tasks, to_thread and run_coroutine_threadsafe copy it).
_override: contextvars.ContextVar[tuple[Provider, str | None] | None] = contextvars.ContextVar(
    "openprogram_override", default=None
)


class ExecError(RuntimeError):
    """The run ended in ``error`` or ``aborted``; ``message`` is what the provider reported."""

    def __init__(self, reason: EndReason, message: str, messages: Sequence[Message] = ()) -> None:
        super().__init__(f"exec ended with {reason}: {message}")
        self.reason = reason
        self.message = message
        self.messages = list(messages)


@dataclass(frozen=True)
class ExecResult:
    """Everything a run produced, for callers that need more than the final text."""

    text: str
    reason: EndReason
    messages: list[Message]
    usage: Usage = field(default_factory=Usage)
    """Tokens of this run's model requests (its assistant messages), summed; nested runs count apart."""


def total_usage(messages: Iterable[Message]) -> Usage:
    """The sum of the ``usage`` of every assistant message in ``messages``."""
    totals = dict.fromkeys(Usage.model_fields, 0)
    for message in messages:
        if isinstance(message, AssistantMessage):
            for name in totals:
                totals[name] += getattr(message.usage, name)
    return Usage(**totals)


def _check_provider(provider: Provider, where: str) -> None:
    if not callable(getattr(provider, "stream", None)):
        raise TypeError(f"{where} needs a provider with a stream(request, cancel_event) method, got {provider!r:.80}")


@contextlib.contextmanager
def use(provider: Provider, model: str | None = None) -> Iterator[Provider]:
    """Make ``provider`` (and ``model``) the one ``exec`` calls in this context, nested calls included."""
    if not callable(getattr(provider, "stream", None)):
        raise TypeError(
            f"runtime.use needs a provider with a stream(request, cancel_event) method, got {provider!r:.80}"
        )
    token = inherited.set(replace(inherited.get(), provider=provider, model=model))
    try:
        yield provider
    finally:
        inherited.reset(token)


@contextlib.contextmanager
def override(provider: Provider, model: str | None = None) -> Iterator[Provider]:
    """Like ``use``, but it also beats a ``provider=`` argument and any ``use`` inside it.

    Meant for tests: app code that names its own backend (``provider=OpenAIChatProvider(...)``)
    or binds one with ``use`` still talks to ``provider``, in every exec it makes, nested runs
    included. ``model`` replaces the model those calls name; ``None`` keeps theirs. The innermost
    ``override`` wins.
    """
    _check_provider(provider, "runtime.override")
    token = _override.set((provider, model))
    try:
        yield provider
    finally:
        _override.reset(token)


@contextlib.contextmanager
def use_clock(clock: Callable[[], int]) -> Iterator[Callable[[], int]]:
    """Make ``clock`` the timestamp source of every exec in this context that passes no ``clock=``.

    A run's own clock still reaches the runs nested in it; the pytest plugin's ``clock`` fixture
    binds itself with this.
    """
    if not callable(clock):
        raise TypeError(f"runtime.use_clock needs a function returning milliseconds, got {clock!r:.80}")
    token = inherited.set(replace(inherited.get(), clock=clock))
    try:
        yield clock
    finally:
        inherited.reset(token)


@contextlib.contextmanager
def inherit_tools(tools: Iterable[Any]) -> Iterator[tuple[AgentTool, ...]]:
    """Run the code inside as if it were a tool body of a run whose model saw ``tools``.

    A nested ``exec`` without ``tools=`` inherits the menu of the run around it; code that drives
    ``agent_loop`` itself (a test harness, a custom runner) uses this to give its tools' nested
    runs that same menu. Entries are anything ``tools=`` takes.
    """
    menu = tuple(as_agent_tool(entry) for entry in tools)
    token = inherited.set(replace(inherited.get(), tools=menu))
    try:
        yield menu
    finally:
        inherited.reset(token)


def current_provider() -> Provider | None:
    """The provider an ``exec`` here would use when given none: the ``override``, else the ``use``."""
    bound = _override.get()
    return bound[0] if bound is not None else inherited.get().provider


def _patterns(value: str | Iterable[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def resolve_tools(
    tools: Sequence[Any] | None = None,
    toolset: str | None = None,
    tools_source: str | Iterable[str] | None = None,
    tools_allow: str | Iterable[str] | None = None,
    tools_deny: str | Iterable[str] | None = None,
) -> list[AgentTool]:
    """The menu a call offers: explicit, named, inherited, or the registry; then the policy."""
    if tools is not None and toolset is not None:
        raise ValueError("pass either tools= or toolset=, not both")
    if tools is not None:
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Iterable):
            raise TypeError(f"tools= takes a list of tools, got {type(tools).__name__}")
        menu = []
        for index, entry in enumerate(tools):
            try:
                menu.append(as_agent_tool(entry))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"tools[{index}]: {exc}") from None
    elif toolset is not None:
        menu = [fn.to_agent_tool() for fn in registry.toolset(toolset)]
    else:
        outer = inherited.get().tools
        menu = list(outer) if outer is not None else [fn.to_agent_tool() for fn in registry]

    sources, allow, deny = _patterns(tools_source), _patterns(tools_allow), _patterns(tools_deny)
    if sources is not None:
        menu = [t for t in menu if t.source is not None and matches(t.source, sources)]
    if allow is not None:
        menu = [t for t in menu if matches(t.name, allow)]
    if deny is not None:
        menu = [t for t in menu if not matches(t.name, deny)]

    duplicates = sorted(name for name, count in Counter(t.name for t in menu).items() if count > 1)
    if duplicates:
        raise ValueError(f"two tools on the menu share the name(s) {', '.join(duplicates)}; rename one")
    return menu


def _check_tool_choice(tool_choice: ToolChoice | None, menu: list[AgentTool]) -> ToolChoice | None:
    """Refuse a choice no provider could honour before any request is made; return its canonical form."""
    choice = tool_choice_table.normalize(tool_choice)  # the one table's check: shape and spelling
    if choice == "required" and not menu:
        raise ValueError("tool_choice='required' needs at least one tool on the menu, and the menu is empty")
    if isinstance(choice, dict):
        name = choice["name"]
        if name not in {t.name for t in menu}:
            available = ", ".join(t.name for t in menu) or "(none)"
            raise ValueError(f"tool_choice forces {name!r}, which is not on the menu (available: {available})")
    return choice


class ExecOptions(TypedDict, total=False):
    """The keywords every ``exec`` entry point takes (``exec``, ``aexec``, ``exec_result``,
    ``aexec_result``), declared once so the four cannot drift apart; all are optional.

    A type checker checks a call against these fields (``**options: Unpack[ExecOptions]``), and
    at run time a keyword that is not one of them is refused with a ``TypeError`` naming it.
    """

    tools: Sequence[Any] | None
    """The menu: ``@function`` / ``@agentic_function`` objects, ``{"spec", "execute"}`` dicts or
    objects with ``.spec`` and ``.execute``. ``[]`` is a text-only call. Without it (and without
    ``toolset``), a nested exec gets the outer run's menu and a top-level one the whole registry."""
    toolset: str | None
    """A named toolset instead of ``tools``: ``"none"``, ``"full"`` (the registry) or a name given
    with ``@function(toolset=...)``."""
    tools_source: str | Iterable[str] | None
    """Keep only tools whose ``source`` tag matches one of these glob patterns."""
    tools_allow: str | Iterable[str] | None
    """Keep only tools whose name matches one of these names or glob patterns."""
    tools_deny: str | Iterable[str] | None
    """Drop tools whose name matches one of these names or glob patterns (deny wins over allow)."""
    tool_choice: ToolChoice | None
    """``"auto"`` (the default), ``"required"``, ``"none"`` or ``{"type": "function", "name": X}``;
    checked against the menu before any request."""
    parallel_tool_calls: bool | None
    """``False`` forbids several picks in one round where the provider has the knob."""
    max_iterations: int | None
    """The cap on model requests of the run: ``min(50, max_iterations)``, at least 1."""
    system_prompt: str
    """The system prompt of the run (default ``""``)."""
    history: Sequence[Message]
    """Messages that come before ``content`` (default none)."""
    provider: Provider | None
    """The backend, when no ``runtime.use`` (or outer run) gives one; ``runtime.override`` beats it."""
    model: str | None
    """The model name sent with each request (default: the bound one, or the provider's own)."""
    on_event: Callable[[AgentEvent], None] | None
    """Called with every event of the run, in order; if it raises, the run stops and exec raises."""
    get_steering_messages: MessageSource | None
    """Polled for user messages that steer the run mid-way (see DESIGN 4, steering polls)."""
    get_follow_up_messages: MessageSource | None
    """Polled for follow-up user messages when the run would otherwise end."""
    clock: Callable[[], int] | None
    """Epoch milliseconds for every message the run stamps (default: the bound clock, else the system's)."""
    cancel_event: asyncio.Event | None
    """Set it to stop the run: no further model call or tool starts, and it ends ``aborted``
    (default: the outer run's, for a nested exec)."""


_KEYWORDS = frozenset(ExecOptions.__optional_keys__ | ExecOptions.__required_keys__)


def _check_keywords(entry: str, options: Mapping[str, object]) -> None:
    """Refuse a keyword ``ExecOptions`` does not declare, as a signature would: ``**options``
    takes any name, and a misspelled ``tool`` silently ignored would give the model every tool."""
    for name in options:
        if name not in _KEYWORDS:
            close = difflib.get_close_matches(name, sorted(_KEYWORDS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{entry}() got an unexpected keyword argument {name!r}{hint}")


async def aexec_result(
    content: str | Message,
    **options: Unpack[ExecOptions],
) -> ExecResult:
    """``aexec``, returning the whole result instead of raising on an error finish.

    Inside a run (a tool body), what is not given comes from that run: its provider object and
    model, its menu, its clock and its cancel event.

    Keywords (each documented on :class:`ExecOptions`): ``tools``, ``toolset``, ``tools_source``,
    ``tools_allow``, ``tools_deny``, ``tool_choice``, ``parallel_tool_calls``, ``max_iterations``,
    ``system_prompt``, ``history``, ``provider``, ``model``, ``on_event``,
    ``get_steering_messages``, ``get_follow_up_messages``, ``clock``, ``cancel_event``.
    """
    _check_keywords("aexec_result", options)
    provider, model = options.get("provider"), options.get("model")
    outer = inherited.get()
    bound = _override.get()
    if bound is not None:
        provider = bound[0]
        model = bound[1] if bound[1] is not None else (model if model is not None else outer.model)
    elif provider is None:
        if outer.provider is None:
            raise RuntimeError("no model provider: wrap the call in `with runtime.use(provider):` or pass provider=...")
        provider = outer.provider
        model = model if model is not None else outer.model
    menu = resolve_tools(
        options.get("tools"),
        options.get("toolset"),
        options.get("tools_source"),
        options.get("tools_allow"),
        options.get("tools_deny"),
    )
    tool_choice = _check_tool_choice(options.get("tool_choice", "auto"), menu)
    clock = options.get("clock")
    if clock is None:
        clock = outer.clock
    cancel_event = options.get("cancel_event")
    if cancel_event is None:
        cancel_event = outer.cancel_event
    on_event = options.get("on_event")
    prompt = UserMessage(content=content) if isinstance(content, str) else content
    config = AgentLoopConfig(
        provider=provider,
        model=model,
        tool_choice=tool_choice,
        parallel_tool_calls=options.get("parallel_tool_calls"),
        max_iterations=options.get("max_iterations"),
        get_steering_messages=options.get("get_steering_messages"),
        get_follow_up_messages=options.get("get_follow_up_messages"),
        clock=clock,
    )
    context = AgentContext(options.get("system_prompt", ""), list(options.get("history", ())), menu)
    stream = agent_loop([prompt], context, config, cancel_event)
    reason: EndReason = "stop"
    try:
        async for event in stream:
            if on_event is not None:
                on_event(event)
            if event.type == "agent_end":
                reason = event.reason
    except BaseException:
        await _abandon(stream.task)  # nothing of this run may go on after exec has raised
        raise
    messages = await stream.result()
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    text = last.text if last is not None else ""
    return ExecResult(text=text, reason=reason, messages=messages, usage=total_usage(messages))


async def _abandon(task: asyncio.Task[Any] | None) -> None:
    """Cancel a run whose consumer gave up (``on_event`` raised, or exec itself was cancelled)."""
    if task is not None and not task.done():
        task.cancel()
        await asyncio.wait({task})


async def aexec(
    content: str | Message,
    **options: Unpack[ExecOptions],
) -> str:
    """Run the loop and return the final text; raise ``ExecError`` on an error or aborted finish.

    After the iteration cap it returns whatever the last assistant message holds (possibly
    ``""``), as the seed specifies.

    Keywords (each documented on :class:`ExecOptions`): ``tools``, ``toolset``, ``tools_source``,
    ``tools_allow``, ``tools_deny``, ``tool_choice``, ``parallel_tool_calls``, ``max_iterations``,
    ``system_prompt``, ``history``, ``provider``, ``model``, ``on_event``,
    ``get_steering_messages``, ``get_follow_up_messages``, ``clock``, ``cancel_event``.
    """
    _check_keywords("aexec", options)
    return _text_of(await aexec_result(content, **options))


def _text_of(result: ExecResult) -> str:
    if result.reason in ("error", "aborted"):
        last = next((m for m in reversed(result.messages) if isinstance(m, AssistantMessage)), None)
        message = (last.error_message if last is not None else None) or result.reason
        raise ExecError(result.reason, message, result.messages)
    return result.text


def exec_result(
    content: str | Message,
    **options: Unpack[ExecOptions],
) -> ExecResult:
    """Synchronous ``aexec_result``: see ``exec`` for where the run goes.

    Keywords (each documented on :class:`ExecOptions`): ``tools``, ``toolset``, ``tools_source``,
    ``tools_allow``, ``tools_deny``, ``tool_choice``, ``parallel_tool_calls``, ``max_iterations``,
    ``system_prompt``, ``history``, ``provider``, ``model``, ``on_event``,
    ``get_steering_messages``, ``get_follow_up_messages``, ``clock``, ``cancel_event``.
    """
    _check_keywords("exec_result", options)
    return _run_sync(
        lambda event: aexec_result(content, **_with_cancel_event(options, event)), options.get("cancel_event")
    )


def exec(
    content: str | Message,
    **options: Unpack[ExecOptions],
) -> str:
    """Synchronous ``aexec``: blocks until the run ends.

    Where the run goes: called from a tool body on a worker thread (a sync ``@agentic_function``
    body runs on one), it runs on the outer run's own event loop, so the outer provider object and
    its async SDK client serve it; called from plain sync code, on one long-lived background loop
    (sequential calls share it, and so share an SDK client's connections); called on a thread
    whose event loop is running (a sync tool running inline), that loop cannot be blocked *and*
    serve the run, so the run gets a loop of its own on a helper thread.

    Keywords (each documented on :class:`ExecOptions`): ``tools``, ``toolset``, ``tools_source``,
    ``tools_allow``, ``tools_deny``, ``tool_choice``, ``parallel_tool_calls``, ``max_iterations``,
    ``system_prompt``, ``history``, ``provider``, ``model``, ``on_event``,
    ``get_steering_messages``, ``get_follow_up_messages``, ``clock``, ``cancel_event``.
    """
    _check_keywords("exec", options)
    return _text_of(
        _run_sync(
            lambda event: aexec_result(content, **_with_cancel_event(options, event)), options.get("cancel_event")
        )
    )


def _with_cancel_event(options: ExecOptions, event: asyncio.Event | None) -> ExecOptions:
    """``options`` with the event the sync entry points hand the run (``_run_sync`` decides it)."""
    return {**options, "cancel_event": event}


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_sync(
    start: Callable[[asyncio.Event | None], Coroutine[Any, Any, _T]], cancel_event: asyncio.Event | None
) -> _T:
    if not _loop_running():  # decided outside an `except`, so a failure here chains to nothing of ours
        outer_loop = inherited.get().loop
        loop = outer_loop if outer_loop is not None and outer_loop.is_running() else _background_loop()
        future = asyncio.run_coroutine_threadsafe(start(cancel_event), loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # this thread stopped waiting (Ctrl-C, say): the run stops with it
            raise
    # This thread's loop is blocked by the caller: run on a helper thread with a loop of its own.
    outer_cancel = cancel_event if cancel_event is not None else inherited.get().cancel_event
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="openprogram-exec") as pool:
        return pool.submit(context.run, asyncio.run, _on_own_loop(start, outer_cancel)).result()


async def _on_own_loop(
    start: Callable[[asyncio.Event | None], Coroutine[Any, Any, _T]], outer_cancel: asyncio.Event | None
) -> _T:
    """The run on a helper loop: an ``asyncio.Event`` belongs to one loop, so the outer cancel
    event is mirrored into one of this loop; SDK clients made for this loop are closed with it."""
    local: asyncio.Event | None = None
    watcher: asyncio.Task[None] | None = None
    if outer_cancel is not None:
        local = asyncio.Event()
        watcher = asyncio.ensure_future(_mirror(outer_cancel, local))
    try:
        return await start(local)
    finally:
        if watcher is not None:
            watcher.cancel()
        await close_loop_clients()


async def _mirror(source: asyncio.Event, target: asyncio.Event) -> None:
    while not source.is_set():  # the source's loop is blocked (or another thread's): poll it
        await asyncio.sleep(0.01)
    target.set()


_background: tuple[int, asyncio.AbstractEventLoop] | None = None
_background_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    """The loop sync ``exec`` calls from plain code run on, started on first use (again after fork)."""
    global _background
    with _background_lock:
        if _background is None or _background[0] != os.getpid() or _background[1].is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="openprogram-runtime", daemon=True).start()
            _background = (os.getpid(), loop)
        return _background[1]
