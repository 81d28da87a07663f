"""Issue 34's attacks on ``harness proxy`` as a process on the machine or a page in its browser sends them.

The proxy is left running with real keys and AWS credentials in its environment, recording
cassettes that get committed. Each attack here is sent as the attacker would (raw sockets where no
SDK would send it) to the installed command, and must be answered without anything reaching disk,
stderr or a server it should not: a loopback "canary" the attacks point at must see no connection.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import socket
import subprocess
import zlib
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from harness.emulator import Emulator, FrontDoor
from harness.proxy import Proxy
from harness.proxy._intake import json_problem
from harness.wire import (
    MAX_DEPTH,
    BodyDecodingError,
    BodyTooLargeError,
    RouteError,
    check_values,
    decoded,
    route_by_path,
)
from tests.harness.proxy.conftest import CHAT, KEY
from tests.harness.support import console_script, run_cli

pytest.importorskip("uvicorn", reason="the proxy serves with the emulator extra (starlette, uvicorn)")

TOKEN = "ya29.fabricated-google-token-0c4e"
"""A Google access token's shape, fabricated: what a Vertex client sends and an attacker wants."""

LIMIT = 256 * 1024
"""``--max-body`` of the proxy under attack: above the 100,000-deep JSON (200 kB), so that reaches the JSON check."""


def _raw(port: int, head: str, body: bytes = b"", *, close: bool = False) -> tuple[int, bytes]:
    """Send ``head`` (request line and headers, CRLF-joined here) and ``body`` as they are; the status
    and body of the reply. ``close``: hang up without reading (a client gone mid-body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(("\r\n".join([*head.strip().splitlines(), "Connection: close", "", ""])).encode("latin-1") + body)
        if close:
            return 0, b""
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    status_line, _, rest = received.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def _message(reply: bytes) -> str:
    """The error message of an OpenAI, Gemini or neutral envelope."""
    return str(json.loads(reply)["error"]["message"])


def _environment() -> dict[str, str]:
    """The proxy's environment: fabricated keys and AWS credentials, as on a machine that records."""
    kept = {k: v for k, v in os.environ.items() if not k.endswith(("_BASE_URL", "_API_KEY")) and "AWS" not in k}
    fake_aws = {"AWS_ACCESS_KEY_ID": "AKIAFABRICATED0EXAMPLE", "AWS_SECRET_ACCESS_KEY": "fabricated/secret/key/0123456"}
    return {**kept, "OPENAI_API_KEY": KEY, **fake_aws}


def test_the_proxy_command_refuses_every_attack_and_nothing_reaches_disk_its_log_or_another_server(
    tmp_path: Path,
) -> None:
    canary = socket.create_server(("127.0.0.1", 0))  # connections queue here, accepted or not
    port_c = canary.getsockname()[1]
    cassette = tmp_path / "cassettes" / "agent.yaml"
    command = [console_script(), "proxy", "--cassette", str(cassette), "--port", "0", "--max-body", str(LIMIT)]
    command += ["--allow-origin", "http://localhost:3000"]
    process = subprocess.Popen(command, env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().strip().rpartition(":")[2])
        _attack(port, port_c)
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    canary.setblocking(False)
    with pytest.raises(BlockingIOError):
        canary.accept()  # the canary was never connected to
    canary.close()
    assert process.returncode == 0, err  # refusals and a client gone are not the run's problems
    assert not (tmp_path / "cassettes").exists()
    assert "Traceback" not in err and "bug in the harness" not in err
    assert TOKEN not in err + out and "evil" not in err + out and "AKIA" not in err + out


