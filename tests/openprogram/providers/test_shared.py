"""The machinery every SDK backend shares (``openprogram.providers._shared``), without any SDK.

What a user relies on: a client per event loop and none kept for loops that are gone; a cancel
that aborts a stalled wait at once and closes what was pending; one error text for every
provider's HTTP failures; and the history rules (failed turns dropped, same-role turns merged).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import warnings
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest

from openprogram.errors import ReplyError, describe_exception
from openprogram.providers import ModelRequest, Provider
from openprogram.providers._shared import (
    Aborted,
    CancelRace,
    PerLoopClients,
    SDKProvider,
    error_body_fields,
    http_error_text,
    is_replayable,
    merge_same_role,
    retry_after,
    usage_with_cached_prompt,
)
from openprogram.providers.builder import MessageBuilder
from openprogram.types import (
    AssistantMessage,
    AssistantMessageEvent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

QUICK = 5  # seconds: every "promptly" below is far quicker; a hang fails instead of stalling the suite


# -- clients per event loop -----------------------------------------------------------------------


class Client:
    def __init__(self, number: int) -> None:
        self.number = number


def counting_clients() -> tuple[PerLoopClients[Client], list[Client]]:
    built: list[Client] = []

    def build() -> Client:
        built.append(Client(len(built)))
        return built[-1]

    return PerLoopClients(build), built


def test_one_client_per_event_loop_reused_within_the_loop() -> None:
    clients, built = counting_clients()

    async def twice() -> tuple[Client, Client]:
        return clients.get(), clients.get()

    first, again = asyncio.run(twice())
    assert first is again
    helper: list[tuple[Client, Client]] = []
    thread = threading.Thread(target=lambda: helper.append(asyncio.run(twice())))
    thread.start()
    thread.join()
    assert helper[0][0] is helper[0][1] is not first  # a nested runtime.exec's loop gets its own
    assert len(built) == 2


def test_clients_of_closed_loops_are_dropped() -> None:
    clients, built = counting_clients()

    async def use() -> None:
        clients.get()

    for _ in range(3):
        asyncio.run(use())
    assert len(built) == 3  # a new loop never reuses a closed loop's client
    assert len(clients) == 1  # and the closed loops' clients are not kept


def test_loops_on_two_threads_at_once_each_get_their_own_client() -> None:
    clients, built = counting_clients()
    both_in = threading.Barrier(2)
    seen: list[Client] = []

    async def meet() -> None:
        both_in.wait(QUICK)  # both loops are running now
        seen.append(clients.get())
        await asyncio.sleep(0.01)
        seen.append(clients.get())

    threads = [threading.Thread(target=lambda: asyncio.run(meet())) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(QUICK)
    assert len(built) == 2 and {id(client) for client in seen} == {id(client) for client in built}


def test_close_loop_clients_closes_the_running_loops_clients_only() -> None:
    """The public ``openprogram.providers.close_loop_clients`` (what a short-lived loop calls before
    it ends): the running loop's clients are closed and forgotten, another loop's are kept."""
    from openprogram.providers import close_loop_clients

    class Closable(Client):
        closed = False

        async def aclose(self) -> None:
            self.closed = True

    built: list[Closable] = []
    clients = PerLoopClients(lambda: built.append(Closable(len(built))) or built[-1])

    async def outer() -> None:
        mine = clients.get()
        other: list[Closable] = []

        async def use_and_close() -> None:
            other.append(clients.get())
            await close_loop_clients()

        thread = threading.Thread(target=lambda: asyncio.run(use_and_close()))
        thread.start()
        thread.join(QUICK)
        assert other[0].closed and not mine.closed
        assert clients.get() is mine

    asyncio.run(outer())


def test_a_client_needs_a_running_loop() -> None:
    clients, _ = counting_clients()
    with pytest.raises(RuntimeError):
        clients.get()


# -- racing the cancel event ----------------------------------------------------------------------


class Pending:
    """An awaitable that never finishes on its own and records how it ended."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.closed = False

    async def wait(self) -> str:
        self.started.set()
        try:
            await asyncio.sleep(3600)
        finally:
            self.closed = True
        return "never"


def test_without_a_cancel_the_race_returns_what_it_awaited() -> None:
    async def scenario() -> list[Any]:
        race = CancelRace(asyncio.Event())
        try:
            return [await race.run(asyncio.sleep(0, "a")), await race.run(asyncio.sleep(0, "b"))]
        finally:
            race.close()

    assert asyncio.run(scenario()) == ["a", "b"]
    assert asyncio.run(CancelRace(None).run(asyncio.sleep(0, "no event"))) == "no event"


