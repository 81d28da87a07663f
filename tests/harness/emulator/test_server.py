"""The emulator itself: one script across providers, request capture, the beyond-the-script error,
the provider registry, faults on the wire, in process and on a port, and ``serve`` in another
process answering unmodified official clients."""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from harness.emulator import Emulator, fault
from harness.emulator._server import load_providers
from harness.script import ScriptedCall, turn
from openprogram.providers import ModelRequest
from openprogram.types import ToolSpec, UserMessage
from tests.harness.emulator.wirecheck import one_reply, sdk_client, sse_events
from tests.harness.support import emulate_process, start_emulate

CHAT = "/v1/chat/completions"


async def _post(emu: Emulator, path: str, body: dict[str, Any], **headers: str) -> httpx2.Response:
    async with emu.http_client() as client:
        return await client.post(f"http://emulator{path}", json=body, headers=headers)


def _post_sync(emu: Emulator, path: str, body: dict[str, Any], **headers: str) -> httpx2.Response:
    return asyncio.run(_post(emu, path, body, **headers))


def test_one_script_serves_requests_of_every_provider_in_order() -> None:
    emu = Emulator(turn.text("from openai"), turn.text("from anthropic"))
    assert one_reply(emu, "openai", "chat.completions", stream=True).text == "from openai"
    assert one_reply(emu, "anthropic", "messages", stream=False).text == "from anthropic"
    assert [r.route.provider for r in emu.requests] == ["openai", "anthropic"]


def test_a_request_beyond_the_script_gets_the_providers_error_naming_the_request_number() -> None:
    emu = Emulator("only one")
    assert one_reply(emu, "anthropic", "messages", stream=True).text == "only one"
    message = one_reply(emu, "anthropic", "messages", stream=True)
    assert message.stop_reason == "error"
    assert "request 2 is beyond the script (1 entry scripted)" in message.error_message
    assert "400" in message.error_message


def test_assert_complete_names_unused_entries_and_requests_beyond_the_script() -> None:
    emu = Emulator("one", fault.status(500, "boom"))
    assert one_reply(emu, "openai", "chat.completions", stream=True).text == "one"
    with pytest.raises(AssertionError, match=r"1 scripted entry never requested \(entry 2: fault\(status=500"):
        emu.assert_complete()
    one_reply(emu, "openai", "chat.completions", stream=True)
    emu.assert_complete()
    one_reply(emu, "openai", "chat.completions", stream=True)
    with pytest.raises(AssertionError, match="1 request\\(s\\) beyond the script of 2"):
        emu.assert_complete()


def test_captured_requests_keep_the_body_and_headers_but_never_credentials() -> None:
    emu = Emulator("hi")
    reply = _post_sync(
        emu,
        CHAT,
        {"model": "m", "messages": []},
        authorization="Bearer sk-secret",
        **{"x-api-key": "k", "x-trace": "7"},
    )
    assert reply.status_code == 200
    (request,) = emu.requests
    assert request.body == {"model": "m", "messages": []}
    assert request.headers["x-trace"] == "7"
    assert "authorization" not in request.headers and "x-api-key" not in request.headers
    assert "sk-secret" not in json.dumps(dict(request.headers))


def test_a_path_no_provider_serves_is_a_404_listing_the_served_routes() -> None:
    reply = _post_sync(Emulator("hi"), "/v1/embeddings", {})
    assert reply.status_code == 404
    assert "POST /v1/chat/completions" in reply.json()["error"]["message"]


def test_provider_modules_that_do_not_exist_yet_are_skipped() -> None:
    assert sorted(load_providers(["openai", "anthropic", "no_such_provider"])) == ["anthropic", "openai"]


def test_the_emulator_serves_the_openai_and_anthropic_routes() -> None:
    paths = {(r.method, r.path) for r in Emulator().routes}
    assert {("POST", "/v1/chat/completions"), ("POST", "/v1/responses"), ("POST", "/v1/messages")} <= paths


def test_status_faults_carry_the_providers_error_body_and_retry_after() -> None:
    emu = Emulator(fault.status(429, "slow down", retry_after=2), fault.status(529, "Overloaded"))
    openai_reply = _post_sync(emu, CHAT, {"model": "m"})
    assert openai_reply.status_code == 429 and openai_reply.headers["retry-after"] == "2"
    assert openai_reply.json()["error"] == {
        "message": "slow down",
        "type": "rate_limit_exceeded",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    anthropic_reply = _post_sync(emu, "/v1/messages", {"model": "m"})
    assert anthropic_reply.status_code == 529
    assert anthropic_reply.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}


