"""Reasoning that must come back unchanged (W2's reasoning rule, DESIGN 6): the reply kinds that
carry it, the scenario file that writes it, the history reading that sees it, the rule judged as
each provider requires it and no stricter, and planted loops that drop it found by a default
campaign while their correct twins pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.agents import replay_agent, run_agent_campaign
from harness.agents._conversation import Exchange, Run
from harness.agents._invariants import judge
from harness.agents._replies import WELL_FORMED, kind_of, request_features, servable, tier_of
from harness.agents._replies._vocabulary import Tool
from harness.emulator import (
    Emulator,
    WireRequest,
    call_signature,
    reasoning_item,
    reasoning_signature,
    script_of,
    thinking_signature,
)
from harness.recording import Body as RecordedBody
from harness.recording import Request, conversation
from harness.scenarios import Call, ModelTurn, ScenarioError
from harness.scenarios._scenario import Scenario
from harness.wire import routes_of
from tests.harness.agents import planted_reasoning

THINKING = {"type": "enabled", "budget_tokens": 1024}
ADD = Tool("add", {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})


def _route(provider: str, endpoint: str) -> Any:
    return next(r for r in routes_of(provider) if r.endpoint == endpoint and not r.surface)


def _request(provider: str, endpoint: str, body: dict[str, Any]) -> WireRequest:
    route = _route(provider, endpoint)
    return WireRequest("POST", route.path, {}, {}, body, route)


def _run(requests: list[WireRequest], replies: list[ModelTurn]) -> Run:
    exchanges = [Exchange(n, r, 0.0, reply, 0.0) for n, (r, reply) in enumerate(zip(requests, replies, strict=True), 1)]
    return Run("p", exchanges, returned=replies[-1].text, request_bound=10, time_bound=5.0)


# -- the kinds ----------------------------------------------------------------------------------


def test_reasoning_kinds_are_provider_tier_well_formed_and_drawn_only_where_the_request_enables_them() -> None:
    for kind in ("thinking and a call", "redacted thinking and a call"):
        assert tier_of(kind) == "provider" and kind in WELL_FORMED
    thinking = ModelTurn(thinking="hmm", calls=(Call("add", {"a": 1}, id="t1"),))
    redacted = ModelTurn(calls=(Call("add", {"a": 1}, id="t1"),), wire=(("redacted_thinking", "opaque"),))
    assert (kind_of(thinking), kind_of(redacted)) == ("thinking and a call", "redacted thinking and a call")
    # what each wire's request enables, and so what a campaign draws for it
    features = {
        ("anthropic", json.dumps({"thinking": THINKING})): {"thinking and a call", "redacted thinking and a call"},
        ("anthropic", json.dumps({"thinking": {"type": "disabled"}})): set(),
        ("bedrock", json.dumps({"thinking": {"type": "adaptive"}})): {
            "thinking and a call",
            "redacted thinking and a call",
        },
        ("openai", json.dumps({"input": "hi", "include": ["reasoning.encrypted_content"]})): {"thinking and a call"},
        ("openai", json.dumps({"input": "hi", "reasoning": {"effort": "low"}})): {"thinking and a call"},
        ("openai", json.dumps({"messages": [], "reasoning_effort": "low"})): set(),  # chat: nothing asked back
        ("gemini", json.dumps({"generationConfig": {"thinkingConfig": {"thinkingBudget": 128}}})): {
            "thinking and a call"
        },
        ("openai", json.dumps({"input": "hi"})): set(),
    }
    for (provider, body), expected in features.items():
        drawn = set(servable((ADD,), features=request_features(provider, json.loads(body))))
        assert drawn & {"thinking and a call", "redacted thinking and a call"} == expected, (provider, body)


def test_a_scenario_file_writes_redacted_thinking_and_the_emulator_serves_it_streamed_and_not(tmp_path: Path) -> None:
    script = tmp_path / "reasoning.yaml"
    script.write_text(
        "turns:\n"
        "  - wire: {redacted_thinking: SECRETDATA}\n"
        "    turn: {thinking: let me think, calls: [{name: add, args: {a: 1}, id: toolu_1}]}\n"
    )
    scenario = Scenario.from_yaml(script)
    assert kind_of(scenario.turns[0]) == "redacted thinking and a call"
    assert Scenario.from_yaml(scenario.to_yaml()).turns == scenario.turns  # written back as read
    emulator = Emulator.from_file(script)
    body = {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "thinking": THINKING}
    whole = emulator.answer("POST", "/v1/messages", "", [], json.dumps(body).encode()).reply
    blocks = json.loads(whole.body or b"")["content"]
    expected = [
        {"type": "thinking", "thinking": "let me think", "signature": thinking_signature("let me think")},
        {"type": "redacted_thinking", "data": "SECRETDATA"},
    ]
    assert blocks[:2] == expected and blocks[2]["type"] == "tool_use"
    emulator = Emulator.from_file(script)
    streamed = emulator.answer("POST", "/v1/messages", "", [], json.dumps({**body, "stream": True}).encode()).reply
    events = [
        json.loads(line[5:]) for c in streamed.chunks or [] for line in c.splitlines() if line.startswith(b"data:")
    ]
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    signed = [
        e["delta"]["signature"] for e in events if e["type"] == "content_block_delta" and "signature" in e["delta"]
    ]
    assert starts[1] == expected[1] and signed == [expected[0]["signature"]]
    with pytest.raises(ScenarioError, match="redacted_thinking takes the block's opaque data"):
        Scenario.from_yaml("turns:\n  - {wire: {redacted_thinking: 3}, turn: {text: hi}}\n")


def test_a_responses_reasoning_item_carries_encrypted_content_only_when_the_request_includes_it() -> None:
    """Streamed and not: what an agent with ``store: false`` sends back, and null to one that did not ask."""
    turn = "turns:\n  - {thinking: plan, calls: [{name: add, args: {a: 1}, id: call_1}]}\n"
    for include in ([], ["reasoning.encrypted_content"]):
        for stream in (False, True):
            emulator = Emulator(*script_of(Scenario.from_yaml(turn).turns))
            body = {"model": "gpt-test", "input": "hi", "include": include, "stream": stream}
            reply = emulator.answer("POST", "/v1/responses", "", [], json.dumps(body).encode()).reply
            if stream:
                events = [
                    json.loads(line[5:])
                    for c in reply.chunks or []
                    for line in c.splitlines()
                    if line.startswith(b"data:")
                ]
                output = events[-1]["response"]["output"]
            else:
                output = json.loads(reply.body or b"")["output"]
            item = output[0]
            assert item["type"] == "reasoning" and item["summary"][0]["text"] == "plan"
            assert item["id"].startswith("rs_") and (item["encrypted_content"] is not None) == bool(include)


# -- reading it back ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "body", "expected"),
    [
        (
            "https://api.anthropic.com/v1/messages",
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": "t", "signature": "S"},
                            {"type": "redacted_thinking", "data": "D"},
                            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}},
                        ],
                    },
                ]
            },
            [{"type": "thinking", "thinking": "t", "signature": "S"}, {"type": "redacted_thinking", "data": "D"}],
        ),
        (
            "https://api.openai.com/v1/responses",
            {
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "E"},
                    {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": "{}"},
                ]
            },
            [{"type": "reasoning", "id": "rs_1", "encrypted_content": "E"}],
        ),
        (
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-pro:generateContent",
            {
                "contents": [
                    {"role": "user", "parts": [{"text": "hi"}]},
                    {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "add", "args": {}}, "thoughtSignature": "G"}],
                    },
                ]
            },
            [{"thoughtSignature": "G"}],
        ),
        (
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse",
            {
                "messages": [
                    {"role": "user", "content": [{"text": "hi"}]},
                    {
                        "role": "assistant",
                        "content": [
                            {"reasoningContent": {"reasoningText": {"text": "t", "signature": "S"}}},
                            {"toolUse": {"toolUseId": "tu_1", "name": "add", "input": {}}},
                        ],
                    },
                ]
            },
            [{"type": "reasoningText", "text": "t", "signature": "S"}],
        ),
    ],
)
def test_the_history_reads_the_reasoning_an_assistant_message_carries_back(
    uri: str, body: dict[str, Any], expected: list[dict[str, Any]]
) -> None:
    request = Request("POST", uri, body=RecordedBody.of(json.dumps(body).encode()))
    user, assistant = conversation(request).messages
    assert not user.reasoning and [c.name for c in assistant.calls] == ["add"]
    assert [json.loads(entry) for entry in assistant.reasoning] == expected


# -- the rule -----------------------------------------------------------------------------------


def _anthropic_conversation(last_turn_blocks: list[dict[str, Any]], thinking: dict[str, Any] | None = THINKING) -> Run:
    """Three requests: a call after thinking T1, another after T2, then the answer; the third
    request's history holds the first turn without its thinking and the second as given."""
    first = ModelTurn(thinking="T1", calls=(Call("add", {"a": 1}, id="toolu_1"),))
    second = ModelTurn(thinking="T2", calls=(Call("add", {"a": 2}, id="toolu_2"),))

    def use(n: int) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_{n}", "name": "add", "input": {"a": n}}

    def result(n: int) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": str(n)}]}

    thought = {"type": "thinking", "thinking": "T1", "signature": thinking_signature("T1")}
    prompt = {"role": "user", "content": "p"}
    ask = {"thinking": THINKING}
    bodies = [
        {**ask, "messages": [prompt]},
        {**ask, "messages": [prompt, {"role": "assistant", "content": [thought, use(1)]}, result(1)]},
        {
            **({"thinking": thinking} if thinking else {}),
            "messages": [
                prompt,
                {"role": "assistant", "content": [use(1)]},  # an older turn's thinking left out: allowed
                result(1),
                {"role": "assistant", "content": [*last_turn_blocks, use(2)]},
                result(2),
            ],
        },
    ]
    requests = [_request("anthropic", "messages", body) for body in bodies]
    return _run(requests, [first, second, ModelTurn(text="Done.")])


