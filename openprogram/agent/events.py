"""What a run tells the world: the agent events, and the stream that carries them.

Events are the loop's only output (the pi-mono design): a UI, a logger and the test harness all
observe a run the same way, so nothing needs to reach into loop internals.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar, Union

from pydantic import BaseModel, Field

from openprogram.tools import AgentToolResult
from openprogram.types import (
    FROZEN_ANY,
    AssistantMessage,
    AssistantMessageEvent,
    LazyField,
    Message,
    ToolResultMessage,
    _HasPartial,
    trusted,
)

EndReason = Literal["stop", "error", "aborted", "max_iterations"]
"""Why a run ended: text answer, provider error, cancellation, or the iteration cap."""


class _AgentEvent(BaseModel):
    model_config = FROZEN_ANY


class AgentEventAgentStart(_AgentEvent):
    type: Literal["agent_start"] = "agent_start"


class AgentEventTurnStart(_AgentEvent):
    type: Literal["turn_start"] = "turn_start"


class AgentEventMessageStart(LazyField):
    """A message begins. For a streamed reply the loop makes it lazy: ``message`` is the first
    provider event's ``partial``, built when read (see :class:`~openprogram.types.LazyField`)."""

    model_config = FROZEN_ANY
    _lazy_field: ClassVar[str] = "message"

    type: Literal["message_start"] = "message_start"
    message: Message

    @staticmethod
    def _build(recipe: _HasPartial) -> Message:
        return recipe.partial


class AgentEventMessageUpdate(LazyField):
    """A streaming step of the assistant message; ``message`` is the partial message so far.

    The loop makes it lazy (see :class:`~openprogram.types.LazyField`): ``message`` is the
    provider event's ``partial``, built only when read, so a consumer that reads only the deltas
    never pays for a copy of the text so far.
    """

    model_config = FROZEN_ANY
    _lazy_field: ClassVar[str] = "message"

    type: Literal["message_update"] = "message_update"
    message: AssistantMessage
    assistant_message_event: AssistantMessageEvent

    @staticmethod
    def _build(recipe: _HasPartial) -> AssistantMessage:
        return recipe.partial


class AgentEventMessageEnd(_AgentEvent):
    type: Literal["message_end"] = "message_end"
    message: Message


class AgentEventToolExecutionStart(_AgentEvent):
    type: Literal["tool_execution_start"] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]


class AgentEventToolExecutionUpdate(_AgentEvent):
    type: Literal["tool_execution_update"] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    partial_result: Any


class AgentEventToolExecutionEnd(_AgentEvent):
    type: Literal["tool_execution_end"] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool


class AgentEventTurnEnd(_AgentEvent):
    """One model call and the results of the tool batch it picked."""

    type: Literal["turn_end"] = "turn_end"
    message: AssistantMessage
    tool_results: tuple[ToolResultMessage, ...] = ()


class AgentEventAgentEnd(_AgentEvent):
    type: Literal["agent_end"] = "agent_end"
    messages: tuple[Message, ...]
    reason: EndReason


AgentEvent = Annotated[
    Union[
        AgentEventAgentStart,
        AgentEventTurnStart,
        AgentEventMessageStart,
        AgentEventMessageUpdate,
        AgentEventMessageEnd,
        AgentEventToolExecutionStart,
        AgentEventToolExecutionUpdate,
        AgentEventToolExecutionEnd,
        AgentEventTurnEnd,
        AgentEventAgentEnd,
    ],
    Field(discriminator="type"),
]

E = TypeVar("E")
R = TypeVar("R")

_DONE = object()


class _Unbuilt(tuple[Any, ...]):
    """``(class, values, fields_set)`` of an event pushed with ``push_new``, not built yet.

    Its own type, so whatever else a producer pushes (a tuple, say) is handed over as it is.
    """

    __slots__ = ()


_observers: contextvars.ContextVar[tuple[Callable[[Any], None], ...]] = contextvars.ContextVar("_observers", default=())


@contextlib.contextmanager
def observe_runs(callback: Callable[[Any], None]) -> Iterator[None]:
    """Call ``callback`` with every event of every run started in this context (nested ones too).

    This is how recorders (the harness's ``trace`` fixture, loggers) see runs that user code
    starts deep inside ``runtime.exec`` without being handed the stream.
    """
    token = _observers.set((*_observers.get(), callback))
    try:
        yield
    finally:
        _observers.reset(token)


