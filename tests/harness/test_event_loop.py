"""The loop a scenario runs on: reused between runs only while a run leaves it as a new one is."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from harness.event_loop import run_coroutine
from harness.runner import run
from harness.scenario import ModelTurn, Scenario


async def _the_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def test_a_run_that_leaves_nothing_behind_hands_its_loop_to_the_next() -> None:
    first = run_coroutine(_the_loop())
    assert run_coroutine(_the_loop()) is first
    assert not first.is_closed()


def test_a_live_timer_left_behind_closes_the_loop_and_never_fires() -> None:
    fired: list[str] = []

    async def leaves_a_timer() -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        loop.call_later(0.01, fired.append, "timer")
        return loop

    loop = run_coroutine(leaves_a_timer())
    assert loop.is_closed()
    after = run_coroutine(_the_loop())
    assert after is not loop
    run_coroutine(asyncio.sleep(0.05))  # the next runs go on
    assert fired == []


def test_a_callback_left_due_runs_at_the_end_of_its_own_run_as_under_asyncio_run() -> None:
    ran: list[str] = []

    async def leaves_a_callback() -> None:
        asyncio.get_running_loop().call_soon(ran.append, "callback")

    run_coroutine(leaves_a_callback())
    assert ran == ["callback"]


def test_an_unfinished_async_generator_is_closed_at_the_end_of_its_run() -> None:
    closed: list[str] = []

    async def numbers() -> AsyncIterator[int]:
        try:
            yield 1
            yield 2
        finally:
            closed.append("closed")

    async def reads_one() -> int:
        generator = numbers()
        first = await generator.__anext__()
        generator_ref.append(generator)  # kept alive, so only the end of the run closes it
        return first

    generator_ref: list[Any] = []
    assert run_coroutine(reads_one()) == 1
    assert closed == ["closed"]
    assert run_coroutine(_the_loop()) is run_coroutine(_the_loop())


def test_a_task_left_running_is_cancelled_and_the_loop_kept() -> None:
    outcome: list[str] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise

    started: list[asyncio.Future[None]] = []

    async def starts_one() -> asyncio.AbstractEventLoop:
        started.append(asyncio.ensure_future(forever()))
        await asyncio.sleep(0)
        return asyncio.get_running_loop()

    loop = run_coroutine(starts_one())
    assert outcome == ["cancelled"]
    assert run_coroutine(_the_loop()) is loop


def test_a_run_that_changes_the_loop_settings_gets_it_closed() -> None:
    async def sets_a_handler() -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda loop, context: None)
        return loop

    loop = run_coroutine(sets_a_handler())
    assert loop.is_closed()
    assert run_coroutine(_the_loop()).get_exception_handler() is None


def test_each_thread_has_its_own_loop() -> None:
    here = run_coroutine(_the_loop())
    there: list[asyncio.AbstractEventLoop] = []
    thread = threading.Thread(target=lambda: there.append(run_coroutine(_the_loop())))
    thread.start()
    thread.join()
    assert there[0] is not here
    assert run_coroutine(_the_loop()) is here


def test_a_scenario_gives_the_same_trace_on_a_reused_loop_as_on_a_new_one() -> None:
    scenario = Scenario(prompts=("hi",), turns=(ModelTurn(text="hello"),))
    run_coroutine(_the_loop())  # this thread's loop exists and has run before
    reused = run(scenario)

    async def leaves_a_timer() -> None:
        asyncio.get_running_loop().call_later(3600, print)

    run_coroutine(leaves_a_timer())  # so the next run gets a new loop
    assert run(scenario).to_json() == reused.to_json()
