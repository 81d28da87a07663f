"""The surfaces users point their SDKs at besides each provider's own (issue 36), each answered by
the emulator for its official client: Azure OpenAI (deployments and v1), OpenRouter's prefix,
Anthropic's Messages at the root, Claude on Vertex AI and on Bedrock's InvokeModel (the Anthropic
SDK's clients and boto3), and Ollama's native chat; streamed and not, with scripted tool calls,
error envelopes and a cut stream. The httpx2-based SDKs go in process; boto3 and ollama (httpx)
take one loopback server for the module."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import boto3
import botocore.exceptions
import ollama
import openai
import pytest
from botocore.config import Config

from harness.emulator import Emulator, ending, fault
from harness.script import turn

WEATHER = turn.tool_call("weather", {"city": "Paris"}, call_id="call_w1")
USER = [{"role": "user", "content": "hi"}]
CLAUDE_BEDROCK = "anthropic.claude-sonnet-4-5-20250929-v1:0"
INVOKE, STREAM = "invoke", "invoke-with-response-stream"
INVOKE_BODY = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 9, "messages": USER})
WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}


@pytest.fixture(scope="module")
def served() -> Iterator[Emulator]:
    """One loopback emulator for the clients that cannot take an in-process transport."""
    with Emulator() as emu:
        yield emu


def _serve(emu: Emulator, *entries: Any) -> Emulator:
    """The module's emulator, its script replaced by ``entries`` and started over."""
    emu.script.clear()
    emu.add(*entries)
    emu.reset_script()
    return emu


def test_azure_openai_deployments_and_v1_answer_the_azure_client_whole_and_streamed() -> None:
    emu = Emulator(turn.text("whole"), WEATHER, turn.text("a response"), turn.text("v1"), fault.status(429, "slow"))
    http = emu.sync_http_client()
    azure = openai.AzureOpenAI(
        api_key="azure-key", api_version="2024-10-21", azure_endpoint="https://res.openai.azure.com", http_client=http
    )
    reply = azure.chat.completions.create(model="dep-1", messages=USER)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == "whole"
    stream = azure.chat.completions.create(model="dep-1", messages=USER, stream=True)  # type: ignore[arg-type]
    calls = [call for chunk in stream for call in chunk.choices[0].delta.tool_calls or []]
    assert calls[0].id == "call_w1" and calls[0].function and calls[0].function.name == "weather"
    assert json.loads("".join(call.function.arguments or "" for call in calls if call.function)) == {"city": "Paris"}
    assert azure.responses.create(model="dep-1", input="hi").output_text == "a response"
    v1 = openai.OpenAI(api_key="azure-key", base_url="https://res.openai.azure.com/openai/v1", http_client=http)
    assert v1.chat.completions.create(model="m", messages=USER).choices[0].message.content == "v1"  # type: ignore[arg-type]
    with pytest.raises(openai.RateLimitError, match="slow"):
        v1.with_options(max_retries=0).chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
    paths = [request.path for request in emu.requests]
    assert paths[:4] == [
        "/openai/deployments/dep-1/chat/completions",
        "/openai/deployments/dep-1/chat/completions",
        "/openai/responses",
        "/openai/v1/chat/completions",
    ]
    assert emu.requests[0].query == {"api-version": "2024-10-21"}
    assert all("api-key" not in request.headers for request in emu.requests)  # the journal keeps no key
    assert [request.route.surface for request in emu.requests[:4]] == ["azure", "azure", "azure", "openai-v1"]


def test_openrouters_prefix_and_anthropics_root_answer_clients_that_append_their_paths() -> None:
    emu = Emulator(turn.text("routed"), turn.text("at the root"))
    http = emu.sync_http_client()
    router = openai.OpenAI(api_key="or-key", base_url="https://openrouter.ai/api/v1", http_client=http)
    assert router.chat.completions.create(model="m", messages=USER).choices[0].message.content == "routed"  # type: ignore[arg-type]
    # the AI SDK's Anthropic provider takes ANTHROPIC_BASE_URL as ending in /v1 and appends /messages
    root = http.post("https://gateway.example/messages", json={"model": "c", "max_tokens": 9, "messages": USER})
    message = anthropic.types.Message.model_validate(root.json())
    assert [block.text for block in message.content if block.type == "text"] == ["at the root"]
    assert [request.path for request in emu.requests] == ["/api/v1/chat/completions", "/messages"]


