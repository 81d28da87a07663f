"""``harness conformance``: what a user sees when replaying cassettes, and how a bad file is reported.

The cassettes here are tiny hand-written ones (not the third-party recordings), so the command's
behaviour is pinned without depending on the shared folder.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from harness.cli import conformance_command
from harness.recording._conformance import (
    ReplayError,
    read_recorded_calls,
    render_result,
    replay_cassette,
    report,
)
from tests.harness.support import chat_completion, run_cli

CHAT_URI = "https://api.openai.com/v1/chat/completions"


def _interaction(uri: str, request_body: dict[str, Any], status: int, response_body: str) -> dict[str, Any]:
    return {
        "request": {"method": "POST", "uri": uri, "body": json.dumps(request_body), "headers": {}},
        "response": {
            "status": {"code": status, "message": "OK" if status == 200 else "Bad Request"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": response_body},
        },
    }


def _write(path: Path, *interactions: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}), encoding="utf-8")
    return path


CALL = {"id": "call_add_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "1+2?"}]}


@pytest.fixture
def chat_cassette(tmp_path: Path) -> Path:
    """A two-turn tool loop: the model calls ``add``, then answers."""
    return _write(
        tmp_path / "chat_tool_loop.yaml",
        _interaction(CHAT_URI, REQUEST, 200, chat_completion(None, [CALL], "tool_calls")),
        _interaction(CHAT_URI, REQUEST, 200, chat_completion("It is 3.", None, "stop")),
    )


EXPECTED_INTERACTIONS = [
    {
        "index": 0,
        "stop_reason": "toolUse",
        "text": "",
        "tool_calls": [{"id": "call_add_1", "name": "add", "arguments": {"a": 1, "b": 2}}],
        "error_message": None,
    },
    {"index": 1, "stop_reason": "stop", "text": "It is 3.", "tool_calls": [], "error_message": None},
]


def test_json_prints_one_object_per_file_in_the_documented_shape(chat_cassette: Path, tmp_path: Path) -> None:
    second = _write(
        tmp_path / "chat_text.yaml", _interaction(CHAT_URI, REQUEST, 200, chat_completion("Hi.", None, "stop"))
    )
    result = CliRunner().invoke(conformance_command, ["--json", str(chat_cassette), str(second)])

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    first, other = (json.loads(line) for line in lines)
    assert first == {"file": str(chat_cassette), "provider": "openai", "interactions": EXPECTED_INTERACTIONS}
    assert other["file"] == str(second)
    assert other["interactions"] == [
        {"index": 0, "stop_reason": "stop", "text": "Hi.", "tool_calls": [], "error_message": None}
    ]


def test_error_responses_are_reported_not_fatal(tmp_path: Path) -> None:
    error = {"error": {"message": "Invalid 'model'.", "type": "invalid_request_error", "param": None, "code": None}}
    cassette = _write(tmp_path / "error.yaml", _interaction(CHAT_URI, REQUEST, 400, json.dumps(error)))

    result = CliRunner().invoke(conformance_command, ["--json", str(cassette)])

    assert result.exit_code == 0, result.output
    (interaction,) = json.loads(result.stdout)["interactions"]
    assert interaction["stop_reason"] == "error"
    assert "400" in interaction["error_message"] and "Invalid 'model'." in interaction["error_message"]


def test_without_json_prints_a_readable_summary(chat_cassette: Path) -> None:
    result = CliRunner().invoke(conformance_command, [str(chat_cassette)])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"{chat_cassette} (openai, 2 interactions)",
        "  #0 toolUse",
        '     call call_add_1 add({"a": 1, "b": 2})',
        "  #1 stop",
        "     text: It is 3.",
    ]


def test_render_result_shows_errors_and_flattens_newlines() -> None:
    text = render_result(
        {
            "file": "x.yaml",
            "provider": "anthropic",
            "interactions": [
                {"index": 0, "stop_reason": "stop", "text": "a\nb", "tool_calls": [], "error_message": None},
                {"index": 1, "stop_reason": "error", "text": "", "tool_calls": [], "error_message": "HTTP 400 x"},
            ],
        }
    )
    assert text.splitlines() == [
        "x.yaml (anthropic, 2 interactions)",
        "  #0 stop",
        "     text: a\\nb",
        "  #1 error",
        "     error: HTTP 400 x",
    ]


def test_an_unmatched_request_fails_the_file_and_says_which_interaction(tmp_path: Path) -> None:
    # The recording carries a query parameter our backend does not send, so vcrpy has no answer.
    cassette = _write(
        tmp_path / "unmatched.yaml",
        _interaction(CHAT_URI + "?api-version=2024-01-01", REQUEST, 200, chat_completion("x", None, "stop")),
    )
    result = CliRunner().invoke(conformance_command, ["--json", str(cassette)])

    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()  # --json reports the failed file too, as {"file", "error"}
    assert json.loads(line) == {"file": str(cassette), "error": json.loads(line)["error"]}
    assert "matched no recorded interaction" in json.loads(line)["error"]
    assert f"error: {cassette}: interaction 0 (POST {CHAT_URI}?api-version=2024-01-01)" in result.stderr
    assert "matched no recorded interaction" in result.stderr


def test_a_bad_file_fails_with_exit_1_but_the_others_are_still_reported(chat_cassette: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    unknown = _write(
        tmp_path / "unknown_host.yaml",
        _interaction("https://llm.example.com/v1/generate", {"model": "m"}, 200, "{}"),
    )
    result = CliRunner().invoke(conformance_command, ["--json", str(missing), str(unknown), str(chat_cassette)])

    assert result.exit_code == 1
    reported = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["file"] for r in reported] == [str(missing), str(unknown), str(chat_cassette)]
    assert ["error" in r for r in reported] == [True, True, False]
    assert "interactions" in reported[2]
    assert f"error: {missing}: cannot read the cassette" in result.stderr
    assert f"error: {unknown}: interaction 0 (POST https://llm.example.com/v1/generate): no backend for host" in (
        result.stderr
    )


def test_files_are_required() -> None:
    result = CliRunner().invoke(conformance_command, [])
    assert result.exit_code == 2
    assert "Missing argument 'FILES...'" in result.output


def test_replay_cassette_raises_replay_error_for_a_file_that_is_not_a_cassette(tmp_path: Path) -> None:
    path = tmp_path / "notes.yaml"
    path.write_text("just: notes\n", encoding="utf-8")
    with pytest.raises(ReplayError, match="not a vcrpy cassette"):
        replay_cassette(path)


@pytest.mark.parametrize(
    ("uri", "body", "expected"),
    [
        pytest.param(
            CHAT_URI,
            {"model": "gpt-4o", "stream": True},
            ("openai", "chat.completions", "gpt-4o", True),
            id="openai-chat-streamed",
        ),
        pytest.param(
            "https://api.openai.com/v1/responses",
            {"model": "gpt-5", "stream": False},
            ("openai", "responses", "gpt-5", False),
            id="openai-responses",
        ),
        pytest.param(
            "https://api.anthropic.com/v1/messages?beta=true",
            {"model": "claude-x", "stream": True},
            ("anthropic", "messages", "claude-x", True),
            id="anthropic-beta-query",
        ),
        pytest.param(
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
            {},
            ("gemini", "streamGenerateContent", "gemini-2.0-flash", True),
            id="gemini-streamed",
        ),
        pytest.param(
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent",
            {},
            ("gemini", "generateContent", "gemini-2.0-flash", False),
            id="gemini",
        ),
        pytest.param(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/converse-stream",
            {},
            ("bedrock", "converse-stream", "us.amazon.nova-micro-v1:0", True),
            id="bedrock-streamed",
        ),
        pytest.param(
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/mistral.devstral-2-123b/converse",
            {},
            ("bedrock", "converse", "mistral.devstral-2-123b", False),
            id="bedrock",
        ),
    ],
)
def test_backend_model_and_stream_flag_come_from_the_recorded_request(
    tmp_path: Path, uri: str, body: dict[str, Any], expected: tuple[str, str, str, bool]
) -> None:
    cassette = _write(tmp_path / "c.yaml", _interaction(uri, body, 200, "{}"))
    (call,) = read_recorded_calls(cassette)
    assert (call.provider, call.endpoint, call.model, call.stream) == expected


def test_recorded_tools_become_tool_specs_in_json_schema(tmp_path: Path) -> None:
    gemini_tools = [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
                }
            ]
        }
    ]
    uri = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent"
    cassette = _write(tmp_path / "g.yaml", _interaction(uri, {"tools": gemini_tools}, 200, "{}"))
    (call,) = read_recorded_calls(cassette)
    assert [(spec.name, spec.description, spec.parameters) for spec in call.tools] == [
        ("get_weather", "Weather for a city.", {"type": "object", "properties": {"city": {"type": "string"}}})
    ]


def test_report_is_the_command_without_click(chat_cassette: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = report([chat_cassette, tmp_path / "missing.yaml"], as_json=True, out=out, err=err)

    assert status == 1
    replayed, failed = (json.loads(line) for line in out.getvalue().splitlines())
    assert replayed == {"file": str(chat_cassette), "provider": "openai", "interactions": EXPECTED_INTERACTIONS}
    assert failed["file"] == str(tmp_path / "missing.yaml") and "cannot read the cassette" in failed["error"]
    assert err.getvalue().startswith(f"error: {tmp_path / 'missing.yaml'}: cannot read the cassette")
    assert report([chat_cassette], out=io.StringIO(), err=io.StringIO()) == 0


GEMINI_REPLY = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Bonjour."}]}, "finishReason": "STOP"}]}


def test_a_vertex_recording_replays_against_its_project_and_location(tmp_path: Path) -> None:
    uri = (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/my-proj/locations/europe-west4"
        "/publishers/google/models/gemini-2.0-flash:generateContent"
    )
    cassette = _write(tmp_path / "vertex.yaml", _interaction(uri, {}, 200, json.dumps(GEMINI_REPLY)))

    result = replay_cassette(cassette)

    assert result["provider"] == "gemini"
    assert result["interactions"] == [
        {"index": 0, "stop_reason": "stop", "text": "Bonjour.", "tool_calls": [], "error_message": None}
    ]


def test_a_missing_sdk_extra_fails_the_file_naming_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.genai", None)  # an install without openprogram[gemini]
    uri = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent"
    cassette = _write(tmp_path / "gemini.yaml", _interaction(uri, {}, 200, json.dumps(GEMINI_REPLY)))

    result = CliRunner().invoke(conformance_command, [str(cassette)])

    assert result.exit_code == 1
    assert f"error: {cassette}: cannot replay gemini cassettes:" in result.stderr
    assert 'pip install -e ".[gemini]" in the openprogram checkout' in result.stderr


def test_a_directory_replays_every_cassette_under_it(chat_cassette: Path, tmp_path: Path) -> None:
    nested = tmp_path / "more"
    nested.mkdir()
    second = _write(nested / "text.yml", _interaction(CHAT_URI, REQUEST, 200, chat_completion("Hi.", None, "stop")))
    result = CliRunner().invoke(conformance_command, ["--json", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert [json.loads(line)["file"] for line in result.stdout.splitlines()] == [str(chat_cassette), str(second)]


def test_a_directory_without_cassettes_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(conformance_command, [str(tmp_path)])
    assert result.exit_code == 2
    assert "no cassette files (*.yaml, *.yml) in" in result.output and "Traceback" not in result.output


def test_an_internal_error_is_reported_per_file_not_as_a_bare_attribute_error(
    chat_cassette: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.recording._conformance as conformance

    def broken(path: Any) -> Any:
        raise AttributeError("'NoneType' object has no attribute 'text'")

    monkeypatch.setattr(conformance, "replay_cassette", broken)
    result = CliRunner().invoke(conformance_command, ["--json", str(chat_cassette)])

    assert result.exit_code == 1 and "Traceback" not in result.output
    (line,) = result.stdout.splitlines()
    error = json.loads(line)["error"]
    assert error.startswith(f"{chat_cassette}: internal error while replaying (AttributeError: ")
    assert "bug in the harness" in error


LEGACY_VERTEX = (  # the legacy Vertex SDK (vertexai, REST transport) asks for its wire encoding in the query
    "https://us-central1-aiplatform.googleapis.com/v1/projects/my-proj/locations/us-central1"
    "/publishers/google/models/gemini-1.5-flash-002:generateContent?%24alt=json%3Benum-encoding%3Dint"
)


@pytest.mark.parametrize(
    "uri",
    [
        LEGACY_VERTEX,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent?alt=json",
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent?prettyPrint=false",
        "https://api.anthropic.com/v1/messages?beta=true",
    ],
)
def test_a_recording_whose_client_sent_transport_only_query_parameters_replays(tmp_path: Path, uri: str) -> None:
    if "anthropic" in uri:
        body = {"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
        reply = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": "Bonjour."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    else:
        body, reply = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, GEMINI_REPLY
    cassette = _write(tmp_path / "other_client.yaml", _interaction(uri, body, 200, json.dumps(reply)))

    replayed = run_cli("conformance", "--json", cassette)

    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["interactions"] == [
        {"index": 0, "stop_reason": "stop", "text": "Bonjour.", "tool_calls": [], "error_message": None}
    ]


def test_a_query_parameter_that_selects_the_reply_still_has_to_match(tmp_path: Path) -> None:
    proto = "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent?alt=proto"
    cassette = _write(tmp_path / "proto.yaml", _interaction(proto, {}, 200, json.dumps(GEMINI_REPLY)))
    with pytest.raises(ReplayError) as caught:
        replay_cassette(cassette)
    assert "query_except_transport differs:\n       sent query [], recorded [('alt', 'proto')]" in str(caught.value)


BONJOUR = {"index": 0, "stop_reason": "stop", "text": "Bonjour.", "tool_calls": [], "error_message": None}


@pytest.mark.parametrize(
    ("uri", "request_body", "reply"),
    [
        (
            "http://127.0.0.1:5/gw/openai/v1/chat/completions",  # a proxy's base URL with a path of its own
            {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            chat_completion("Bonjour."),
        ),
        ("http://127.0.0.1:5/v1/projects/p/locations/eu/publishers/google/models/g:generateContent", {}, None),
        ("http://127.0.0.1:5/v1/publishers/google/models/g:generateContent", {}, None),  # Vertex express
        (
            "http://127.0.0.1:5/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse",
            {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
            json.dumps(
                {
                    "output": {"message": {"role": "assistant", "content": [{"text": "Bonjour."}]}},
                    "stopReason": "end_turn",
                    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                }
            ),
        ),
    ],
)
def test_a_recording_made_at_another_host_replays_against_that_host(
    tmp_path: Path, uri: str, request_body: dict[str, Any], reply: str | None
) -> None:
    recorded = _interaction(uri, request_body, 200, reply or json.dumps(GEMINI_REPLY))
    assert replay_cassette(_write(tmp_path / "elsewhere.yaml", recorded))["interactions"] == [BONJOUR]
