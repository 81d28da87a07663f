"""Standalone reproduction (no harness code), hostile input: a Bedrock ``converse`` reply with two
``toolUse`` blocks sharing one ``toolUseId`` (the ``invalid`` tier: Bedrock itself rejects
duplicate ids) comes back from langchain-aws's ``ChatBedrockConverse`` with the second call
written over the first: one call lost, the other sent twice, while both results go back in order.

docs/wire-campaigns.md, "Hostile input"; run by CI in the agents environment with ``-p no:harness``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("langchain_aws", reason="the findings need the frameworks: pip install -e '.[agents]'")

import boto3
from botocore.config import Config
from langchain.agents import create_agent
from langchain_aws import ChatBedrockConverse

AWS = {"region_name": "us-east-1", "aws_access_key_id": "k", "aws_secret_access_key": "k"}
USAGE = {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 1}}
CALLS = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": "tooluse_2", "name": "add", "input": {"a": 1, "b": 2}}},
                {"toolUse": {"toolUseId": "tooluse_2", "name": "lookup", "input": {"word": "x"}}},
            ],
        }
    },
    "stopReason": "tool_use",
    **USAGE,
}
ANSWER = {
    "output": {"message": {"role": "assistant", "content": [{"text": "Done."}]}},
    "stopReason": "end_turn",
    **USAGE,
}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def lookup(word: str) -> str:
    """Look a word up."""
    return f"{word}: a word"


async def _second_request() -> dict[str, Any]:
    bodies: list[dict[str, Any]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length"))
        bodies.append(json.loads(await reader.readexactly(length)))
        data = json.dumps(CALLS if len(bodies) == 1 else ANSWER).encode()
        head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"
        writer.write(head.encode() + b"connection: close\r\n\r\n" + data)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        client = boto3.client("bedrock-runtime", endpoint_url=url, config=Config(retries={"max_attempts": 0}), **AWS)
        model = ChatBedrockConverse(model="us.amazon.nova-micro-v1:0", client=client, **AWS)
        await create_agent(model, tools=[add, lookup]).ainvoke({"messages": [("user", "hi")]})
    assert len(bodies) == 2
    return bodies[1]


def test_the_second_call_sharing_a_tool_use_id_overwrites_the_first() -> None:
    messages = asyncio.run(_second_request())["messages"]
    sent = [block["toolUse"] for block in messages[1]["content"] if "toolUse" in block]
    assert [(c["toolUseId"], c["name"], c["input"]) for c in sent] == [("tooluse_2", "lookup", {"word": "x"})] * 2
    results = [block["toolResult"] for block in messages[2]["content"] if "toolResult" in block]
    assert [r["toolUseId"] for r in results] == ["tooluse_2", "tooluse_2"]
    assert ["3" in json.dumps(results[0]), "x: a word" in json.dumps(results[1])] == [True, True]  # in order


def test_the_reproduction_ran_without_harness_code() -> None:
    # a finding is the framework's only if it reproduces with nothing of ours loaded (DESIGN 6)
    import sys
    from pathlib import Path

    if any((folder / "harness" / "__init__.py").exists() for folder in Path(__file__).resolve().parents):
        pytest.skip("run in the checkout, whose conftest loads harness: .ci/run runs a copy from outside it")

    ours = sorted(m for m in sys.modules if m.split(".")[0] in ("harness", "openprogram"))
    assert not ours, f"harness code was loaded: {ours[:5]}"
