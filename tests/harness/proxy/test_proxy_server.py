"""The proxy in process: recording from an upstream, replaying without it, and every refusal a user reads."""

from __future__ import annotations

import asyncio
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from harness.emulator import Emulator
from harness.proxy import NO_MATCH, Proxy, ProxyError
from tests.harness.proxy.conftest import CHAT, KEY, sse_texts
from tests.harness.support import loopback_server, run_in_process

pytest_plugins = ["pytester"]

pytest.importorskip("uvicorn", reason="the proxy serves with the emulator extra (starlette, uvicorn)")


def _post(proxy: Proxy, path: str, body: dict[str, Any], **headers: str) -> httpx2.Response:
    return httpx2.post(proxy.base_url + path, json=body, headers=headers, timeout=10)


def test_records_from_an_upstream_then_replays_the_stream_event_by_event_without_it(
    tmp_path: Path, environ: dict[str, Any]
) -> None:
    cassette = tmp_path / "run.yaml"
    with Emulator("It is sunny in Paris today, and warm.") as emulator:
        with Proxy(cassette, mode="once", upstream=emulator.base_url, environ=environ) as proxy:
            live = _post(proxy, "/v1/chat/completions", CHAT, authorization=f"Bearer {KEY}")
        outcome = proxy.finish()
    assert outcome.problems == [] and len(outcome.written) == 1
    text = cassette.read_text(encoding="utf-8")
    assert KEY not in text and "recorded_at:" in text
    assert yaml.safe_load(text)["interactions"][0]["request"]["uri"] == "https://api.openai.com/v1/chat/completions"
    with Proxy(cassette, mode="none", environ=environ) as proxy:  # the upstream is gone
        replayed = _post(proxy, "/v1/chat/completions", CHAT)
    assert proxy.finish().problems == []
    assert replayed.status_code == 200 and replayed.headers["content-type"].startswith("text/event-stream")
    assert sse_texts(replayed.text) == sse_texts(live.text)
    assert len(sse_texts(replayed.text)) > 2 and "".join(sse_texts(replayed.text)).startswith("It is sunny")


def _recorded(tmp_path: Path, provider: str) -> tuple[Path, str, dict[str, Any], dict[str, Any]]:
    """A cassette holding one request of ``provider``, the path, the body it holds and one that differs."""
    paths = {
        "openai": ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "Paris?"}]}),
        "anthropic": (
            "/v1/messages",
            {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "Paris?"}]},
        ),
        "gemini": ("/v1beta/models/gemini-2.0-flash:generateContent", {"contents": [{"parts": [{"text": "Paris?"}]}]}),
        "bedrock": ("/model/m/converse", {"messages": [{"role": "user", "content": [{"text": "Paris?"}]}]}),
    }
    path, body = paths[provider]
    cassette = tmp_path / f"{provider}.yaml"
    with Emulator("Sunny.") as emulator, Proxy(cassette, upstream=emulator.base_url) as proxy:
        assert _post(proxy, path, body).status_code == 200
    assert proxy.finish().problems == []
    changed = json.loads(json.dumps(body).replace("Paris?", "Oslo?"))
    return cassette, path, body, changed


ENVELOPES = {
    "openai": lambda reply: reply.json()["error"]["message"],
    "anthropic": lambda reply: reply.json()["type"] == "error" and reply.json()["error"]["message"],
    "gemini": lambda reply: reply.json()["error"]["status"] == "INVALID_ARGUMENT" and reply.json()["error"]["message"],
    "bedrock": lambda reply: (
        reply.headers["x-amzn-errortype"].startswith("ValidationException") and reply.json()["message"]
    ),
}


