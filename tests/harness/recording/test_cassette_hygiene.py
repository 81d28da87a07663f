"""What users of cassettes ask of them on their trackers, through a user's project (pytester):
identical requests replayed in order, parallel tool results matched in any order, re-recording
that never duplicates, a Content-Encoding that says how the body is stored, and cassette names
that fit the file system.
"""

from __future__ import annotations

import pytest
import yaml

from harness.recording import _cassette as cassettes
from tests.harness.support import run_in_process

pytest_plugins = ["pytester"]


# -- identical requests, in the order recorded (vcrpy#842, #839) -----------------------------------

SAME_MARKED = """
import openai, pytest
from harness.emulator import Emulator
from harness.script import turn

@pytest.mark.vcr
@pytest.mark.allow_model_requests
def test_same():
    with Emulator(turn.text("one"), turn.text("two"), turn.text("three")) as emulator:
        client = openai.OpenAI(base_url=emulator.base_url + "/v1", api_key="k", max_retries=0)
        ask = lambda: client.chat.completions.create(model="m", messages=[{"role": "user", "content": "same"}])
        assert [ask().choices[0].message.content for _ in range(3)] == ["one", "two", "three"]
"""


def test_identical_requests_replay_in_the_order_recorded_under_the_vcr_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_same=SAME_MARKED)
    run_in_process(pytester, "--record-mode=once").assert_outcomes(passed=1)
    run_in_process(pytester, "--record-mode=none").assert_outcomes(passed=1)


# -- parallel tool results, in any order (cassetter#27, pytest-vcr#52) -----------------------------

PARALLEL = {  # one request answering two parallel calls; ORDER says in which order the results are sent
    "openai": """
def ask(base_url, order, value):
    import openai
    client = openai.OpenAI(base_url=base_url + "/v1", api_key="k", max_retries=0)
    calls = [{"id": f"call_{n}", "type": "function", "function": {"name": "weather", "arguments": "{}"}} for n in "ab"]
    results = {n: {"role": "tool", "tool_call_id": f"call_{n}", "content": f"{value} in {n}"} for n in "ab"}
    messages = [
        {"role": "user", "content": "weather in a and b?"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        *[results[n] for n in order],
    ]
    return client.chat.completions.create(model="m", messages=messages).choices[0].message.content
""",
    "anthropic": """
def ask(base_url, order, value):
    import anthropic
    client = anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=0)
    calls = [{"type": "tool_use", "id": f"toolu_{n}", "name": "weather", "input": {}} for n in "ab"]
    results = {n: {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"{value} in {n}"} for n in "ab"}
    messages = [
        {"role": "user", "content": "weather in a and b?"},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": [results[n] for n in order]},
    ]
    reply = client.messages.create(model="m", max_tokens=64, messages=messages)
    return reply.content[0].text
""",
}

PARALLEL_TEST = """
import os
import pytest
from harness.emulator import Emulator
from harness.script import turn
{ask}

@pytest.mark.vcr
@pytest.mark.allow_model_requests
def test_parallel():
    with Emulator(turn.text("both sunny")) as emulator:
        assert ask(emulator.base_url, os.environ["ORDER"], os.environ.get("VALUE", "sunny")) == "both sunny"
"""


@pytest.mark.parametrize("wire", sorted(PARALLEL))
def test_parallel_tool_results_match_in_any_order_but_not_with_other_content(
    pytester: pytest.Pytester, wire: str
) -> None:
    pytester.makepyfile(test_parallel=PARALLEL_TEST.format(ask=PARALLEL[wire]))
    run_in_process(pytester, "--record-mode=once", ORDER="ab").assert_outcomes(passed=1)
    run_in_process(pytester, "--record-mode=none", ORDER="ba").assert_outcomes(passed=1)
    changed = run_in_process(pytester, "--record-mode=none", ORDER="ba", VALUE="rainy")
    changed.assert_outcomes(failed=1)  # a result that says something else is another request


# -- re-recording never duplicates (ultimate-notion#388) -------------------------------------------

CONVERSATION = """
import pytest
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

@pytest.fixture
def upstream(recorded):
    if not recorded.records:
        yield None
        return
    with Emulator(turn.text("one"), turn.text("two"), turn.text("one")) as emulator:
        yield emulator.base_url

def test_conversation(recorded, upstream):
    backend = recorded("openai", model="m-1", upstream=upstream)
    answers = [runtime.exec(prompt, provider=backend, tools=[]) for prompt in ("first", "second", "first")]
    assert answers == ["one", "two", "one"]
"""


