"""Standalone reproduction (no harness code): LiteLLM on Gemini drops the second of two parallel
calls that are the same (one function, the same arguments) when it sends the model's turn back,
while both results go back: Gemini's history then holds one ``functionCall`` and two
``functionResponse`` parts, which the real API refuses (the counts must match), and the model never
sees the call it made twice. A model may well call a tool twice alike (``provider`` tier; W2, the
history is append-only). ``litellm/llms/vertex_ai/gemini/transformation.py:949-956`` skips a
function-call part equal to one already in the turn (``check_if_part_exists_in_parts``, the
thought signature left out of the comparison), and without ``id``s forwarded (the default on
Gemini's API) two such calls are equal. Two calls with different arguments go back whole.

Found by the re-run of the ``litellm_gemini`` campaign at seed 21 (its 3rd conversation); run by CI
in the agents environment with ``-p no:harness``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list fetched at import
litellm = pytest.importorskip("litellm", reason="the findings need the frameworks: pip install -e '.[agents]'")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        },
    }
]
USAGE = {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10}


def _reply(parts: list[dict[str, Any]]) -> dict[str, Any]:
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "usageMetadata": USAGE, "modelVersion": "gemini-2.5-flash"}


async def _sent_back(second: dict[str, int]) -> dict[str, Any]:
    """The model's turn as LiteLLM sends it back after two parallel ``add`` calls (the second with
    ``second`` as its arguments) and one result for each."""
    pairs = ((1, {"a": 0, "b": 0}), (2, second))
    calls = [{"functionCall": {"id": f"call_{i}", "name": "add", "args": args}} for i, args in pairs]
    replies = [_reply(calls), _reply([{"text": "Done."}])]
    bodies: list[dict[str, Any]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length"))
        bodies.append(json.loads(await reader.readexactly(length)))
        data = json.dumps(replies[min(len(bodies), 2) - 1]).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
        writer.write(f"content-length: {len(data)}\r\nconnection: close\r\n\r\n".encode() + data)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1beta"
        options: dict[str, Any] = {"model": "gemini/gemini-2.5-flash", "api_base": base, "api_key": "k", "tools": TOOLS}
        messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
        message = (await litellm.acompletion(messages=messages, **options)).choices[0].message
        assert len(message.tool_calls) == 2, "LiteLLM reads both calls"
        messages.append(message.model_dump(exclude_none=True))
        messages += [{"role": "tool", "tool_call_id": call.id, "content": "0"} for call in message.tool_calls]
        await litellm.acompletion(messages=messages, **options)
    turn: dict[str, Any] = bodies[1]["contents"][1]
    results: dict[str, Any] = bodies[1]["contents"][2]
    assert len(results["parts"]) == 2, "both results go back"
    return turn


def _calls(turn: dict[str, Any]) -> list[Any]:
    return [part["function_call"]["args"] for part in turn["parts"] if "function_call" in part]


def test_the_second_of_two_identical_parallel_calls_is_dropped() -> None:
    assert _calls(asyncio.run(_sent_back({"a": 0, "b": 0}))) == [{"a": 0, "b": 0}]


def test_two_different_calls_go_back_whole() -> None:
    assert _calls(asyncio.run(_sent_back({"a": 1, "b": 2}))) == [{"a": 0, "b": 0}, {"a": 1, "b": 2}]


def test_the_reproduction_ran_without_harness_code() -> None:
    # a finding is the framework's only if it reproduces with nothing of ours loaded (DESIGN 6)
    import sys
    from pathlib import Path

    if any((folder / "harness" / "__init__.py").exists() for folder in Path(__file__).resolve().parents):
        pytest.skip("run in the checkout, whose conftest loads harness: .ci/run runs a copy from outside it")

    ours = sorted(m for m in sys.modules if m.split(".")[0] in ("harness", "openprogram"))
    assert not ours, f"harness code was loaded: {ours[:5]}"