@pytest.mark.parametrize("provider", sorted(ENVELOPES))
def test_in_none_an_unmatched_request_is_a_400_in_the_providers_envelope_naming_the_first_difference(
    tmp_path: Path, provider: str
) -> None:
    cassette, path, _, changed = _recorded(tmp_path, provider)
    with Proxy(cassette, mode="none") as proxy:
        reply = _post(proxy, path, changed)
    assert reply.status_code == 400
    message = ENVELOPES[provider](reply)
    assert message.startswith(f"{NO_MATCH} POST {path}")
    assert "first difference: " in message.splitlines()[0] and 'sent "Oslo?", recorded "Paris?"' in message
    problems = proxy.finish().problems
    assert problems[0].startswith(f"POST {path} ({cassette}, request 1): first difference:")
    assert "1 of 1 recorded interaction(s) were never requested" in problems[1]


def test_a_path_no_provider_serves_is_a_neutral_404_and_is_never_forwarded(tmp_path: Path) -> None:
    with Emulator("never asked") as emulator, Proxy(tmp_path / "c.yaml", upstream=emulator.base_url) as proxy:
        models = httpx2.get(proxy.base_url + "/v1/models")
        elsewhere = _post(proxy, "/v2/anything", {"a": 1})
        sent = len(emulator.requests)
    assert (models.status_code, elsewhere.status_code, sent) == (404, 404, 0)
    assert models.json()["error"]["message"].startswith("harness proxy: no provider serves GET /v1/models")
    assert proxy.finish().written == []


def test_each_test_picks_its_cassette_by_header_or_path_prefix(tmp_path: Path) -> None:
    library = tmp_path / "cassettes"
    body = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "Hi"}]}
    with Emulator("First.", "Second.") as emulator, Proxy(library, upstream=emulator.base_url) as proxy:
        by_header = _post(proxy, "/v1/messages", body, **{"X-Harness-Cassette": "test_a"})
        by_prefix = _post(proxy, "/cassette/test_b/v1/messages", body)
        unnamed = _post(proxy, "/v1/messages", body)
    assert proxy.finish().problems == []
    assert sorted(p.name for p in library.iterdir()) == ["test_a.yaml", "test_b.yaml"]
    assert unnamed.status_code == 400 and "X-Harness-Cassette: NAME" in unnamed.json()["error"]["message"]
    with Proxy(library, mode="none") as proxy:
        again = [_post(proxy, f"/cassette/{name}/v1/messages", body).json() for name in ("test_a", "test_b")]
    assert [reply["content"][0]["text"] for reply in again] == ["First.", "Second."]
    assert [by_header.json()["content"], by_prefix.json()["content"]] == [r["content"] for r in again]


def test_a_recorded_stream_cut_inside_an_event_is_refused_not_replayed_short(tmp_path: Path) -> None:
    with (
        Emulator("Sunny and warm all day.") as emulator,
        Proxy(tmp_path / "stream.yaml", upstream=emulator.base_url) as proxy,
    ):
        _post(proxy, "/v1/chat/completions", CHAT)
    proxy.finish()
    data = yaml.safe_load((tmp_path / "stream.yaml").read_text())
    data["interactions"][0]["response"]["body"]["string"] = data["interactions"][0]["response"]["body"]["string"][:-30]
    (tmp_path / "stream.yaml").write_text(yaml.safe_dump(data))
    with Proxy(tmp_path / "stream.yaml", mode="none") as proxy:
        reply = _post(proxy, "/v1/chat/completions", CHAT)
    assert reply.status_code == 400 and "is a stream cut inside its last event" in reply.json()["error"]["message"]
    assert "stream cut" in proxy.finish().problems[0]


