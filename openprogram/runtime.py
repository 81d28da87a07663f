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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from openprogram.agent.agent_loop import AgentContext, AgentLoopConfig, MessageSource, agent_loop
from openprogram.agent.events import AgentEvent, EndReason
from openprogram.functions import matches, registry
from openprogram.providers import Provider, ToolChoice
from openprogram.providers import tool_choice as tool_choice_table
from openprogram.tools import AgentTool, as_agent_tool
from openprogram.types import AssistantMessage, Message, UserMessage

__all__ = [
    "ExecError",
    "ExecResult",
    "aexec",
    "aexec_result",
    "current_provider",
    "exec",
    "inherit_tools",
    "resolve_tools",
    "use",
]


@dataclass(frozen=True)
class _Binding:
    provider: Provider
    model: str | None


_current_provider: contextvars.ContextVar[_Binding | None] = contextvars.ContextVar("_current_provider", default=None)
_current_tools: contextvars.ContextVar[tuple[AgentTool, ...] | None] = contextvars.ContextVar(
    "_current_tools", default=None
)
# A nested exec stamps its messages with the outer run's clock, so a scenario with an injected
# clock stays byte-for-byte reproducible all the way down.
_current_clock: contextvars.ContextVar[Callable[[], int] | None] = contextvars.ContextVar(
    "_current_clock", default=None
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


@contextlib.contextmanager
def use(provider: Provider, model: str | None = None) -> Iterator[Provider]:
    """Make ``provider`` (and ``model``) the one ``exec`` calls in this context, nested calls included."""
    if not callable(getattr(provider, "stream", None)):
        raise TypeError(
            f"runtime.use needs a provider with a stream(request, cancel_event) method, got {provider!r:.80}"
        )
    token = _current_provider.set(_Binding(provider, model))
    try:
        yield provider
    finally:
        _current_provider.reset(token)


@contextlib.contextmanager
def inherit_tools(tools: Iterable[Any]) -> Iterator[tuple[AgentTool, ...]]:
    """Run the code inside as if it were a tool body of a run whose model saw ``tools``.

    A nested ``exec`` without ``tools=`` inherits the menu of the run around it; code that drives
    ``agent_loop`` itself (a test harness, a custom runner) uses this to give its tools' nested
    runs that same menu. Entries are anything ``tools=`` takes.
    """
    menu = tuple(as_agent_tool(entry) for entry in tools)
    token = _current_tools.set(menu)
    try:
        yield menu
    finally:
        _current_tools.reset(token)


def current_provider() -> Provider | None:
    binding = _current_provider.get()
    return binding.provider if binding else None


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
        inherited = _current_tools.get()
        menu = list(inherited) if inherited is not None else [fn.to_agent_tool() for fn in registry]

    sources, allow, deny = _patterns(tools_source), _patterns(tools_allow), _patterns(tools_deny)
    if sources is not None:
        menu = [t for t in menu if t.source is not None and matches(t.source, sources)]
    if allow is not None:
        menu = [t for t in menu if matches(t.name, allow)]
    if deny is not None:
        menu = [t for t in menu if not matches(t.name, deny)]

    seen: set[str] = set()
    duplicates = sorted({t.name for t in menu if t.name in seen or seen.add(t.name)})  # type: ignore[func-returns-value]
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


async def aexec_result(
    content: str | Message,
    *,
    tools: Sequence[Any] | None = None,
    toolset: str | None = None,
    tools_source: str | Iterable[str] | None = None,
    tools_allow: str | Iterable[str] | None = None,
    tools_deny: str | Iterable[str] | None = None,
    tool_choice: ToolChoice | None = "auto",
    parallel_tool_calls: bool | None = None,
    max_iterations: int | None = None,
    system_prompt: str = "",
    history: Sequence[Message] = (),
    provider: Provider | None = None,
    model: str | None = None,
    on_event: Callable[[AgentEvent], None] | None = None,
    get_steering_messages: MessageSource | None = None,
    get_follow_up_messages: MessageSource | None = None,
    clock: Callable[[], int] | None = None,
    cancel_event: asyncio.Event | None = None,
) -> ExecResult:
    """``aexec``, returning the whole result instead of raising on an error finish."""
    binding = _current_provider.get()
    if provider is None:
        if binding is None:
            raise RuntimeError(
                "no model provider: wrap the call in `with runtime.use(provider):` or pass provider=..."
            )
        provider = binding.provider
        model = model if model is not None else binding.model
    menu = resolve_tools(tools, toolset, tools_source, tools_allow, tools_deny)
    tool_choice = _check_tool_choice(tool_choice, menu)
    if clock is None:
        clock = _current_clock.get()
    prompt = UserMessage(content=content) if isinstance(content, str) else content
    config = AgentLoopConfig(
        provider=provider,
        model=model,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel_tool_calls,
        max_iterations=max_iterations,
        get_steering_messages=get_steering_messages,
        get_follow_up_messages=get_follow_up_messages,
        clock=clock,
    )
    # The loop task copies this context, so tool bodies (and a nested exec in them) see both.
    tools_token, clock_token = _current_tools.set(tuple(menu)), _current_clock.set(clock)
    try:
        stream = agent_loop([prompt], AgentContext(system_prompt, list(history), menu), config, cancel_event)
    finally:
        _current_clock.reset(clock_token)
        _current_tools.reset(tools_token)
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
    return ExecResult(text=last.text if last is not None else "", reason=reason, messages=messages)


async def _abandon(task: asyncio.Task[Any] | None) -> None:
    """Cancel a run whose consumer gave up (``on_event`` raised, or exec itself was cancelled)."""
    if task is not None and not task.done():
        task.cancel()
        await asyncio.wait({task})


async def aexec(content: str | Message, **kwargs: Any) -> str:
    """Run the loop and return the final text; raise ``ExecError`` on an error or aborted finish.

    Takes the keyword arguments of ``aexec_result``. After the iteration cap it returns whatever
    the last assistant message holds (possibly ``""``), as the seed specifies.
    """
    result = await aexec_result(content, **kwargs)
    if result.reason in ("error", "aborted"):
        last = next((m for m in reversed(result.messages) if isinstance(m, AssistantMessage)), None)
        message = (last.error_message if last is not None else None) or result.reason
        raise ExecError(result.reason, message, result.messages)
    return result.text


def exec(content: str | Message, **kwargs: Any) -> str:
    """Synchronous ``aexec``.

    Called from a tool body that runs on the loop thread (the nested case), it cannot block that
    loop with ``asyncio.run``; it runs the nested loop on a helper thread, in a copy of the current
    context so the provider and the menu carry over, and blocks until it finishes.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aexec(content, **kwargs))
    context = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="openprogram-exec") as pool:
        return pool.submit(context.run, asyncio.run, aexec(content, **kwargs)).result()
