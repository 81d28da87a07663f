"""The loop on each real OpenAI and Anthropic backend against the emulator over real HTTP: tool
loops, error feedback, every fault ending the run as DESIGN section 4 says, and the tool_choice
shapes the backends put on the wire."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from harness.emulator import Emulator, fault
from harness.emulator import _openai as emulated_openai
from harness.emulator._exchange import IdSource
from harness.recording._clients import Connection, backend, client_kwargs
from harness.script import turn
from openprogram import ExecError, runtime
from openprogram.providers import tool_choice as tool_choice_table
from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.openai import OpenAIChatProvider
from tests.harness.emulator.wirecheck import PARALLEL_ANSWER, parallel_tool_loop

BACKENDS = [
    ("openai", "chat.completions", True),
    ("openai", "chat.completions", False),
    ("openai", "responses", True),
    ("openai", "responses", False),
    ("anthropic", "messages", True),
    ("anthropic", "messages", False),
]
IDS = [f"{p}-{e}-{'stream' if s else 'whole'}" for p, e, s in BACKENDS]
STREAMING = [b for b in BACKENDS if b[2]]
STREAMING_IDS = [f"{p}-{e}" for p, e, _ in STREAMING]


def _exec(emu: Emulator, provider: str, endpoint: str, stream: bool, **kwargs: Any) -> Any:
    model = backend(provider, endpoint, model="m", stream=stream, connection=Connection.at(emu.base_url))
    return runtime.exec("go", provider=model, **kwargs)


def _bodies(emu: Emulator) -> list[dict[str, Any]]:
    return [request.body for request in emu.requests]


def _tool_results(provider: str, endpoint: str, body: dict[str, Any]) -> list[tuple[str, str]]:
    """(call id, output) of every tool result the request sent back."""
    if endpoint == "responses":
        return [(i["call_id"], i["output"]) for i in body["input"] if i.get("type") == "function_call_output"]
    if endpoint == "chat.completions":
        return [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]
    return [
        (block["tool_use_id"], block.get("content", ""))
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


@pytest.mark.parametrize(("provider", "endpoint", "stream"), BACKENDS, ids=IDS)
def test_a_multi_turn_tool_loop_with_parallel_calls_runs_over_http(
    reg: dict[str, Any], provider: str, endpoint: str, stream: bool
) -> None:
    script = parallel_tool_loop()
    with Emulator(script) as emu:
        text = _exec(emu, provider, endpoint, stream, tools=[reg["weather"], reg["add"]])
    assert text == PARALLEL_ANSWER
    bodies = _bodies(emu)
    assert len(bodies) == 3
    first = _tool_results(provider, endpoint, bodies[1])
    assert [output for _, output in first] == ["sunny in Paris", "sunny in Oslo"]
    assert len({call_id for call_id, _ in first}) == 2
    assert [output for _, output in _tool_results(provider, endpoint, bodies[2])][-1] == "5"
    assert all("authorization" not in r.headers and "x-api-key" not in r.headers for r in emu.requests)


@pytest.mark.parametrize(("provider", "endpoint", "stream"), BACKENDS, ids=IDS)
def test_an_invalid_call_is_fed_back_and_the_model_recovers(
    reg: dict[str, Any], provider: str, endpoint: str, stream: bool
) -> None:
    script = [turn.tool_call("add", a="two", b=3), turn.tool_call("add", a=2, b=3), turn.text("5")]
    with Emulator(script) as emu:
        assert _exec(emu, provider, endpoint, stream, tools=[reg["add"]]) == "5"
    ((_, feedback),) = _tool_results(provider, endpoint, emu.requests[1].body)
    assert "a" in feedback and "two" in feedback
    assert [output for _, output in _tool_results(provider, endpoint, emu.requests[2].body)][-1] == "5"


STATUS_FAULTS = [
    (400, "Invalid 'temperature': decimal below minimum value."),
    (401, "Incorrect API key provided."),
    (403, "Country, region, or territory not supported"),
    (404, "The model `m` does not exist"),
    (429, "Rate limit reached for requests"),
    (500, "The server had an error while processing your request."),
    (503, "The engine is currently overloaded."),
]


@pytest.mark.parametrize(("status", "message"), STATUS_FAULTS, ids=[str(s) for s, _ in STATUS_FAULTS])
@pytest.mark.parametrize(("provider", "endpoint", "stream"), BACKENDS, ids=IDS)
def test_an_http_error_ends_the_run_naming_the_status_and_the_providers_message(
    reg: dict[str, Any], provider: str, endpoint: str, stream: bool, status: int, message: str
) -> None:
    with Emulator(fault.status(status, message, retry_after=3 if status == 429 else None)) as emu:
        with pytest.raises(ExecError) as raised:
            _exec(emu, provider, endpoint, stream, tools=[reg["add"]])
    assert raised.value.reason == "error"
    assert str(status) in raised.value.message and message in raised.value.message
    assert len(emu.requests) == 1  # the harness's clients do not retry


def test_anthropic_529_is_reported_as_overloaded(reg: dict[str, Any]) -> None:
    with Emulator(fault.status(529, "Overloaded")) as emu:
        with pytest.raises(ExecError) as raised:
            _exec(emu, "anthropic", "messages", True)
    assert "529" in raised.value.message and "overloaded_error" in raised.value.message


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_sdks_own_retry_recovers_from_a_429_with_retry_after(reg: dict[str, Any], provider: str) -> None:
    with Emulator(fault.status(429, "slow down", retry_after=0), turn.text("recovered")) as emu:
        kwargs = {**client_kwargs(provider, Connection.at(emu.base_url)), "max_retries": 2}
        backend_class = AnthropicProvider if provider == "anthropic" else OpenAIChatProvider
        model = backend_class(model="m", stream=True, **kwargs)
        assert runtime.exec("go", provider=model) == "recovered"
    assert len(emu.requests) == 2
    assert emu.requests[1].headers.get("x-stainless-retry-count") == "1"


STREAM_FAULTS = {
    "drop": (fault.drop_mid_stream(after_chunks=2), ("stream", "interrupted", "cut")),
    "truncate": (fault.truncate(), ("ended", "incomplete", "before")),
    "malformed": (fault.malformed_chunk(), ("json", "expecting", "delimiter", "unterminated")),
}


BROKEN_STREAMS = [
    pytest.param(*backend_, name, id=f"{backend_[0]}-{backend_[1]}-{name}")
    for backend_ in STREAMING
    for name in sorted(STREAM_FAULTS)
]


@pytest.mark.parametrize(("provider", "endpoint", "stream", "name"), BROKEN_STREAMS)
def test_a_broken_stream_ends_the_run_with_an_error_saying_what_broke(
    reg: dict[str, Any], provider: str, endpoint: str, stream: bool, name: str
) -> None:
    spec, words = STREAM_FAULTS[name]
    with Emulator(spec) as emu:
        with pytest.raises(ExecError) as raised:
            _exec(emu, provider, endpoint, stream)
    assert raised.value.reason == "error"
    assert any(word in raised.value.message.lower() for word in words), raised.value.message


def test_a_chat_stream_cut_before_its_finish_chunk_is_an_error_but_a_finish_less_proxy_stream_is_not(
    reg: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cut stream lost its finish chunk, usage chunk and ``[DONE]``; an OpenRouter-style proxy
    sends no finish_reason but ends with ``[DONE]`` (cassette README, Known quirks)."""
    with Emulator(fault.truncate(turn.tool_call("add", a=1, b=2))) as emu:
        with pytest.raises(ExecError) as raised:
            _exec(emu, "openai", "chat.completions", True, tools=[reg["add"]])
    assert raised.value.message == "stream ended before its finish_reason and [DONE] (cut?)"
    assert len(emu.requests) == 1  # the call of the cut reply did not run

    render = emulated_openai.render

    def finish_less(*args: Any) -> Any:  # the proxy's shape: every chunk but the finish chunk, then [DONE]
        reply = render(*args)
        reply.chunks = [c for c in reply.chunks or [] if b'"finish_reason":"' not in c]
        return reply

    monkeypatch.setattr(emulated_openai, "render", finish_less)
    with Emulator(turn.tool_call("add", a=1, b=2), turn.text("3")) as emu:
        assert _exec(emu, "openai", "chat.completions", True, tools=[reg["add"]]) == "3"
    assert all(b"[DONE]" in b"".join(r.chunks or []) for r in [render(turn.text("x"), emu.requests[0], IdSource())])
    assert [output for _, output in _tool_results("openai", "chat.completions", emu.requests[1].body)] == ["3"]