class _Echo(BaseHTTPRequestHandler):
    """A server that says the key it was sent back in its reply, as a careless gateway might."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        body = json.dumps({"error": {"message": f"bad key {self.headers['authorization']}"}}).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_reply_echoing_the_key_is_refused_loudly_and_nothing_is_written(
    tmp_path: Path, environ: dict[str, Any]
) -> None:
    cassette = tmp_path / "leak.yaml"
    with loopback_server(_Echo) as upstream, Proxy(cassette, upstream=upstream, environ=environ) as proxy:
        _post(proxy, "/v1/chat/completions", CHAT, authorization=f"Bearer {KEY}")
    outcome = proxy.finish()
    assert not cassette.exists() and outcome.written == []
    assert "not written, it would hold a credential" in outcome.problems[0] and "OPENAI_API_KEY" in outcome.problems[0]
    assert KEY not in outcome.problems[0]


def test_a_cassette_past_its_max_age_fails_at_start_when_asked(tmp_path: Path) -> None:
    cassette, _, _, _ = _recorded(tmp_path, "openai")
    text = cassette.read_text().replace("recorded_at: '20", "recorded_at: '19", 1)
    cassette.write_text(text)
    proxy = Proxy(cassette, mode="none", config={"max_age": "30d", "max_age_action": "fail"})
    with pytest.raises(ProxyError, match="older than its max_age of 30 days"):
        proxy.open_default()
    warned = Proxy(cassette, mode="none", config={"max_age": "30d"})
    warned.open_default()
    assert "older than its max_age" in warned.cassettes.notes[0]


def _ask(backend: Any) -> str:
    from openprogram.providers import ModelRequest
    from openprogram.types import UserMessage

    async def run() -> str:
        text = ""
        async for event in backend.stream(ModelRequest(model="gpt-4o-mini", messages=(UserMessage(content="Hi?"),))):
            if event.type == "done":
                text = "".join(block.text for block in event.message.content if block.type == "text")
            elif event.type == "error":
                text = f"error: {event.error.error_message}"
        return text

    return asyncio.run(run())


FIXTURE_TEST = """
import asyncio, os
from openprogram.providers import ModelRequest
from openprogram.types import UserMessage

def test_weather(recorded):
    upstream = os.environ["EMULATOR"] if recorded.records else None
    backend = recorded("openai", "chat.completions", model="gpt-4o-mini", stream=True, upstream=upstream)

    async def ask():
        async for event in backend.stream(ModelRequest(model="gpt-4o-mini", messages=(UserMessage(content="Hi?"),))):
            if event.type == "done":
                return event.message.content[0].text

    assert asyncio.run(ask()) == os.environ["EXPECTED"]
"""


def test_the_recorded_fixture_replays_what_the_proxy_recorded_and_the_proxy_what_the_fixture_recorded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's pytest project on one side, a process's client (the same backend, aimed at the proxy) on the other."""
    from harness.recording import live_backend

    pytester.makepyfile(test_weather=FIXTURE_TEST)
    cassette = pytester.path / "cassettes" / "test_weather" / "test_weather.yaml"
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with Emulator("Recorded by the proxy.") as emulator, Proxy(cassette, upstream=emulator.base_url) as proxy:
        monkeypatch.setenv("OPENAI_BASE_URL", proxy.base_url + "/v1")
        assert _ask(live_backend("openai", "chat.completions", model="gpt-4o-mini", stream=True)) == (
            "Recorded by the proxy."
        )
    assert proxy.finish().problems == []
    monkeypatch.delenv("OPENAI_BASE_URL")
    replayed = run_in_process(pytester, "--record-mode=none", EXPECTED="Recorded by the proxy.")
    replayed.assert_outcomes(passed=1)

    cassette.unlink()
    with Emulator("Recorded by the fixture.") as emulator:
        recording = run_in_process(
            pytester, "--record-mode=once", EMULATOR=emulator.base_url, EXPECTED="Recorded by the fixture."
        )
    recording.assert_outcomes(passed=1)
    with Proxy(cassette, mode="none") as proxy:
        monkeypatch.setenv("OPENAI_BASE_URL", proxy.base_url + "/v1")
        assert _ask(live_backend("openai", "chat.completions", model="gpt-4o-mini", stream=True)) == (
            "Recorded by the fixture."
        )
    assert proxy.finish().problems == []