CONVERSATION_MARKED = """
import openai, pytest
from harness.emulator import Emulator
from harness.script import turn

@pytest.mark.vcr
@pytest.mark.allow_model_requests
def test_conversation():
    with Emulator(turn.text("one"), turn.text("two"), turn.text("one")) as emulator:
        client = openai.OpenAI(base_url=emulator.base_url + "/v1", api_key="k", max_retries=0)
        ask = lambda p: client.chat.completions.create(model="m", messages=[{"role": "user", "content": p}])
        assert [ask(p).choices[0].message.content for p in ("first", "second", "first")] == ["one", "two", "one"]
"""


@pytest.mark.parametrize("kind", ["recorded", "vcr"])
@pytest.mark.parametrize("mode", ["all", "rewrite"])
def test_re_recording_twice_leaves_exactly_one_runs_interactions(
    pytester: pytest.Pytester, mode: str, kind: str
) -> None:
    pytester.makepyfile(test_conv=CONVERSATION if kind == "recorded" else CONVERSATION_MARKED)
    cassette = pytester.path / "cassettes" / "test_conv" / "test_conversation.yaml"
    run_in_process(pytester, "--record-mode=once").assert_outcomes(passed=1)
    once = [(i.request.path, i.request.body.text) for i in cassettes.load(cassette)]
    assert len(once) == 3
    for _ in range(2):
        run_in_process(pytester, f"--record-mode={mode}").assert_outcomes(passed=1)
        assert [(i.request.path, i.request.body.text) for i in cassettes.load(cassette)] == once
    run_in_process(pytester, "--record-mode=none").assert_outcomes(passed=1)


# -- Content-Encoding consistent with the stored body (lmnr-python#326) ----------------------------

GZIP_SERVER = """
import gzip, json, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import pytest

REPLY = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m-1",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "unzipped"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = gzip.compress(json.dumps(REPLY).encode())
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

@pytest.fixture
def gzip_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
"""

GZIP_TESTS = """
import openai, pytest
from openprogram import runtime

@pytest.fixture
def upstream(recorded, request):
    yield request.getfixturevalue("gzip_server") if recorded.records else None

def test_recorded(recorded, upstream):
    backend = recorded("openai", model="m-1", stream=False, upstream=upstream)
    assert runtime.exec("hi", provider=backend, tools=[]) == "unzipped"

@pytest.mark.vcr
@pytest.mark.allow_model_requests
def test_marked(request, record_mode):
    base = request.getfixturevalue("gzip_server") if record_mode != "none" else "http://127.0.0.1:9"
    client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
    reply = client.chat.completions.create(model="m-1", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "unzipped"
"""


