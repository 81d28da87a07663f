"""Emulator fidelity against real traffic: for every OpenAI and Anthropic cassette interaction, the
recorded message scripted into the emulator comes back through the official SDK and our backend
as the same message, and the emulator's stream follows the recorded stream's event grammar."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.emulator import Emulator, fault
from harness.emulator import _anthropic as emulated_anthropic
from harness.emulator import _openai as emulated_openai
from harness.emulator._exchange import IdSource, WireRequest
from harness.recording import _cassette as cassettes
from harness.script import ScriptedCall, Turn
from tests.harness.emulator.wirecheck import CASSETTES, grammar, one_reply, sse_events

if not (CASSETTES / "index.json").is_file():
    pytest.skip(f"the shared provider cassettes are not at {CASSETTES}", allow_module_level=True)

MODULES = {"openai": emulated_openai, "anthropic": emulated_anthropic}
INDEX = [entry for entry in json.loads((CASSETTES / "index.json").read_text()) if entry["provider"] in MODULES]
CASES = [(entry, interaction) for entry in INDEX for interaction in entry["interactions"]]
PROXY_SERVED = "openai/llm__cassettes__test_tools_streaming__test_tools_streaming_variant_a.yaml"
"""Served by an OpenAI-compatible proxy, not OpenAI (README, Known quirks): not OpenAI's grammar."""

LENGTH_REASONS = {"length", "max_tokens", "max_output_tokens"}

NEWER_FIELDS = {
    "service_tier",
    "sequence_number",
    "logprobs",
    "part.logprobs",
    "usage",
    "delta.stop_details",
    "content_block.caller",
    "item.phase",
}
"""Fields the current APIs send that older recordings lack: the emulator may add these."""
PADDING = {"obfuscation"}
"""Random padding the real service adds to deltas; the emulator leaves it out."""


def _id(case: tuple[dict[str, Any], dict[str, Any]]) -> str:
    entry, interaction = case
    return f"{entry['file'].rsplit('/', 1)[-1][:70]}#{interaction['index']}"


def _recorded_thinking(endpoint: str, interaction: cassettes.Interaction) -> list[str]:
    """Thinking the recording holds (``expected`` leaves it out), so the script can hold it too."""
    if endpoint == "responses" and not interaction.request.stream:
        output = interaction.response.body.object.get("output") or []
        return [
            "\n\n".join(part.get("text", "") for part in item.get("summary") or [])
            for item in output
            if item.get("type") == "reasoning"
        ]
    if endpoint != "messages":
        return []
    if interaction.request.stream:
        texts: dict[int, str] = {}
        for _, data in sse_events(interaction.response.body.text):
            if isinstance(data, dict) and data.get("type") == "content_block_delta":
                if data["delta"].get("type") == "thinking_delta":
                    texts[data["index"]] = texts.get(data["index"], "") + data["delta"]["thinking"]
            elif isinstance(data, dict) and data.get("type") == "content_block_start":
                if data["content_block"]["type"] == "thinking":
                    texts.setdefault(data["index"], "")
        return list(texts.values())
    content = interaction.response.body.object.get("content") or []
    return [block["thinking"] for block in content if block.get("type") == "thinking"]


def _turn(expected: dict[str, Any], thinking: list[str]) -> Turn:
    blocks: list[Any] = [("thinking", text) for text in thinking]
    if expected["text"]:
        blocks.append(("text", expected["text"]))
    blocks += [ScriptedCall(c["name"], c["arguments"], c["id"]) for c in expected["tool_calls"]]
    stop = "length" if expected["stop_reason"] in LENGTH_REASONS else "stop"
    return Turn(blocks=tuple(blocks), stop_reason=stop)


def _wire_request(provider: str, endpoint: str, recorded: cassettes.Request) -> WireRequest:
    route = next(r for r in MODULES[provider].ROUTES if r.endpoint == endpoint)
    return WireRequest("POST", route.path, {}, {}, recorded.body.json, route)