def test_claude_on_vertex_answers_anthropic_vertex_whole_streamed_and_with_its_errors() -> None:
    emu = Emulator(turn.text("from vertex"), WEATHER, fault.status(529, "busy"))
    vertex = anthropic.AnthropicVertex(
        region="us-east5", project_id="proj-1", access_token="ya29.token", http_client=emu.sync_http_client()
    )
    model = "claude-sonnet-4-5@20250929"
    message = vertex.messages.create(model=model, max_tokens=9, messages=USER)  # type: ignore[arg-type]
    assert [block.text for block in message.content if block.type == "text"] == ["from vertex"]
    assert message.model == model  # read off the path: the body carries none
    with vertex.messages.stream(model=model, max_tokens=9, messages=USER) as stream:  # type: ignore[arg-type]
        final = stream.get_final_message()
    assert [(b.name, b.input) for b in final.content if b.type == "tool_use"] == [("weather", {"city": "Paris"})]
    with pytest.raises(anthropic.APIStatusError, match="busy"):
        vertex.with_options(max_retries=0).messages.create(model=model, max_tokens=9, messages=USER)  # type: ignore[arg-type]
    base = "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/" + model
    assert [request.path for request in emu.requests] == [
        f"{base}:{m}" for m in ("rawPredict", "streamRawPredict", "rawPredict")
    ]
    assert all("model" not in r.body and "anthropic_version" in r.body for r in emu.requests)
    assert all("authorization" not in request.headers for request in emu.requests)


def test_claude_on_bedrock_invoke_answers_anthropic_bedrock_whole_streamed_and_cut() -> None:
    emu = Emulator(turn.text("from bedrock"), WEATHER, fault.truncate(turn.text("never ends")))
    bedrock = anthropic.AnthropicBedrock(
        aws_access_key="AKIDEXAMPLE", aws_secret_key="fake", aws_region="us-east-1", http_client=emu.sync_http_client()
    )
    message = bedrock.messages.create(model=CLAUDE_BEDROCK, max_tokens=9, messages=USER)  # type: ignore[arg-type]
    assert [block.text for block in message.content if block.type == "text"] == ["from bedrock"]
    with bedrock.messages.stream(model=CLAUDE_BEDROCK, max_tokens=9, messages=USER) as stream:  # type: ignore[arg-type]
        final = stream.get_final_message()
    assert [(b.name, b.input) for b in final.content if b.type == "tool_use"] == [("weather", {"city": "Paris"})]
    assert final.stop_reason == "tool_use"
    with bedrock.messages.stream(model=CLAUDE_BEDROCK, max_tokens=9, messages=USER) as stream:  # type: ignore[arg-type]
        texts = list(stream.text_stream)
    assert "".join(texts) == "never ends"
    assert stream.current_message_snapshot.stop_reason is None  # cut before its stop reason: a client can tell
    assert [request.path.rpartition("/")[2] for request in emu.requests] == [INVOKE, STREAM, STREAM]
    assert all(r.body["anthropic_version"] and "model" not in r.body for r in emu.requests)
    assert all("authorization" not in request.headers for request in emu.requests)


def test_boto3_invoke_model_and_its_stream_carry_anthropics_events_in_event_stream_frames(served: Emulator) -> None:
    emu = _serve(served, turn.text("boto whole"), WEATHER, fault.status(429, "throttled"))
    client = boto3.client(
        "bedrock-runtime",
        region_name="eu-west-1",
        endpoint_url=emu.base_url,
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="fake",
        config=Config(retries={"total_max_attempts": 1}),
    )
    whole = json.loads(client.invoke_model(modelId=CLAUDE_BEDROCK, body=INVOKE_BODY)["body"].read())
    assert whole["content"] == [{"type": "text", "text": "boto whole"}]
    assert whole["model"] == CLAUDE_BEDROCK
    streamed = client.invoke_model_with_response_stream(modelId=CLAUDE_BEDROCK, body=INVOKE_BODY)
    events = [json.loads(event["chunk"]["bytes"]) for event in streamed["body"]]  # botocore checks every CRC
    partial = "".join(e["delta"].get("partial_json", "") for e in events if e["type"] == "content_block_delta")
    assert json.loads(partial) == {"city": "Paris"}
    assert events[-1]["type"] == "message_stop" and "amazon-bedrock-invocationMetrics" in events[-1]
    with pytest.raises(botocore.exceptions.ClientError, match="ThrottlingException"):
        client.invoke_model(modelId=CLAUDE_BEDROCK, body=INVOKE_BODY)
    assert [r.path for r in emu.requests] == [f"/model/{CLAUDE_BEDROCK}/{op}" for op in (INVOKE, STREAM, INVOKE)]


