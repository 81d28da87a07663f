"""Recordings in the wire campaigns: a cassette judged by W1 and W2 (``_recordings``), and a
campaign seeded by a recorded conversation (``_seed`` reads it, ``_mutations`` draws what an
example changes and serves it, ``_seeded_campaign`` runs example 0 and the mutated examples).

Private to ``harness.agents``, whose facade re-exports ``judge_recording``,
``run_seeded_campaign`` and ``SeedError``.
"""

from harness.agents._seeded._recordings import judge_recording
from harness.agents._seeded._seed import Seed, SeedError, chosen_seeds, read_seeds
from harness.agents._seeded._seeded_campaign import SeededCampaign, run_seeded_campaign

__all__ = [
    "Seed",
    "SeedError",
    "chosen_seeds",
    "SeededCampaign",
    "judge_recording",
    "read_seeds",
    "run_seeded_campaign",
]
