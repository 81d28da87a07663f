"""The tool-call loop: ask the model, run the functions it picked, feed results back, repeat.

Read top to bottom: ``agent_loop`` starts a run, ``_run_loop`` is the seed's inner/outer loop,
``_stream_assistant_response`` is one model call, ``_execute_tool_calls`` runs one batch of picks.
Events pushed to the stream are the only output; ``new_messages`` is what the run added.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, get_args

from openprogram.agent.events import (
    AgentEvent,
    AgentEventAgentEnd,
    AgentEventAgentStart,
    AgentEventMessageEnd,
    AgentEventMessageStart,
    AgentEventMessageUpdate,
    AgentEventToolExecutionEnd,
    AgentEventToolExecutionStart,
    AgentEventToolExecutionUpdate,
    AgentEventTurnEnd,
    AgentEventTurnStart,
    EndReason,
    EventStream,
)
from openprogram.errors import describe_exception
from openprogram.providers import ModelRequest, Provider, ToolChoice
from openprogram.tools import (
    AgentTool,
    AgentToolResult,
    ToolArgumentsError,
    as_agent_tool,
    check_tool,
    copy_arguments,
    to_tool_result,
    validate_tool_arguments,
)
from openprogram.types import (
    AssistantMessage,
    AssistantMessageEvent,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    _HasPartial,
    trusted,
    trusted_copy,
)

MAX_INNER_ITERATIONS = 50
"""Hard cap on model requests per run, against a model that never stops picking."""

SKIPPED_TEXT = "Skipped due to queued user message."
CANCELLED_TEXT = "Skipped due to cancellation."

_M = TypeVar("_M", bound=Message)

_YIELD_EVERY = 256
"""Provider events between two yields to the event loop while a reply streams: a long reply lets
the consumer drain the queue (memory stays bounded) and other runs go on; a short one never yields."""

# The events of this package's own types are valid by construction (the builder made them, or
# pydantic validated them when a provider did): the loop wraps them without validating again.
_KNOWN_EVENTS: frozenset[type] = frozenset(get_args(get_args(AssistantMessageEvent)[0]))  # the union's members
_MESSAGE_ONLY = ("message",)
_TURN_END_SET = ("message", "tool_results")
_TOOL_EVENT_SET = ("tool_call_id", "tool_name", "args")
_TOOL_END_SET = ("tool_call_id", "tool_name", "result", "is_error")
_RESULT_SET = ("tool_call_id", "tool_name", "content", "is_error", "details", "timestamp")
_REQUEST_SET = (
    "model",
    "system_prompt",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_tokens",
    "temperature",
    "extra",
)


# The loop's own events go out through ``EventStream.push_new``: built only if someone reads them.
def _message_start(run: _Run, message: Message) -> None:
    run.emit_new(AgentEventMessageStart, {"type": "message_start", "message": message}, _MESSAGE_ONLY)


def _message_end(run: _Run, message: Message) -> None:
    run.emit_new(AgentEventMessageEnd, {"type": "message_end", "message": message}, _MESSAGE_ONLY)


def _turn_start(run: _Run) -> None:
    run.emit_new(AgentEventTurnStart, {"type": "turn_start"}, ())


def _turn_end(run: _Run, message: AssistantMessage, tool_results: tuple[ToolResultMessage, ...] = ()) -> None:
    values = {"type": "turn_end", "message": message, "tool_results": tool_results}
    run.emit_new(AgentEventTurnEnd, values, _TURN_END_SET if tool_results else _MESSAGE_ONLY)


MessageSource = Callable[[], Awaitable[Sequence[Message | str]] | Sequence[Message | str]]


@dataclass
class AgentContext:
    system_prompt: str = ""
    messages: list[Message] = field(default_factory=list)
    tools: list[AgentTool] = field(default_factory=list)


@dataclass
class AgentLoopConfig:
    provider: Provider
    model: str | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_iterations: int | None = None
    get_steering_messages: MessageSource | None = None
    get_follow_up_messages: MessageSource | None = None
    clock: Callable[[], int] | None = None


@dataclass(frozen=True)
class Inherited:
    """What code running inside a run (a tool body, a nested ``exec``) inherits from it.

    One context variable, set by ``agent_loop`` itself for its task, so a nested run finds the
    outer run's provider object, menu, clock and cancel event however the outer run was started;
    ``runtime.use`` and ``runtime.inherit_tools`` set the same variable, so the innermost wins.
    """

    provider: Provider | None = None
    model: str | None = None
    tools: tuple[AgentTool, ...] | None = None
    clock: Callable[[], int] | None = None
    cancel_event: asyncio.Event | None = None
    run: _Run | None = None
    loop: asyncio.AbstractEventLoop | None = None


inherited: contextvars.ContextVar[Inherited] = contextvars.ContextVar(
    "openprogram_inherited",
    default=Inherited(),  # noqa: B039 - frozen, never mutated
)


def effective_max_iterations(max_iterations: int | None) -> int:
    """``min(50, max_iterations)`` floored at 1; ``None`` means the hard cap."""
    if max_iterations is None:
        return MAX_INNER_ITERATIONS
    return max(1, min(MAX_INNER_ITERATIONS, int(max_iterations)))


def _system_clock() -> int:
    return int(time.time() * 1000)


def agent_loop(
    prompts: Sequence[Message | str],
    context: AgentContext,
    config: AgentLoopConfig,
    cancel_event: asyncio.Event | None = None,
) -> EventStream[AgentEvent, list[Message]]:
    """Start a run with new prompts; returns at once with the stream of its events."""
    return _start([_as_message(p) for p in prompts], context, config, cancel_event)


def agent_loop_continue(
    context: AgentContext, config: AgentLoopConfig, cancel_event: asyncio.Event | None = None
) -> EventStream[AgentEvent, list[Message]]:
    """Resume from an existing history (after a tool result, or a user message already in it)."""
    if not context.messages:
        raise ValueError(
            "agent_loop_continue needs a context with messages; to start a run use agent_loop(prompts, ...)"
        )
    if isinstance(context.messages[-1], AssistantMessage):
        raise ValueError(
            "agent_loop_continue cannot continue from an assistant message: the model already answered. "
            "Append a user message or tool result first, or start with agent_loop(prompts, ...)"
        )
    return _start([], context, config, cancel_event)


class _Run:
    """The state of one run: the growing history, what it added, and where events go."""

    def __init__(
        self,
        context: AgentContext,
        config: AgentLoopConfig,
        cancel_event: asyncio.Event | None,
        stream: EventStream[AgentEvent, list[Message]],
    ) -> None:
        self.config = config
        self.system_prompt = context.system_prompt
        self.messages: list[Message] = list(context.messages)  # the caller's list is never mutated
        self.new_messages: list[Message] = []
        self.tools = [as_agent_tool(tool) for tool in context.tools]  # any menu entry works here too
        for tool in self.tools:
            check_tool(tool)  # a bad schema or name is refused now, before any request
        self.tools_by_name: dict[str, AgentTool] = {}
        for tool in self.tools:
            self.tools_by_name.setdefault(tool.name, tool)
        self.specs = tuple(tool.spec for tool in self.tools)
        self.cancel_event = cancel_event
        self.stream = stream
        self.emit = stream.push
        self.emit_new = stream.push_new
        self.clock = config.clock or _system_clock
        self.cap = effective_max_iterations(config.max_iterations)
        self.requests = 0
        self.cancelled = False  # the run's task was cancelled: nested runs may not start any more
        self.children: set[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = set()

    def commit(self, message: _M, *, stamp: bool = False) -> _M:
        """Add a message to the history and ``new_messages``, with its start/end events."""
        if stamp or message.timestamp is None:
            message = trusted_copy(message, timestamp=self.clock())
        _message_start(self, message)
        _message_end(self, message)
        self.messages.append(message)
        self.new_messages.append(message)
        return message

    @property
    def cancel_requested(self) -> bool:
        return self.cancel_event is not None and self.cancel_event.is_set()

    async def poll(self, name: str) -> list[Message]:
        """Take queued user messages from a getter: a message, a str, or a sequence of them.

        Anything else would corrupt the history (a str split per character, a dict's keys, an
        assistant message whose tool call nobody answers): the valid items are committed, then a
        ``TypeError`` names the getter and the item.
        """
        source: MessageSource | None = getattr(self.config, name)
        if source is None:
            return []
        queued: Any = source()
        if inspect.isawaitable(queued):  # the contract says async; a plain function works too
            queued = await queued
        if queued is None or (not queued and not isinstance(queued, str)):
            return []  # nothing queued; a bare "" is one user message with empty text, like any str
        items = [queued] if isinstance(queued, (str, UserMessage)) or not isinstance(queued, Sequence) else queued
        good: list[Message] = []
        for item in items:
            if isinstance(item, str):
                good.append(UserMessage(content=item))
            elif isinstance(item, UserMessage):
                good.append(item)
            else:
                for message in good:
                    self.commit(message)
                raise TypeError(
                    f"{name} returned {_safe_repr(item)}: a getter supplies user messages only, "
                    "as a UserMessage, a str, or a sequence of them"
                )
        return good


def _safe_repr(value: Any) -> str:
    try:
        return f"{value!r:.200}"
    except Exception:
        return f"<{type(value).__name__}>"


def _as_message(message: Message | str) -> Message:
    if isinstance(message, str):
        return UserMessage(content=message)
    if not isinstance(message, (UserMessage, AssistantMessage, ToolResultMessage)):
        raise TypeError(f"expected a message or a str, got {type(message).__name__}: {message!r:.80}")
    return message


def _start(
    prompts: list[Message],
    context: AgentContext,
    config: AgentLoopConfig,
    cancel_event: asyncio.Event | None,
) -> EventStream[AgentEvent, list[Message]]:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "agent_loop must be called inside a running event loop (from async code); "
            "from sync code use runtime.exec(...)"
        ) from None
    loop = asyncio.get_running_loop()
    stream: EventStream[AgentEvent, list[Message]] = EventStream()
    outer = inherited.get()
    parent = outer.run
    if parent is not None and parent.cancelled:
        raise RuntimeError("the run this one is nested in was cancelled: no new run may start inside it")
    run = _Run(context, config, cancel_event, stream)
    scope = Inherited(
        provider=config.provider,
        model=config.model,
        tools=tuple(run.tools),
        clock=config.clock,
        cancel_event=cancel_event,
        run=run,
        loop=loop,
    )
    token = inherited.set(scope)
    try:  # the task copies the context here: its tool bodies see the scope
        stream.task = asyncio.ensure_future(_main(run, prompts, stream))
    finally:
        inherited.reset(token)
    stream.task.add_done_callback(functools.partial(_finished, stream))
    if parent is not None:
        child = (loop, stream.task)
        parent.children.add(child)
        stream.task.add_done_callback(lambda _task: parent.children.discard(child))
    return stream


def _finished(stream: EventStream[AgentEvent, list[Message]], task: asyncio.Task[None]) -> None:
    """End the stream however the task ended (cancelled before it ever ran, too); the stream
    already handed the task's exception to the consumer: no "never retrieved" log."""
    if task.cancelled():
        stream.fail(asyncio.CancelledError("the run was cancelled"))
    else:
        task.exception()


