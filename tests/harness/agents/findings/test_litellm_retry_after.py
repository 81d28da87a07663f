"""Standalone reproduction (no harness code): LiteLLM's ``acompletion(num_retries=N)`` retries a
429 on its own routes (Anthropic, Gemini) at once, whatever the ``Retry-After`` header (or
Gemini's ``RetryInfo.retryDelay``) asks (the ``provider`` tier: both send these); its
``Router`` honours ``Retry-After``, the workaround a user can apply today.

docs/wire-campaigns.md, "Findings"; run by CI in the agents environment with ``-p no:harness``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list fetched at import
litellm = pytest.importorskip("litellm", reason="the findings need the frameworks: pip install -e '.[agents]'")

ANTHROPIC_429 = {"type": "error", "error": {"type": "rate_limit_error", "message": "Too many requests"}}
ANTHROPIC_OK = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "Done."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}
GEMINI_429 = {
    "error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED", "details": [RETRY_INFO]}
}
GEMINI_OK = {
    "candidates": [{"content": {"role": "model", "parts": [{"text": "Done."}]}, "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
}


def _response(status: int, body: dict[str, Any], headers: str = "") -> bytes:
    data = json.dumps(body).encode()
    head = f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n{headers}"
    return (head + "connection: close\r\n\r\n").encode() + data


async def _gap(first: bytes, then: bytes, call: Callable[[str], Awaitable[Any]]) -> float:
    """The seconds between the first request's answer (``first``) and the retry that ``then`` answers."""
    answered: list[float] = []
    arrived: list[float] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        await reader.readexactly(next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length")))
        arrived.append(time.monotonic())
        writer.write(then if answered else first)
        await writer.drain()
        answered.append(time.monotonic())
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        await call(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    assert len(arrived) == 2
    return arrived[1] - answered[0]


MESSAGES = [{"role": "user", "content": "hi"}]


def _completion(model: str, suffix: str = "") -> Callable[[str], Awaitable[Any]]:
    def call(base: str) -> Awaitable[Any]:
        return litellm.acompletion(model=model, api_base=base + suffix, api_key="k", messages=MESSAGES, num_retries=1)

    return call


def _router(model: str) -> Callable[[str], Awaitable[Any]]:
    def call(base: str) -> Awaitable[Any]:
        params = {"model": model, "api_base": base, "api_key": "k"}
        router = litellm.Router(model_list=[{"model_name": "m", "litellm_params": params}], num_retries=1)
        return router.acompletion(model="m", messages=MESSAGES)

    return call


def test_completion_retries_an_anthropic_429_before_its_retry_after() -> None:
    first = _response(429, ANTHROPIC_429, "retry-after: 2\r\n")
    gap = asyncio.run(_gap(first, _response(200, ANTHROPIC_OK), _completion("anthropic/claude-test")))
    assert gap < 1.0


def test_the_router_waits_the_retry_after_of_an_anthropic_429() -> None:
    first = _response(429, ANTHROPIC_429, "retry-after: 2\r\n")
    gap = asyncio.run(_gap(first, _response(200, ANTHROPIC_OK), _router("anthropic/claude-test")))
    assert gap >= 2.0


def test_completion_retries_a_gemini_429_before_its_retry_delay() -> None:
    first = _response(429, GEMINI_429, "retry-after: 2\r\n")
    gap = asyncio.run(_gap(first, _response(200, GEMINI_OK), _completion("gemini/gemini-2.5-flash", "/v1beta")))
    assert gap < 1.0


def test_the_reproduction_ran_without_harness_code() -> None:
    # a finding is the framework's only if it reproduces with nothing of ours loaded (DESIGN 6)
    import sys
    from pathlib import Path

    if any((folder / "harness" / "__init__.py").exists() for folder in Path(__file__).resolve().parents):
        pytest.skip("run in the checkout, whose conftest loads harness: .ci/run runs a copy from outside it")

    ours = sorted(m for m in sys.modules if m.split(".")[0] in ("harness", "openprogram"))
    assert not ours, f"harness code was loaded: {ours[:5]}"
