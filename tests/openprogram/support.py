"""Shared helpers for the loop tests (no tests here).

A run is driven through the public surface only: ``agent_loop`` / ``agent_loop_continue``, the
event stream, the scripted provider's captured requests, and a ledger kept by the test's tools.
``describe`` turns an event into a short tag so a whole run reads as one exact list.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop, agent_loop_continue
from openprogram.providers import ModelRequest
from openprogram.tools import AgentTool, as_agent_tool
from openprogram.types import Message


class Clock:
    """A deterministic clock: 1001, 1002, ... (epoch milliseconds, as ``AgentLoopConfig.clock`` wants)."""

    def __init__(self, start: int = 1000) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 1
        return self.now


class Queue:
    """A steering / follow-up source: tests push messages, the loop drains them; polls are counted."""

    def __init__(self, *batches: Sequence[Message | str]) -> None:
        self.items: list[Message | str] = []
        self.batches = [list(b) for b in batches]  # returned one per poll, before the queue's items
        self.polls = 0

    def push(self, *messages: Message | str) -> None:
        self.items.extend(messages)

    async def __call__(self) -> list[Message | str]:
        self.polls += 1
        if self.batches:
            return self.batches.pop(0)
        out, self.items = self.items, []
        return out


def describe(event: Any) -> str:
    """``message_start:user``, ``message_update:text_delta``, ``tool_execution_end:call_1``, ..."""
    kind = event.type
    if kind in ("message_start", "message_end"):
        return f"{kind}:{event.message.role}"
    if kind == "message_update":
        return f"{kind}:{event.assistant_message_event.type}"
    if kind.startswith("tool_execution"):
        return f"{kind}:{event.tool_call_id}"
    if kind == "agent_end":
        return f"{kind}:{event.reason}"
    return kind


# Event tags of common scripted replies (ScriptedProvider streams in chunks of 16 characters).
PROMPT = ["message_start:user", "message_end:user"]
SHORT_TEXT = [  # a reply of at most 16 characters
    "message_start:assistant",
    "message_update:text_start",
    "message_update:text_delta",
    "message_update:text_end",
    "message_end:assistant",
]


def call_reply(*deltas: int) -> list[str]:
    """Tags of a reply holding tool calls, one entry per call giving its number of argument chunks."""
    tags = ["message_start:assistant"]
    for count in deltas:
        tags += [
            "message_update:toolcall_start",
            *["message_update:toolcall_delta"] * count,
            "message_update:toolcall_end",
        ]
    return [*tags, "message_end:assistant"]


def tool_run(call_id: str) -> list[str]:
    return [
        f"tool_execution_start:{call_id}",
        f"tool_execution_end:{call_id}",
        "message_start:toolResult",
        "message_end:toolResult",
    ]


@dataclass
class Run:
    events: list[Any]
    result: list[Message]
    provider: Any
    error: BaseException | None = None

    @property
    def tags(self) -> list[str]:
        return [describe(e) for e in self.events]

    @property
    def end(self) -> Any:
        assert self.events[-1].type == "agent_end", self.tags
        return self.events[-1]

    @property
    def requests(self) -> Sequence[ModelRequest]:
        return self.provider.requests

    def check_new_messages(self) -> None:
        """The contract: new_messages == agent_end.messages == await stream.result()."""
        assert list(self.end.messages) == list(self.result)


@dataclass
class Ledger:
    """What the test's tools were called with, in order."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


def make_tool(
    name: str,
    fn: Callable[..., Any] | None = None,
    *,
    ledger: Ledger | None = None,
    parameters: dict[str, Any] | None = None,
    description: str = "",
    thread: bool = False,
) -> AgentTool:
    """A dict-form tool; it records its calls in ``ledger`` and returns ``fn(**args)`` (default ``"ok"``)."""
    impl = fn or (lambda **_kwargs: f"{name} ok")

    def execute(**kwargs: Any) -> Any:
        if ledger is not None:
            ledger.calls.append((name, {k: v for k, v in kwargs.items() if k not in ("cancel_event", "on_update")}))
        return impl(**kwargs)

    if asyncio.iscoroutinefunction(impl):

        async def execute_async(**kwargs: Any) -> Any:
            if ledger is not None:
                ledger.calls.append((name, dict(kwargs)))
            return await impl(**kwargs)  # type: ignore[misc]

        runner: Callable[..., Any] = execute_async
    else:
        runner = execute
    spec = {
        "name": name,
        "description": description,
        "parameters": parameters or {"type": "object", "properties": {}, "additionalProperties": True},
    }
    return as_agent_tool({"spec": spec, "execute": runner, "thread": thread})


async def collect(stream: Any) -> tuple[list[Any], list[Message] | None, BaseException | None]:
    events: list[Any] = []
    try:
        async for event in stream:
            events.append(event)
    except BaseException as exc:
        return events, None, exc
    return events, await stream.result(), None


def run_agent(
    provider: Any,
    prompts: Iterable[Message | str] = ("hi",),
    tools: Sequence[AgentTool] = (),
    *,
    system_prompt: str = "",
    history: Sequence[Message] = (),
    steering: Callable[[], Any] | None = None,
    follow_ups: Callable[[], Any] | None = None,
    clock: Callable[[], int] | None = None,
    cancel_event_factory: Callable[[], asyncio.Event] | None = None,
    resume: bool = False,
    **config: Any,
) -> Run:
    """Run ``agent_loop`` (or ``agent_loop_continue`` with ``resume=True``) to the end."""

    async def main() -> Run:
        context = AgentContext(system_prompt=system_prompt, messages=list(history), tools=list(tools))
        loop_config = AgentLoopConfig(
            provider=provider,
            get_steering_messages=steering,
            get_follow_up_messages=follow_ups,
            clock=clock or Clock(),
            **config,
        )
        cancel = cancel_event_factory() if cancel_event_factory is not None else None
        if resume:
            stream = agent_loop_continue(context, loop_config, cancel)
        else:
            stream = agent_loop(list(prompts), context, loop_config, cancel)
        events, result, error = await collect(stream)
        return Run(events=events, result=result or [], provider=provider, error=error)

    return asyncio.run(main())


class FnProvider:
    """A provider whose stream is an async generator function of the request (for shapes scripts can't make)."""

    name = "fn"

    def __init__(self, stream: Callable[[ModelRequest], AsyncIterator[Any]]) -> None:
        self._stream = stream
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest, cancel_event: asyncio.Event | None = None) -> AsyncIterator[Any]:
        self.requests.append(request)
        return self._stream(request)