async def _stop_children(run: _Run) -> None:
    """A cancelled run takes its nested runs with it, wherever they run, before it ends."""
    run.cancelled = True
    same_loop = []
    for loop, task in list(run.children):
        if task.done():
            continue
        if loop is asyncio.get_running_loop():
            task.cancel()
            same_loop.append(task)
        else:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # that loop has closed: nothing runs there any more
                pass
    if same_loop:
        await asyncio.wait(same_loop)


async def _main(run: _Run, prompts: list[Message], stream: EventStream[AgentEvent, list[Message]]) -> None:
    try:
        run.emit_new(AgentEventAgentStart, {"type": "agent_start"}, ())
        _turn_start(run)
        for prompt in prompts:
            run.commit(prompt)
        reason = await _run_loop(run)
        values = {"type": "agent_end", "messages": tuple(run.new_messages), "reason": reason}
        run.emit_new(AgentEventAgentEnd, values, ("messages", "reason"))
        stream.end(run.new_messages)
    except BaseException as exc:  # the stream must end whatever happens, then the error goes on
        if isinstance(exc, asyncio.CancelledError):
            await _stop_children(run)
        stream.fail(exc)
        if not isinstance(exc, Exception):
            raise


async def _run_loop(run: _Run) -> EndReason:
    pending = await run.poll("get_steering_messages")
    first_turn = True
    while True:
        has_more_tool_calls = True
        while has_more_tool_calls or pending:
            if not first_turn:
                _turn_start(run)
            first_turn = False
            for message in pending:
                run.commit(message)
            if run.cancel_requested:
                return _abort(run)

            message = await _stream_assistant_response(run)
            if message.stop_reason in ("error", "aborted"):
                _turn_end(run, message)
                return message.stop_reason

            tool_calls = [c for c in message.content if isinstance(c, ToolCall)]
            has_more_tool_calls = len(tool_calls) > 0
            results, steering = await _execute_tool_calls(run, tool_calls) if tool_calls else ([], [])
            _turn_end(run, message, tuple(results))
            pending = steering
            if not pending and run.config.get_steering_messages is not None:
                pending = await run.poll("get_steering_messages")

            if (has_more_tool_calls or pending) and run.requests >= run.cap:
                for queued in pending:  # taken from the queue: keep them, though the model won't see them
                    run.commit(queued)
                return "max_iterations"

        if run.requests >= run.cap:
            return "stop"  # no budget left to serve follow-ups, so none are taken from the queue
        pending = await run.poll("get_follow_up_messages")
        if not pending:
            return "stop"


