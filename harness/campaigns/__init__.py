"""Campaigns: ``harness fuzz`` (generate, run, judge, shrink), the boundary table, the profiles.

Lazy (``harness._lazy_exports``): the pytest plugin reads the Hypothesis profiles (``_profiles``) in every
session, and must not pay for the campaign (``_loop_campaign``) or the boundary table (``_boundaries``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import _lazy_exports

if TYPE_CHECKING:
    from harness.campaigns._boundaries import BOUNDARIES, reached
    from harness.campaigns._loop_campaign import DEFAULT_EXAMPLES, DEFAULT_SEED, CampaignResult, Stats, run_campaign
    from harness.campaigns._profiles import CI_PROFILE, DEEP_PROFILE, example_database, register

_EXPORTS = {
    "BOUNDARIES": "._boundaries",
    "reached": "._boundaries",
    "DEFAULT_EXAMPLES": "._loop_campaign",
    "DEFAULT_SEED": "._loop_campaign",
    "CampaignResult": "._loop_campaign",
    "Stats": "._loop_campaign",
    "run_campaign": "._loop_campaign",
    "CI_PROFILE": "._profiles",
    "DEEP_PROFILE": "._profiles",
    "example_database": "._profiles",
    "register": "._profiles",
}
__all__ = [
    "BOUNDARIES",
    "CI_PROFILE",
    "CampaignResult",
    "DEEP_PROFILE",
    "DEFAULT_EXAMPLES",
    "DEFAULT_SEED",
    "Stats",
    "example_database",
    "reached",
    "register",
    "run_campaign",
]
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