@pytest.mark.parametrize(("provider", "endpoint", "stream"), BACKENDS, ids=IDS)
def test_a_slow_gzip_reply_with_an_unknown_event_still_arrives_whole(
    reg: dict[str, Any], provider: str, endpoint: str, stream: bool
) -> None:
    spec = fault.gzip(fault.slow(0.01, fault.unknown_event(turn.text("slow but sure"))))
    with Emulator(spec) as emu:
        assert _exec(emu, provider, endpoint, stream) == "slow but sure"
    assert "gzip" in emu.requests[0].headers.get("accept-encoding", "")


CHOICES = [None, "auto", "required", "none", {"type": "function", "name": "add"}]
PARALLEL = [None, True, False]
TABLE_ROW = {
    "chat.completions": "openai_chat",
    "responses": "openai_responses",
    "messages": "anthropic",
    "generateContent": "gemini",
    "streamGenerateContent": "gemini",
    "converse": "bedrock",
    "converse-stream": "bedrock",
}
CHOICE_BACKENDS = [
    ("openai", "chat.completions", None),
    ("openai", "responses", None),
    ("anthropic", "messages", None),
    ("gemini", "streamGenerateContent", None),
    ("gemini", "generateContent", "vertex"),
    ("bedrock", "converse", None),
    ("bedrock", "converse-stream", None),
]