def _attack(port: int, port_c: int) -> None:
    """The attacks, each with the answer it must get."""
    here, chat = f"Host: 127.0.0.1:{port}", "POST /v1/chat/completions HTTP/1.1"
    body = json.dumps(CHAT).encode()
    length = f"Content-Type: application/json\nContent-Length: {len(body)}"
    # a client that hangs up mid-body: first, so it is handled long before the proxy stops
    _raw(port, f"{chat}\n{here}\nContent-Length: 1000", b'{"model": "gpt', close=True)
    # DNS rebinding: a page's own name, pointed at 127.0.0.1
    status, reply = _raw(port, f"{chat}\nHost: evil.example:{port}\n{length}", body)
    assert status == 403 and "Host header must name this server" in _message(reply)
    # a cross-origin form post (text/plain needs no preflight), and a fetch with metadata but no Origin
    status, reply = _raw(port, f"{chat}\n{here}\nOrigin: http://evil.example\nContent-Type: text/plain", body)
    assert status == 403 and "--allow-origin" in _message(reply)
    status, reply = _raw(port, f"{chat}\n{here}\nSec-Fetch-Site: cross-site\nSec-Fetch-Mode: no-cors\n{length}", body)
    assert status == 403
    # an absolute-form target naming the canary
    absolute = f"POST http://127.0.0.1:{port_c}/v1/chat/completions HTTP/1.1"
    assert _raw(port, f"{absolute}\n{here}\n{length}", body)[0] == 403
    # a Vertex location that names a host, with the client's token
    gemini = json.dumps({"contents": [{"parts": [{"text": "Hi"}]}]}).encode()
    for location in (f"127.0.0.1:{port_c}#", f"127.0.0.1:{port_c}"):
        vertex = f"POST /v1/projects/p/locations/{location}/publishers/google/models/gemini-2.0-flash:generateContent"
        head = f"{vertex} HTTP/1.1\n{here}\nAuthorization: Bearer {TOKEN}\nContent-Length: {len(gemini)}"
        status, reply = _raw(port, head, gemini)
        assert status == 400 and json.loads(reply)["error"]["status"] == "INVALID_ARGUMENT", reply
    # too large: said by Content-Length before reading, and counted in a chunked body, stopped at the limit
    status, reply = _raw(port, f"{chat}\n{here}\nContent-Length: {10 * 2**30}")
    assert status == 413 and "nothing was read" in _message(reply)
    chunks = b"".join(b"%x\r\n%s\r\n" % (2**16, b"a" * 2**16) for _ in range(LIMIT // 2**16)) + b"1\r\na\r\n"
    status, reply = _raw(port, f"{chat}\n{here}\nTransfer-Encoding: chunked", chunks)
    assert status == 413 and "reading stopped" in _message(reply)
    # bodies no provider takes: each a 400 in OpenAI's envelope naming what is wrong
    deep = b"[" * 100_000 + b"]" * 100_000
    bomb = gzip.compress(b" " * (LIMIT + 1))
    for sent, coding, said in [
        (deep, "", "nests deeper than 128 levels"),
        (b'{"messages": ["\\ud800"]}', "", "lone UTF-16 surrogate (\\ud800)"),
        (b'{"model": "\xff"}', "", "not UTF-8 text (byte 0xff at offset 11)"),
        (b"model=gpt", "", "Expecting value"),
        (b"\x1f\x8bnot gzip at all", "gzip", "does not decode"),
    ]:
        head = f"{chat}\n{here}\nContent-Length: {len(sent)}" + (f"\nContent-Encoding: {coding}" if coding else "")
        status, reply = _raw(port, head, sent)
        assert status == 400 and said in _message(reply), reply
    status, reply = _raw(port, f"{chat}\n{here}\nContent-Encoding: gzip\nContent-Length: {len(bomb)}", bomb)
    assert status == 413, reply
    # the door is shut to those only: an allowed page, and this machine by name, pass it (to a 404: nothing sent)
    status, reply = _raw(port, f"GET /v1/models HTTP/1.1\nHost: localhost:{port}\nOrigin: http://localhost:3000")
    assert status == 404 and "no provider serves" in _message(reply)


def test_a_gzip_body_is_stored_and_matched_as_the_json_it_is(tmp_path: Path, environ: dict[str, Any]) -> None:
    """The same JSON compressed at two moments (gzip's header holds the time) is one request."""
    cassette, body = tmp_path / "run.yaml", json.dumps(CHAT).encode()
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    with Emulator("Sunny.") as emulator, Proxy(cassette, upstream=emulator.base_url, environ=environ) as proxy:
        sent = httpx2.post(
            proxy.base_url + "/v1/chat/completions", content=gzip.compress(body, mtime=1), headers=headers
        )
        assert sent.status_code == 200, sent.text
        assert emulator.requests[0].body == CHAT  # sent on decoded
    assert proxy.finish().problems == []
    request = yaml.safe_load(cassette.read_text(encoding="utf-8"))["interactions"][0]["request"]
    assert json.loads(request["body"]) == CHAT
    assert not any(name.lower() == "content-encoding" for name in request["headers"])
    with Proxy(cassette, mode="none", environ=environ) as proxy:
        again = httpx2.post(
            proxy.base_url + "/v1/chat/completions", content=gzip.compress(body, mtime=2), headers=headers
        )
    assert again.status_code == 200 and proxy.finish().problems == []


def test_harness_emulate_answers_only_requests_addressed_to_it_and_journals_no_other(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text("turns:\n  - Hi.\n  - Hi again.\n", encoding="utf-8")
    journal, page = tmp_path / "journal.jsonl", {"origin": "http://localhost:3000"}
    command = [console_script(), "emulate", "--script", str(tmp_path / "s.yaml"), "--port", "0"]
    command += ["--journal", str(journal), "--allow-origin", "http://localhost:3000/"]
    process = subprocess.Popen(command, env=_environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        base = process.stdout.readline().strip()
        port, body = int(base.rpartition(":")[2]), json.dumps(CHAT).encode()
        chat = f"POST /v1/chat/completions HTTP/1.1\nContent-Length: {len(body)}"
        assert _raw(port, f"{chat}\nHost: evil.example:{port}", body)[0] == 403
        assert _raw(port, f"{chat}\nHost: 127.0.0.1:{port}\nOrigin: null", body)[0] == 403
        asked = {**page, "access-control-request-method": "POST"}
        preflight = httpx2.options(base + "/v1/chat/completions", headers=asked)
        assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == page["origin"]
        answered = httpx2.post(base + "/v1/chat/completions", json=CHAT, headers=page)
        assert answered.status_code == 200 and answered.headers["access-control-allow-origin"] == page["origin"]
        # Node's own fetch sends Sec-Fetch-Mode on every request, and no Sec-Fetch-Site: no browser
        assert httpx2.post(base + "/v1/chat/completions", json=CHAT, headers={"sec-fetch-mode": "cors"}).is_success
        # a browser's own navigation (typed in the address bar) is no page's request
        typed = httpx2.get(base + "/_emulator/requests", headers={"sec-fetch-site": "none"})
        assert typed.status_code == 200 and len(typed.json()) == 2
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert len(journal.read_text(encoding="utf-8").splitlines()) == 2  # the refused ones never reached it


def test_allow_remote_answers_an_address_but_never_a_name() -> None:
    door = FrontDoor.of(allow_remote=True)
    emulator = Emulator("Hi.")
    emulator.door = door
    with emulator:
        port = emulator.port
        get = "GET /_emulator/requests HTTP/1.1"
        assert _raw(port, f"{get}\nHost: 192.0.2.7:{port}")[0] == 200
        assert _raw(port, f"{get}\nHost: evil.example:{port}")[0] == 403
        assert _raw(port, f"{get}\nHost: 192.0.2.7:{port + 1}")[0] == 403


@pytest.mark.parametrize("command", ["proxy", "emulate"])
def test_listening_beyond_loopback_or_a_bad_origin_is_refused_in_one_line(command: str, tmp_path: Path) -> None:
    first = ["--cassette", str(tmp_path / "c.yaml")] if command == "proxy" else ["--script", str(tmp_path / "s.yaml")]
    (tmp_path / "s.yaml").write_text("turns:\n  - Hi.\n", encoding="utf-8")
    remote = run_cli(command, *first, "--host", "0.0.0.0", "--port", "0")
    assert remote.returncode == 2 and "--allow-remote" in remote.stderr and remote.stderr.count("\n") == 1
    origin = run_cli(command, *first, "--allow-origin", "localhost:3000/app", "--port", "0")
    assert origin.returncode == 2 and "is not an origin" in origin.stderr
    if command == "proxy":
        size = run_cli(command, *first, "--max-body", "a lot", "--port", "0")
        assert size.returncode == 2 and "--max-body 'a lot' is not a size" in size.stderr


@pytest.mark.parametrize(
    ("value", "kind", "valid"),
    [
        ("us-east-1", "region", True),
        ("us-gov-west-1", "region", True),
        ("ap-southeast-5", "region", True),
        ("evil", "region", False),
        ("us-east-1x", "region", False),
        ("global", "location", True),
        ("us", "location", True),
        ("eu", "location", True),
        ("europe-west4", "location", True),
        ("northamerica-northeast1", "location", True),
        ("127.0.0.1:8080#", "location", False),
        ("evil.example", "location", False),
    ],
)
def test_a_region_or_location_is_one_only_when_it_has_the_providers_shape(value: str, kind: str, valid: bool) -> None:
    path = (
        f"/v1/projects/p/locations/{value}/publishers/google/models/g:generateContent"
        if kind == "location"
        else "/model/m/converse"
    )
    headers = [("authorization", f"AWS4-HMAC-SHA256 Credential=AKIA/20260101/{value}/bedrock/aws4_request")]
    destination = route_by_path(path, headers)
    assert destination is not None and destination.region == value
    if valid:
        check_values(destination)
    else:
        with pytest.raises(RouteError, match="is not a"):
            check_values(destination)


def test_bodies_are_decoded_to_the_limit_and_no_further() -> None:
    text = b'{"a": 1}'
    assert decoded(gzip.compress(text) + gzip.compress(text), ["gzip"], 100) == text + text  # two members
    assert decoded(zlib.compress(text), ["deflate"], 100) == text
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert decoded(raw_deflate.compress(text) + raw_deflate.flush(), ["deflate"], 100) == text
    assert decoded(gzip.compress(zlib.compress(text)), ["deflate", "gzip"], 100) == text
    with pytest.raises(BodyTooLargeError):
        decoded(gzip.compress(b"0" * 101), ["gzip"], 100)
    with pytest.raises(BodyDecodingError, match="cut short"):
        decoded(gzip.compress(text)[:-6], ["gzip"], 100)
    with pytest.raises(BodyDecodingError, match="br is not read"):
        decoded(text, ["br"], 100)


def test_json_a_provider_takes_passes_and_what_it_would_refuse_is_named() -> None:
    nested = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert json_problem(nested) is None
    assert json_problem(json.dumps({"t": "\U0001f600 caf\u00e9"}).encode()) is None  # a surrogate pair is a character
    assert "nests deeper than" in str(json_problem(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)))
    assert "nests deeper than" in str(json_problem(b'{"a": ' * 600 + b"1" + b"}" * 600))
    assert "NaN is not JSON" in str(json_problem(b'{"a": NaN}'))
    assert "not UTF-8 text (byte 0xc3 at offset 7)" in str(json_problem(b'{"a": "\xc3"}'))