def test_ollama_chat_answers_the_ollama_client_whole_streamed_with_tools_and_with_errors(served: Emulator) -> None:
    emu = _serve(
        served,
        turn.text("llama says hi"),
        turn.thinking("let me see", text="streamed words"),
        WEATHER,
        fault.status(500, "model runner stopped"),
        fault.error_event(500, "out of memory", turn.text("partial")),
    )
    client = ollama.Client(host=emu.base_url)
    whole = client.chat(model="llama3.2", messages=USER, stream=False)
    assert (whole.message.content, whole.done, whole.done_reason) == ("llama says hi", True, "stop")
    parts = list(client.chat(model="llama3.2", messages=USER, stream=True))
    assert "".join(p.message.content or "" for p in parts) == "streamed words"
    assert "".join(p.message.thinking or "" for p in parts) == "let me see"
    assert [p.done for p in parts][-1] is True and not any(p.done for p in parts[:-1])
    called = client.chat(model="llama3.2", messages=USER, tools=[WEATHER_TOOL], stream=False)
    assert [(c.function.name, c.function.arguments) for c in called.message.tool_calls or []] == [
        ("weather", {"city": "Paris"})
    ]
    with pytest.raises(ollama.ResponseError, match="model runner stopped"):
        client.chat(model="llama3.2", messages=USER, stream=False)
    with pytest.raises(ollama.ResponseError, match="out of memory"):
        list(client.chat(model="llama3.2", messages=USER, stream=True))
    assert emu.requests[2].body["tools"][0]["function"]["name"] == "weather"
    assert [r.streaming for r in emu.requests] == [False, True, False, False, True]


def test_harness_emulate_and_harness_proxy_print_each_surfaces_setting() -> None:
    from harness.cli._proxy import client_settings as proxy_settings
    from harness.emulator._server import client_settings as emulate_settings

    emulate, proxy = emulate_settings("http://h:1") + "\n", proxy_settings("http://h:1")
    for setting in (
        "azure_endpoint=http://h:1\n",
        "base_url=http://h:1/openai/v1\n",
        "base_url=http://h:1/api/v1\n",
        "base_url=http://h:1/v1\n",  # AnthropicVertex
        "host=http://h:1\n",  # ollama
        "baseURL=http://h:1\n",  # the AI SDK's Anthropic provider, served at the root
    ):
        assert setting in emulate, setting
    for variable in ("AZURE_OPENAI_ENDPOINT=http://h:1 ", "ANTHROPIC_VERTEX_BASE_URL=http://h:1/v1 ", "OLLAMA_HOST="):
        assert variable in proxy, variable
    assert "ANTHROPIC_BEDROCK_BASE_URL=http://h:1 " in proxy and "OPENAI_BASE_URL=http://h:1/api/v1 " in proxy


def test_how_an_ollama_stream_ends_is_said_in_its_own_lines() -> None:
    """What a wire finding says about a cut NDJSON stream: after which line it ended, and how."""
    emu = Emulator(
        fault.truncate(turn.text("hello there friend")),
        fault.drop_mid_stream(2, turn.text("one two three four five six seven eight nine ten")),
        WEATHER,
    )
    body = json.dumps({"model": "l", "messages": USER}).encode()
    endings = [
        ending(emu.answer("POST", "/api/chat", "", [("content-type", "application/json")], body)) for _ in range(3)
    ]
    assert endings == [
        "the body ended cleanly after a `message.content` line",
        "the connection was reset mid-chunk, after a `message.content` line",
        "the body ended cleanly after the line with done: true (done_reason 'stop')",
    ]
