"""Replaying what the legacy Vertex SDK recorded: replies whose enums are proto numbers.

``vertexai.generative_models`` over its REST transport asks for ``$alt=json;enum-encoding=int``,
so every enum of the reply arrives as its number (``"finishReason": 1``), and its streamed calls
get a JSON array instead of server-sent events. google-genai reads neither. The cassettes here
are written by the tests in that shape and replayed through the ``harness`` command (click's
runner, in this process), as a user would.
"""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness.support import run_cli

VERTEX = (
    "https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-central1"
    "/publishers/google/models/gemini-1.5-flash-002"
)
LEGACY_QUERY = "?%24alt=json%3Benum-encoding%3Dint"  # what google-api-core's REST transport appends

# The legacy SDK sends its request with int enums too: a schema's type 6 is OBJECT, 3 INTEGER.
LEGACY_REQUEST = {
    "contents": [{"role": "user", "parts": [{"text": "Say hello in French."}]}],
    "tools": [
        {
            "functionDeclarations": [
                {
                    "name": "classify",
                    "description": "File a greeting under a category.",
                    "parameters": {"type": 6, "properties": {"category": {"type": 3}}, "required": ["category"]},
                }
            ]
        }
    ],
    "safetySettings": [{"category": 1, "threshold": 2}],
}

RATINGS = [
    {"category": 1, "probability": 1, "probabilityScore": 0.05, "severity": 1, "severityScore": 0.02},
    {"category": 2, "probability": 2, "severity": 2},
    {"category": 3, "probability": 1, "severity": 1},
    {"category": 4, "probability": 1, "severity": 1},
]


def _usage(prompt: int, out: int) -> dict[str, Any]:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": out,
        "totalTokenCount": prompt + out,
        "promptTokensDetails": [{"modality": 1, "tokenCount": prompt}],
        "candidatesTokensDetails": [{"modality": 1, "tokenCount": out}],
        "trafficType": 1,
    }


def _reply(parts: list[dict[str, Any]], finish: int | None, usage: dict[str, Any] | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "safetyRatings": RATINGS}
    if finish is not None:
        candidate["finishReason"] = finish
    reply: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-1.5-flash-002"}
    if usage is not None:
        reply["usageMetadata"] = usage
    return reply


def _interaction(method: str, body: Any, content_type: str = "application/json") -> dict[str, Any]:
    return {
        "request": {
            "method": "POST",
            "uri": f"{VERTEX}:{method}{LEGACY_QUERY}",
            "body": json.dumps(LEGACY_REQUEST),
            "headers": {"Content-Type": ["application/json"]},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": [content_type]},
            "body": {"string": body if isinstance(body, str) else json.dumps(body)},
        },
    }


def _write(path: Path, *interactions: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}), encoding="utf-8")
    return path