def test_a_cancel_aborts_a_stalled_wait_promptly_and_closes_it() -> None:
    pending = Pending()

    async def scenario() -> None:
        cancel = asyncio.Event()
        race = CancelRace(cancel)
        work = asyncio.ensure_future(race.run(pending.wait()))
        await pending.started.wait()
        cancel.set()
        try:
            with pytest.raises(Aborted):
                await work
        finally:
            race.close()

    asyncio.run(asyncio.wait_for(scenario(), QUICK))
    assert pending.closed  # cancelled and awaited before Aborted was raised


def test_a_cancel_that_came_first_starts_nothing() -> None:
    pending = Pending()

    async def scenario() -> None:
        cancel = asyncio.Event()
        cancel.set()
        with pytest.raises(Aborted):
            await CancelRace(cancel).run(pending.wait())

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(scenario())
        gc.collect()
    assert not pending.started.is_set()
    assert not [w for w in caught if "never awaited" in str(w.message)]  # closed, not leaked


def test_cancelling_the_waiting_task_also_cancels_the_work() -> None:
    pending = Pending()

    async def scenario() -> None:
        race = CancelRace(asyncio.Event())
        task = asyncio.ensure_future(race.run(pending.wait()))
        await pending.started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        race.close()

    asyncio.run(asyncio.wait_for(scenario(), QUICK))
    assert pending.closed


def test_wait_returns_at_the_cancel_and_leaves_the_work_to_the_caller() -> None:
    async def scenario() -> bool:
        cancel = asyncio.Event()
        race = CancelRace(cancel)
        work = asyncio.ensure_future(asyncio.sleep(3600))
        asyncio.get_running_loop().call_soon(cancel.set)
        await race.wait(work)
        race.close()
        running = not work.done()
        work.cancel()
        return running and race.cancelled

    assert asyncio.run(asyncio.wait_for(scenario(), QUICK))


def test_a_cleared_cancel_event_does_not_abort_later_waits() -> None:
    async def scenario() -> str:
        cancel = asyncio.Event()
        race = CancelRace(cancel)
        await race.run(asyncio.sleep(0))
        cancel.set()
        await asyncio.sleep(0)  # the race's waiter sees the event
        cancel.clear()
        try:
            return await race.run(asyncio.sleep(0.01, "after"))
        finally:
            race.close()

    assert asyncio.run(scenario()) == "after"


def test_raise_if_cancelled() -> None:
    cancel = asyncio.Event()
    race = CancelRace(cancel)
    race.raise_if_cancelled()
    cancel.set()
    with pytest.raises(Aborted):
        race.raise_if_cancelled()
    CancelRace(None).raise_if_cancelled()


# -- the stream skeleton ----------------------------------------------------------------------