def test_w2_asks_back_the_last_turns_thinking_unchanged_and_lets_older_turns_thinking_go() -> None:
    kept = {"type": "thinking", "thinking": "T2", "signature": thinking_signature("T2")}
    assert judge(_anthropic_conversation([kept])).ok
    (dropped,) = judge(_anthropic_conversation([])).violations
    assert dropped.invariant == "W2" and dropped.request == 3 and dropped.cause == 2
    assert dropped.kinds == ("thinking and a call",)
    assert "the thinking block (signature" in dropped.message
    assert "before call add#toolu_2 (reply 2) was not sent back" in dropped.message
    (changed,) = judge(_anthropic_conversation([{**kept, "thinking": "T2, tidied"}])).violations
    assert "was changed (thinking)" in changed.message
    # a continuation that no longer enables thinking may leave thinking blocks out
    assert judge(_anthropic_conversation([], thinking=None)).ok


def _responses_conversation(second: dict[str, Any], store: bool = False) -> Run:
    reasoned = ModelTurn(thinking="R", calls=(Call("add", {"a": 1}, id="call_1"),))
    ask = {"store": store, "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "low"}}
    call = {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": '{"a": 1}'}
    output = {"type": "function_call_output", "call_id": "call_1", "output": "1"}
    user = {"role": "user", "content": "p"}
    items = second.pop("items", [call, output])
    continued = "previous_response_id" in second  # the stored response holds the prompt and the reply
    bodies = [{**ask, "input": [user]}, {**ask, **second, "input": items if continued else [user, *items]}]
    requests = [_request("openai", "responses", body) for body in bodies]
    run = _run(requests, [reasoned, ModelTurn(text="Done.")])
    run.exchanges[0].response_id = "resp_1"
    return run


def test_w2_asks_back_a_responses_reasoning_item_sent_by_hand_with_its_encrypted_content_when_not_stored() -> None:
    asked = _request("openai", "responses", {"include": ["reasoning.encrypted_content"]})
    item = reasoning_item("R", asked)  # as the emulator served it
    assert item["encrypted_content"]
    call = {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": '{"a": 1}'}
    output = {"type": "function_call_output", "call_id": "call_1", "output": "1"}
    assert judge(_responses_conversation({"items": [item, call, output]})).ok
    (dropped,) = judge(_responses_conversation({})).violations
    assert "the reasoning item (id rs_" in dropped.message and "was not sent back" in dropped.message
    bare = {k: v for k, v in item.items() if k != "encrypted_content"}
    (unencrypted,) = judge(_responses_conversation({"items": [bare, call, output]})).violations
    assert "without its encrypted_content, with store: false" in unencrypted.message
    # stored, the id alone names it; continued from the stored response, the server has it
    assert judge(_responses_conversation({"items": [bare, call, output]}, store=True)).ok
    assert judge(_responses_conversation({"previous_response_id": "resp_1", "items": [output]})).ok


def _gemini_conversation(model: str, signed: bool) -> Run:
    reply = ModelTurn(calls=(Call("add", {"a": 1}, id="call_1"),))
    route = _route("gemini", "generateContent")
    path = f"/v1beta/models/{model}:generateContent"
    call: dict[str, Any] = {"functionCall": {"name": "add", "args": {"a": 1}}}  # sent back without its id
    if signed:
        call["thoughtSignature"] = call_signature("add", {"a": 1})
    result = {"functionResponse": {"name": "add", "response": {"result": "1"}}}
    user = {"role": "user", "parts": [{"text": "p"}]}
    bodies = [
        {"contents": [user]},
        {"contents": [user, {"role": "model", "parts": [call]}, {"role": "user", "parts": [result]}]},
    ]
    requests = [WireRequest("POST", path, {}, {}, body, route, {"model": model}) for body in bodies]
    return _run(requests, [reply, ModelTurn(text="Done.")])


def test_w2_asks_back_the_first_calls_thought_signature_from_gemini_3_on() -> None:
    assert judge(_gemini_conversation("gemini-3-pro-preview", signed=True)).ok
    (dropped,) = judge(_gemini_conversation("gemini-3-pro-preview", signed=False)).violations
    assert dropped.invariant == "W2" and "the thoughtSignature (" in dropped.message
    assert "of call add#call_1 (reply 1) was not sent back" in dropped.message
    assert judge(_gemini_conversation("gemini-2.5-flash", signed=False)).ok  # 2.5 does not check them


def _converse_conversation(sent_back: list[dict[str, Any]], thinking: bool = True) -> Run:
    reply = ModelTurn(thinking="C", calls=(Call("add", {"a": 1}, id="tooluse_1"),))
    ask = {"additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}}}
    use = {"toolUse": {"toolUseId": "tooluse_1", "name": "add", "input": {"a": 1}}}
    result = {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "1"}]}}
    user = {"role": "user", "content": [{"text": "p"}]}
    following = {
        **(ask if thinking else {}),
        "messages": [user, {"role": "assistant", "content": [*sent_back, use]}, {"role": "user", "content": [result]}],
    }
    requests = [_request("bedrock", "converse", body) for body in ({**ask, "messages": [user]}, following)]
    return _run(requests, [reply, ModelTurn(text="Done.")])


def test_w2_asks_back_converse_reasoning_content_of_the_last_turn_when_thinking_is_on() -> None:
    kept = {"reasoningContent": {"reasoningText": {"text": "C", "signature": reasoning_signature("C")}}}
    assert judge(_converse_conversation([kept])).ok
    (dropped,) = judge(_converse_conversation([])).violations
    assert "the reasoningContent block (signature " in dropped.message and "was not sent back" in dropped.message
    assert judge(_converse_conversation([], thinking=False)).ok


# -- planted loops ------------------------------------------------------------------------------

PLANTED = {
    "anthropic_drops_thinking": ("anthropic_agent", "the thinking block"),
    "responses_drops_reasoning": ("responses_agent", "the reasoning item"),
    "gemini_drops_signatures": ("gemini_agent", "the thoughtSignature"),
}


@pytest.mark.parametrize("defect", sorted(PLANTED))
def test_a_default_campaign_finds_dropped_reasoning_and_the_correct_twin_holds(defect: str, tmp_path: Path) -> None:
    twin_name, said = PLANTED[defect]
    agent, twin = getattr(planted_reasoning, defect), getattr(planted_reasoning, twin_name)
    result = run_agent_campaign(agent, save_dir=tmp_path, time_bound=5.0)
    assert result.failure is not None, f"{defect} was not found"
    violation = result.failure.violation
    assert violation.invariant == "W2" and said in violation.message, str(violation)
    assert violation.tier == "provider"
    assert 1 <= len(result.failure.scenario.turns) <= 2, result.failure.scenario.to_yaml()
    assert result.failure.path is not None
    _, again = replay_agent(agent, result.failure.path)
    assert [v.invariant for v in again.violations][:1] == ["W2"]
    _, clean = replay_agent(twin, result.failure.path)
    assert clean.ok, [str(v) for v in clean.violations]
    held = run_agent_campaign(twin, save=False, time_bound=5.0)
    assert held.ok, held.failure and str(held.failure.violation)
    assert held.stats.kinds["thinking and a call"] > 0
