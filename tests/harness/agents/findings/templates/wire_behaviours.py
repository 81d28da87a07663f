"""Templates for the standalone reproduction of a finding on the behaviours of issue 36 (no harness
code: the framework, its SDK, and a few lines of ``http.server``), to copy into
``findings/test_<framework>_<what>.py`` when a campaign finds one, then trim to the one reply.

Not a test (pytest collects ``test_*.py`` only; ``.ci/run`` copies ``findings/test_*.py``): a
template asserts nothing until it reproduces a finding. ``python wire_behaviours.py`` serves each
reply to the plain ``openai`` SDK and prints what it did, which is the first thing to compare a
framework's behaviour with. Each reply is a function of the socket (``BaseHTTPRequestHandler``):

- ``stall``: headers and one SSE event, then nothing, the connection held open (``network``: W3;
  a client with no read timeout never ends; the SDKs default to 600 s).
- ``split_utf8``: a chat stream written in two writes that cut a multi-byte UTF-8 character (and
  the event) in two, a pause between them (``network``: what TCP may do; a parser that decodes each
  read alone breaks).
- ``usage_only_final_chunk``: the chunk ``stream_options.include_usage`` adds, ``choices: []``
  (``provider``; a loop that indexes ``choices[0]`` on every chunk raises: W8).
- ``unknown_event``: an Anthropic Messages stream with an event type it does not document yet
  (``provider``; Anthropic documents that clients ignore event types they do not know: W8). Chat
  completions streams carry no event types: there, add an unknown field to a chunk instead.
- ``unauthorized``: a 401 on every request, counted (``provider``; a client that sends it again
  unchanged: W7).
- ``insufficient_quota``: OpenAI's 429 for an account out of quota, counted (``provider``: W7). The
  ``openai`` SDKs retry every 429 unless the reply says ``x-should-retry: false``
  (openai/openai-python#1671), so every framework over them sends it three times by default.

Swap the client in ``main`` for the framework's agent (its ``base_url`` is the printed one), keep
the reply that shows the finding, and assert what the framework did, as the other reproductions
here do: the test must pass while the finding stands and fail once a release fixes it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[BaseHTTPRequestHandler], None]


def chunk(delta: dict[str, Any], finish_reason: str | None = None, **fields: Any) -> bytes:
    """One OpenAI chat completion chunk as an SSE event."""
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}
    choices = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    return f"data: {json.dumps({**body, 'choices': choices, **fields}, ensure_ascii=False)}\n\n".encode()


ANSWER = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Done."}), chunk({}, "stop")]
DONE = b"data: [DONE]\n\n"


def _head(handler: BaseHTTPRequestHandler, status: int = 200, kind: str = "text/event-stream") -> None:
    handler.send_response(status)
    handler.send_header("content-type", kind)
    handler.send_header("connection", "close")  # a close-delimited body: no chunked framing to write
    handler.end_headers()


def stall(handler: BaseHTTPRequestHandler) -> None:
    _head(handler)
    handler.wfile.write(ANSWER[0])
    handler.wfile.flush()
    time.sleep(60)  # held open, sending nothing: the client's read timeout (or nothing) ends it


def split_utf8(handler: BaseHTTPRequestHandler) -> None:
    text = chunk({"role": "assistant", "content": "Caf\u00e9 \u2615"}) + b"".join(ANSWER[2:]) + DONE
    cut = text.index("\u2615".encode()) + 1  # inside the three bytes of the cup
    _head(handler)
    for part in (text[:cut], text[cut:]):
        handler.wfile.write(part)
        handler.wfile.flush()
        time.sleep(0.2)  # so the client reads the halves apart


def usage_only_final_chunk(handler: BaseHTTPRequestHandler) -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    final = chunk({}, choices=[], usage=usage)  # `choices` empty, as OpenAI sends it
    _head(handler)
    handler.wfile.write(b"".join(ANSWER) + final + DONE)


_MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test", "content": []}
MESSAGES: list[tuple[str, dict[str, Any]]] = [
    ("message_start", {"message": {**_MESSAGE, "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 0}}}),
    ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    ("novel_thing", {"note": "an event type added after this client was written"}),
    ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Done."}}),
    ("content_block_stop", {"index": 0}),
    ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
    ("message_stop", {}),
]


def unknown_event(handler: BaseHTTPRequestHandler) -> None:
    _head(handler)
    for kind, data in MESSAGES:
        handler.wfile.write(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())


REQUESTS: list[bytes] = []
"""The request bodies the server received (``unauthorized`` reads them: a retry is a second one)."""


def unauthorized(handler: BaseHTTPRequestHandler) -> None:
    body = json.dumps({"error": {"message": "Incorrect API key", "type": "invalid_request_error", "code": None}})
    _head(handler, 401, "application/json")
    handler.wfile.write(body.encode())


def insufficient_quota(handler: BaseHTTPRequestHandler) -> None:
    error = {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}
    _head(handler, 429, "application/json")
    handler.wfile.write(json.dumps({"error": error}).encode())


@contextmanager
def serving(reply: Reply) -> Iterator[str]:
    """A loopback server answering every POST with ``reply``; yields its root URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            REQUESTS.append(self.rfile.read(int(self.headers.get("content-length", 0))))
            try:
                reply(self)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a read timeout): what a stall is for
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True  # a held stall does not keep the process alive
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    """Each reply to the plain ``openai`` SDK, streamed, with a 2 s timeout and no retries."""
    import anthropic
    import openai

    for reply in (stall, split_utf8, usage_only_final_chunk, unknown_event, unauthorized, insufficient_quota):
        REQUESTS.clear()
        with serving(reply) as root:
            client = openai.OpenAI(base_url=f"{root}/v1", api_key="k", timeout=2.0, max_retries=0)
            started = time.monotonic()
            claude = anthropic.Anthropic(base_url=root, api_key="k", timeout=2.0, max_retries=0)
            messages: Any = [{"role": "user", "content": "hi"}]
            try:
                if reply is unknown_event:
                    message = claude.messages.create(model="claude-test", max_tokens=10, messages=messages, stream=True)
                    text = "".join(e.delta.text for e in message if e.type == "content_block_delta")  # type: ignore[union-attr]
                    print(f"{reply.__name__}: returned {text!r}")
                    continue
                stream = client.chat.completions.create(model="gpt-test", messages=messages, stream=True)
                text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
                outcome = f"returned {text!r}"
            except Exception as exc:
                outcome = f"raised {type(exc).__name__}: {exc}"
            took = time.monotonic() - started
        print(f"{reply.__name__}: {outcome} ({took:.1f} s, {len(REQUESTS)} request(s))")


if __name__ == "__main__":
    main()