def _wire_stop_reason(endpoint: str, reply: Any, streaming: bool) -> Any:
    """The provider's own stop reason in the emulator's reply, read off the wire."""
    if not streaming:
        body = json.loads(reply.body)
        if endpoint == "chat.completions":
            return body["choices"][0]["finish_reason"]
        if endpoint == "responses":
            return (body.get("incomplete_details") or {}).get("reason") or body["status"]
        return body["stop_reason"]
    events = [data for _, data in sse_events(b"".join(reply.chunks).decode())]
    if endpoint == "chat.completions":
        return next(
            c["choices"][0]["finish_reason"]
            for c in events
            if isinstance(c, dict) and c.get("choices") and c["choices"][0].get("finish_reason")
        )
    if endpoint == "responses":
        final = events[-1]["response"]
        return (final.get("incomplete_details") or {}).get("reason") or final["status"]
    return next(e["delta"]["stop_reason"] for e in events if e.get("type") == "message_delta")


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_each_recorded_message_comes_back_through_the_sdk_and_our_backend(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    entry, info = case
    provider, endpoint, expected = entry["provider"], info["endpoint"], info["expected"]
    interaction = cassettes.load(CASSETTES / entry["file"]).interactions[info["index"]]
    if expected["error"] is not None:
        error = expected["error"]
        message = one_reply(
            Emulator(fault.status(error["status"], error["message"])), provider, endpoint, stream=info["stream"]
        )
        assert message.stop_reason == "error"
        assert str(error["status"]) in message.error_message and error["message"] in message.error_message
        assert error["type"] in message.error_message
        return
    scripted = _turn(expected, _recorded_thinking(endpoint, interaction))
    message = one_reply(Emulator(scripted), provider, endpoint, stream=info["stream"], tools=interaction.request.tools)
    assert message.stop_reason != "error", message.error_message
    assert message.text == expected["text"]
    got = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    assert got == expected["tool_calls"]
    assert message.stop_reason == ("length" if scripted.stop_reason == "length" else "toolUse" if got else "stop")
    reply = MODULES[provider].render(scripted, _wire_request(provider, endpoint, interaction.request), IdSource())
    if expected["stop_reason"] is not None:  # the proxy-served stream sent none; OpenAI always does
        assert _wire_stop_reason(endpoint, reply, info["stream"]) == expected["stop_reason"]


STREAMS = [c for c in CASES if c[1]["stream"] and c[1]["status"] == 200 and c[0]["file"] != PROXY_SERVED]


@pytest.mark.parametrize("case", STREAMS, ids=[_id(c) for c in STREAMS])
def test_each_emulated_stream_follows_the_recorded_event_grammar(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    entry, info = case
    provider, endpoint = entry["provider"], info["endpoint"]
    interaction = cassettes.load(CASSETTES / entry["file"]).interactions[info["index"]]
    scripted = _turn(info["expected"], _recorded_thinking(endpoint, interaction))
    reply = MODULES[provider].render(scripted, _wire_request(provider, endpoint, interaction.request), IdSource())
    recorded_sequence, recorded_fields = grammar(endpoint, interaction.response.body.text)
    sequence, fields = grammar(endpoint, b"".join(reply.chunks).decode())
    if recorded_sequence[:1] == ["role"]:  # older models sent the role in a chunk of its own
        recorded_sequence = recorded_sequence[1:]
        recorded_fields.pop("role")
    assert sequence == recorded_sequence
    for kind, names in recorded_fields.items():
        assert names - PADDING <= fields[kind], f"{kind}: the emulator lacks {sorted(names - PADDING - fields[kind])}"
        assert fields[kind] - names <= NEWER_FIELDS, f"{kind}: the emulator adds {sorted(fields[kind] - names)}"


def test_the_corpus_holds_every_openai_and_anthropic_interaction() -> None:
    """The parametrized cases above are all of them (the README's counts), none silently dropped."""
    counts = {p: sum(len(e["interactions"]) for e in INDEX if e["provider"] == p) for p in MODULES}
    assert counts == {"openai": 37, "anthropic": 21}


def _whole_shape(endpoint: str, body: dict[str, Any]) -> dict[str, set[str]]:
    """Field names of a whole reply: the top level, usage, and each kind of item or block."""
    shape = {"": set(body), "usage": set(body.get("usage") or {})}
    if endpoint == "chat.completions":
        choice = body["choices"][0]
        shape["choice"], shape["message"] = set(choice), set(choice["message"])
        for call in choice["message"].get("tool_calls") or []:
            shape["tool_call"], shape["function"] = set(call), set(call["function"])
    else:
        for item in body["output" if endpoint == "responses" else "content"]:
            shape.setdefault(item["type"], set()).update(item)
    return shape


WHOLE = [c for c in CASES if not c[1]["stream"] and c[1]["status"] == 200]


def _seen_fields(endpoint: str) -> dict[str, set[str]]:
    """Every field name whole replies of this endpoint have anywhere in the corpus, per part."""
    seen: dict[str, set[str]] = {}
    for entry, info in WHOLE:
        if info["endpoint"] == endpoint:
            body = cassettes.load(CASSETTES / entry["file"]).interactions[info["index"]].response.body.object
            for part, names in _whole_shape(endpoint, body).items():
                seen.setdefault(part, set()).update(names)
    return seen


@pytest.mark.parametrize("case", WHOLE, ids=[_id(c) for c in WHOLE])
def test_each_emulated_whole_reply_has_the_recorded_fields_and_only_fields_real_replies_have(
    case: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    entry, info = case
    provider, endpoint = entry["provider"], info["endpoint"]
    interaction = cassettes.load(CASSETTES / entry["file"]).interactions[info["index"]]
    scripted = _turn(info["expected"], _recorded_thinking(endpoint, interaction))
    reply = MODULES[provider].render(scripted, _wire_request(provider, endpoint, interaction.request), IdSource())
    recorded = _whole_shape(endpoint, interaction.response.body.object)
    emulated = _whole_shape(endpoint, json.loads(reply.body))
    seen = _seen_fields(endpoint)
    for part, names in recorded.items():
        assert names <= emulated[part], f"{part or 'top level'}: the emulator lacks {sorted(names - emulated[part])}"
    for part, names in emulated.items():
        unseen = names - seen.get(part, set())
        assert not unseen, f"{part or 'top level'}: no real reply has {sorted(unseen)}"
