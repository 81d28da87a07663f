"""Pieces several harness test files build a user's world from: a recorded chat completion, and
the conftest fixture that notes (and refuses) every public host a user's test tries to reach."""

from __future__ import annotations

import json
from typing import Any


def chat_completion(content: str | None, calls: list[dict[str, Any]] | None = None, finish: str = "stop") -> str:
    """The JSON text of one OpenAI chat completion, as a cassette stores its response body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )


ATTEMPTS_FIXTURE = '''
import socket

import pytest


@pytest.fixture
def attempts(monkeypatch):
    """The public hosts the test tried to reach (each lookup is refused after it is noted)."""
    tried = []
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        name = host.decode() if isinstance(host, bytes) else host
        if name not in ("127.0.0.1", "localhost"):
            tried.append(name)
            raise OSError(f"this test is offline: {name}")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return tried
'''
"""A user's ``conftest.py`` source giving the ``attempts`` fixture: "no connection was attempted"
told apart from "the connection failed", since a backend must resolve its host to connect."""