def _camel(value: Any) -> Any:
    """The table's snake_case spelling of a Gemini ``tool_config`` as its JSON goes on the wire."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(item) for item in value]
    return value


def _sent_choice(provider: str, body: dict[str, Any]) -> dict[str, Any]:
    """What the request says about the tool choice, in the shape of the table's cell."""
    if provider == "gemini":  # google-genai spells Vertex's allowed_function_names in snake_case (proto JSON
        return _camel(body.get("toolConfig", {}))  # takes both), the Developer API's in camelCase
    if provider == "bedrock":
        if "toolConfig" not in body:  # "none": the sentinel withheld the tools
            return {tool_choice_table.OMIT_TOOLS: True}
        return {key: value for key, value in body["toolConfig"].items() if key != "tools"}
    return {key: body[key] for key in ("tool_choice", "parallel_tool_calls") if key in body}


CHOICE_IDS = [f"{p}-{e}{'-' + a if a else ''}" for p, e, a in CHOICE_BACKENDS]


@pytest.mark.parametrize(("provider", "endpoint", "api"), CHOICE_BACKENDS, ids=CHOICE_IDS)
def test_the_tool_choice_on_the_wire_is_the_tables_cell(
    reg: dict[str, Any], provider: str, endpoint: str, api: str | None
) -> None:
    cells = [(choice, parallel) for choice in CHOICES for parallel in PARALLEL]
    with Emulator([turn.text("ok")] * len(cells)) as emu:
        where = Connection.at(emu.base_url, vertex=True, project="p", region="us-central1") if api else None
        for choice, parallel in cells:
            model = backend(provider, endpoint, model="m", connection=where or Connection.at(emu.base_url))
            text = runtime.exec(
                "go", provider=model, tools=[reg["add"]], tool_choice=choice, parallel_tool_calls=parallel
            )
            assert text == "ok"
    for (choice, parallel), request in zip(cells, emu.requests, strict=True):
        expected = tool_choice_table._render(TABLE_ROW[endpoint], choice, parallel)
        if provider == "gemini":
            expected = _camel(expected)
        assert _sent_choice(provider, request.body) == expected, (choice, parallel)
        if expected.get(tool_choice_table.OMIT_TOOLS):
            assert "tools" not in json.dumps(request.body)  # Converse cannot say "none": no tool is offered
        if api:
            assert request.path.startswith("/v1/projects/p/locations/us-central1/")
    assert len(emu.requests) == len(cells) == 15


WHOLE = [b for b in BACKENDS if not b[2]]


@pytest.mark.parametrize(("provider", "endpoint", "stream"), WHOLE, ids=[f"{p}-{e}" for p, e, _ in WHOLE])
def test_a_connection_dropped_before_a_whole_reply_ends_the_run_with_a_connection_error(
    reg: dict[str, Any], provider: str, endpoint: str, stream: bool
) -> None:
    with Emulator(fault.drop_mid_stream(after_chunks=0)) as emu:
        with pytest.raises(ExecError) as raised:
            _exec(emu, provider, endpoint, stream)
    assert raised.value.reason == "error"
    assert "connection" in raised.value.message.lower() or "peer closed" in raised.value.message.lower()