class Scripted(SDKProvider[Client]):
    """A backend whose ``_reply`` is a coroutine function given per test."""

    name: ClassVar[str] = "scripted"
    model_example: ClassVar[str | None] = "scripted-1"

    def __init__(self, reply: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reply = reply
        self.calls = 0

    def _build_client(self) -> Client:
        return Client(0)

    def _reply(
        self, request: ModelRequest, model: str, builder: MessageBuilder, race: CancelRace
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.calls += 1
        return self.reply(builder, race)

    def _describe(self, exc: Exception) -> str:
        return f"described {describe_exception(exc)}"


def collect(provider: Provider, cancel: asyncio.Event | None = None, model: str | None = "m") -> list[Any]:
    async def run() -> list[Any]:
        return [event async for event in provider.stream(ModelRequest(model=model), cancel)]

    return asyncio.run(asyncio.wait_for(run(), QUICK))


async def says_hello(builder: MessageBuilder, race: CancelRace) -> AsyncIterator[AssistantMessageEvent]:
    index, event = builder.text_start()
    yield event
    yield builder.text_delta(index, await race.run(asyncio.sleep(0, "hello")))
    yield builder.text_end(index)
    yield builder.done()


def test_a_backend_is_a_provider_and_streams_start_then_its_reply() -> None:
    provider = Scripted(says_hello, model="m")
    assert isinstance(provider, Provider)
    events = collect(provider)
    assert [event.type for event in events] == ["start", "text_start", "text_delta", "text_end", "done"]
    assert events[-1].message.text == "hello" and events[-1].message.provider == "scripted"


def test_a_finished_reply_leaves_no_task_behind() -> None:
    async def scenario() -> set[asyncio.Task[Any]]:
        cancel = asyncio.Event()
        events = [event async for event in Scripted(says_hello).stream(ModelRequest(model="m"), cancel)]
        assert events[-1].type == "done"
        await asyncio.sleep(0)  # let a cancelled waiter finish
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    assert asyncio.run(scenario()) == set()


def test_a_missing_model_is_an_error_naming_the_class_and_the_fix() -> None:
    provider = Scripted(says_hello)
    events = collect(provider, model=None)
    assert [event.type for event in events] == ["start", "error"]
    assert events[-1].error.error_message == (
        "No model given: pass model= to Scripted(...) or set ModelRequest.model (e.g. 'scripted-1')."
    )
    assert provider.calls == 0


def test_a_cancel_before_the_call_aborts_without_calling() -> None:
    provider = Scripted(says_hello)
    cancel = asyncio.Event()
    cancel.set()
    events = collect(provider, cancel)
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert events[-1].error.error_message == "Request was aborted"
    assert provider.calls == 0


def test_a_cancel_during_the_reply_aborts_promptly_and_closes_the_reply() -> None:
    closed: list[bool] = []
    pending = Pending()

    async def stalls(builder: MessageBuilder, race: CancelRace) -> AsyncIterator[AssistantMessageEvent]:
        try:
            index, event = builder.text_start()
            yield event
            yield builder.text_delta(index, "partial")
            await race.run(pending.wait())
        finally:
            closed.append(True)

    async def scenario() -> list[Any]:
        cancel = asyncio.Event()

        async def consume() -> list[Any]:
            return [event async for event in Scripted(stalls).stream(ModelRequest(model="m"), cancel)]

        consumer = asyncio.ensure_future(consume())
        await pending.started.wait()  # the reply is stalled on the network
        cancel.set()
        return await consumer

    events = asyncio.run(asyncio.wait_for(scenario(), QUICK))
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert events[-1].error.text == "partial"  # what arrived before the cancel is kept
    assert closed == [True] and pending.closed


@pytest.mark.parametrize(
    ("failure", "text"),
    [
        (ValueError("bad config"), "described ValueError: bad config"),
        (ReplyError("stream interrupted after HTTP 200"), "described stream interrupted after HTTP 200"),
    ],
)
def test_every_failure_ends_as_one_error_event(failure: Exception, text: str) -> None:
    async def fails(builder: MessageBuilder, race: CancelRace) -> AsyncIterator[AssistantMessageEvent]:
        yield builder.text_start()[1]
        raise failure

    events = collect(Scripted(fails))
    assert [event.type for event in events] == ["start", "text_start", "error"]
    assert events[-1].reason == "error" and events[-1].error.error_message == text


def test_a_reply_that_fails_before_it_starts_is_an_error_event_too() -> None:
    def broken(builder: MessageBuilder, race: CancelRace) -> AsyncIterator[AssistantMessageEvent]:
        raise KeyError("no client")

    events = collect(Scripted(broken))
    assert [event.type for event in events] == ["start", "error"]
    assert events[-1].error.error_message == "described KeyError: 'no client'"


def test_a_consumer_that_stops_early_closes_the_reply() -> None:
    closed: list[bool] = []

    async def endless(builder: MessageBuilder, race: CancelRace) -> AsyncIterator[AssistantMessageEvent]:
        index, event = builder.text_start()
        yield event
        try:
            while True:
                yield builder.text_delta(index, await race.run(asyncio.sleep(0, ".")))
        finally:
            closed.append(True)

    async def scenario() -> None:
        events = Scripted(endless).stream(ModelRequest(model="m"))
        async for event in events:
            if event.type == "text_delta":
                break
        await events.aclose()  # type: ignore[attr-defined]

    asyncio.run(asyncio.wait_for(scenario(), QUICK))
    assert closed == [True]


def test_the_given_client_is_used_on_every_loop_else_one_is_built_per_loop() -> None:
    given = Client(99)

    async def pick(provider: Scripted) -> Client:
        return provider._client_for_running_loop()

    assert asyncio.run(pick(Scripted(client=given))) is given
    lazy = Scripted(api_key="k")
    assert lazy._client_kwargs == {"api_key": "k"}
    assert asyncio.run(pick(lazy)) is not asyncio.run(pick(lazy))


# -- error text -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ((429, "rate_limit_error", "Slow down.", "20s"), "HTTP 429 rate_limit_error: Slow down. (retry after 20s)"),
        ((429, "rate_limit_error", "Slow down.", None), "HTTP 429 rate_limit_error: Slow down."),
        ((502, None, "<html>Bad gateway</html>", None), "HTTP 502: <html>Bad gateway</html>"),
        ((503, None, "Unavailable.", "1.5s"), "HTTP 503: Unavailable. (retry after 1.5s)"),
    ],
)
def test_http_error_text(args: tuple[Any, ...], text: str) -> None:
    assert http_error_text(*args) == text


