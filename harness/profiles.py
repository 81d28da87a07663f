"""The harness's Hypothesis settings profiles, registered on demand.

``harness-ci`` is what this project's CI runs (the same bounded examples every time, no timing
flakes, no example database to carry around); ``harness-deep`` is a long search for new failures.
``register()`` adds both to Hypothesis. Nothing is registered or loaded on import: the pytest
plugin registers them only when a session asks for a profile (``--harness-profile``, the
``harness_profile`` ini option, or ``harness_ci_profile`` with ``CI`` set), so a project that never
asks keeps Hypothesis exactly as it configured it. A conftest that wants to load one itself calls
``register()`` first.
"""

from __future__ import annotations

__all__ = ["CI_EXAMPLES", "CI_PROFILE", "DEEP_EXAMPLES", "DEEP_PROFILE", "register"]

CI_PROFILE = "harness-ci"
DEEP_PROFILE = "harness-deep"
CI_EXAMPLES = 50
DEEP_EXAMPLES = 5_000


def register() -> None:
    """Register ``harness-ci`` and ``harness-deep`` with Hypothesis (again is harmless)."""
    from hypothesis import settings

    # parented on Hypothesis' plain "default" profile, not on whatever is active at import (under
    # CI Hypothesis activates its own "ci" profile first), so each profile means the same everywhere
    default = settings.get_profile("default")
    settings.register_profile(
        CI_PROFILE, default, derandomize=True, max_examples=CI_EXAMPLES, deadline=None, database=None, print_blob=True
    )
    settings.register_profile(DEEP_PROFILE, default, max_examples=DEEP_EXAMPLES, deadline=None, print_blob=True)