def test_a_gzip_reply_is_stored_decoded_without_its_content_encoding_and_replays(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(GZIP_SERVER)
    pytester.makepyfile(test_gzip=GZIP_TESTS)
    run_in_process(pytester, "--record-mode=once").assert_outcomes(passed=2)
    for name in ("test_recorded", "test_marked"):
        cassette = pytester.path / "cassettes" / "test_gzip" / f"{name}.yaml"
        [interaction] = yaml.safe_load(cassette.read_text(encoding="utf-8"))["interactions"]
        response = interaction["response"]
        headers = {key.lower(): value for key, value in response["headers"].items()}
        assert "content-encoding" not in headers, name  # stored decoded: nothing says gzip
        assert '"content": "unzipped"' in response["body"]["string"], name
        length = headers.get("content-length")
        assert length is None or int(length[0]) == len(response["body"]["string"].encode()), name
    run_in_process(pytester, "--record-mode=none").assert_outcomes(passed=2)


DECODING_FILTER = """

@pytest.fixture
def vcr_config():
    def decode_body_only(response):  # a project's own filter that forgets the header (lmnr-python#326)
        body = response["body"]["string"]
        if body[:2] == b"\\x1f\\x8b":
            response["body"]["string"] = gzip.decompress(body)
        return response
    return {"decode_compressed_response": False, "before_record_response": decode_body_only}
"""


def _encodings(pytester: pytest.Pytester) -> dict[str, list[str]]:
    found = {}
    for name in ("test_recorded", "test_marked"):
        data = yaml.safe_load((pytester.path / "cassettes" / "test_gzip" / f"{name}.yaml").read_text(encoding="utf-8"))
        headers = data["interactions"][0]["response"]["headers"]
        found[name] = [value for key, value in headers.items() if key.lower() == "content-encoding"]
    return found


def test_a_body_stored_decoded_never_keeps_a_gzip_content_encoding(pytester: pytest.Pytester) -> None:
    # recorded through a project filter that decodes the body and leaves the header
    pytester.makeconftest(GZIP_SERVER + DECODING_FILTER)
    pytester.makepyfile(test_gzip=GZIP_TESTS)
    run_in_process(pytester, "--record-mode=once").assert_outcomes(passed=2)
    assert _encodings(pytester) == {"test_recorded": [], "test_marked": []}
    run_in_process(pytester, "--record-mode=none").assert_outcomes(passed=2)
    # a cassette written by another tool that way: it replays too (the header is not believed)
    for name in ("test_recorded", "test_marked"):
        cassette = pytester.path / "cassettes" / "test_gzip" / f"{name}.yaml"
        data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
        data["interactions"][0]["response"]["headers"]["Content-Encoding"] = ["gzip"]
        cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    run_in_process(pytester, "--record-mode=none").assert_outcomes(passed=2)


# -- cassette names that fit the file system (pytest-recording#172) --------------------------------

LONG_IDS = """
import openai, pytest
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

CASES = ["{a}", "{b}"]

@pytest.mark.parametrize("case", CASES, ids=CASES)
def test_recorded(recorded, case):
    with Emulator(turn.text(case[:5])) as emulator:
        backend = recorded("openai", model="m-1", upstream=emulator.base_url if recorded.records else None)
        assert runtime.exec(case, provider=backend, tools=[]) == case[:5]

@pytest.mark.vcr
@pytest.mark.allow_model_requests
@pytest.mark.parametrize("case", CASES, ids=CASES)
def test_marked(case, record_mode):
    with Emulator(turn.text(case[:5])) as emulator:
        client = openai.OpenAI(base_url=emulator.base_url + "/v1", api_key="k", max_retries=0)
        reply = client.chat.completions.create(model="m", messages=[{{"role": "user", "content": case}}])
        assert reply.choices[0].message.content == case[:5]
"""


def test_long_parametrized_ids_get_names_that_fit_and_stay_apart(pytester: pytest.Pytester) -> None:
    first, second = "x" * 300 + "-first", "x" * 300 + "-second"  # alike for their first 300 characters
    pytester.makepyfile(test_long=LONG_IDS.format(a=first, b=second))
    run_in_process(pytester, "--record-mode=once").assert_outcomes(passed=4)
    names = sorted(path.name for path in (pytester.path / "cassettes" / "test_long").iterdir())
    assert len(names) == 4 and all(len(name.encode()) <= 255 for name in names), names
    assert not [name for name in names if name.endswith(".tmp")]
    again = sorted(path.name for path in (pytester.path / "cassettes" / "test_long").iterdir())
    assert again == names
    run_in_process(pytester, "--record-mode=none").assert_outcomes(passed=4)  # the same names are found again


# -- recording in parallel (pytest-xdist) ----------------------------------------------------------

PARALLEL_PROJECT = """
import pytest
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

@pytest.mark.parametrize("n", range(6))
def test_recorded(recorded, n):
    with Emulator(turn.text(f"fixture {n}"), turn.text("again")) as emulator:
        upstream = emulator.base_url if recorded.records else None
        backend = recorded("openai", model="m-1", stream=n % 2 == 1, upstream=upstream)
        assert [runtime.exec(f"ask {n}", provider=backend, tools=[]) for _ in range(2)] == [f"fixture {n}", "again"]

@pytest.mark.vcr
@pytest.mark.parametrize("n", range(6))
def test_marked(n):
    import openai
    with Emulator(turn.text(f"marker {n}")) as emulator:
        client = openai.OpenAI(base_url=emulator.base_url + "/v1", api_key="k", max_retries=0)
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"ask {n}"}])
        assert reply.choices[0].message.content == f"marker {n}"
"""


def test_recording_and_replaying_under_xdist_writes_each_cassette_whole_once(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (it is in the dev extra)")
    pytester.makepyfile(test_parallel=PARALLEL_PROJECT)
    # in fresh processes, as a user's `pytest -n 2` starts its workers
    recorded = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "-n", "2", "--record-mode=once")
    recorded.assert_outcomes(passed=12)
    folder = pytester.path / "cassettes" / "test_parallel"
    files = sorted(path.name for path in folder.iterdir())
    assert files == sorted(
        [f"test_recorded[{n}].yaml" for n in range(6)] + [f"test_marked[{n}].yaml" for n in range(6)]
    )
    for n in range(6):  # each its own test's interactions, none lost or borrowed from another worker
        assert [
            i.request.body.json["messages"][0]["content"] for i in cassettes.load(folder / f"test_recorded[{n}].yaml")
        ] == [f"ask {n}"] * 2
        [marked] = cassettes.load(folder / f"test_marked[{n}].yaml")
        assert f"marker {n}" in marked.response.body.text
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "-n", "2", "--block-network")
    replayed.assert_outcomes(passed=12)
