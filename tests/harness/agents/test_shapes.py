"""Replies the provider documents as well-formed, which naive loops break on (issue 36): the
usage-only final chunk, unknown events and fields, several calls streamed apart; and W8, "a run
served only such replies ends by returning". The default campaign finds each planted defect with
the right invariant, shrunk small, saved as a scenario that reproduces it; each correct twin holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import ollama
import pytest

from harness.agents import Deviation, replay_agent, run_agent_campaign
from harness.agents._replies import WELL_FORMED, kind_of, tier_of
from harness.emulator import Emulator, script_of
from harness.emulator._scenario_file import load_script
from harness.scenarios._scenario import Scenario
from harness.scenarios._scenario_parts import Call, ModelTurn
from harness.wire import sse_data
from tests.harness.agents import planted_shapes
from tests.harness.emulator.wirecheck import NOVA

NEW_KINDS = ("unknown events and fields", "several calls, interleaved")
TWO_CALLS = (Call("add", {"a": 1, "b": 2}, id="c1"), Call("lookup", {"word": "hello there"}, id="c2"))

# defect -> (its twin, the invariant, what the finding's message says, the wire fault its scenario needs)
PLANTED = {
    "index_every_chunk": (
        "chat_with_usage",
        "W8",
        ("IndexError: list index out of range", "usage-only final chunk (choices: [])"),
        None,
    ),
    "raise_on_unknown_event": (
        "anthropic_by_hand",
        "W8",
        ("ValueError: unexpected event 'emulator.unknown_event'", "(unknown events and fields)"),
        "unknown_event",
    ),
    "last_chunk_calls": ("gemini_streamed", "W1", ("carries 0 result(s) for it",), "interleaved"),
}


@pytest.mark.parametrize("defect", sorted(PLANTED))
def test_the_default_campaign_finds_each_shape_defect_and_its_twin_holds_the_finding(
    defect: str, tmp_path: Path
) -> None:
    twin, invariant, said, needed = PLANTED[defect]
    agent = getattr(planted_shapes, defect)
    result = run_agent_campaign(agent, save_dir=tmp_path, time_bound=3)
    assert result.failure is not None, f"{defect} was not found"
    violation = result.failure.violation
    assert violation.invariant == invariant and violation.tier == "provider", str(violation)
    assert all(part in str(violation) for part in said), str(violation)
    turns = result.failure.scenario.turns
    assert 1 <= len(turns) <= 2, result.failure.scenario.to_yaml()
    if needed is not None:  # the finding needs the new shape: the plain reply does not show it
        assert any(needed in dict(turn.wire) for turn in turns), result.failure.scenario.to_yaml()
    assert result.failure.path is not None
    assert Scenario.from_yaml(result.failure.path).meta["violation"]["invariant"] == invariant
    _, again = replay_agent(agent, result.failure.path)
    assert [v.invariant for v in again.violations][:1] == [invariant]
    _, fixed = replay_agent(getattr(planted_shapes, twin), result.failure.path)
    assert fixed.ok, [str(v) for v in fixed.violations]


@pytest.mark.parametrize("twin", ["chat_with_usage", "anthropic_by_hand", "gemini_streamed"])
def test_each_correct_twin_holds_a_default_campaign_that_served_it_the_new_kinds(twin: str, tmp_path: Path) -> None:
    result = run_agent_campaign(getattr(planted_shapes, twin), save_dir=tmp_path, time_bound=3)
    assert result.ok, result.failure and str(result.failure.violation)
    assert all(result.stats.kinds[kind] for kind in NEW_KINDS), result.stats.kinds
    rows = {v.invariant: v.verdict for v in result.verdicts()}
    assert rows["W8"].startswith("held (exercised in "), rows  # counted like every invariant
    served = dict(result.stats.served_rows())
    assert all(served[f"replies (provider): {kind}"] for kind in NEW_KINDS), served


def test_w8_names_what_was_raised_and_judges_only_whole_well_formed_replies_and_a_declared_deviation_covers_it() -> (
    None
):
    unknown = ModelTurn(text="Done.", wire=(("unknown_event", True), ("unknown_fields", True)))
    call = ModelTurn(calls=(Call("add", {"a": 1, "b": 2}, id="c1"),), wire=unknown.wire)
    scenario = Scenario(prompts=("hi",), turns=(call, unknown))
    run, judgement = replay_agent(planted_shapes.raise_on_unknown_event, scenario)
    assert isinstance(run.raised, ValueError)
    (violation,) = judgement.violations
    assert violation.kinds == ("unknown events and fields",)
    assert violation.message == (
        "the run raised ValueError: unexpected event 'emulator.unknown_event' after 1 reply "
        "(unknown events and fields), whole and well-formed"
    )
    # a framework that raises on them by design says so, for these kinds only
    declared = Deviation("W8", "this SDK version refuses events it does not know", kinds=("unknown events and fields",))
    _, covered = replay_agent(planted_shapes.raise_on_unknown_event, scenario, deviations=[declared])
    assert covered.ok and [d.invariant for _, d in covered.declared] == ["W8"]
    # a raise after a reply that was not whole is not W8's: a cut stream may end a run either way
    cut = Scenario(prompts=("hi",), turns=(ModelTurn(kind="hang_up", text="Done."),))
    run, judgement = replay_agent(planted_shapes.anthropic_by_hand, cut)
    assert run.raised is not None and judgement.ok
    # nor a raise after a reply the model got wrong (an unknown tool): a framework may raise on it
    wrong = Scenario(prompts=("hi",), turns=(ModelTurn(calls=(Call("no_such_tool", {}, id="c9"),)),))
    assert all(v.invariant != "W8" for v in replay_agent(_raises_on_a_call, wrong)[1].violations)


def _raises_on_a_call(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    planted_shapes.chat_with_usage(prompt, base_url=base_url, api_key=api_key, http_client=http_client)
    raise RuntimeError("unreachable: the scenario ends after its call")


def test_the_new_kinds_are_provider_tier_well_formed_and_counted_back_from_their_turns() -> None:
    unknown = ModelTurn(text="hi", wire=(("unknown_event", True), ("unknown_fields", True)))
    interleaved = ModelTurn(calls=TWO_CALLS, wire=(("interleaved", True),))
    assert [kind_of(unknown), kind_of(interleaved)] == list(NEW_KINDS)
    assert kind_of(ModelTurn(calls=TWO_CALLS)) == "several calls"
    assert all(tier_of(kind) == "provider" and kind in WELL_FORMED for kind in NEW_KINDS)


def test_a_scenario_file_writes_the_new_shapes_and_the_emulator_serves_them_on_each_wire(tmp_path: Path) -> None:
    path = tmp_path / "shapes.yaml"
    path.write_text(
        "turns:\n"
        "  - wire: interleaved\n"
        "    turn: {calls: [{name: add, args: {a: 1, b: 22222222}, id: c1},\n"
        "                   {name: lookup, args: {word: hello}, id: c2}]}\n"
        "  - wire: [unknown_event, unknown_fields]\n"
        "    turn: {text: fine}\n"
    )
    entries, _ = load_script(path)
    chat = _chunks(Emulator(*entries), "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    indexes = [c["choices"][0]["delta"]["tool_calls"][0]["index"] for c in chat if _call_delta(c)]
    assert indexes[:4] == [0, 1, 0, 1]  # the calls' deltas alternate by index
    chat = _chunks(Emulator(*entries[1:]), "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    assert all("emulator_new_field" in c and "emulator_new_field" in c["choices"][0]["delta"] for c in chat)
    legacy = "/v1beta/models/gemini-2.0-flash:streamGenerateContent"
    gemini = _chunks(Emulator(*entries), legacy, {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, "alt=sse")
    assert [len(c["candidates"][0]["content"]["parts"]) for c in gemini] == [1, 1]  # one call a chunk


def _chunks(emu: Emulator, path: str, body: dict[str, Any], query: str = "") -> list[Any]:
    sent = json.dumps({"model": "m", "stream": True, **body}).encode()
    delivery = emu.answer("POST", path, query, [("content-type", "application/json")], sent)
    data = [bytes(sse_data(part)).decode() for part in delivery.parts]
    return [json.loads(d) for d in data if d and d != "[DONE]" and '"emulator.unknown_event"' not in d]


def _call_delta(chunk: Any) -> bool:
    return bool(chunk["choices"]) and bool(chunk["choices"][0]["delta"].get("tool_calls"))


def test_botocore_and_the_ollama_client_read_unknown_fields_events_and_calls_apart_as_the_reply_they_carry() -> None:
    shaped = ModelTurn(calls=TWO_CALLS, wire=(("unknown_event", True), ("unknown_fields", True)))
    apart = ModelTurn(calls=TWO_CALLS, wire=(("interleaved", True), ("unknown_fields", True)))
    with Emulator(*script_of([shaped, shaped, shaped, apart])) as emu:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=emu.base_url,
            aws_access_key_id="k",
            aws_secret_access_key="k",
        )
        message = [{"role": "user", "content": [{"text": "hi"}]}]
        events = list(client.converse_stream(modelId=NOVA, messages=message)["stream"])
        starts = [e["contentBlockStart"]["start"]["toolUse"]["name"] for e in events if "contentBlockStart" in e]
        assert starts == ["add", "lookup"]
        whole = client.converse(modelId=NOVA, messages=message)["output"]["message"]["content"]
        assert [block["toolUse"]["input"] for block in whole] == [{"a": 1, "b": 2}, {"word": "hello there"}]
        reply = ollama.Client(host=emu.base_url).chat(model="m", messages=[{"role": "user", "content": "hi"}])
        assert [call.function.name for call in reply.message.tool_calls or []] == ["add", "lookup"]
        stream = ollama.Client(host=emu.base_url).chat(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        lines = [[call.function.name for call in part.message.tool_calls or []] for part in stream]
        assert [names for names in lines if names] == [["add"], ["lookup"]]  # one call a line
