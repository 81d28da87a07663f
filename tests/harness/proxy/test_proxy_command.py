"""``harness proxy`` as a team's CI meets it: the installed command in a temporary project, clients in
other languages and processes recording through it from an upstream and replaying with it gone."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.emulator import Emulator
from harness.proxy import NO_MATCH
from tests.harness.proxy.conftest import CHAT, KEY, sse_texts
from tests.harness.support import console_script, run_cli

pytest.importorskip("uvicorn", reason="the proxy serves with the emulator extra (starlette, uvicorn)")

NODE_DIR = Path(__file__).resolve().parents[2] / "node"


def _environment(**extra: str) -> dict[str, str]:
    """The clients' and the proxy's environment: the key a team records with, nothing pointing elsewhere."""
    kept = {k: v for k, v in os.environ.items() if not k.endswith(("_BASE_URL", "_API_KEY"))}
    return {**kept, "OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY, **extra}


@contextmanager
def proxy(cwd: Path, *args: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``harness proxy ARGS --port 0`` in a process of its own; yields its base URL and, once the
    block is done and the process was sent SIGTERM, its exit status and output under ``ended``."""
    command = [console_script(), "proxy", *args, "--port", "0"]
    process = subprocess.Popen(
        command, cwd=cwd, env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    ended: dict[str, Any] = {}
    try:
        assert process.stdout is not None
        base = process.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:"), base + (process.stderr.read() if process.stderr else "")
        yield base, ended
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
        ended.update(status=process.returncode, stdout=out, stderr=err)
    assert "Traceback" not in ended["stderr"], ended["stderr"]


def _run(command: list[str], base: str, cwd: Path) -> str:
    env = _environment(OPENAI_BASE_URL=f"{base}/v1", ANTHROPIC_BASE_URL=base)
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _curl(base: str, cwd: Path) -> str:
    body = json.dumps({**CHAT, "messages": [{"role": "user", "content": "And in Rome?"}]})
    return _run(
        ["curl", "-sN", "-H", "content-type: application/json", "-d", body, f"{base}/v1/chat/completions"], base, cwd
    )


AGENT = """
import os, openai
client = openai.OpenAI(max_retries=0)
stream = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather in Paris?"}], stream=True
)
texts = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
print(len(texts), "".join(texts))
"""


def test_node_clients_curl_and_a_python_agent_record_through_the_proxy_then_replay_with_the_upstream_gone(
    tmp_path: Path,
) -> None:
    """One proxy records for two tests (a cassette each, named by the base URL), one replays them."""
    node, curl = shutil.which("node"), shutil.which("curl")
    if node is None or curl is None:
        pytest.skip(f"{'node' if node is None else 'curl'} is not installed")
    if (
        not (NODE_DIR / "node_modules" / "openai").is_dir()
        or not (NODE_DIR / "node_modules" / "@anthropic-ai").is_dir()
    ):
        pytest.skip("tests/node/node_modules is missing: cd tests/node && npm ci")
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    clients, agent = [node, str(NODE_DIR / "proxy_clients.mjs")], [sys.executable, "agent.py"]
    turns = ["Sunny in Paris, twenty-two degrees.", "Grey in Oslo, with light rain.", "Hot in Rome.", "Sunny, 22."]
    with (
        Emulator(*turns) as upstream,
        proxy(tmp_path, "--cassette", "cassettes/", "--upstream", upstream.base_url) as (
            base,
            recording,
        ),
    ):
        node_test, python_test = f"{base}/cassette/test_node", f"{base}/cassette/test_agent%2Ftest_python"
        live = json.loads(_run(clients, node_test, tmp_path))
        live_curl = _curl(node_test, tmp_path)
        live_agent = _run(agent, python_test, tmp_path)
    assert recording["status"] == 0, recording["stderr"]
    assert "wrote cassettes/test_agent/test_python.yaml (1 interaction(s))" in recording["stderr"]
    assert live["openai"]["text"] == turns[0] and live["anthropic"]["text"] == turns[1]
    changed = {**CHAT, "messages": [{"role": "user", "content": "Weather in Oslo?"}]}
    with proxy(tmp_path, "--cassette", "cassettes/", "--record-mode", "none") as (base, replaying):
        node_test, python_test = f"{base}/cassette/test_node", f"{base}/cassette/test_agent%2Ftest_python"
        replayed = json.loads(_run(clients, node_test, tmp_path))
        replayed_curl = _curl(node_test, tmp_path)
        replayed_agent = _run(agent, python_test, tmp_path)
        refused = httpx2.post(f"{node_test}/v1/chat/completions", json=changed, timeout=10)
    assert replayed == live and replayed["openai"]["events"] > 2 and replayed["anthropic"]["events"] > 2
    assert sse_texts(replayed_curl) == sse_texts(live_curl) and len(sse_texts(replayed_curl)) > 2
    assert replayed_agent == live_agent and int(live_agent.split()[0]) > 2
    for cassette in ("test_node.yaml", "test_agent/test_python.yaml"):
        text = (tmp_path / "cassettes" / cassette).read_text(encoding="utf-8")
        assert KEY not in text and "uri: https://api." in text
    assert refused.status_code == 400 and refused.json()["error"]["message"].startswith(NO_MATCH)
    assert replaying["status"] == 1 and "1 problem(s):" in replaying["stderr"]
    first = 'first difference: messages[0].content: sent "Weather in Oslo?", recorded "Weather in Paris?"'
    assert f"POST /v1/chat/completions (cassettes/test_node.yaml, request 4): {first}" in replaying["stderr"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--cassette", "c.yaml", "--record-mode", "sometimes"], "Invalid value for '--record-mode'"),
        (["--cassette", "c.yaml", "--upstream", "localhost:8765"], "--upstream 'localhost:8765' is not an http(s) URL"),
        (["--record-mode", "none"], "Missing option '--cassette'"),
        (["--cassette", "c.yaml", "--max-age", "soon"], "max_age 'soon' is not a positive age"),
        (["--cassette", "broken.yaml"], "broken.yaml: the cassette does not parse"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    (tmp_path / "broken.yaml").write_text("interactions: [\n", encoding="utf-8")
    done = run_cli("proxy", *args, "--port", "0", cwd=tmp_path)
    assert done.returncode == 2 and says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Usage:" not in done.stderr


def test_the_cassettes_tools_read_what_the_proxy_recorded(tmp_path: Path) -> None:
    from harness.proxy import Proxy

    cassette = tmp_path / "cassettes" / "proxy.yaml"
    with Emulator("Sunny in Paris.") as upstream, Proxy(cassette, upstream=upstream.base_url) as running:
        httpx2.post(f"{running.base_url}/v1/chat/completions", json=CHAT, timeout=10)
    assert running.finish().problems == []
    shown = run_cli("cassettes", "show", cassette, "--html", tmp_path / "shown.html", cwd=tmp_path)
    assert shown.returncode == 0 and "Sunny in Paris." in shown.stdout and "Weather in Paris?" in shown.stdout
    assert "harness-timeline" in (tmp_path / "shown.html").read_text(encoding="utf-8")
    linted = run_cli("cassettes", "lint", "cassettes", "--no-usage", cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    scenario = run_cli("cassettes", "to-scenario", cassette, "-o", tmp_path / "s.yaml", cwd=tmp_path)
    assert scenario.returncode == 0 and "Sunny in Paris." in (tmp_path / "s.yaml").read_text(encoding="utf-8")
    with Emulator("Rainy in Paris.") as again:
        drift = run_cli("cassettes", "drift", cassette, "--base-url", again.base_url, cwd=tmp_path)
    assert drift.returncode == 0, drift.stdout + drift.stderr