def test_fault_status_refuses_a_status_that_is_not_an_error() -> None:
    with pytest.raises(ValueError, match="400-599"):
        fault.status(200)


def test_a_gzip_fault_sends_a_gzip_body_the_client_decodes() -> None:
    emu = Emulator(fault.gzip(turn.text("packed")), fault.gzip(turn.text("packed stream")))
    whole = _post_sync(emu, CHAT, {"model": "m"})
    assert whole.headers["content-encoding"] == "gzip"
    assert whole.json()["choices"][0]["message"]["content"] == "packed"
    streamed = _post_sync(emu, CHAT, {"model": "m", "stream": True})
    text = "".join(c["choices"][0]["delta"].get("content") or "" for _, c in sse_events(streamed.text) if c != "[DONE]")
    assert text == "packed stream"


def test_gzip_bytes_on_the_wire_really_are_gzip() -> None:
    async def raw() -> bytes:
        async with Emulator(fault.gzip(turn.text("z"))).http_client() as client:
            async with client.stream("POST", f"http://e{CHAT}", json={"model": "m"}) as response:
                return b"".join([part async for part in response.aiter_raw()])

    assert json.loads(gzip.decompress(asyncio.run(raw())))["object"] == "chat.completion"


def test_a_slow_fault_spaces_the_chunks_out() -> None:
    emu = Emulator(fault.slow(0.02, turn.text("x" * 24)))
    started = time.monotonic()
    reply = _post_sync(emu, "/v1/messages", {"model": "m", "stream": True})
    assert reply.status_code == 200
    chunks = len(sse_events(reply.text))
    assert time.monotonic() - started >= 0.02 * chunks * 0.9


def test_a_dropped_connection_in_process_raises_the_transport_error_a_socket_would() -> None:
    emu = Emulator(fault.drop_mid_stream(after_chunks=2, inner=turn.text("never finished, never")))

    async def read() -> list[bytes]:
        async with emu.http_client() as client:
            async with client.stream("POST", "http://e/v1/messages", json={"model": "m", "stream": True}) as response:
                return [part async for part in response.aiter_raw()]

    with pytest.raises(httpx2.RemoteProtocolError, match="after 2 chunk"):
        asyncio.run(read())
    message = one_reply(Emulator(fault.drop_mid_stream(2)), "openai", "responses", stream=True)
    assert message.stop_reason == "error" and "stream cut mid-way" in message.error_message


def test_unknown_events_are_ignored_and_malformed_chunks_are_reported() -> None:
    for provider, endpoint in [("openai", "chat.completions"), ("openai", "responses"), ("anthropic", "messages")]:
        assert (
            one_reply(Emulator(fault.unknown_event(turn.text("fine"))), provider, endpoint, stream=True).text == "fine"
        )
        broken = one_reply(Emulator(fault.malformed_chunk(turn.text("broken reply"))), provider, endpoint, stream=True)
        assert broken.stop_reason == "error", (provider, endpoint)


def test_a_respond_entry_sees_the_wire_request() -> None:
    emu = Emulator(turn.respond(lambda request: f"you asked {request.route.endpoint} for {request.body['model']}"))
    assert one_reply(emu, "openai", "responses", stream=False).text == "you asked responses for m"


def test_thinking_and_redacted_thinking_reach_our_anthropic_backend_with_signatures() -> None:
    from harness.emulator._anthropic import redacted_thinking
    from harness.script import Turn

    scripted = Turn(blocks=(("thinking", "let me think"), redacted_thinking("opaque-data"), ("text", "answer")))
    for stream in (True, False):
        message = one_reply(Emulator(scripted), "anthropic", "messages", stream=stream)
        thinking, redacted, text = message.content
        assert thinking.thinking == "let me think" and thinking.signature and not thinking.redacted
        assert redacted.redacted and redacted.signature == "opaque-data"
        assert text.text == "answer"


def test_a_length_stop_comes_back_as_length_on_every_api() -> None:
    for provider, endpoint in [("openai", "chat.completions"), ("openai", "responses"), ("anthropic", "messages")]:
        for stream in (True, False):
            scripted = turn.text("cut", stop_reason="length")
            assert one_reply(Emulator(scripted), provider, endpoint, stream=stream).stop_reason == "length"


PATCH = ToolSpec(name="apply_patch", description="Apply a patch.", parameters={"type": "object"})
PATCH_TEXT = "*** Begin Patch\n*** Update File: a.py\n-old\n+new\n*** End Patch"


