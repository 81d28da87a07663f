"""The cassette tools of ``harness cassettes``: ``show`` (``_timeline``, whose steps the others read
too), ``to-scenario`` (``_to_scenario``) and ``drift`` (``_drift``).

Private to ``harness.recording``, whose facade re-exports ``render_timeline`` and ``to_scenario``;
the command line imports the rest from here.
"""

from harness.recording._tools._drift import (
    Drift,
    DriftTarget,
    compare_replies,
    drift,
    drift_targets,
    reply_structure,
    send_for_drift,
)
from harness.recording._tools._timeline import ConversionError, Step, read_steps, render_timeline
from harness.recording._tools._to_scenario import to_scenario

__all__ = [
    "ConversionError",
    "Drift",
    "DriftTarget",
    "Step",
    "compare_replies",
    "drift",
    "drift_targets",
    "read_steps",
    "render_timeline",
    "reply_structure",
    "send_for_drift",
    "to_scenario",
]
