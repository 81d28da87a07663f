"""Standalone reproduction (no harness code): the ``ollama`` client reads its NDJSON stream with
httpx's ``iter_lines()``, which splits like ``str.splitlines()``: on U+0085 (NEL), U+2028 and
U+2029 too, not only on ``\\n``. A reply whose text or tool-call arguments hold one of them is cut
in the middle of a line, and ``json.loads`` on the piece raises ``JSONDecodeError``. The reply is
valid JSON (JSON need not escape them; Ollama's Go encoder writes U+0085 raw and escapes the other
two): the run raises on a whole, well-formed reply (W8, ``provider`` tier: a model can write any
character into an argument). Found by the wire campaign on ``ollama.Client.chat(stream=True)``;
the same reader serves ``AsyncClient``. Workaround: ``stream=False`` (the body is read whole).

docs/wire-findings.md; run by CI in the agents environment with ``-p no:harness``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import ollama
import pytest

SEPARATORS = ["\u0085", "\u2028", "\u2029"]


def _lines(word: str) -> bytes:
    call = {"function": {"name": "lookup", "arguments": {"word": word}}}
    lines = [
        {
            "model": "m",
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "", "tool_calls": [call]},
            "done": False,
        },
        {
            "model": "m",
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
        },
    ]
    return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in lines)


def _serve(body: bytes) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "application/x-ndjson")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.mark.parametrize("separator", SEPARATORS, ids=["NEL", "LS", "PS"])
def test_a_streamed_call_whose_argument_holds_a_unicode_line_separator_raises(separator: str) -> None:
    server, url = _serve(_lines(f"a{separator}b"))
    try:
        client = ollama.Client(host=url)
        with pytest.raises(json.JSONDecodeError):
            list(client.chat(model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
    finally:
        server.shutdown()


def test_the_same_reply_read_whole_keeps_the_argument() -> None:
    server, url = _serve(_lines("a\u0085b").splitlines()[0])
    try:
        reply = ollama.Client(host=url).chat(model="m", messages=[{"role": "user", "content": "hi"}], stream=False)
        assert reply.message.tool_calls is not None
        assert reply.message.tool_calls[0].function.arguments == {"word": "a\u0085b"}
    finally:
        server.shutdown()