@pytest.mark.parametrize("endpoint", ["chat.completions", "responses"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_our_openai_backends_read_custom_free_form_tool_calls(endpoint: str, stream: bool) -> None:
    """A tool declared ``custom`` is answered with a custom call; its input text is the call's argument text."""
    custom = {"type": "custom", "name": "apply_patch", "description": "Apply a patch."}
    if endpoint == "chat.completions":
        custom = {"type": "custom", "custom": {"name": "apply_patch", "description": "Apply a patch."}}
    emu = Emulator(ScriptedCall(name="apply_patch", raw=PATCH_TEXT, id="call_patch"))

    async def run() -> Any:
        from harness.recording._clients import backend

        client = sdk_client("openai", emu)
        model = backend("openai", endpoint, model="m", stream=stream, client=client)
        request = ModelRequest(messages=(UserMessage(content="fix it"),), tools=(PATCH,), extra={"tools": [custom]})
        events = [event async for event in model.stream(request)]
        await client.aclose()
        return events[-1].message

    message = asyncio.run(run())
    wire = json.dumps(emu.requests[0].body)
    assert '"custom"' in wire
    (call,) = message.tool_calls
    assert (call.id, call.name, call.raw_arguments) == ("call_patch", "apply_patch", PATCH_TEXT)
    assert message.stop_reason == "toolUse"


def test_the_loopback_server_answers_unmodified_sync_clients() -> None:
    with Emulator(turn.text("over a socket"), turn.tool_call("f", x=1), fault.drop_mid_stream(1)) as emu:
        assert emu.base_url.startswith("http://127.0.0.1:")
        chat = openai.OpenAI(api_key="k", base_url=emu.base_url + "/v1", max_retries=0)
        reply = chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "over a socket"
        claude = anthropic.Anthropic(api_key="k", base_url=emu.base_url, max_retries=0)
        message = claude.messages.create(model="c", max_tokens=9, messages=[{"role": "user", "content": "hi"}])
        assert message.content[0].input == {"x": 1}
        with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)):  # the server hung up
            with claude.messages.stream(
                model="c", max_tokens=9, messages=[{"role": "user", "content": "hi"}]
            ) as stream:
                stream.get_final_message()
    with pytest.raises(RuntimeError, match="not serving"):
        emu.base_url  # noqa: B018 - the property raises once stopped


SCENARIO = """\
name: emulated
prompts: [hi]
turns:
  - text: hello from a scenario
  - calls:
      - {name: lookup, args: {key: k1}}
  - {raise: gone}
"""


def test_serve_runs_a_scenario_in_another_process_for_unmodified_clients(tmp_path: Path) -> None:
    script = tmp_path / "scenario.yaml"
    script.write_text(SCENARIO)
    code = f"from harness.emulator._server import serve; serve({str(script)!r}, '127.0.0.1', 0)"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:")
        chat = openai.OpenAI(api_key="k", base_url=base_url + "/v1", max_retries=0)
        reply = chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "hello from a scenario"
        claude = anthropic.Anthropic(api_key="k", base_url=base_url, max_retries=0)
        message = claude.messages.create(model="c", max_tokens=9, messages=[{"role": "user", "content": "hi"}])
        assert (message.content[0].name, message.content[0].input) == ("lookup", {"key": "k1"})
        with pytest.raises((openai.APIConnectionError, httpx2.TransportError)):  # the raise turn hangs up
            list(chat.responses.create(model="m", input="hi", stream=True))
    finally:
        process.terminate()
        process.wait(timeout=10)


ALL_SDKS_SCENARIO = """\
name: emulated for the four official SDKs
prompts: [hi]
turns:
  - text: hello openai
  - text: hello anthropic
  - text: hello gemini
  - calls:
      - {name: lookup, args: {key: g1}}
  - text: hello vertex
  - text: hello bedrock
  - calls:
      - {name: lookup, args: {key: b1}}
"""


