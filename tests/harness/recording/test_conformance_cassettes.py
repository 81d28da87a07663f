"""Every real provider recording in the shared cassette folder, read by our backends as the index says.

The expected values come from ``index.json`` next to the cassettes (an SDK-independent reading of
each response); this test maps the providers' raw stop reasons to ours and compares. Run one
provider with ``-k openai`` (or anthropic, gemini, bedrock).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.recording._conformance import default_cassette_dir, replay_cassette

pytestmark = pytest.mark.cassettes

CASSETTES = default_cassette_dir()

# The providers' own finish reasons, as index.json reports them, mapped per DESIGN section 4.
# Reasons that mean "the model asked for tools" map to "stop" here and become "toolUse" below.
STOP_REASONS = {
    "stop": "stop",  # OpenAI chat
    "tool_calls": "stop",
    "function_call": "stop",
    "length": "length",
    "completed": "stop",  # OpenAI Responses
    "max_output_tokens": "length",
    "end_turn": "stop",  # Anthropic, Bedrock
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "stop",
    "max_tokens": "length",
    "STOP": "stop",  # Gemini
    "MAX_TOKENS": "length",
    None: "stop",  # no finish reason at all (an OpenAI-compatible proxy's stream)
}


def _entries() -> list[Any]:
    index = CASSETTES / "index.json"
    if not index.is_file():
        reason = f"provider cassettes not found: {CASSETTES} (set HARNESS_PROVIDER_CASSETTES to the folder)"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-provider-cassettes")]
    entries = json.loads(index.read_text(encoding="utf-8"))
    return [pytest.param(entry, id=f"{entry['provider']}-{Path(entry['file']).stem}") for entry in entries]


def expected_stop_reason(expected: dict[str, Any]) -> str:
    if expected["error"] is not None:
        return "error"
    raw = expected["stop_reason"]
    assert raw in STOP_REASONS, f"no documented mapping for the provider stop reason {raw!r}"
    reason = STOP_REASONS[raw]
    return "toolUse" if reason == "stop" and expected["tool_calls"] else reason


@pytest.mark.parametrize("entry", _entries())
def test_backend_reads_the_recording_as_the_index_says(entry: dict[str, Any]) -> None:
    result = replay_cassette(CASSETTES / entry["file"])

    assert result["provider"] == entry["provider"]
    assert [item["index"] for item in result["interactions"]] == [item["index"] for item in entry["interactions"]]
    for recorded, actual in zip(entry["interactions"], result["interactions"], strict=True):
        expected = recorded["expected"]
        _check_ids(recorded["index"], expected["tool_calls"], actual["tool_calls"])
        assert _comparable(actual) == {
            "index": recorded["index"],
            "stop_reason": expected_stop_reason(expected),
            "text": expected["text"],
            "tool_calls": [{"name": c["name"], "arguments": c["arguments"]} for c in expected["tool_calls"]],
        }
        _check_error(recorded["index"], expected["error"], actual["error_message"])


def _comparable(actual: dict[str, Any]) -> dict[str, Any]:
    """The replayed interaction without what is checked separately (ids, the error text)."""
    return {
        "index": actual["index"],
        "stop_reason": actual["stop_reason"],
        "text": actual["text"],
        "tool_calls": [{"name": c["name"], "arguments": c["arguments"]} for c in actual["tool_calls"]],
    }


def _check_ids(index: int, expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> None:
    actual_ids = [call["id"] for call in actual]
    assert all(isinstance(id, str) and id for id in actual_ids), f"interaction {index}: empty tool-call id"
    assert len(set(actual_ids)) == len(actual_ids), f"interaction {index}: duplicate tool-call ids {actual_ids}"
    # The provider's ids must survive (tool results reference them); where it sent none (Gemini
    # before 3.x) the backend's own ids are only required to be present and distinct.
    provided = [(call["id"], got) for call, got in zip(expected, actual_ids, strict=False) if call["id"] is not None]
    assert [got for _, got in provided] == [want for want, _ in provided], f"interaction {index}: tool-call ids"


def _check_error(index: int, error: dict[str, Any] | None, error_message: str | None) -> None:
    if error is None:
        assert error_message is None, f"interaction {index}: unexpected error {error_message!r}"
        return
    assert error_message is not None, f"interaction {index}: the error finish carries no message"
    assert error["message"] in error_message, f"interaction {index}: the provider's message is missing"
    assert str(error["status"]) in error_message, f"interaction {index}: the HTTP status is missing"
