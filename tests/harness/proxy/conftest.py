"""What the proxy's tests share: a key the proxy's environment holds, and reading a streamed reply."""

from __future__ import annotations

import json
from typing import Any

import pytest

KEY = "sk-proxy-test-7f3a9c2e41d8b6"
"""A credential the client sends and the proxy's environment holds: it must never reach a cassette."""

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Weather in Paris?"}], "stream": True}


def sse_texts(body: str) -> list[str]:
    """The text deltas of an OpenAI chat stream, one per event."""
    texts = []
    for event in body.split("\n\n"):
        data = event.removeprefix("data: ").strip()
        if data and data != "[DONE]":
            delta = json.loads(data)["choices"][0]["delta"]
            texts.append(delta.get("content") or "")
    return texts


@pytest.fixture
def environ() -> dict[str, Any]:
    """The proxy's environment: the client's key in it, as where a team records from."""
    return {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY + "-ant"}