def test_harness_emulate_in_another_process_answers_unmodified_clients_of_all_four_sdks(tmp_path: Path) -> None:
    import boto3
    from google import genai
    from google.genai.types import HttpOptions
    from google.oauth2.credentials import Credentials

    script = tmp_path / "scenario.yaml"
    script.write_text(ALL_SDKS_SCENARIO)
    with emulate_process(script) as base:
        chat = openai.OpenAI(api_key="sk-test", base_url=f"{base}/v1", max_retries=0)
        reply = chat.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "hello openai"
        claude = anthropic.Anthropic(api_key="sk-ant-test", base_url=base, max_retries=0)
        message = claude.messages.create(model="c", max_tokens=9, messages=[{"role": "user", "content": "hi"}])
        assert [block.text for block in message.content] == ["hello anthropic"]

        gemini = genai.Client(api_key="fake-key", http_options=HttpOptions(base_url=base))
        assert gemini.models.generate_content(model="gemini-2.5-flash", contents="hi").text == "hello gemini"
        chunks = list(gemini.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
        calls = [call for chunk in chunks for call in chunk.function_calls or []]
        assert [(call.name, call.args) for call in calls] == [("lookup", {"key": "g1"})]
        vertex = genai.Client(
            vertexai=True,
            project="proj-1",
            location="us-central1",
            credentials=Credentials(token="fake-token"),
            http_options=HttpOptions(base_url=base),
        )
        assert vertex.models.generate_content(model="gemini-2.5-flash", contents="hi").text == "hello vertex"

        bedrock = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=base,
            aws_access_key_id="fake",
            aws_secret_access_key="fake",
        )
        messages = [{"role": "user", "content": [{"text": "hi"}]}]
        reply = bedrock.converse(modelId="us.amazon.nova-micro-v1:0", messages=messages)
        assert reply["output"]["message"]["content"][0]["text"] == "hello bedrock"
        assert reply["stopReason"] == "end_turn"
        streamed = bedrock.converse_stream(modelId="us.anthropic.claude-sonnet-4-5-20250929-v1:0", messages=messages)
        events = list(streamed["stream"])  # botocore checks both CRCs of every frame
        deltas = [e["contentBlockDelta"]["delta"] for e in events if "contentBlockDelta" in e]
        inputs = "".join(delta["toolUse"]["input"] for delta in deltas)
        start = next(e["contentBlockStart"]["start"]["toolUse"] for e in events if "contentBlockStart" in e)
        assert (start["name"], json.loads(inputs)) == ("lookup", {"key": "b1"})
        assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}


FAULTS_SCENARIO = """\
name: wire faults served by harness emulate
prompts: [hi]
turns:
  - {status: 429, retry_after: 2, message: Rate limit reached for requests}
  - {status: 529, message: Overloaded}
  - {wire: truncate, turn: this reply is cut before its end}
  - wire: {slow: 0.01, gzip: true}
    turn: {text: slow and packed}
  - {wire: malformed_chunk, turn: a broken delta}
  - {wire: [unknown_event], turn: {thinking: hmm, text: fine after all}}
  - {wire: {drop_mid_stream: 2}, turn: never arrives whole}
  - {status: 503, message: Service unavailable.}
"""


def test_harness_emulate_serves_the_fault_forms_of_a_scenario_file(tmp_path: Path) -> None:
    from harness.recording._clients import Connection, backend
    from openprogram import ExecError, runtime

    script = tmp_path / "faults.yaml"
    script.write_text(FAULTS_SCENARIO)
    with emulate_process(script) as base:
        chat = openai.OpenAI(api_key="sk-test", base_url=f"{base}/v1", max_retries=0)
        with pytest.raises(openai.RateLimitError) as limited:
            chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert limited.value.response.headers["retry-after"] == "2"
        assert limited.value.body["message"] == "Rate limit reached for requests"  # type: ignore[index]
        claude = anthropic.Anthropic(api_key="k", base_url=base, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as overloaded:
            claude.messages.create(model="c", max_tokens=9, messages=[{"role": "user", "content": "hi"}])
        assert overloaded.value.status_code == 529 and "overloaded_error" in str(overloaded.value)

        def run(provider: str, endpoint: str, model: str = "m") -> str:
            chosen = backend(provider, endpoint, model=model, connection=Connection.at(base))
            try:
                return runtime.exec("hi", provider=chosen)
            except ExecError as error:
                return f"error: {error.message}"

        assert run("anthropic", "messages") == "error: stream ended before message_stop: the response is incomplete"
        assert run("gemini", "streamGenerateContent", "gemini-2.5-flash") == "slow and packed"
        assert "malformed JSON payload" in run("bedrock", "converse-stream", "us.amazon.nova-micro-v1:0")
        assert run("openai", "responses") == "fine after all"
        assert "stream cut mid-way" in run("openai", "chat.completions")
        assert run("bedrock", "converse", "us.amazon.nova-micro-v1:0") == (
            "error: HTTP 503 ServiceUnavailableException: Service unavailable."
        )


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        ("[{wire: truncat, turn: x}]", "unknown wire fault 'truncat'; known: drop_mid_stream, gzip, malformed_chunk,"),
        ("[{wire: {slow: -1}, turn: x}]", "slow takes the seconds before each chunk (0 or more), got -1"),
        ("[{status: 200}]", "status takes an HTTP error status (400-599), got 200"),
        ("[{status: 429, text: x}]", "unknown key(s) text; allowed: code, message, retry_after, status"),
        ("[{wire: gzip, turn: {error: x}}]", "a wire fault wraps a reply: no error, aborted, status,"),
    ],
    ids=["unknown fault", "bad parameter", "not an error status", "status with content", "wire around an error"],
)
def test_harness_emulate_refuses_a_fault_it_cannot_serve_in_one_line_with_exit_2(
    tmp_path: Path, turns: str, expected: str
) -> None:
    script = tmp_path / "bad.yaml"
    script.write_text(f"turns: {turns}\n")
    process = start_emulate(script)
    out, errors = process.communicate(timeout=30)
    assert process.returncode == 2 and out == ""
    (line,) = [line for line in errors.splitlines() if line.startswith("Error:")]
    assert f"{script}: turn 1: {expected}" in line
    assert "Traceback" not in errors


