"""A run, written down: its events, the requests the model received, what the tools did.

``Trace`` is what every workflow hands its user: the ``trace`` fixture, ``run(scenario)``, the
campaign's failures. Its parts live in private modules: the record and its rendering
(``_trace``), building one while a run happens (``_trace_recorder``), reading one into runs and
model calls for the oracle (``_run_views``), what a run did after its consumer left
(``_leaving``), the small stable form for snapshot tests (``_snapshot``).
"""

from harness.trace._leaving import Left
from harness.trace._run_views import Batch, RunView, batches, run_views
from harness.trace._trace import LedgerEntry, Trace, describe_event, diff, render_message, show_messages
from harness.trace._trace_recorder import RunCollector, TraceRecorder

__all__ = [
    "Batch",
    "LedgerEntry",
    "Left",
    "RunCollector",
    "RunView",
    "Trace",
    "TraceRecorder",
    "batches",
    "describe_event",
    "diff",
    "render_message",
    "run_views",
    "show_messages",
]
