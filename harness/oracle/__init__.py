"""The oracle: what a run of the loop must look like, judged from the contract alone.

Two independent judges of a ``Trace``: the invariants (``_run_invariants`` for the whole run,
``_batches`` for what happens to each call of a tool batch, ``_grammar`` for the order of events)
and the reference model (``_reference`` predicts a scenario's run, ``_compare`` holds the
prediction against the real one). Neither imports the loop it judges (import-linter checks it);
both read the contract of DESIGN sections 1, 3 and 4 from ``harness._contract``.
"""

from harness.oracle._batches import InvariantViolation, cancel_semantics, error_feedback, skip_semantics
from harness.oracle._compare import Prediction
from harness.oracle._reference import compare, predict
from harness.oracle._run_invariants import (
    ALL_INVARIANTS,
    check_all,
    check_deterministic,
    conservation,
    consumer_left,
    end_reason_consistent,
    error_ends_run,
    event_grammar,
    terminates_within_cap,
    tool_calls_answered,
)

__all__ = [
    "ALL_INVARIANTS",
    "InvariantViolation",
    "Prediction",
    "cancel_semantics",
    "check_all",
    "check_deterministic",
    "compare",
    "conservation",
    "consumer_left",
    "end_reason_consistent",
    "error_ends_run",
    "error_feedback",
    "event_grammar",
    "predict",
    "skip_semantics",
    "terminates_within_cap",
    "tool_calls_answered",
]