def test_the_documented_wire_fault_example_loads_round_trips_and_becomes_emulator_faults() -> None:
    from harness.emulator import script_of
    from harness.scenarios._scenario import Scenario

    doc = (Path(__file__).resolve().parents[3] / "docs" / "scenarios.md").read_text(encoding="utf-8")
    section = doc.split("## Wire faults (`harness emulate`)", 1)[1]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    scenario = Scenario.from_yaml(example)
    assert Scenario.from_yaml(scenario.to_yaml()) == scenario
    assert [entry.describe() for entry in script_of(scenario.turns)] == [
        "fault(status=429, message='Rate limit reached for requests', retry_after=2.0)",
        "fault(truncate=True)",
        "fault(delay=0.01, gzip=True)",
        "fault(drop_after=2)",
        "fault(split=(5, 1))",
        "fault(stall_after=1)",
    ]
    assert [t.kind for t in scenario.turns] == [
        "error",
        "reply",
        "reply",
        "reply",
        "reply",
        "reply",
    ]  # what harness run plays


def test_harness_emulate_prints_each_clients_setting_and_each_one_reaches_it(tmp_path: Path) -> None:
    import boto3
    from google import genai
    from google.genai.types import HttpOptions

    script = tmp_path / "four.yaml"
    script.write_text("turns: [to openai, to anthropic, to gemini, to bedrock]\n")
    process = start_emulate(script)
    try:
        assert process.stdout is not None and process.stderr is not None
        base = process.stdout.readline().strip()
        shown = [process.stderr.readline().rstrip("\n") for _ in range(6)]
        settings = dict(line.strip().rsplit(": ", 1) for line in shown[:5])
        assert {who: setting.split("=", 1)[0] for who, setting in settings.items()} == {
            "OpenAI SDK (and pydantic-ai, OpenAI Agents, ChatOpenAI, LiteLLM openai/)": "base_url",
            "Anthropic SDK (and pydantic-ai, ChatAnthropic, LiteLLM anthropic/)": "base_url",
            "google-genai": "http_options.base_url",
            "boto3 bedrock-runtime": "endpoint_url",
            "LiteLLM gemini/": "api_base",
        }
        url = [setting.split("=", 1)[1] for setting in settings.values()]
        assert url[4] == f"{base}/v1beta"
        assert shown[5] == (
            f"  requests received: GET {base}/_emulator/requests; start the script over: POST {base}/_emulator/reset"
        )
        chat = openai.OpenAI(base_url=url[0], api_key="sk-test", max_retries=0)
        reply = chat.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "to openai"
        claude = anthropic.Anthropic(base_url=url[1], api_key="sk-ant-test", max_retries=0)
        message = claude.messages.create(model="c", max_tokens=9, messages=[{"role": "user", "content": "hi"}])
        assert message.content[0].text == "to anthropic"  # type: ignore[union-attr]
        gemini = genai.Client(api_key="fake-key", http_options=HttpOptions(base_url=url[2]))
        assert gemini.models.generate_content(model="gemini-2.5-flash", contents="hi").text == "to gemini"
        bedrock = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=url[3],
            aws_access_key_id="fake",
            aws_secret_access_key="fake",
        )
        answer = bedrock.converse(modelId="m", messages=[{"role": "user", "content": [{"text": "hi"}]}])
        assert answer["output"]["message"]["content"][0]["text"] == "to bedrock"
    finally:
        process.terminate()
        process.communicate(timeout=20)