def _abort(run: _Run) -> EndReason:
    """Cancelled before a model call: end with a synthesized aborted reply, without asking the model."""
    aborted = AssistantMessage(stop_reason="aborted", error_message="Request was aborted")
    _turn_end(run, run.commit(aborted, stamp=True))
    return "aborted"


async def _stream_assistant_response(run: _Run) -> AssistantMessage:
    """One model call: stream the reply into message events and commit the final message.

    Whatever the provider does (an error event, raising, even raising when asked for the stream,
    or stopping without a final event) ends in one committed message, so the run goes on or ends
    through the same two paths.
    """
    run.requests += 1
    reply = _Reply(run)
    try:
        final = await reply.read(run.config.provider.stream(_request(run), run.cancel_event))
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the run itself is being cancelled
        final = reply.failed(describe_exception(exc))  # a provider's own CancelledError is a failure
    except Exception as exc:
        final = reply.failed(describe_exception(exc))
    final = trusted_copy(final, timestamp=run.clock())
    if not reply.started:
        _message_start(run, final)
    _message_end(run, final)
    run.messages.append(final)
    run.new_messages.append(final)
    return final


def _request(run: _Run) -> ModelRequest:
    config = run.config
    values = {
        "model": config.model,
        "system_prompt": run.system_prompt,
        "messages": tuple(run.messages),
        "tools": run.specs,
        "tool_choice": config.tool_choice,
        "parallel_tool_calls": config.parallel_tool_calls,
        "max_tokens": None,
        "temperature": None,
        "extra": {},
    }
    return trusted(ModelRequest, values, _REQUEST_SET)


