"""Refusals (issue 36): a request the provider refused for good is not sent again unchanged (W7),
and what an agent may do after the model declines (the refusal rule, DESIGN 6). A default campaign
finds each planted defect with the right invariant, shrunk, saved as a scenario that reproduces it;
each correct twin holds; the new kinds are served on every wire and written in the scenario file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.agents import Deviation, replay_agent, run_agent_campaign
from harness.emulator import Emulator, script_of
from harness.scenarios._scenario import Scenario
from harness.scenarios._scenario_parts import ModelTurn
from tests.harness.agents import planted_refusals

DONE = ModelTurn(text="Done.")
FOUND = {"retries_every_error": ("W7", "gives_up"), "hides_refusal": ("W4", "tells_refusal")}


@pytest.mark.parametrize("defect", sorted(FOUND))
def test_the_default_campaign_finds_each_planted_defect_and_its_correct_twin_holds(defect: str, tmp_path: Path) -> None:
    invariant, twin = FOUND[defect]
    agent = getattr(planted_refusals, defect)
    result = run_agent_campaign(agent, save_dir=tmp_path, time_bound=3)
    assert result.failure is not None, f"{defect} was not found"
    failure = result.failure
    assert failure.violation.invariant == invariant, str(failure.violation)
    assert failure.violation.tier == "provider"
    assert 1 <= len(failure.scenario.turns) <= 2, failure.scenario.to_yaml()
    assert failure.path is not None
    _, again = replay_agent(agent, failure.path)
    assert [v.invariant for v in again.violations][:1] == [invariant]
    correct = run_agent_campaign(getattr(planted_refusals, twin), save=False, time_bound=3)
    assert correct.ok, correct.failure and str(correct.failure.violation)
    # the kinds the twin was served, counted like every kind
    assert {"non-retryable status", "quota exhausted", "refusal", "content filter"} <= set(correct.stats.kinds)


def test_w7_says_which_request_repeated_which_after_what_and_how_often(tmp_path: Path) -> None:
    refused = ModelTurn(kind="error", message="bad key", wire=(("status", 401),))
    _, judgement = replay_agent(
        planted_refusals.retries_every_error, Scenario(prompts=("hi",), turns=(refused, refused, refused, DONE))
    )
    (violation,) = judgement.violations
    assert violation.invariant == "W7" and violation.request == 2
    assert violation.message == (
        "request 2 repeated request 1 unchanged after its HTTP 401 (invalid_api_key), which is not retryable; "
        "it was sent 3 times in all"
    )
    # the quota 429 is W7's, not W6's: it carries no Retry-After to wait for
    quota = ModelTurn(kind="error", message="out of credit", wire=(("status", 429), ("code", "insufficient_quota")))
    _, judgement = replay_agent(planted_refusals.retries_every_error, Scenario(prompts=("hi",), turns=(quota, DONE)))
    assert [(v.invariant, v.kinds) for v in judgement.violations] == [("W7", ("quota exhausted",))]
    assert "(insufficient_quota)" in judgement.violations[0].message
    declared = Deviation("W7", "this agent's caller rotates the key between attempts", kinds=("quota exhausted",))
    _, judgement = replay_agent(
        planted_refusals.retries_every_error, Scenario(prompts=("hi",), turns=(quota, DONE)), deviations=[declared]
    )
    assert judgement.ok and [d for _, d in judgement.declared] == [declared]


def test_an_agent_that_resets_its_context_after_a_refusal_holds(tmp_path: Path) -> None:
    planted_refusals.RESETS.clear()
    result = run_agent_campaign(planted_refusals.resets_after_refusal, save=False, time_bound=3)
    assert result.ok, result.failure and str(result.failure.violation)
    assert planted_refusals.RESETS, "no refusal was served: the reset was never tested"
    # on Anthropic's wire there is no content filter and no quota error to draw
    assert "refusal" in result.stats.kinds and not {"content filter", "quota exhausted"} & set(result.stats.kinds)


def test_the_scenario_file_writes_the_new_kinds_and_the_emulator_serves_them_on_each_wire(tmp_path: Path) -> None:
    text = (
        "prompts: [hi]\n"
        "turns:\n"
        "- {status: 429, code: insufficient_quota}\n"
        "- {wire: refusal, turn: I can't help with that.}\n"
        "- {wire: content_filter, turn: The answer is}\n"
    )
    scenario = Scenario.from_yaml(text)
    assert Scenario.from_yaml(scenario.to_yaml()) == scenario
    script = tmp_path / "refusals.yaml"
    script.write_text(text)
    assert len(Emulator.from_file(script).script) == 3  # what harness emulate --script serves
    served = {
        ("POST", "/v1/chat/completions", '{"model": "m", "messages": []}'): (
            lambda b: b["error"]["code"],
            lambda b: (b["choices"][0]["message"]["content"], b["choices"][0]["message"]["refusal"]),
            lambda b: b["choices"][0]["finish_reason"],
        ),
        ("POST", "/v1/messages", '{"model": "c", "max_tokens": 5, "messages": []}'): (
            lambda b: b["error"]["type"],
            lambda b: b["stop_reason"],
            lambda b: b["stop_reason"],
        ),
        ("POST", "/v1beta/models/gemini-2.5-flash:generateContent", '{"contents": []}'): (
            lambda b: b["error"]["status"],
            lambda b: b["candidates"][0]["finishReason"],
            lambda b: (b["promptFeedback"]["blockReason"], "candidates" in b),
        ),
        ("POST", "/model/m-1/converse", '{"messages": []}'): (
            lambda b: b["message"],
            lambda b: b["stopReason"],
            lambda b: b["stopReason"],
        ),
    }
    seen = {}
    for (method, path, body), reads in served.items():
        emulator = Emulator(*script_of(scenario.turns))
        got = [emulator.answer(method, path, "", [], body.encode()).reply for _ in reads]
        seen[path] = [read(json.loads(reply.body or b"")) for read, reply in zip(reads, got, strict=True)]
        assert got[0].status == 429
    assert seen == {
        "/v1/chat/completions": ["insufficient_quota", (None, "I can't help with that."), "content_filter"],
        "/v1/messages": ["rate_limit_error", "refusal", "refusal"],
        "/v1beta/models/gemini-2.5-flash:generateContent": ["RESOURCE_EXHAUSTED", "SAFETY", ("SAFETY", False)],
        "/model/m-1/converse": ["emulated HTTP 429", "content_filtered", "guardrail_intervened"],
    }


def test_the_official_sdks_read_the_streamed_refusals_as_their_providers_send_them() -> None:
    import anthropic
    import boto3
    import openai

    refusal = ModelTurn(text="I can't help with that.", wire=(("refusal", True),))
    filtered = ModelTurn(text="The answer is", wire=(("content_filter", True),))
    emulator = Emulator(*script_of([refusal, filtered, refusal, filtered, refusal, refusal]))
    base = emulator.start()
    try:
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="k", max_retries=0)
        said = [{"role": "user", "content": "hi"}]
        chunks = [
            c.choices[0] for c in client.chat.completions.create(model="m", messages=said, stream=True) if c.choices
        ]
        assert "".join(c.delta.refusal or "" for c in chunks) == "I can't help with that."
        assert not any(c.delta.content for c in chunks)
        chunks = [
            c.choices[0] for c in client.chat.completions.create(model="m", messages=said, stream=True) if c.choices
        ]
        assert chunks[-1].finish_reason == "content_filter"
        with client.responses.stream(model="m", input="hi") as stream:
            events = {event.type for event in stream}
            parts = stream.get_final_response().output[0].content
        assert "response.refusal.delta" in events and [p.type for p in parts] == ["refusal"]
        with client.responses.stream(model="m", input="hi") as stream:
            assert [e.type for e in stream][-1] == "response.incomplete"
        claude = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
        with claude.messages.stream(model="c", max_tokens=5, messages=said) as stream:
            assert stream.get_final_message().stop_reason == "refusal"
        bedrock = boto3.client(
            "bedrock-runtime",
            endpoint_url=base,
            region_name="us-east-1",
            aws_access_key_id="a",
            aws_secret_access_key="b",
        )
        frames = bedrock.converse_stream(modelId="m-1", messages=[{"role": "user", "content": [{"text": "hi"}]}])
        assert [f["messageStop"]["stopReason"] for f in frames["stream"] if "messageStop" in f] == ["content_filtered"]
    finally:
        emulator.stop()
