"""Hypothesis profiles for the property suite.

The profiles are ``harness.campaigns._profiles``' (``harness-ci``: derandomized, bounded, what CI runs;
``harness-deep``: thousands of examples), registered here so this suite can load them even when
it runs with ``-p no:harness``. Nothing is loaded here: the plugin's choice stands (this project's
``pyproject.toml`` sets ``harness_ci_profile = "harness-ci"``, so CI runs derandomized), or
Hypothesis' own default.

Mutation testing runs this suite once per mutant, and only needs to know whether it fails, not
the shrunk scenario: ``HARNESS_NO_SHRINK=1`` switches to ``harness-mutation`` (``harness-ci``
without the shrink phase), which keeps a mutmut run to minutes. See docs/property-testing.md.
"""

from __future__ import annotations

import os

from hypothesis import Phase, settings

from harness.campaigns import _profiles as profiles

profiles.register()
settings.register_profile(
    "harness-mutation", settings.get_profile(profiles.CI_PROFILE), phases=(Phase.explicit, Phase.generate)
)


def pytest_sessionstart(session: object) -> None:
    # After every pytest_configure (the plugin loads --harness-profile there) and before the test
    # modules are imported, which is when their @settings objects take the profile's values.
    if os.environ.get("HARNESS_NO_SHRINK"):
        settings.load_profile("harness-mutation")