class _Reply:
    """One streaming reply: emits ``message_start`` / ``message_update`` and finds the final message."""

    def __init__(self, run: _Run) -> None:
        self.run = run
        self.started = False
        self.last: _HasPartial | None = None  # the last streaming event: its ``partial`` is the message so far

    @property
    def partial(self) -> AssistantMessage | None:
        return None if self.last is None else self.last.partial

    async def read(self, events: AsyncIterator[AssistantMessageEvent]) -> AssistantMessage:
        run = self.run
        emit = run.emit
        stream = run.stream
        known = _KNOWN_EVENTS
        updates = stream.wants_updates  # asked again at each yield: a consumer may start iterating
        count = 0
        try:
            async for event in events:
                kind = event.type
                if event.type == "done":  # compared on the event itself, so a checker narrows it
                    message = getattr(event, "message", None)
                    if not isinstance(message, AssistantMessage):
                        return self.failed(f"malformed done event: no AssistantMessage (got {_safe_repr(message)})")
                    return message
                if event.type == "error":
                    return self.error_reply(event)
                self.last = event
                if not self.started:
                    if type(event) in known:  # the builder's partial: built only if someone reads it
                        emit(AgentEventMessageStart.lazy({"type": "message_start"}, event))
                    else:
                        partial = event.partial
                        if not isinstance(partial, AssistantMessage):
                            raise TypeError(f"a {kind} event's partial is no AssistantMessage: {_safe_repr(partial)}")
                        _message_start(run, partial)
                    self.started = True
                if kind != "start" and updates:
                    if type(event) in known:  # lazy: ``message`` is built from the event if read
                        values = {"type": "message_update", "assistant_message_event": event}
                        emit(AgentEventMessageUpdate.lazy(values, event))
                    else:
                        emit(AgentEventMessageUpdate(message=event.partial, assistant_message_event=event))
                count += 1
                if count % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)
                    updates = stream.wants_updates
        finally:
            await _close(events)
        return self.failed("provider stream ended without a done or error event")

    def error_reply(self, event: Any) -> AssistantMessage:
        """An error event ends the run with the event's reason, whatever its message says."""
        message = getattr(event, "error", None)
        reason = getattr(event, "reason", None)
        if reason not in ("error", "aborted"):
            reason = "error"
        if not isinstance(message, AssistantMessage):
            return self.failed(f"malformed error event: no AssistantMessage (got {_safe_repr(message)})")
        if message.stop_reason != reason or message.error_message is None:
            message = message.model_copy(
                update={"stop_reason": reason, "error_message": message.error_message or f"provider reported {reason}"}
            )
        return message

    def failed(self, text: str) -> AssistantMessage:
        return _error_message(self.run, self.partial, text)


async def _close(events: Any) -> None:
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:  # a provider that fails while closing has already given its answer
            pass


