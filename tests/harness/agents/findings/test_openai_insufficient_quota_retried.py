"""Standalone reproduction (no harness code): the ``openai`` SDK retries OpenAI's 429
``insufficient_quota`` (an account out of credit, ``provider`` tier) as if it were a rate limit,
so with its default ``max_retries=2`` one call sends the same doomed request three times (W7) and
raises ``RateLimitError`` after its back-off. ``_should_retry`` (``openai/_base_client.py``) retries
every 429 unless the server sends ``x-should-retry: false``; the quota error carries no such header,
only its ``type``/``code``, which the retry decision never reads. The workaround: ``max_retries=0``
and a retry of one's own that gives up on ``exc.code == "insufficient_quota"``.

docs/wire-findings.md; run by CI in the agents environment with ``-p no:harness``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import openai
import pytest

QUOTA = {
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
}


class _Quota(BaseHTTPRequestHandler):
    bodies: list[bytes]

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers["content-length"])))
        data = json.dumps(QUOTA).encode()
        self.send_response(429)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def _requests_sent(max_retries: int | None) -> tuple[list[bytes], openai.RateLimitError]:
    bodies: list[bytes] = []
    handler = type("Quota", (_Quota,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    options: dict[str, Any] = {} if max_retries is None else {"max_retries": max_retries}
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key="k", **options)
    client = client.with_options(timeout=5)  # its back-off between tries: about 0.5 s, then 1 s (asleep)
    try:
        with pytest.raises(openai.RateLimitError) as raised:
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    finally:
        server.shutdown()
        server.server_close()
    return bodies, raised.value


def test_the_sdk_retries_an_insufficient_quota_429_twice_by_default() -> None:
    bodies, error = _requests_sent(None)
    assert error.code == "insufficient_quota"
    assert len(bodies) == 3 and len(set(bodies)) == 1  # the same request, three times


def test_without_its_retries_the_sdk_sends_it_once() -> None:
    bodies, error = _requests_sent(0)
    assert error.code == "insufficient_quota" and len(bodies) == 1
