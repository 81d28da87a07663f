"""Standalone reproduction (no harness code): LiteLLM's ``acompletion(num_retries=N)`` sends a
request the provider refused with a 401 again, unchanged, N more times, on every route (the
``provider`` tier: a wrong or revoked key is answered so; W7, a request refused as non-retryable
is not sent again unchanged). ``litellm/main.py``'s ``acompletion_with_retries`` retries every
exception but a few it resends itself (``_is_not_resent_failure``), though its docs say
``num_retries`` is for ``APIError``, ``TimeoutError`` and ``ServiceUnavailableError``
(BerriAI/litellm#18395, open). Its ``Router`` with ``RetryPolicy(AuthenticationErrorRetries=0)``
does not retry it.

Found before W7 was judged, by serving a 401 to each agent of ``frameworks.py`` (the other Python
frameworks sent it once); run by CI in the agents environment with ``-p no:harness``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list fetched at import
litellm = pytest.importorskip("litellm", reason="the findings need the frameworks: pip install -e '.[agents]'")

UNAUTHORIZED = {
    "openai": {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": None}},
    "anthropic": {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
}
MESSAGES = [{"role": "user", "content": "hi"}]


async def _requests(provider: str, call: Any) -> int:
    """How many requests a call sends to a server answering each with a 401 (the call raises)."""
    arrived: list[bytes] = []
    data = json.dumps(UNAUTHORIZED[provider]).encode()
    reply = f"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length"))
        arrived.append(await reader.readexactly(length))
        writer.write((reply + "connection: close\r\n\r\n").encode() + data)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        with pytest.raises(litellm.AuthenticationError):
            await call(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
    assert len(set(arrived)) == 1, "each request is the same one, unchanged"
    return len(arrived)


@pytest.mark.parametrize(
    ("provider", "model", "suffix"), [("openai", "openai/gpt-test", "/v1"), ("anthropic", "anthropic/claude-test", "")]
)
def test_acompletion_with_num_retries_sends_a_refused_request_again(provider: str, model: str, suffix: str) -> None:
    def call(base: str) -> Any:
        return litellm.acompletion(model=model, api_base=base + suffix, api_key="k", messages=MESSAGES, num_retries=2)

    assert asyncio.run(_requests(provider, call)) == 3


def test_the_router_with_a_retry_policy_sends_it_once() -> None:
    policy = litellm.RetryPolicy(AuthenticationErrorRetries=0)

    def call(base: str) -> Any:
        params = {"model": "openai/gpt-test", "api_base": f"{base}/v1", "api_key": "k"}
        router = litellm.Router(
            model_list=[{"model_name": "m", "litellm_params": params}], num_retries=2, retry_policy=policy
        )
        return router.acompletion(model="m", messages=MESSAGES)

    assert asyncio.run(_requests("openai", call)) == 1


def test_the_reproduction_ran_without_harness_code() -> None:
    # a finding is the framework's only if it reproduces with nothing of ours loaded (DESIGN 6)
    import sys
    from pathlib import Path

    if any((folder / "harness" / "__init__.py").exists() for folder in Path(__file__).resolve().parents):
        pytest.skip("run in the checkout, whose conftest loads harness: .ci/run runs a copy from outside it")

    ours = sorted(m for m in sys.modules if m.split(".")[0] in ("harness", "openprogram"))
    assert not ours, f"harness code was loaded: {ours[:5]}"
