"""The loop's contract (DESIGN sections 1, 3 and 4), restated once for the oracle.

The reference model, the invariants, the fuzz summary and the scripted provider all judge or
imitate the loop by these texts and numbers. They live here, and only here, so that the oracle
cannot drift from itself; and this module imports nothing of ``openprogram``'s loop, so the
oracle never takes its expectations from the code it judges.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Literal

__all__ = [
    "ABORTED_MESSAGE",
    "END_REASONS",
    "HARD_CAP",
    "SKIPPED_CANCELLED",
    "SKIPPED_STEERING",
    "ResultKind",
    "classify_result_text",
    "effective_cap",
    "invalid_json_prefix",
    "invalid_json_text",
    "not_found_prefix",
    "not_found_text",
    "validation_prefix",
]

HARD_CAP = 50
"""The seed's ``MAX_INNER_ITERATIONS``: no run makes more model requests than this."""

SKIPPED_STEERING = "Skipped due to queued user message."
"""The result text of a call skipped because a steering message arrived mid-batch."""

SKIPPED_CANCELLED = "Skipped due to cancellation."
"""The result text of a call skipped because the run's cancel event was set."""

ABORTED_MESSAGE = "Request was aborted"
"""The ``error_message`` of an assistant message that ends a cancelled run."""

END_REASONS = ("stop", "error", "aborted", "max_iterations")
"""Every value ``agent_end.reason`` may take."""

ResultKind = Literal["not_found", "invalid_json", "invalid_args", "skipped", "executed"]


def effective_cap(max_iterations: int | None) -> int:
    """``min(50, max(1, max_iterations))``; ``None`` (nothing asked) is the hard cap."""
    if max_iterations is None:
        return HARD_CAP
    return max(1, min(HARD_CAP, int(max_iterations)))


def not_found_prefix(name: str) -> str:
    return f'Tool "{name}" not found.'


def not_found_text(name: str, available: Iterable[str]) -> str:
    """What the model reads after calling a tool its menu lacks (an empty menu says ``(none)``)."""
    names = ", ".join(available) or "(none)"
    return f"{not_found_prefix(name)} Available tools: {names}"


def invalid_json_prefix(name: str) -> str:
    return f'Invalid JSON arguments for tool "{name}":'


def invalid_json_text(name: str, raw: str) -> str:
    """What the model reads after sending argument text that is not a JSON object."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        reason = str(exc)
    else:
        reason = f"expected a JSON object, got {type(value).__name__}"
    return f"{invalid_json_prefix(name)} {reason}\n\nReceived arguments:\n{raw}"


def validation_prefix(name: str) -> str:
    return f'Validation failed for tool "{name}":'


def classify_result_text(name: str, text: str, is_error: bool) -> ResultKind:
    """Which contract path produced a result, judged by its text alone (for traces whose
    requests were not captured, and for summaries)."""
    if not is_error:
        return "executed"
    if text in (SKIPPED_STEERING, SKIPPED_CANCELLED):
        return "skipped"
    for prefix, kind in (
        (not_found_prefix(name), "not_found"),
        (invalid_json_prefix(name), "invalid_json"),
        (validation_prefix(name), "invalid_args"),
    ):
        if text.startswith(prefix):
            return kind  # type: ignore[return-value]
    return "executed"
