"""Hypothesis profiles for the property suite, when the harness pytest plugin is not loaded.

The plugin (``harness.pytest_plugin``) registers ``harness-ci`` (derandomized, bounded: what CI
runs) and ``harness-deep`` (thousands of examples) and selects one with ``--harness-profile``.
Running this suite with ``-p no:harness`` must still work, so the same two profiles are registered
here if they are missing; nothing is loaded here, the plugin's choice (or Hypothesis' default) stands.

Mutation testing runs this suite once per mutant, and only needs to know whether it fails, not
the shrunk scenario: ``HARNESS_NO_SHRINK=1`` switches to ``harness-mutation`` (``harness-ci``
without the shrink phase), which keeps a mutmut run to minutes. See docs/property-testing.md.
"""

from __future__ import annotations

import os

from hypothesis import Phase, settings
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
settings.register_profile(
    "harness-mutation", settings.get_profile("harness-ci"), phases=(Phase.explicit, Phase.generate)
)


def pytest_sessionstart(session: object) -> None:
    # After every pytest_configure (the plugin loads --harness-profile there) and before the test
    # modules are imported, which is when their @settings objects take the profile's values.
    if os.environ.get("HARNESS_NO_SHRINK"):
        settings.load_profile("harness-mutation")