class EventStream(Generic[E, R]):
    """An async iterator of events that a producer task feeds, plus the run's final result.

    Unbounded on purpose: the producer must never block on a slow consumer (a tool's side effects
    must not depend on whether anyone is reading), and a consumer that never iterates can still
    ``await stream.result()``. The stream always terminates: ``end`` after the last event, or
    ``fail`` with the exception that the consumer then receives.

    ``message_update`` events describe progress; when the only party waiting is ``result()``
    (awaited before anyone iterates) and no observer is subscribed, the producer is told
    (:attr:`wants_updates`) and does not push them, so a long reply nobody watches costs no
    memory per delta. A consumer that starts iterating later gets every other event.
    """

    def __init__(self) -> None:
        self._queue: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._result: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._finished = False
        self._error: BaseException | None = None
        self.task: asyncio.Task[Any] | None = None  # the producer, kept alive by this reference
        self._on_push: list[Callable[[E], None]] = list(_observers.get())
        self._consumer: asyncio.Task[Any] | None = None
        self._result_only = False

    # -- producer side --------------------------------------------------------------------
    def push(self, event: E) -> None:
        if self._finished:
            raise RuntimeError("EventStream.push after the stream ended")
        for callback in self._on_push:
            callback(event)
        self._queue.append(event)
        waiter = self._waiter  # _wake(), inlined: this runs for every event
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def push_new(self, cls: type[Any], values: dict[str, Any], fields_set: Iterable[str]) -> None:
        """``push(trusted(cls, values, fields_set))``, the event built only when someone reads it.

        Most runs are awaited with ``result()`` alone (``runtime.exec`` does): their events are
        kept in case a consumer iterates later, but nobody may ever read them, and building a
        dozen models a round for nobody was a tenth of a round. An observer sees every event at
        once, so with one subscribed the event is built here.
        """
        # an _Unbuilt stands in the queue for the event __anext__ builds from it
        item: Any = trusted(cls, values, fields_set) if self._on_push else _Unbuilt((cls, values, fields_set))
        self.push(item)

    def end(self, result: R) -> None:
        if self._finished:
            return
        self._finished = True
        if not self._result.done():
            self._result.set_result(result)
        self._queue.append(_DONE)
        self._wake()

    def fail(self, error: BaseException) -> None:
        if self._finished:
            return
        self._finished = True
        self._error = error
        if not self._result.done():
            self._result.set_exception(error)
            self._result.exception()  # mark retrieved: the iterator reports it too
        self._queue.append(_DONE)
        self._wake()

    def subscribe(self, callback: Callable[[E], None]) -> None:
        """Call ``callback`` synchronously with every event as it is pushed (for recorders)."""
        self._on_push.append(callback)

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def wants_updates(self) -> bool:
        """Whether anyone will see a ``message_update``: a consumer, an observer, or maybe a late one."""
        return not self._result_only or bool(self._on_push)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- consumer side --------------------------------------------------------------------
    def __aiter__(self) -> EventStream[E, R]:
        # One consuming task: a second one would steal events from the first and leave one of
        # them waiting forever, so it is refused at once (observers use ``subscribe``). Checked
        # here, once per ``async for``, so iterating costs nothing more per event.
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no running loop: nothing can be waiting on the stream yet
            return self
        if self._consumer is not None and self._consumer is not task and not self._consumer.done():
            raise RuntimeError(
                "this EventStream already has a consumer (another task iterates it); "
                "use stream.subscribe(callback) to observe the same run"
            )
        self._consumer = task
        self._result_only = False
        return self

    async def __anext__(self) -> E:
        while not self._queue:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = self._queue.popleft()
        event: E
        if type(item) is _Unbuilt:  # pushed with push_new: built now that it is read
            event = trusted(*item)
            return event
        if item is _DONE:
            self._queue.append(_DONE)  # stay exhausted for later iterations
            if self._error is not None:
                raise self._error
            raise StopAsyncIteration
        event = item  # the queue holds the producer's events, _Unbuilt ones and _DONE
        return event

    async def aclose(self) -> None:
        """The consumer is done: cancel the run if it is still going, and wait until it stopped.

        Nothing of the run (no tool, no model call) starts after this returns.
        """
        task = self.task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})
        if not self._finished:
            self.fail(asyncio.CancelledError("the consumer closed the stream"))

    async def __aenter__(self) -> EventStream[E, R]:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()

    async def result(self) -> R:
        """The run's ``new_messages``; raises what ended the stream if it failed."""
        if self._consumer is None:
            self._result_only = True  # nobody iterates (yet): progress events need not be kept
        return await asyncio.shield(self._result)


__all__ = [
    "AgentEvent",
    "AgentEventAgentEnd",
    "AgentEventAgentStart",
    "AgentEventMessageEnd",
    "AgentEventMessageStart",
    "AgentEventMessageUpdate",
    "AgentEventToolExecutionEnd",
    "AgentEventToolExecutionStart",
    "AgentEventToolExecutionUpdate",
    "AgentEventTurnEnd",
    "AgentEventTurnStart",
    "EndReason",
    "EventStream",
    "observe_runs",
]
