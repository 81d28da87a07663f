"""What ``harness proxy`` writes and says when the client's own keys, links, failing disks, cut streams and
a stop in mid-request meet it (issue 34): the installed command against a loopback upstream this test
starts, its cassettes and its output searched for every key a client sent; the rest in process."""

from __future__ import annotations

import errno
import http.client
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import pytest

from harness.proxy import Proxy
from harness.proxy._cassette_select import CassetteChoiceError, Cassettes
from harness.recording import open_recording, redact, request_secrets
from tests.harness.proxy.test_proxy_command import _environment
from tests.harness.support import console_script

pytest.importorskip("uvicorn", reason="the proxy serves with the emulator extra (starlette, uvicorn)")

GATEWAY_KEY = "cfk-7Hq2LmP9xW4vR1tZ"  # no key shape: found by its header's name
PORTKEY_KEY = "pk-Zt81Qa9Lw3Ve6Yb"
HELICONE_KEY = "sk-helicone-4Rt7Yp2Wq9"
CLIENT_KEY = "sk-client-echoed-9Kd3Fj7Lm2"  # echoed back split across two events
BODY_KEY = "sk-ant-inbody-5Gh8Jk1Nm4Pq"
GEMINI_KEY = "AIzaSyD-fabricated-query-key-0123456"
SLOW_KEY = "sk-slow-in-flight-3Vb6Nm9Qw"
KEYS = (GATEWAY_KEY, PORTKEY_KEY, HELICONE_KEY, CLIENT_KEY, BODY_KEY, GEMINI_KEY, SLOW_KEY)

CHAT_PATH = "/v1/chat/completions"
GEMINI_PATH = "/v1beta/models/gemini-2.0-flash:generateContent"


