"""Every surface of issue 36 recorded through ``harness proxy`` and replayed with the upstream gone,
for its official client: Azure OpenAI (deployments, v1), OpenRouter's prefix, Anthropic at the
root, Claude on Vertex AI and on Bedrock InvokeModel (the Anthropic SDK and boto3), Ollama's chat.
The cassette keeps no credential (Azure's ``api-key``, Vertex's bearer token, the SigV4 signature),
``harness cassettes lint`` passes it, and an Azure request the cassette lacks is refused without
``--upstream`` (Azure has no one host to forward to)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import boto3
import httpx2
import ollama
import openai
import pytest
from botocore.config import Config

from harness.emulator import Emulator
from harness.proxy import Proxy
from harness.script import turn

KEY = "azure-key-5b1e9f7c3a2d"
TOKEN = "ya29.vertex-token-8c4d2e"
AWS_SECRET = "aws-secret-3f9a7b1c5d"
USER = [{"role": "user", "content": "hi"}]
CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
TOOL = {"type": "function", "function": {"name": "weather", "parameters": {"type": "object", "properties": {}}}}


def _message_text(message: Any) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


SURFACES = ("azure", "azure-v1", "openrouter", "root", "vertex", "bedrock", "boto3", "ollama")


def _clients(proxy: str) -> list[tuple[str, Callable[[], str]]]:
    """(surface, a call of its official client that returns the reply's text), each aimed at the
    proxy's cassette named for the surface (``/cassette/NAME``: one provider per cassette)."""

    def at(name: str) -> str:
        return f"{proxy}/cassette/{name}"

    azure = openai.AzureOpenAI(api_key=KEY, api_version="2024-10-21", azure_endpoint=at("azure"), max_retries=0)
    v1 = openai.OpenAI(api_key=KEY, base_url=f"{at('azure-v1')}/openai/v1", max_retries=0)
    router = openai.OpenAI(api_key=KEY, base_url=f"{at('openrouter')}/api/v1", max_retries=0)
    vertex = anthropic.AnthropicVertex(
        region="us-east5", project_id="proj-1", access_token=TOKEN, base_url=f"{at('vertex')}/v1", max_retries=0
    )
    bedrock = anthropic.AnthropicBedrock(
        aws_access_key="AKIDSURFACES",
        aws_secret_key=AWS_SECRET,
        aws_region="us-east-1",
        base_url=at("bedrock"),
        max_retries=0,
    )
    boto = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=at("boto3"),
        aws_access_key_id="AKIDSURFACES",
        aws_secret_access_key=AWS_SECRET,
        config=Config(retries={"total_max_attempts": 1}),
    )
    local = ollama.Client(host=at("ollama"))
    invoke = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 9, "messages": USER})

    def streamed_bedrock() -> str:
        with bedrock.messages.stream(model=CLAUDE, max_tokens=9, messages=USER) as stream:  # type: ignore[arg-type]
            return "".join(stream.text_stream)

    def streamed_boto() -> str:
        reply = boto.invoke_model_with_response_stream(modelId=CLAUDE, body=invoke)
        events = [json.loads(event["chunk"]["bytes"]) for event in reply["body"]]
        return "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")

    return [
        ("azure", lambda: azure.chat.completions.create(model="dep-1", messages=USER).choices[0].message.content or ""),  # type: ignore[arg-type]
        ("azure-v1", lambda: v1.responses.create(model="m", input="hi").output_text),
        (
            "openrouter",
            lambda: router.chat.completions.create(model="m", messages=USER).choices[0].message.content or "",
        ),  # type: ignore[arg-type]
        ("root", lambda: _message_text(anthropic.types.Message.model_validate(_root(at("root"))))),
        ("vertex", lambda: _message_text(vertex.messages.create(model="claude@1", max_tokens=9, messages=USER))),  # type: ignore[arg-type]
        ("bedrock", streamed_bedrock),
        ("boto3", streamed_boto),
        (
            "ollama",
            lambda: "".join(
                p.message.content or "" for p in local.chat(model="l", messages=USER, tools=[TOOL], stream=True)
            ),
        ),
    ]


def _root(base: str) -> Any:
    """The AI SDK's request: ``ANTHROPIC_BASE_URL`` taken as ending in ``/v1``, ``/messages`` appended."""
    body = {"model": "c", "max_tokens": 9, "messages": USER}
    return httpx2.post(
        f"{base}/messages", json=body, headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    ).json()


