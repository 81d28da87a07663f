"""Uploads (a batch file, an audio file) recorded once replay forever, as a user's project meets them.

The HTTP client draws a new multipart boundary for every request, so a body compared as bytes
never matched its recording again: every upload recorded once and then failed on every replay.
Bodies are now compared part by part (name, file name, type, content), under the ``recorded``
fixture and the plain ``vcr`` marker alike, and a changed part is still a mismatch, named.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

pytest_plugins = ["pytester"]

SERVER = """
import json, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import pytest

REPLIES = {
    "/v1/files": {"id": "file-1", "object": "file", "bytes": 20, "created_at": 0,
                  "filename": "batch.jsonl", "purpose": "batch", "status": "processed"},
    "/v1/audio/transcriptions": {"text": "hello from the audio"},
}

class Provider(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        body = json.dumps(REPLIES[self.path]).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

def serve():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Provider)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server

def upload(client, kind, content):
    if kind == "batch":
        return client.files.create(file=("batch.jsonl", content), purpose="batch")
    return client.audio.transcriptions.create(model="whisper-1", file=("hello.wav", content))

def content():
    import os
    text = os.environ.get("UPLOADED", "{}")
    return text.encode() if os.environ["UPLOAD"] == "batch" else b"RIFF\\x00\\xff\\xfe\\r\\n" + text.encode()
"""

MARKED = """
import os
import openai, pytest
from server import serve, upload, content

@pytest.mark.vcr
def test_upload():
    server = serve()
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="k", max_retries=0)
        reply = upload(client, os.environ["UPLOAD"], content())
    finally:
        server.shutdown()
    print("REPLY", getattr(reply, "id", None) or reply.text)
"""

FIXTURE = """
import asyncio, os
import pytest
from harness.recording import recorded_client
from server import serve, upload, content

@pytest.fixture
def upstream(recorded):
    if not recorded.records:  # a replay needs no server
        yield None
        return
    server = serve()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()

def test_upload(recorded, upstream):
    async def go():
        sdk = recorded_client("openai", recorded.recording, upstream=upstream)
        try:
            return await upload(sdk.client, os.environ["UPLOAD"], content())
        finally:
            await sdk.aclose()
    reply = asyncio.run(go())
    print("REPLY", getattr(reply, "id", None) or reply.text)
"""

REPLY = {"batch": "REPLY file-1", "audio": "REPLY hello from the audio"}


@pytest.fixture
def upload_env() -> Iterator[None]:
    yield
    os.environ.pop("UPLOAD", None)
    os.environ.pop("UPLOADED", None)


def _run(pytester: pytest.Pytester, kind: str, uploaded: str, *args: str) -> pytest.RunResult:
    os.environ["UPLOAD"], os.environ["UPLOADED"] = kind, uploaded
    # in process: pytester takes the project's modules (server, test_upload) away after each run,
    # and vcrpy's patches are undone at the end of each cassette, as test_recorded.py's vcr tests rely on
    return pytester.runpytest("-p", "no:cacheprovider", "-q", "-rN", "-s", *args)


@pytest.mark.parametrize("kind", ["batch", "audio"])
@pytest.mark.parametrize("way", ["vcr marker", "recorded fixture"])
def test_an_upload_recorded_once_replays_and_a_changed_part_is_named(
    pytester: pytest.Pytester, upload_env: None, way: str, kind: str
) -> None:
    pytester.makepyfile(server=SERVER, test_upload=MARKED if way == "vcr marker" else FIXTURE)
    cassette = pytester.path / "cassettes" / "test_upload" / "test_upload.yaml"
    recorded = _run(pytester, kind, '{"custom_id": "1"}', "--record-mode=once")
    recorded.assert_outcomes(passed=1)
    stored = cassette.read_text(encoding="utf-8")
    replayed = _run(pytester, kind, '{"custom_id": "1"}', "--block-network")  # a new boundary, the same parts
    replayed.assert_outcomes(passed=1)
    assert REPLY[kind] in replayed.stdout.str()

    changed = _run(pytester, kind, '{"custom_id": "2"}', "--block-network")
    changed.assert_outcomes(failed=1)
    output = changed.stdout.str()
    part = "content.custom_id" if kind == "batch" else "content"
    assert f"multipart[1].{part}: sent" in output, output
    assert cassette.read_text(encoding="utf-8") == stored  # a replay writes nothing


def test_a_binary_part_differing_in_one_byte_is_a_mismatch(pytester: pytest.Pytester, upload_env: None) -> None:
    """Binary content is compared by its digest, not by a lossy text reading of it."""
    pytester.makepyfile(server=SERVER, test_upload=MARKED)
    _run(pytester, "audio", "\u00e9", "--record-mode=once").assert_outcomes(passed=1)
    _run(pytester, "audio", "\u00e9", "--block-network").assert_outcomes(passed=1)
    changed = _run(pytester, "audio", "\u00e8", "--block-network")  # one byte of the UTF-8 differs
    changed.assert_outcomes(failed=1)
    assert "multipart[1].content: sent" in changed.stdout.str() and "bytes, sha256" in changed.stdout.str()