def _converse_texts(reply: dict[str, Any]) -> list[str]:
    return [event["contentBlockDelta"]["delta"]["text"] for event in reply["stream"] if "contentBlockDelta" in event]


def test_bedrock_is_signed_again_for_aws_stored_under_its_host_and_replayed_as_an_event_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    boto3 = pytest.importorskip("boto3", reason="boto3 (the bedrock extra) is the Bedrock client")
    import harness.proxy._forwarding as forwarding

    signed: list[dict[str, str]] = []
    real = forwarding.resign

    def spy(*args: Any) -> dict[str, str]:
        signed.append(real(*args))
        return signed[-1]

    monkeypatch.setattr(forwarding, "resign", spy)
    environ = {"AWS_ACCESS_KEY_ID": "AKIDPROXYRECORDS", "AWS_SECRET_ACCESS_KEY": "proxy-secret-for-aws-1"}
    cassette = tmp_path / "bedrock.yaml"
    model, messages = "anthropic.claude-3-haiku-20240307-v1:0", [{"role": "user", "content": [{"text": "Lisbon?"}]}]

    def client(base_url: str) -> Any:
        return boto3.client(
            "bedrock-runtime",
            endpoint_url=base_url,
            region_name="us-west-2",
            aws_access_key_id="test",
            aws_secret_access_key="test",
        )

    with Emulator("Sunny in Lisbon, all week long.") as aws:  # stands in for AWS: the proxy signs for it
        with Proxy(cassette, origins={"bedrock": aws.base_url}, environ=environ) as proxy:
            live = _converse_texts(client(proxy.base_url).converse_stream(modelId=model, messages=messages))
    assert proxy.finish().problems == []
    assert signed and signed[0]["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDPROXYRECORDS/")
    assert "/us-west-2/bedrock/aws4_request" in signed[0]["Authorization"]
    stored = yaml.safe_load(cassette.read_text(encoding="utf-8"))["interactions"][0]["request"]["uri"]
    assert (
        stored
        == "https://bedrock-runtime.us-west-2.amazonaws.com/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream"
    )
    assert "proxy-secret-for-aws-1" not in cassette.read_text(encoding="utf-8")
    with Proxy(cassette, mode="none", environ={}) as proxy:
        replayed = _converse_texts(client(proxy.base_url).converse_stream(modelId=model, messages=messages))
    assert proxy.finish().problems == []
    assert replayed == live and len(replayed) > 1 and "".join(replayed) == "Sunny in Lisbon, all week long."


def test_a_bug_of_the_proxy_is_a_500_saying_so_and_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness.proxy._proxy_server as server

    def broken(*args: Any) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(server, "recorded_uri", broken)
    with Proxy(tmp_path / "c.yaml", mode="none") as proxy:
        reply = _post(proxy, "/v1/chat/completions", CHAT)
    assert reply.status_code == 500
    assert reply.json()["error"]["message"].startswith("harness proxy: internal error: KeyError: 'boom'")
    assert "internal error" in proxy.finish().problems[0]


def test_new_episodes_keeps_a_scripted_upstream_in_step_as_the_fixture_does(tmp_path: Path) -> None:
    cassette = tmp_path / "episodes.yaml"
    first = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "One?"}]}
    second = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "Two?"}]}
    with Emulator("First turn.") as emulator, Proxy(cassette, upstream=emulator.base_url) as proxy:
        _post(proxy, "/v1/messages", first)
    proxy.finish()
    with Emulator("First turn.", "Second turn.") as emulator:
        with Proxy(cassette, mode="new_episodes", upstream=emulator.base_url) as proxy:
            replayed = _post(proxy, "/v1/messages", first).json()["content"][0]["text"]
            added = _post(proxy, "/v1/messages", second).json()["content"][0]["text"]
        asked = len(emulator.requests)
    assert proxy.finish().problems == []
    assert (replayed, added, asked) == ("First turn.", "Second turn.", 2)  # the script's turn 2, not its turn 1 again