@pytest.mark.parametrize(
    ("headers", "delay"),
    [
        ({"retry-after": "20"}, "20s"),
        ({"retry-after": " 7 "}, "7s"),
        ({"retry-after": "1.5"}, "1.5s"),
        ({"retry-after-ms": "1500"}, "1.5s"),
        ({"retry-after-ms": "2000", "retry-after": "3"}, "2s"),  # the precise one wins
        ({"retry-after-ms": "soon", "retry-after": "3"}, "3s"),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, "Wed, 21 Oct 2015 07:28:00 GMT"),
        ({"retry-after": ""}, None),
        ({}, None),
    ],
)
def test_retry_after(headers: dict[str, str], delay: str | None) -> None:
    assert retry_after(headers) == delay


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ("overloaded_error", "Overloaded"),
        ),
        (
            {"error": {"code": "insufficient_quota", "message": "Quota exceeded."}},
            ("insufficient_quota", "Quota exceeded."),
        ),
        ({"error": {"message": ""}}, (None, None)),
        ({"message": "bare", "code": 7}, ("7", "bare")),
        ({"error": "plain words"}, (None, "plain words")),
        ("  <html>Bad gateway</html>\n", (None, "<html>Bad gateway</html>")),
        ("x" * 600, (None, "x" * 500)),
        (None, (None, None)),
    ],
)
def test_error_body_fields(body: object, fields: tuple[str | None, str | None]) -> None:
    assert error_body_fields(body) == fields


# -- history rules and usage -----------------------------------------------------------------------


def test_failed_and_aborted_turns_are_not_replayable() -> None:
    assert is_replayable(AssistantMessage(stop_reason="stop"))
    assert is_replayable(AssistantMessage(stop_reason="toolUse"))
    assert is_replayable(AssistantMessage(stop_reason="length"))
    assert not is_replayable(AssistantMessage(stop_reason="error"))
    assert not is_replayable(AssistantMessage(stop_reason="aborted"))


def test_merge_same_role_groups_neighbours_and_drops_failed_and_empty_turns() -> None:
    history: list[Message] = [
        UserMessage(content="hi"),
        AssistantMessage(content=(ToolCall(id="a", name="f"), ToolCall(id="b", name="f")), stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="a", tool_name="f", content=(TextContent(text="1"),)),
        ToolResultMessage(tool_call_id="b", tool_name="f", content=(TextContent(text="2"),)),
        UserMessage(content="steer"),
        AssistantMessage(content=(TextContent(text="lost"),), stop_reason="error"),
        AssistantMessage(content=(), stop_reason="stop"),
        AssistantMessage(content=(TextContent(text="done"),), stop_reason="stop"),
    ]

    def convert(message: Message) -> tuple[str, list[str]]:
        if isinstance(message, AssistantMessage):
            return "model", [block.text if isinstance(block, TextContent) else block.id for block in message.content]
        if isinstance(message, ToolResultMessage):
            return "user", [f"result {message.tool_call_id}"]
        return "user", [message.text]

    assert merge_same_role(history, convert) == [
        ("user", ["hi"]),
        ("model", ["a", "b"]),
        ("user", ["result a", "result b", "steer"]),
        ("model", ["done"]),
    ]


def test_usage_with_cached_prompt_counts_input_without_the_cache() -> None:
    assert usage_with_cached_prompt(100, 20, 30, None) == Usage(
        input=70, output=20, cache_read=30, cache_write=0, total_tokens=120
    )
    assert usage_with_cached_prompt(100, 20, 30, 125).total_tokens == 125  # the API's own total wins
    assert usage_with_cached_prompt(10, 0, 40).input == 0  # never negative
