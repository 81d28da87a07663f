"""Each private name of Hypothesis that harness/_hypothesis_compat.py reaches is still there: a
release that drops one fails here, by name, instead of quietly changing what a seed draws or which
failing example is saved."""

from __future__ import annotations

import hypothesis.control
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import providers

from harness._hypothesis_compat import is_final_example, no_local_constants, settings_of, use_settings


def test_the_final_example_is_known_inside_a_test_and_true_outside_one() -> None:
    assert hasattr(hypothesis.control, "current_build_context")
    assert is_final_example()  # outside Hypothesis: a scenario is saved
    seen: list[bool] = []

    @settings(max_examples=3, database=None, derandomize=True)
    @given(st.integers())
    def probe(value: int) -> None:
        assert hasattr(hypothesis.control.current_build_context(), "is_final")
        seen.append(is_final_example())

    probe()
    assert seen and not any(seen)  # no example of a passing test is the final replay


def test_local_constants_are_switched_off_and_back() -> None:
    for name in ("_get_local_constants", "CONSTANTS_CACHE", "Constants"):
        assert hasattr(providers, name), f"hypothesis.internal.conjecture.providers.{name} is gone"
    original = providers._get_local_constants
    with no_local_constants():
        assert providers._get_local_constants is not original
        assert providers._get_local_constants() == providers.Constants()
    assert providers._get_local_constants is original


def test_a_given_tests_settings_are_read_and_replaced() -> None:
    @settings(max_examples=7)
    @given(st.integers())
    def probe(value: int) -> None:
        pass

    found = settings_of(probe)
    assert found is not None and found.max_examples == 7
    use_settings(probe, settings(parent=found, suppress_health_check=[HealthCheck.function_scoped_fixture]))
    replaced = settings_of(probe)
    assert replaced is not None and replaced.max_examples == 7
    assert HealthCheck.function_scoped_fixture in replaced.suppress_health_check
