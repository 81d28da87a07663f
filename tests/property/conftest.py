"""Hypothesis profiles for the property suite, when the harness pytest plugin is not loaded.

The plugin (``harness.pytest_plugin``) registers ``harness-ci`` (derandomized, bounded: what CI
runs) and ``harness-deep`` (thousands of examples) and selects one with ``--harness-profile``.
Running this suite with ``-p no:harness`` must still work, so the same two profiles are registered
here if they are missing; nothing is loaded here, the plugin's choice (or Hypothesis' default) stands.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis.errors import InvalidArgument


def _missing(name: str) -> bool:
    try:
        settings.get_profile(name)
    except InvalidArgument:
        return True
    return False


if _missing("harness-ci"):
    settings.register_profile(
        "harness-ci", derandomize=True, max_examples=50, deadline=None, database=None, print_blob=True
    )
if _missing("harness-deep"):
    settings.register_profile("harness-deep", max_examples=5_000, deadline=None, print_blob=True)