def test_every_surface_replays_what_the_proxy_recorded_with_the_upstream_gone(tmp_path: Path) -> None:
    from harness.recording import lint, replay_cassette
    from harness.recording._conformance import ReplayError

    environ = {"AZURE_OPENAI_API_KEY": KEY, "AWS_SECRET_ACCESS_KEY": AWS_SECRET}
    answers = [f"answer from {name}" for name in SURFACES]
    with Emulator(*answers) as emulator, Proxy(tmp_path, upstream=emulator.base_url, environ=environ) as proxy:
        recorded = [call() for _, call in _clients(proxy.base_url)]
    assert recorded == answers
    assert proxy.finish().problems == []
    with Proxy(tmp_path, mode="none", environ=environ) as proxy:
        replayed = [call() for _, call in _clients(proxy.base_url)]
    assert replayed == answers
    assert proxy.finish().problems == []
    stored = {name: (tmp_path / f"{name}.yaml").read_text() for name in SURFACES}
    assert not [
        (name, s) for name, text in stored.items() for s in (KEY, TOKEN, AWS_SECRET, "AKIDSURFACES") if s in text
    ]
    assert "uri: https://azure-openai.invalid/openai/deployments/dep-1/chat/completions?api-version=" in stored["azure"]
    assert "uri: https://openrouter.ai/api/v1/chat/completions" in stored["openrouter"]
    assert "uri: https://us-east5-aiplatform.googleapis.com/v1/projects/proj-1/locations/us-east5/" in stored["vertex"]
    assert "uri: https://bedrock-runtime.us-east-1.amazonaws.com/model/" in stored["boto3"]
    assert "uri: http://127.0.0.1:11434/api/chat" in stored["ollama"]
    assert lint(tmp_path, environ=environ) == ([], len(SURFACES))
    # `cassettes show` / to-scenario decode replies through openprogram's backends, on the surface's own client
    for name in ("azure", "azure-v1", "openrouter", "root", "vertex"):
        assert [i["text"] for i in replay_cassette(tmp_path / f"{name}.yaml")["interactions"]] == [
            f"answer from {name}"
        ]
    with pytest.raises(ReplayError, match="no backend for the provider 'ollama'"):  # openprogram has no Ollama backend
        replay_cassette(tmp_path / "ollama.yaml")


def test_drift_reads_the_surfaces_replies_inside_their_envelopes(tmp_path: Path) -> None:
    """Claude's events inside InvokeModel's base64 chunks and Ollama's NDJSON lines are compared
    field by field, as SSE events are: a text reply drifting to a tool call is seen (breaking where
    the text's fields go, benign where Ollama's lines only gain ``tool_calls``)."""
    from harness.recording._tools import drift  # the command line's import, as `harness cassettes drift` does

    names = ("boto3", "ollama", "vertex")
    with (
        Emulator(*[f"text from {name}" for name in SURFACES]) as emulator,
        Proxy(tmp_path, upstream=emulator.base_url) as proxy,
    ):
        for name, call in _clients(proxy.base_url):
            if name in names:
                call()
    assert proxy.finish().problems == []
    for name in names:
        with Emulator(f"text again from {name}") as same:
            assert drift(tmp_path / f"{name}.yaml", same.base_url) == []
        with Emulator(turn.tool_call("weather", {"city": "Oslo"})) as changed:
            found = drift(tmp_path / f"{name}.yaml", changed.base_url)
        if name == "ollama":  # the lines keep their fields (content turns empty): the calls are new
            assert any(d.severity == "benign" and d.what.endswith("message.tool_calls") for d in found), found
        else:
            assert any(d.severity == "breaking" and "text is gone" in d.what for d in found), (name, found)


def test_an_azure_request_the_cassette_lacks_is_refused_without_an_upstream(tmp_path: Path) -> None:
    with Proxy(tmp_path / "azure.yaml", environ={}) as proxy:
        azure = openai.AzureOpenAI(api_key=KEY, api_version="2024-10-21", azure_endpoint=proxy.base_url, max_retries=0)
        with pytest.raises(openai.APIStatusError, match="--upstream") as refused:
            azure.chat.completions.create(model="dep-1", messages=USER)  # type: ignore[arg-type]
    assert refused.value.status_code == 502
    assert proxy.finish().problems


