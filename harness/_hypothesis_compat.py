"""The private parts of Hypothesis the harness relies on, reached from here alone.

Hypothesis offers no public way to do three things the harness needs; each is wrapped here, each
name pinned by ``tests/harness/test_hypothesis_compat.py`` (so a Hypothesis release that drops one
fails that test by name instead of changing a campaign quietly), and each falls back to doing
nothing when the name is gone (DESIGN section 5: another library's private names, one module):

- ``is_final_example``: a failing scenario is saved once, from the example Hypothesis replays last
  (the shrunk one), not from every example it tried on the way (``current_build_context().is_final``).
- ``no_local_constants``: a seed names one campaign only if the draws ignore the constants of
  whatever local modules happen to be imported (``providers._get_local_constants``).
- ``settings_of`` / ``use_settings``: the plugin lets ``@given`` tests share a ``frozen_time``
  fixture by adding one suppressed health check to the settings already attached to the test
  (``_hypothesis_internal_use_settings``; ``@settings`` cannot be applied twice).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import settings as Settings

SETTINGS_ATTRIBUTE = "_hypothesis_internal_use_settings"
"""Where ``@settings`` / ``@given`` keep a test's settings."""


def is_final_example() -> bool:
    """True outside Hypothesis, and on the replay of the shrunk example: only that one is saved."""
    try:
        from hypothesis.control import current_build_context

        return bool(current_build_context().is_final)
    except Exception:  # outside a test, or a Hypothesis without the attribute: save
        return True


@contextmanager
def no_local_constants() -> Iterator[None]:
    """Hypothesis mixes the constants of every local module it finds in ``sys.modules`` into 5% of
    its draws, so what a seed generates would change with whatever else is imported (pytest's
    conftest, mutmut's copy of the loop, your modules, an edit to an unrelated file). A campaign
    named by its seed must be one campaign: during it, no local constants (Hypothesis' own
    built-in ones stay). A Hypothesis without these names is left as it is."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis without the module
        yield
        return
    find, cache = getattr(providers, "_get_local_constants", None), getattr(providers, "CONSTANTS_CACHE", None)
    if find is None or cache is None or not hasattr(providers, "Constants"):  # pragma: no cover
        yield
        return
    none = providers.Constants()
    providers._get_local_constants = lambda: none
    cache.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = find
        cache.cache.clear()


def settings_of(test: Callable[..., Any]) -> Settings | None:
    """The settings attached to a ``@given`` test (``None``: none, the profile's apply)."""
    found = getattr(test, SETTINGS_ATTRIBUTE, None)
    return found if isinstance(found, Settings) else None


def use_settings(test: Callable[..., Any], chosen: Settings) -> None:
    """Attach ``chosen`` to a ``@given`` test in place of what it had (``@settings`` would refuse)."""
    setattr(test, SETTINGS_ATTRIBUTE, chosen)
