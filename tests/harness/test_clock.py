"""``harness.clock``: the one deterministic clock, and wall-clock time frozen for the code under test."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from harness import DeterministicClock
from harness.checking import run
from harness.clock import DEFAULT_EPOCH_MS, FROZEN_AT, SCENARIO_START_MS, frozen
from harness.scenarios import Scenario


def test_it_reads_start_then_one_step_per_call() -> None:
    clock = DeterministicClock(start=10, step=5)
    assert [clock(), clock(), clock()] == [10, 15, 20]
    assert clock.calls == 3 and clock.now == 25
    assert clock.now == 25  # reading now does not advance it


def test_advance_and_reset() -> None:
    clock = DeterministicClock(start=0, step=1)
    clock()
    assert clock.advance(100) == 101
    assert clock() == 101
    clock.reset()
    assert (clock(), clock.calls) == (0, 1)


@pytest.mark.parametrize("bad", [{"step": -1}])
def test_it_never_runs_backwards(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must not run backwards"):
        DeterministicClock(**bad)
    with pytest.raises(ValueError, match="must not run backwards"):
        DeterministicClock().advance(-5)


def test_concurrent_readers_each_get_a_distinct_reading() -> None:
    clock = DeterministicClock(start=0, step=1)
    seen: list[int] = []
    lock = threading.Lock()

    def read() -> None:
        for _ in range(500):
            value = clock()
            with lock:
                seen.append(value)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen) == list(range(2000))


def test_the_default_start_is_the_frozen_instant() -> None:
    assert datetime.fromtimestamp(DEFAULT_EPOCH_MS / 1000, UTC).isoformat() == FROZEN_AT
    assert DeterministicClock()() == DEFAULT_EPOCH_MS


def test_frozen_stops_wall_clock_time_for_the_code_under_test() -> None:
    with frozen() as freezer:
        assert datetime.now(UTC).isoformat() == FROZEN_AT
        assert time.time() == DEFAULT_EPOCH_MS / 1000
        freezer.tick(60)
        assert time.time() == DEFAULT_EPOCH_MS / 1000 + 60
    assert time.time() > DEFAULT_EPOCH_MS / 1000 + 3600  # real time again


def test_a_scenario_run_twice_is_stamped_the_same() -> None:
    scenario = Scenario.from_yaml("prompts: [hi]\nturns: [hello]\n")
    first, second = run(scenario), run(scenario)
    assert [m.timestamp for m in first.new_messages] == [SCENARIO_START_MS, SCENARIO_START_MS + 1]
    assert first.to_json() == second.to_json()
