"""A run, written down: its events, the requests the model received, what the tools did.

``Trace`` is what every workflow hands its user: the ``trace`` fixture, ``run(scenario)``, the
campaign's failures. Its parts live in private modules: the record and its rendering
(``_trace``), what a run did after its consumer left (``_leaving``), the small stable form for
snapshot tests (``_snapshot``).
"""

from harness.trace._leaving import Left
from harness.trace._trace import (
    Batch,
    LedgerEntry,
    RunCollector,
    RunView,
    Trace,
    TraceRecorder,
    batches,
    describe_event,
    diff,
    render_message,
    run_views,
    show_messages,
)

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
