"""Correct tool-call loops over the official clients of the surfaces users point their SDKs at
besides each provider's own (issue 36), for the wire campaign: Ollama's native ``/api/chat``
(``ollama.Client``), Azure OpenAI (``openai.AzureOpenAI``), Claude on Vertex AI
(``anthropic.AnthropicVertex``) and Claude on Bedrock's InvokeModel (``anthropic.AnthropicBedrock``
and boto3's ``invoke_model_with_response_stream``).

The Ollama loop has one defect to plant, ``ignore_done``: it takes the text a stream carried as the
answer whether or not the stream sent its ``done: true`` line, so a stream a proxy cut short is
returned as complete (W5). Its correct twin checks ``done``, as Ollama's documentation says a
stream ends. Each loop sets a read timeout: a stalled stream must not hang it for good.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import boto3
import ollama
import openai
from botocore.config import Config

from harness.agents import Deviation
from tests.harness.agents.planted import (
    LOOPBACK_READ_TIMEOUT,
    READ_TIMEOUT,
    TOOLS,
    CutStream,
    _complete,
    _execute,
    answer_calls,
)

_ANTHROPIC_TOOLS = [
    {
        "name": t["function"]["name"],
        "description": t["function"]["description"],
        "input_schema": t["function"]["parameters"],
    }
    for t in TOOLS
]
CLAUDE_BEDROCK = "anthropic.claude-sonnet-4-5-20250929-v1:0"
AWS: dict[str, str] = {
    "aws_access_key_id": "AKIDEXAMPLE",
    "aws_secret_access_key": "emulated",
    "region_name": "us-east-1",
}


def make_ollama(*defects: str) -> Callable[..., str]:
    """The loop over ``ollama.Client(host=base_url)``, streamed; ``ignore_done`` planted: a stream
    without its ``done`` line is returned as the answer (W5)."""
    if set(defects) - {"ignore_done"}:
        raise ValueError(f"unknown defects {sorted(set(defects) - {'ignore_done'})}")

    def agent(prompt: str, *, base_url: str, api_key: str) -> str:
        client = ollama.Client(host=base_url, timeout=READ_TIMEOUT)
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for _ in range(20):
            text, calls, done = "", [], False
            for part in client.chat(model="llama3.2", messages=messages, tools=TOOLS, stream=True):
                text += part.message.content or ""
                calls += part.message.tool_calls or []
                done = done or bool(part.done)
            if not done and "ignore_done" not in defects:
                raise CutStream(f"the stream ended without its done line after {text!r}")
            if not calls:
                return text
            messages.append({"role": "assistant", "content": text, "tool_calls": [c.model_dump() for c in calls]})
            messages += [
                {
                    "role": "tool",
                    "tool_name": c.function.name,
                    "content": _execute(c.function.name, json.dumps(c.function.arguments)),
                }
                for c in calls
            ]
        raise RuntimeError("no answer after 20 rounds")

    agent.__name__ = "ollama_" + ("_".join(defects) or "agent")
    return agent


ollama_agent = make_ollama()
ollama_agent.wire_deviations = [  # type: ignore[attr-defined]
    Deviation(
        "W8",
        "the ollama client reads its NDJSON stream with httpx's iter_lines, which also splits on U+0085, "
        "U+2028 and U+2029 inside a string (findings/test_ollama_unicode_line_separator.py): a call whose "
        "drawn arguments hold one raises JSONDecodeError in the client, not in this loop",
        kinds=(
            "valid call",
            "several calls",
            "text and a call",
            "several calls, interleaved",
            "unknown events and fields",
        ),
    )
]
"""The Ollama loop without defects: the campaign must find nothing."""
ollama_ignore_done = make_ollama("ignore_done")


def azure_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The loop over ``openai.AzureOpenAI(azure_endpoint=base_url)``, streamed, on a deployment's path."""
    client = openai.AzureOpenAI(
        azure_endpoint=base_url,
        api_key=api_key,
        api_version="2024-10-21",
        http_client=http_client,
        max_retries=0,
        timeout=READ_TIMEOUT,
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        text, calls, finish = _complete(client, messages, waits=True)
        if finish is None:
            raise CutStream(f"the stream ended without a finish reason after {text!r}")
        if not calls:
            return text
        answer_calls(messages, text, calls)
    raise RuntimeError("no answer after 20 rounds")


def _claude_loop(client: anthropic.Anthropic | Any, model: str, prompt: str) -> str:
    """The loop over an Anthropic client (on Vertex AI or Bedrock: the same Messages wire), streamed."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        with client.messages.stream(model=model, max_tokens=100, messages=messages, tools=_ANTHROPIC_TOOLS) as stream:
            message = stream.get_final_message()
        if message.stop_reason is None:
            raise CutStream("the stream ended without a stop reason")
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in message.content if block.type == "text")
        messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
        messages.append({"role": "user", "content": [_result(b.id, b.name, b.input) for b in uses]})
    raise RuntimeError("no answer after 20 rounds")


def _result(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": _execute(name, json.dumps(arguments))}


def vertex_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The loop over ``anthropic.AnthropicVertex`` (``:streamRawPredict``), its base URL the root's ``/v1``."""
    client = anthropic.AnthropicVertex(
        region="us-east5",
        project_id="emulated-project",
        access_token="ya29.emulated",
        base_url=f"{base_url}/v1",
        http_client=http_client,
        timeout=READ_TIMEOUT,
    )
    return _claude_loop(client, "claude-sonnet-4-5@20250929", prompt)


def bedrock_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The loop over ``anthropic.AnthropicBedrock`` (``/invoke-with-response-stream``)."""
    client = anthropic.AnthropicBedrock(
        aws_access_key=AWS["aws_access_key_id"],
        aws_secret_key=AWS["aws_secret_access_key"],
        aws_region=AWS["region_name"],
        base_url=base_url,
        http_client=http_client,
        timeout=READ_TIMEOUT,
    )
    return _claude_loop(client, CLAUDE_BEDROCK, prompt)


def boto3_invoke_agent(prompt: str, *, base_url: str, api_key: str) -> str:
    """The loop over boto3's ``invoke_model_with_response_stream`` (Anthropic's events in
    event-stream frames), its own retries off: a throttled or failed request raises."""
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=base_url,
        config=Config(retries={"total_max_attempts": 1}, read_timeout=LOOPBACK_READ_TIMEOUT),
        **AWS,
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 100, "messages": messages}
        streamed = client.invoke_model_with_response_stream(
            modelId=CLAUDE_BEDROCK, body=json.dumps({**body, "tools": _ANTHROPIC_TOOLS})
        )
        content, stop = _events([json.loads(event["chunk"]["bytes"]) for event in streamed["body"]])
        if stop is None:
            raise CutStream("the stream ended without a stop reason")
        uses = [block for block in content if block["type"] == "tool_use"]
        if not uses:
            return "".join(block["text"] for block in content if block["type"] == "text")
        messages.append({"role": "assistant", "content": content})
        messages.append({"role": "user", "content": [_result(b["id"], b["name"], b["input"]) for b in uses]})
    raise RuntimeError("no answer after 20 rounds")


def _events(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """Anthropic's stream events joined into the message's content blocks and its stop reason."""
    content: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    stop = None
    for event in events:
        if event["type"] == "content_block_start":
            content.append(dict(event["content_block"]))
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                content[event["index"]]["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
        elif event["type"] == "message_delta":
            stop = event["delta"].get("stop_reason") or stop
        elif event["type"] == "error":
            raise RuntimeError(f"the stream ended in an error event: {event['error']}")
    for index, text in partial.items():
        content[index]["input"] = json.loads(text or "{}")
    return content, stop