def _chat_reply(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    return json.dumps({"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "message": message}]}).encode()


def _event(text: str) -> bytes:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


class _Upstream(BaseHTTPRequestHandler):
    """A provider stand-in: answers, echoes the client's key split across events, cuts a stream,
    holds a request, or drops the connection, as the request's ``x-test`` header asks."""

    protocol_version = "HTTP/1.1"
    released = threading.Event()
    delays: ClassVar[dict[str, float]] = {}

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        try:
            self._answer()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the proxy stopped waiting (a request in flight at its stop)

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        behaviour = self.headers.get("x-test", "answer")
        if self.path.startswith("/v1beta/"):
            self.close_connection = True  # dropped unanswered: "could not be sent"
            return
        if behaviour == "hold":
            self.released.wait(30)
        time.sleep(self.delays.get(behaviour, 0))
        if behaviour in ("echo", "cut"):
            key = self.headers.get("authorization", "").removeprefix("Bearer ")
            events = [_event(key[:6]), _event(key[6:])] if behaviour == "echo" else [_event("Hello"), _event("wor")]
            body = b"".join(events) + (b"data: [DONE]\n\n" if behaviour == "echo" else b"")
            if behaviour == "cut":  # unframed: no length, no chunks; the end is the connection closing
                body = body[:-10]
                self.close_connection = True
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            if behaviour == "echo":
                self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if behaviour in ("short", "chunks"):  # framed, then the connection ends before the framing says
            self._framed_then_cut(behaviour)
            return
        body = _chat_reply(f"answer to {behaviour}")
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _framed_then_cut(self, framing: str) -> None:
        sent = _event("Hello") + _event("wor")
        self.close_connection = True
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        if framing == "short":
            self.send_header("content-length", str(len(sent) + 100))
        else:
            self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.write(sent if framing == "short" else b"%x\r\n%s\r\n" % (len(sent), sent))
        self.wfile.flush()


@pytest.fixture
def upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Upstream.released.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        _Upstream.released.set()
        server.shutdown()
        server.server_close()


def _post(base: str, path: str, body: Any, headers: dict[str, str]) -> tuple[int, bytes, str]:
    """Status, body and how the reply ended ("whole" or the error that cut it)."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        data = json.dumps(body).encode()
        connection.request("POST", path, body=data, headers={"content-type": "application/json", **headers})
        response = connection.getresponse()
        try:
            return response.status, response.read(), "whole"
        except (http.client.IncompleteRead, ConnectionError) as exc:
            return response.status, b"", type(exc).__name__
    finally:
        connection.close()


def _chat(content: str) -> dict[str, Any]:
    return {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]}


def _file_size_limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


@contextmanager
def _proxy_process(cwd: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    command = [console_script(), "proxy", *args, "--port", "0"]
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_file_size_limit,  # a cassette over 64 KiB fails with EFBIG, as under `ulimit -f`
    )
    try:
        assert process.stdout is not None
        base = process.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:"), base
        yield base, process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)


def test_through_the_command_no_client_key_reaches_disk_or_the_output_and_every_ending_is_said(
    tmp_path: Path, upstream: str
) -> None:
    library, elsewhere = tmp_path / "cassettes", tmp_path / "elsewhere"
    library.mkdir()
    elsewhere.mkdir()
    (library / "linked").symlink_to(elsewhere, target_is_directory=True)
    (library / "real.yaml").touch()
    (library / "alias.yaml").symlink_to(library / "real.yaml")
    (library / "blocked").write_text("a file where a folder must be\n")
    replies: dict[str, tuple[int, bytes, str]] = {}
    with _proxy_process(tmp_path, "--cassette", str(library), "--upstream", upstream) as (base, process):

        def ask(name: str, body: Any, path: str = CHAT_PATH, **headers: str) -> None:
            replies[name] = _post(base, f"/cassette/{quote(name, safe='')}{path}", body, headers)

        gateway = {"cf-aig-authorization": f"Bearer {GATEWAY_KEY}", "x-portkey-api-key": PORTKEY_KEY}
        ask("gateways", _chat("hi"), **gateway, **{"Helicone-Auth": f"Bearer {HELICONE_KEY}"})
        ask("echoed", {**_chat("hi"), "stream": True}, **{"x-test": "echo", "authorization": f"Bearer {CLIENT_KEY}"})
        ask("in_body", _chat(f"my key is {BODY_KEY}"))
        ask("gemini", {"contents": []}, f"{GEMINI_PATH}?key={GEMINI_KEY}")
        ask("cut", {**_chat("hi"), "stream": True}, **{"x-test": "cut"})
        ask("linked/escape", _chat("hi"))
        ask("real", _chat("one"))
        ask("alias", _chat("two"))
        ask("blocked/inner", _chat("hi"))
        ask("after_blocked", _chat("hi"))
        ask("too_large", _chat("x" * 70_000))
        held = threading.Thread(
            target=ask, args=("held", _chat("hold")), kwargs={"x-test": "hold", "authorization": f"Bearer {SLOW_KEY}"}
        )
        held.start()
        time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        held.join(30)
    written = {path.relative_to(tmp_path).as_posix(): path.read_text() for path in tmp_path.rglob("*.yaml")}
    everything = out + err + "".join(written.values())
    for key in KEYS:  # no form of a key the client sent: on disk, on stdout, on stderr
        assert not any(form in everything for form in (key, key[:6] + "…", json.dumps(key)[1:-1])), key
        assert key[6:] not in everything, key  # nor the half of the echoed one after the split
    assert process.returncode == 1, err
    assert "Traceback" not in err and "bug in the harness" not in err, err
    # the gateways' headers are scrubbed from a cassette that is written
    assert "cassettes/gateways.yaml" in written and "portkey" not in written["cassettes/gateways.yaml"]
    # a key echoed split across events, or sent in the body: that cassette is not written, and said
    for name in ("echoed", "in_body"):
        assert f"cassettes/{name}.yaml" not in written
        assert f"{name}.yaml: not written, it would hold a credential" in err
    assert "split across events" in err
    assert replies["gemini"][0] == 502 and "could not be sent to be recorded" in err  # its ?key= gone (above)
    # the cut stream reaches the client cut, is not recorded, and is named
    assert replies["cut"][0] == 200 and replies["cut"][2] != "whole"
    assert "cassettes/cut.yaml" not in written and "the upstream cut its streamed reply" in err
    # a name through a linked directory is refused; two names of one file are one cassette with both
    assert replies["linked/escape"][0] == 400 and not list(elsewhere.iterdir())
    assert "leads outside" in replies["linked/escape"][1].decode()
    assert written["cassettes/real.yaml"].count("- request:") == 2 and (library / "alias.yaml").is_symlink()
    # a cassette that cannot be written is named with its reason; the next one is still written
    assert "blocked/inner.yaml: not written: " in err and "cassettes/after_blocked.yaml" in written
    assert "too_large.yaml: not written: File too large" in err and "cassettes/too_large.yaml" not in written
    # the request in flight at the stop: named, and its client told in the provider's envelope
    assert "POST /cassette/held/v1/chat/completions: still unanswered when the proxy stopped" in err
    status, body, _ = replies["held"]
    assert status == 503 and json.loads(body)["error"]["message"].startswith("harness proxy: the proxy stopped")


# ---------------------------------------------------------------------------------------------
# In process
# ---------------------------------------------------------------------------------------------


def test_every_credential_form_a_request_carries_is_a_secret_and_redacted() -> None:
    import base64

    basic = base64.b64encode(b"user:basic-secret-value").decode()
    headers = [
        ("authorization", "Bearer sk-proj-abcdef123456"),
        ("x-gateway", f"Basic {basic}"),
        ("x-custom", "AKIAABCDEFGHIJKLMNOP"),
        ("user-agent", "OpenAI/Python 1.2.3"),
        ("x-api-key", "short"),
    ]
    secrets = request_secrets(
        headers, "https://u:pass-in-url-99@h/x?key=query-key-123&alt=sse", b'{"k": "ya29.token-xyz123"}'
    )
    for value in ("sk-proj-abcdef123456", "basic-secret-value", "AKIAABCDEFGHIJKLMNOP", "pass-in-url-99"):
        assert value in secrets
    assert "query-key-123" in secrets and "ya29.token-xyz123" in secrets
    assert not any("OpenAI" in value or value == "short" for value in secrets)
    said = redact(f"sent https://h/x?key=query-key-123 with {basic} and {json.dumps('sk-proj-abcdef123456')}", secrets)
    assert "query-key-123" not in said and basic not in said and "sk-proj-abcdef123456" not in said


def test_each_cassette_is_saved_on_its_own_and_a_failure_is_named_not_called_a_bug(tmp_path: Path) -> None:
    cassettes = Cassettes(tmp_path, "all")
    outcome_of: dict[int, str] = {}
    for number, code in enumerate((errno.ENOSPC, errno.EFBIG, errno.EACCES, errno.EEXIST)):
        path = cassettes.path_for(f"c{number}")
        recording = cassettes.recording(path)
        recording.cassette.dirty = True
        recording.save = _raising(OSError(code, os.strerror(code), str(path)))
        outcome_of[number] = os.strerror(code)
    kept = cassettes.recording(cassettes.path_for("kept"))
    kept.cassette.dirty = True
    outcome = cassettes.finish()
    assert len(outcome.problems) == 4 and outcome.written == [f"{tmp_path / 'kept.yaml'} (0 interaction(s))"]
    for number, reason in outcome_of.items():
        assert f"{tmp_path / f'c{number}.yaml'}: not written: {reason}" in outcome.problems[number]
    assert not any("bug" in problem for problem in outcome.problems)


def _raising(exc: Exception) -> Any:
    def save() -> None:
        raise exc

    return save


def test_a_name_must_stay_inside_the_library_and_one_file_is_one_cassette(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    library = tmp_path / "lib"
    library.mkdir()
    (library / "out").symlink_to(outside, target_is_directory=True)
    (library / "leak.yaml").symlink_to(outside / "leak.yaml")
    cassettes = Cassettes(library, "once")
    for name in ("out/x", "leak"):
        with pytest.raises(CassetteChoiceError, match="leads outside"):
            cassettes.path_for(name)
    (library / "b.yaml").symlink_to(library / "a.yaml")
    assert cassettes.path_for("a") is cassettes.path_for("b")
    linked_file = tmp_path / "link.yaml"  # --cassette FILE that is itself a link: allowed, written through
    linked_file.symlink_to(outside / "target.yaml")
    assert Cassettes(linked_file, "once").path_for(None) == linked_file


def _served(proxy: Proxy, path: str, body: Any, headers: dict[str, str], into: dict[str, Any], name: str) -> None:
    started = time.monotonic()
    into[name] = (*_post(proxy.base_url, path, body, headers), time.monotonic() - started, time.monotonic())


def test_recording_serves_one_cassettes_requests_concurrently_and_appends_each_whole_as_it_completes(
    tmp_path: Path, upstream: str
) -> None:
    _Upstream.delays.update(slow=0.8, fast=0.1)
    cassette = tmp_path / "c.yaml"
    got: dict[str, Any] = {}
    try:
        with Proxy(cassette, mode="once", upstream=upstream) as proxy:
            threads = [
                threading.Thread(target=_served, args=(proxy, CHAT_PATH, _chat(kind), {"x-test": kind}, got, kind))
                for kind in ("slow", "fast")
            ]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            both = time.monotonic() - started
        outcome = proxy.finish()
    finally:
        _Upstream.delays.clear()
    assert not outcome.problems and got["slow"][0] == got["fast"][0] == 200
    assert both < 1.5  # together, not one after another (0.9 s of upstream time)
    assert got["fast"][4] < got["slow"][4]
    text = cassette.read_text()
    assert text.index("answer to fast") < text.index("answer to slow")  # in completion order


def test_the_diff_of_an_unmatched_request_runs_off_the_loop_and_is_bounded(tmp_path: Path, upstream: str) -> None:
    cassette = tmp_path / "c.yaml"
    with Proxy(cassette, mode="once", upstream=upstream) as proxy:
        _post(proxy.base_url, CHAT_PATH, _chat("recorded"), {})
        _post(proxy.base_url, CHAT_PATH, _chat("recorded twice"), {})
    assert not proxy.finish().problems
    recording = open_recording(cassette, "none")
    slow_explain = recording.explain

    def explain(request: Any, number: int) -> Any:
        time.sleep(1.5)  # a diff that takes long: the event loop must not wait for it
        return slow_explain(request, number)

    got: dict[str, Any] = {}
    with Proxy(cassette, mode="none") as proxy:
        proxy.cassettes.opened[proxy.cassettes.path_for(None)] = recording
        recording.explain = explain
        huge = _chat("x" * 2_000_000)
        mismatch = threading.Thread(target=_served, args=(proxy, CHAT_PATH, huge, {}, got, "huge"))
        mismatch.start()
        time.sleep(0.3)
        _served(proxy, CHAT_PATH, _chat("recorded"), {}, got, "match")
        mismatch.join(30)
    proxy.finish()
    assert got["match"][0] == 200 and got["match"][4] < got["huge"][4]  # answered while the diff ran
    status, body, _, _, _ = got["huge"]
    assert status == 400 and len(body) < 200_000
    assert "first difference" in json.loads(body)["error"]["message"]


def test_a_client_that_goes_away_mid_request_is_said_as_such_not_as_a_bug(tmp_path: Path) -> None:
    import asyncio

    proxy = Proxy(tmp_path / "c.yaml", mode="none")
    sent: list[Any] = []
    scope = {
        "type": "http",
        "method": "POST",
        "path": CHAT_PATH,
        "raw_path": CHAT_PATH.encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/json")],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(proxy.app()(scope, receive, send))
    # nobody is left to answer: not a bug of the harness, and not a request it failed (the exit stays 0)
    assert sent[0]["status"] == 499 and not proxy.in_flight
    assert proxy.cassettes.refused == [] and proxy.served == 0


def test_an_upstream_refused_at_start_is_named_without_its_key(tmp_path: Path) -> None:
    from tests.harness.support import run_cli

    done = run_cli(
        "proxy", "--cassette", tmp_path / "c.yaml", "--upstream", f"ftp://u:{CLIENT_KEY}@gw/?key={GEMINI_KEY}"
    )
    assert done.returncode == 2 and "--upstream 'ftp://gw/' is not an http(s) URL" in done.stderr
    assert CLIENT_KEY not in done.stderr + done.stdout and GEMINI_KEY not in done.stderr + done.stdout


@pytest.mark.parametrize("framing", ["short", "chunks"])
def test_a_reply_the_upstream_cut_short_of_its_framing_reaches_the_client_cut_and_is_not_recorded(
    tmp_path: Path, upstream: str, framing: str
) -> None:
    """A Content-Length or a chunked body the upstream's connection ends early: the client must see a
    cut (not a clean end, not a 502 posing as the provider), and no replay may serve it as whole."""
    cassette = tmp_path / "c.yaml"
    with Proxy(cassette, mode="once", upstream=upstream) as proxy:
        status, _, ended = _post(proxy.base_url, CHAT_PATH, {**_chat("hi"), "stream": True}, {"x-test": framing})
    outcome = proxy.finish()
    assert status == 200 and ended != "whole"
    assert not cassette.exists() or "Hello" not in cassette.read_text()
    assert any("the upstream cut its reply" in line and "not recorded" in line for line in outcome.problems)
