"""Shared helpers of the emulator tests: SSE parsing, event grammar, and a backend on an emulator."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anthropic
import openai

from harness.emulator import Emulator
from harness.recording._clients import Connection, SDKClient, backend
from harness.script import Turn, turn
from openprogram.providers import ModelRequest
from openprogram.types import AssistantMessage, ToolSpec, UserMessage

REPO = Path(__file__).resolve().parents[3]
CASSETTES = REPO.parent / "shared" / "provider-cassettes"

GEMINI = "gemini-2.5-flash"
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"  # on Bedrock
NOVA = "us.amazon.nova-micro-v1:0"


PARALLEL_ANSWER = "Paris and Oslo are sunny; 2+3=5."


def parallel_tool_loop() -> list[Turn]:
    """Two parallel ``weather`` calls with text, then an ``add`` call, then the answer (with thinking):
    the tool loop every backend's end-to-end test runs over HTTP (tools: the ``reg`` fixture's)."""
    return [
        turn.tool_calls(
            turn.tool_call("weather", city="Paris"), turn.tool_call("weather", city="Oslo"), text="Let me look."
        ),
        turn.tool_call("add", a=2, b=3),
        turn.text(PARALLEL_ANSWER, thinking="All done."),
    ]


def connection(base_url: str, api: str) -> Connection:
    """The emulator at ``base_url`` as Gemini's ``developer`` / ``vertex`` API or Bedrock's (``aws``) sees it."""
    if api == "vertex":
        return Connection.at(base_url, vertex=True, project="proj-1", region="europe-west4")
    return Connection.at(base_url)


def sse_events(text: str) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) per SSE frame; ``[DONE]`` kept as the string."""
    out: list[tuple[str | None, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            joined = "\n".join(data)
            out.append((name, joined if joined == "[DONE]" else json.loads(joined)))
    return out


def chat_kind(chunk: Any) -> str:
    """What a Chat chunk carries, as a grammar symbol."""
    if chunk == "[DONE]":
        return "done"
    if not chunk.get("choices"):
        return "usage"
    choice = chunk["choices"][0]
    if choice.get("finish_reason"):
        return "finish"
    delta = choice.get("delta") or {}
    calls = delta.get("tool_calls") or []
    if calls:
        return "call_start" if calls[0].get("id") else "call_args"
    if delta.get("content") is not None or delta.get("reasoning_content"):
        return "text"
    return "role" if delta.get("role") else "empty"


def collapse(symbols: list[str]) -> list[str]:
    """Runs of the same symbol as one: the number of deltas is the model's, not the grammar's."""
    out: list[str] = []
    for symbol in symbols:
        if not out or out[-1] != symbol:
            out.append(symbol)
    return out


def grammar(endpoint: str, text: str) -> tuple[list[str], dict[str, set[str]]]:
    """The collapsed event sequence of a stream and the field names seen per event kind (nested
    fields dotted one level down: ``delta.type``, ``content_block.id``)."""
    events = sse_events(text)
    symbols: list[str] = []
    fields: dict[str, set[str]] = {}
    for name, data in events:
        if endpoint == "chat.completions":
            symbol = chat_kind(data)
        else:
            symbol = data.get("type", name) if isinstance(data, dict) else str(data)
            if symbol == "content_block_start":
                symbol += ":" + data["content_block"]["type"]
            if symbol == "content_block_delta":
                symbol += ":" + data["delta"]["type"]
            if symbol.startswith("response.output_item"):
                symbol += ":" + data["item"]["type"]
        symbols.append(symbol)
        if isinstance(data, dict):
            names = set(data)
            for key, value in data.items():
                if isinstance(value, dict) and key not in ("response", "message", "usage"):
                    names |= {f"{key}.{inner}" for inner in value}
            fields.setdefault(symbol, set()).update(names)
    return collapse(symbols), fields


def sdk_client(provider: str, emu: Emulator) -> SDKClient:
    http = emu.http_client()
    if provider == "openai":
        client: Any = openai.AsyncOpenAI(api_key="k", base_url="http://emulator/v1", http_client=http, max_retries=0)
    else:
        client = anthropic.AsyncAnthropic(api_key="k", base_url="http://emulator", http_client=http, max_retries=0)
    return SDKClient(provider, client, client.close)


def one_reply(
    emu: Emulator, provider: str, endpoint: str, *, stream: bool, tools: tuple[ToolSpec, ...] = ()
) -> AssistantMessage:
    """The message our backend (over the official SDK, on the in-process transport) makes of the
    emulator's next reply."""

    async def run() -> AssistantMessage:
        client = sdk_client(provider, emu)
        try:
            provider_ = backend(provider, endpoint, model="m", stream=stream, client=client)
            request = ModelRequest(messages=(UserMessage(content="hi"),), tools=tools, model="m")
            events = [event async for event in provider_.stream(request)]
        finally:
            await client.aclose()
        last = events[-1]
        assert last.type in ("done", "error")
        return last.message if last.type == "done" else last.error

    return asyncio.run(asyncio.wait_for(run(), 20))