def test_the_recorded_fixtures_http_client_records_and_replays_the_azure_vertex_and_bedrock_clients(
    tmp_path: Path,
) -> None:
    """``recorded.http_client()`` under the async SDK clients no backend of the fixture builds: the
    cassette names each service's real host, and replays with the emulator gone."""
    import asyncio

    from harness.recording import open_recording
    from harness.recording._recorded import RecordedFixture

    cassette = tmp_path / "cassettes" / "surfaces.yaml"

    async def ask(recorded: RecordedFixture, upstream: str | None) -> list[str]:
        http = recorded.http_client(upstream=upstream)
        azure = openai.AsyncAzureOpenAI(
            api_key=KEY, api_version="2024-10-21", azure_endpoint="https://res.openai.azure.com", http_client=http
        )
        vertex = anthropic.AsyncAnthropicVertex(
            region="europe-west1", project_id="proj-1", access_token=TOKEN, http_client=http
        )
        bedrock = anthropic.AsyncAnthropicBedrock(
            aws_access_key="AKIDSURFACES", aws_secret_key=AWS_SECRET, aws_region="eu-west-1", http_client=http
        )
        chat = await azure.chat.completions.create(model="dep-1", messages=USER)  # type: ignore[arg-type]
        message = await vertex.messages.create(model="claude@1", max_tokens=9, messages=USER)  # type: ignore[arg-type]
        async with bedrock.messages.stream(model=CLAUDE, max_tokens=9, messages=USER) as stream:  # type: ignore[arg-type]
            streamed = "".join([text async for text in stream.text_stream])
        return [chat.choices[0].message.content or "", _message_text(message), streamed]

    answers = ["from azure", "from vertex", "from bedrock"]
    with Emulator(*answers) as emulator:
        recording = RecordedFixture(open_recording(cassette, "once", environ={}))
        assert asyncio.run(ask(recording, emulator.base_url)) == answers
        assert recording.finish(failed=False) == []
    replaying = RecordedFixture(open_recording(cassette, "none", environ={}))
    assert asyncio.run(ask(replaying, None)) == answers
    assert replaying.finish(failed=False) == []
    text = cassette.read_text()
    assert "uri: https://res.openai.azure.com/openai/deployments/dep-1/chat/completions?api-version=2024-10-21" in text
    assert "uri: https://europe-west1-aiplatform.googleapis.com/v1/projects/proj-1/locations/europe-west1/" in text
    assert "uri: https://bedrock-runtime.eu-west-1.amazonaws.com/model/" in text
    assert not [secret for secret in (KEY, TOKEN, AWS_SECRET, "AKIDSURFACES") if secret in text]


def test_live_drift_takes_each_surfaces_server_and_key_from_its_sdks_variables(tmp_path: Path) -> None:
    """``cassettes drift --live``: Azure at AZURE_OPENAI_ENDPOINT with AZURE_OPENAI_API_KEY as
    ``api-key`` (the proxy's stand-in host refused without it), Ollama at OLLAMA_HOST with no key."""
    from http.server import BaseHTTPRequestHandler

    from harness.recording._tools import ConversionError, drift
    from tests.harness.support import loopback_server

    with Emulator("first", "second") as emulator, Proxy(tmp_path, upstream=emulator.base_url) as proxy:
        calls = dict(_clients(proxy.base_url))
        assert [calls["azure"](), calls["ollama"]()] == ["first", "second"]
    assert proxy.finish().problems == []
    seen: list[dict[str, str]] = []

    class Azure(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # notes the headers, answers as the emulator (the resource's stand-in) does
            sent = self.rfile.read(int(self.headers.get("content-length") or 0))
            seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            body = httpx2.post(
                upstream.base_url + self.path, content=sent, headers={"content-type": "application/json"}
            ).content
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    azure = tmp_path / "azure.yaml"
    with pytest.raises(ConversionError, match="--live needs AZURE_OPENAI_ENDPOINT"):
        drift(azure, live=True, environ={"AZURE_OPENAI_API_KEY": "k"})
    with Emulator("again") as upstream, loopback_server(Azure) as resource:
        with pytest.raises(ConversionError, match="--live needs AZURE_OPENAI_API_KEY"):
            drift(azure, live=True, environ={"AZURE_OPENAI_ENDPOINT": resource})
        assert drift(azure, live=True, environ={"AZURE_OPENAI_ENDPOINT": resource, "AZURE_OPENAI_API_KEY": KEY}) == []
    assert [(s["path"], s["api-key"], "authorization" in s) for s in seen] == [
        ("/openai/deployments/dep-1/chat/completions?api-version=2024-10-21", KEY, False)
    ]
    with Emulator("third") as local:
        host = local.base_url.removeprefix("http://")  # OLLAMA_HOST's own form: HOST:PORT
        assert drift(tmp_path / "ollama.yaml", live=True, environ={"OLLAMA_HOST": host}) == []
    assert [request.path for request in local.requests] == ["/api/chat"]
