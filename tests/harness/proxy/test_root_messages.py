"""Anthropic's Messages at the root (``/messages``: the AI SDK appends it to a base URL it takes as
ending in ``/v1``) is forwarded to the provider's ``/v1/messages``, as the route table says, and
replayed from the cassette with the provider gone; an ``--upstream`` gets the path as sent."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from harness.emulator import Emulator
from harness.proxy import Proxy
from harness.proxy._forwarding import Forwarder
from harness.wire import route_by_path

pytest.importorskip("uvicorn", reason="the proxy serves with the emulator extra (starlette, uvicorn)")

BODY = {"model": "claude-test", "max_tokens": 16, "messages": [{"role": "user", "content": "Lisbon?"}]}


def test_root_messages_reaches_the_providers_v1_messages_and_replays_without_it(tmp_path: Path) -> None:
    cassette = tmp_path / "root.yaml"
    with Emulator("Sunny in Lisbon.") as anthropic:  # stands in for api.anthropic.com
        with Proxy(cassette, origins={"anthropic": anthropic.base_url}, environ={}) as proxy:
            live = httpx2.post(f"{proxy.base_url}/messages", json=BODY, headers={"x-api-key": "k"}, timeout=10)
        assert [request.path for request in anthropic.requests] == ["/v1/messages"]
    assert proxy.finish().problems == []
    assert live.status_code == 200, live.text
    assert [block["text"] for block in live.json()["content"]] == ["Sunny in Lisbon."]
    with Proxy(cassette, mode="none", environ={}) as proxy:
        replayed = httpx2.post(f"{proxy.base_url}/messages", json=BODY, headers={"x-api-key": "k"}, timeout=10)
    assert proxy.finish().problems == []
    assert replayed.json()["content"] == live.json()["content"]


def test_the_providers_host_gets_v1_messages_and_an_upstream_the_path_as_sent() -> None:
    destination = route_by_path("/messages")
    assert destination is not None and destination.surface == "root"
    assert Forwarder(None, {}).target(destination, "/messages", "") == "https://api.anthropic.com/v1/messages"
    upstream = Forwarder("http://127.0.0.1:8765/v1", {})
    assert upstream.target(destination, "/messages", "") == "http://127.0.0.1:8765/v1/messages"
    own = route_by_path("/v1/messages")
    assert own is not None
    assert Forwarder(None, {}).target(own, "/v1/messages", "") == "https://api.anthropic.com/v1/messages"