def _error_message(run: _Run, partial: AssistantMessage | None, text: str) -> AssistantMessage:
    provider = run.config.provider
    return AssistantMessage(
        content=partial.content if partial is not None else (),
        stop_reason="error",
        error_message=text,
        model=run.config.model or "",
        provider=str(getattr(provider, "name", type(provider).__name__)),
    )


async def _execute_tool_calls(run: _Run, tool_calls: list[ToolCall]) -> tuple[list[ToolResultMessage], list[Message]]:
    """Run the picks in order; steering that arrives mid-batch skips the rest of it."""
    results: list[ToolResultMessage] = []
    for index, call in enumerate(tool_calls):
        if run.cancel_requested:  # no further tool of the batch starts once cancel is set
            results.extend(_skip_tool_call(run, skipped, CANCELLED_TEXT) for skipped in tool_calls[index:])
            return results, []
        _tool_start(run, call)
        result = await _run_tool_call(run, call)
        results.append(_commit_tool_result(run, call, result))
        steering = await run.poll("get_steering_messages") if run.config.get_steering_messages is not None else None
        if steering:
            results.extend(_skip_tool_call(run, skipped) for skipped in tool_calls[index + 1 :])
            return results, steering
    return results, []


async def _run_tool_call(run: _Run, call: ToolCall) -> AgentToolResult:
    """Every way a call can fail becomes an ``is_error`` result the model reads; none stops the loop."""
    tool = run.tools_by_name.get(call.name)
    if tool is None:
        available = ", ".join(t.name for t in run.tools) or "(none)"
        return AgentToolResult(content=f'Tool "{call.name}" not found. Available tools: {available}', is_error=True)
    if call.raw_arguments is not None:
        return AgentToolResult(content=_invalid_json_text(call), is_error=True)
    try:
        args = validate_tool_arguments(tool, call)
    except (ToolArgumentsError, ValueError) as exc:
        return AgentToolResult(content=str(exc), is_error=True)

    returned = False

    def on_update(partial_result: Any) -> None:
        if returned or run.stream.finished:
            return  # after the tool returned, an update belongs to no call: dropped
        run.emit(
            AgentEventToolExecutionUpdate(tool_call_id=call.id, tool_name=call.name, partial_result=partial_result)
        )

    try:
        result = await tool.execute(call.id, copy_arguments(args), run.cancel_event, on_update)
        return result if isinstance(result, AgentToolResult) else to_tool_result(result)
    except Exception as exc:
        return AgentToolResult(content=describe_exception(exc, with_type=False), is_error=True)
    finally:
        returned = True


def _invalid_json_text(call: ToolCall) -> str:
    raw = call.raw_arguments or ""
    try:
        value = json.loads(raw)
        reason = f"expected a JSON object, got {type(value).__name__}"
    except ValueError as exc:
        reason = str(exc)
    return f'Invalid JSON arguments for tool "{call.name}": {reason}\n\nReceived arguments:\n{raw}'


def _tool_start(run: _Run, call: ToolCall) -> None:
    args = dict(call.arguments)  # the event's own dict, as validation made it: not the history's
    values = {"type": "tool_execution_start", "tool_call_id": call.id, "tool_name": call.name, "args": args}
    run.emit_new(AgentEventToolExecutionStart, values, _TOOL_EVENT_SET)


def _commit_tool_result(run: _Run, call: ToolCall, result: AgentToolResult) -> ToolResultMessage:
    is_error = result.is_error
    values = {
        "type": "tool_execution_end",
        "tool_call_id": call.id,
        "tool_name": call.name,
        "result": result,
        "is_error": is_error,
    }
    run.emit_new(AgentEventToolExecutionEnd, values, _TOOL_END_SET)
    values = {
        "role": "toolResult",
        "tool_call_id": call.id,
        "tool_name": call.name,
        "content": result.content,
        "is_error": is_error,
        "details": result.details,
        "timestamp": run.clock(),
    }
    message = trusted(ToolResultMessage, values, _RESULT_SET)
    run.commit(message)
    return message


def _skip_tool_call(run: _Run, call: ToolCall, text: str = SKIPPED_TEXT) -> ToolResultMessage:
    _tool_start(run, call)
    return _commit_tool_result(run, call, AgentToolResult(content=text, is_error=True))


__all__ = [
    "CANCELLED_TEXT",
    "MAX_INNER_ITERATIONS",
    "SKIPPED_TEXT",
    "Inherited",
    "MessageSource",
    "AgentContext",
    "AgentLoopConfig",
    "agent_loop",
    "agent_loop_continue",
    "effective_max_iterations",
    "inherited",
]