def _harness(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return run_cli(*args)  # the command in this process: each call would otherwise import every SDK anew


def _conformance_json(cassette: Path) -> dict[str, Any]:
    replayed = _harness("conformance", "--json", cassette)
    assert replayed.returncode == 0, replayed.stderr
    assert "Traceback" not in replayed.stderr
    result: dict[str, Any] = json.loads(replayed.stdout)
    return result


def test_a_legacy_vertex_reply_with_int_enums_reads_its_stop_reason_text_and_tool_calls(tmp_path: Path) -> None:
    cassette = _write(
        tmp_path / "legacy_vertex.yaml",
        _interaction("generateContent", _reply([{"text": "Bonjour !"}], 1, _usage(7, 3))),
        # a tool call's arguments are free-form JSON: a number under an enum-like key stays a number
        _interaction(
            "generateContent",
            _reply([{"functionCall": {"name": "classify", "args": {"category": 2}}}], 1, _usage(9, 5)),
        ),
        _interaction("generateContent", _reply([{"text": "Bonjour, je"}], 2, _usage(7, 2))),  # 2: MAX_TOKENS
        # a blocked prompt: no candidates, promptFeedback.blockReason 1 (SAFETY)
        _interaction("generateContent", {"promptFeedback": {"blockReason": 1, "safetyRatings": RATINGS}}),
    )

    result = _conformance_json(cassette)

    assert result["provider"] == "gemini"
    for item in result["interactions"]:  # Gemini names no call ids: the backend makes them up
        for call in item["tool_calls"]:
            assert call.pop("id")
    assert result["interactions"] == [
        {"index": 0, "stop_reason": "stop", "text": "Bonjour !", "tool_calls": [], "error_message": None},
        {
            "index": 1,
            "stop_reason": "toolUse",
            "text": "",
            "tool_calls": [{"name": "classify", "arguments": {"category": 2}}],
            "error_message": None,
        },
        {"index": 2, "stop_reason": "length", "text": "Bonjour, je", "tool_calls": [], "error_message": None},
        {
            "index": 3,
            "stop_reason": "error",
            "text": "",
            "tool_calls": [],
            "error_message": "Gemini blocked the prompt: SAFETY",
        },
    ]
    assert "notes" not in result


def test_show_reads_the_usage_of_a_legacy_vertex_reply(tmp_path: Path) -> None:
    cassette = _write(
        tmp_path / "legacy_vertex.yaml",
        _interaction("generateContent", _reply([{"text": "Bonjour !"}], 1, _usage(7, 3))),
    )

    shown = _harness("cassettes", "show", cassette)

    assert shown.returncode == 0, shown.stderr
    assert "← reply (stop): Bonjour !" in shown.stdout
    assert "usage: 7 in, 3 out" in shown.stdout


def test_a_legacy_vertex_stream_a_json_array_of_int_enum_chunks_replays(tmp_path: Path) -> None:
    # google-api-core's REST transport streams without alt=sse: the reply is one JSON array, its
    # elements arriving one by one
    chunks = [
        _reply([{"text": "Bon"}], None, None),
        _reply([{"text": "jour !"}], None, None),
        _reply([{"text": ""}], 1, _usage(7, 3)),
    ]
    body = "[" + ",\r\n".join(json.dumps(chunk, indent=2) for chunk in chunks) + "]"
    cassette = _write(tmp_path / "legacy_stream.yaml", _interaction("streamGenerateContent", body))

    result = _conformance_json(cassette)

    assert result["interactions"] == [
        {"index": 0, "stop_reason": "stop", "text": "Bonjour !", "tool_calls": [], "error_message": None}
    ]
    shown = _harness("cassettes", "show", cassette)
    assert shown.returncode == 0, shown.stderr
    assert "usage: 7 in, 3 out" in shown.stdout


@pytest.mark.parametrize("streamed", [False, True], ids=["generateContent", "streamGenerateContent"])
def test_an_enum_number_the_table_does_not_know_is_kept_and_reported_not_a_traceback(
    tmp_path: Path, streamed: bool
) -> None:
    reply = _reply([{"text": "Bonjour !"}], 99, _usage(7, 3))
    method = "streamGenerateContent" if streamed else "generateContent"
    cassette = _write(tmp_path / "unknown.yaml", _interaction(method, [reply] if streamed else reply))

    result = _conformance_json(cassette)

    where = "interaction 0, chunk 0: " if streamed else "interaction 0: "
    assert result["notes"] == [
        f"{where}candidates[0].finishReason is 99, no number of google.cloud.aiplatform.v1.Candidate.FinishReason"
        " this harness knows; kept as the number, which the SDK may not read"
    ]
    (item,) = result["interactions"]
    assert item["index"] == 0  # the interaction is still reported, with what the SDK made of the number
    text = _harness("conformance", cassette)
    assert text.returncode == 0, text.stderr
    assert "note: interaction 0" in text.stdout and "finishReason is 99" in text.stdout


def test_to_scenario_reads_the_legacy_requests_schema_type_numbers_as_json_schema_types(tmp_path: Path) -> None:
    cassette = _write(
        tmp_path / "legacy_tools.yaml",
        _interaction(
            "generateContent",
            _reply([{"functionCall": {"name": "classify", "args": {"category": 2}}}], 1, _usage(9, 5)),
        ),
    )

    converted = _harness("cassettes", "to-scenario", cassette)

    assert converted.returncode == 0, converted.stderr
    (tool,) = yaml.safe_load(converted.stdout)["tools"]
    assert tool["parameters"] == {
        "type": "object",
        "properties": {"category": {"type": "integer"}},
        "required": ["category"],
    }


def test_a_gzip_compressed_legacy_reply_reads_too(tmp_path: Path) -> None:
    # vcrpy under requests (the legacy SDK's HTTP library) keeps the body as it came: gzip bytes
    interaction = _interaction("generateContent", "")
    reply = json.dumps(_reply([{"text": "Bonjour !"}], 1, _usage(7, 3))).encode()
    interaction["response"]["body"] = {"string": gzip.compress(reply)}
    interaction["response"]["headers"]["Content-Encoding"] = ["gzip"]
    cassette = _write(tmp_path / "legacy_gzip.yaml", interaction)

    result = _conformance_json(cassette)

    assert result["interactions"] == [
        {"index": 0, "stop_reason": "stop", "text": "Bonjour !", "tool_calls": [], "error_message": None}
    ]
