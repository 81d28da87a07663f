"""The request journal of ``harness emulate``: ``--journal FILE`` writes every request received as
one JSON line, flushed as it is answered and complete once the server is stopped by SIGINT or
SIGTERM; ``GET /_emulator/requests`` answers the same records; ``--after-last`` chooses what a
request beyond the script gets."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from harness.emulator import Emulator
from tests.harness.support import console_script

SCRIPT = "turns:\n  - first answer\n  - {text: second answer}\n"
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
KEYS = [
    "run",
    "number",
    "time",
    "method",
    "path",
    "query",
    "headers",
    "provider",
    "endpoint",
    "streaming",
    "turn",
    "entry",
    "status",
    "body",
]


def _start(tmp_path: Path, *options: str) -> tuple[subprocess.Popen[str], str]:
    (tmp_path / "script.yaml").write_text(SCRIPT)
    command = [console_script(), "emulate", "--script", "script.yaml", "--port", "0", *options]
    process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    base = process.stdout.readline().strip()
    assert base.startswith("http://127.0.0.1:"), (base, process.stderr and process.stderr.read())
    return process, base


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _stop(process: subprocess.Popen[str], how: signal.Signals) -> str:
    process.send_signal(how)
    _, errors = process.communicate(timeout=20)
    assert process.returncode == 0, errors
    assert "Traceback" not in errors, errors
    return errors


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_journal_file_holds_every_request_flushed_as_answered_and_complete_when_stopped(
    tmp_path: Path, how: signal.Signals
) -> None:
    journal = tmp_path / "requests.jsonl"
    process, base = _start(tmp_path, "--journal", "requests.jsonl", "--after-last", "repeat")
    try:
        chat = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-secret-key", max_retries=0)
        reply = chat.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "first answer"
        first = _lines(journal)  # on disk while the server still runs: tail -f sees it
        assert [(r["number"], r["turn"], r["status"]) for r in first] == [(1, 1, 200)]

        claude = anthropic.Anthropic(base_url=base, api_key="sk-ant-secret", max_retries=0)
        with claude.messages.stream(model="c", max_tokens=9, messages=[{"role": "user", "content": "hi"}]) as stream:
            assert stream.get_final_text() == "second answer"
        again = chat.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "more"}])
        assert again.choices[0].message.content == "second answer"  # --after-last repeat
        refused = httpx2.post(f"{base}/v1/messages", content=b"[1, 2]", headers={"content-type": "application/json"})
        assert refused.status_code == 400
        assert httpx2.get(f"{base}/v1/nowhere?x=1").status_code == 404
        served = httpx2.get(f"{base}/_emulator/requests").json()
    finally:
        _stop(process, how)

    records = _lines(journal)
    assert served == records  # one format: the endpoint and the file
    assert all(list(r) == KEYS and TIME.match(r["time"]) for r in records), records
    assert [
        (r["number"], r["method"], r["path"], r["provider"], r["endpoint"], r["streaming"], r["turn"], r["status"])
        for r in records
    ] == [
        (1, "POST", "/v1/chat/completions", "openai", "chat.completions", False, 1, 200),
        (2, "POST", "/v1/messages", "anthropic", "messages", True, 2, 200),
        (3, "POST", "/v1/chat/completions", "openai", "chat.completions", False, 2, 200),
        (4, "POST", "/v1/messages", "anthropic", "messages", False, None, 400),
        (5, "GET", "/v1/nowhere", None, None, None, None, 404),
    ]
    assert records[0]["body"]["messages"] == [{"role": "user", "content": "hi"}]
    assert records[3]["body"] == [1, 2]  # what a refused request sent, as JSON where it was JSON
    assert records[4]["query"] == {"x": "1"}
    assert [r["entry"] for r in records] == [
        "text 'first answer'",
        "text 'second answer'",
        "text 'second answer'",
        None,
        None,
    ]
    text = journal.read_text(encoding="utf-8")
    assert "sk-secret-key" not in text and "sk-ant-secret" not in text
    assert all("authorization" not in r["headers"] and "x-api-key" not in r["headers"] for r in records)


def test_a_reset_restarts_the_script_and_the_endpoint_while_the_file_keeps_counting_runs(tmp_path: Path) -> None:
    journal = tmp_path / "requests.jsonl"
    process, base = _start(tmp_path, "--journal", str(journal))
    try:
        chat = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0)
        ask = lambda: chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])  # noqa: E731
        assert ask().choices[0].message.content == "first answer"
        assert httpx2.post(f"{base}/_emulator/reset").status_code == 204
        assert httpx2.get(f"{base}/_emulator/requests").json() == []
        assert ask().choices[0].message.content == "first answer"
        assert ask().choices[0].message.content == "second answer"
        with pytest.raises(openai.BadRequestError, match="request 3 is beyond the script"):
            ask()  # --after-last defaults to error
    finally:
        _stop(process, signal.SIGINT)
    records = _lines(journal)
    assert [(r["run"], r["number"], r["turn"], r["status"]) for r in records] == [
        (1, 1, 1, 200),
        (2, 1, 1, 200),
        (2, 2, 2, 200),
        (2, 3, None, 400),
    ]


def test_the_journal_file_starts_empty_for_each_server(tmp_path: Path) -> None:
    journal = tmp_path / "requests.jsonl"
    journal.write_text('{"old": true}\n')
    process, _ = _start(tmp_path, "--journal", str(journal))
    _stop(process, signal.SIGTERM)
    assert journal.read_text() == ""


def test_an_unwritable_journal_is_refused_in_one_line_before_serving(tmp_path: Path) -> None:
    (tmp_path / "script.yaml").write_text(SCRIPT)
    command = [console_script(), "emulate", "--script", "script.yaml", "--port", "0", "--journal", "no/such/j.jsonl"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "Error: --journal no/such/j.jsonl: cannot write: No such file or directory"


def test_after_last_is_refused_when_unknown(tmp_path: Path) -> None:
    (tmp_path / "script.yaml").write_text(SCRIPT)
    command = [console_script(), "emulate", "--script", "script.yaml", "--after-last", "loop"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "'loop' is not one of 'error', 'repeat'" in result.stderr


def test_an_emulator_in_a_test_journals_in_process_requests_to_a_file(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    emulator = Emulator("hello", journal=journal)
    with emulator.sync_http_client() as client:
        client.post("http://emulator/v1/chat/completions", json={"model": "m", "messages": []})
    emulator.close_journal()
    assert _lines(journal) == emulator.journal()
    assert emulator.journal()[0]["turn"] == 1


def test_a_key_sent_in_the_query_string_never_reaches_the_journal(tmp_path: Path) -> None:
    # Gemini takes its key as ?key= too (LiteLLM sends it so): the file must not keep it.
    journal = tmp_path / "j.jsonl"
    emulator = Emulator("hello", journal=journal)
    with emulator.sync_http_client() as client:
        reply = client.post(
            "http://emulator/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=AIzaSecretKey123",
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        )
    assert reply.status_code == 200
    emulator.close_journal()
    assert "AIzaSecretKey123" not in journal.read_text(encoding="utf-8")
    assert emulator.journal()[0]["query"] == {"alt": "sse"}
