"""Verdicts a user can act on: every finding says who could send what triggered it (``provider``,
``network`` or ``invalid``), each wire is served its own statuses, a default campaign serves
nothing a conforming provider would not (``--hostile`` does), and the messages say what happened
in the wire's own terms (DESIGN 6, "Verdicts you can act on")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.agents import replay_agent, run_agent_campaign
from harness.agents._replies import (
    ERROR_STATUSES,
    IN_BAND_ERRORS,
    SENDS_RETRY_AFTER,
    Tool,
    kind_of,
    kinds_for,
    replies,
    status_of,
)
from harness.cli import main
from harness.scenarios._scenario import Scenario
from harness.scenarios._scenario_parts import Call, ModelTurn
from tests.harness.agents import planted, planted_tiers

ENV = {"COLUMNS": "250"}


def _fuzz(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(main, ["fuzz", "--agent", *args], env=ENV)
    return done.exit_code, done.output


def test_a_reset_mid_chunk_is_a_network_finding_told_apart_from_a_body_that_ends_cleanly(tmp_path: Path) -> None:
    report = tmp_path / "report.html"
    code, output = _fuzz(
        "tests.harness.agents.planted_tiers:returns_text_on_reset", "--save-dir", str(tmp_path), "--html", str(report)
    )
    assert code == 1, output
    assert "reset mid-chunk" in report.read_text() and "[tier: network]" in report.read_text()
    shown = " ".join(output.split())
    assert re.search(
        r"W5 at request \d+: the reply was a stream reset mid-chunk \(the connection was reset mid-chunk, after a "
        r"`choices\[0\]\.delta\.\w+` chunk\), and the run returned '.*' as a complete answer \[tier: network\]",
        shown,
    ), output
    saved = Scenario.from_yaml(next((tmp_path / "wire").glob("W5-*.yaml")))
    assert saved.meta["violation"]["tier"] == "network"
    assert [t.kind for t in saved.turns][-1] == "raise"
    # the loop that returns a cleanly ended body instead is told so, in that wire's events
    code, output = _fuzz("tests.harness.agents.planted:return_cut_text", "--save-dir", str(tmp_path))
    assert code == 1, output
    shown = " ".join(output.split())
    assert "the body ended cleanly" in shown and "reset" not in shown.split("minimal scenario")[0], output
    assert "[tier: network]" in shown


def test_the_sdk_raises_on_a_reset_and_ends_quietly_on_a_clean_end() -> None:
    """The two faults as the ``openai`` SDK meets them: what makes the first finding the framework's."""
    reset = Scenario(prompts=("hi",), turns=(ModelTurn(kind="raise", text="Done.", message="reset"),))
    run, judgement = replay_agent(planted_tiers.clean, reset)
    assert judgement.ok and type(run.raised).__name__ == "APIConnectionError"
    cut = Scenario(prompts=("hi",), turns=(ModelTurn(kind="hang_up", text="Done."),))
    run, judgement = replay_agent(planted_tiers.clean, cut)
    assert judgement.ok and isinstance(run.raised, planted_tiers.CutStream)


def test_a_deviation_declared_for_the_reply_that_causes_it_covers_the_violation() -> None:
    """``kinds=("text and a call",)`` covers the W4 that reply causes, whatever the last reply was."""
    # twice the kinds: the first phase serves each once, text and a call among them
    code, output = _fuzz("tests.harness.agents.planted_tiers:joins_texts", "-n", str(2 * len(kinds_for())))
    assert code == 0, output
    assert re.search(r"declared: W4 after text and a call: .* \(covered \d+ violation\(s\)\)", " ".join(output.split()))
    one = Scenario(
        prompts=("hi",),
        turns=(
            ModelTurn(text="Let me check.", calls=(Call("add", {"a": 1, "b": 2}, id="call_1"),)),
            ModelTurn(text="Done."),
        ),
    )
    _, judgement = replay_agent(planted_tiers.joins_texts, one)
    assert judgement.ok and [v.kinds for v, _ in judgement.declared] == [("text and a call",)]


def test_invalid_input_is_served_only_to_a_hostile_campaign_and_its_finding_says_so(tmp_path: Path) -> None:
    budget = str(2 * len(kinds_for(hostile=True)))  # the first phase serves each kind of the tiers once
    code, output = _fuzz("tests.harness.agents.planted_tiers:overwrites_shared_ids", "-n", budget)
    assert code == 0, output
    assert "duplicate ids" not in output and "unused status" not in output
    code, output = _fuzz(
        # a default budget: past the first phase, whose one duplicate-ids reply may name one tool twice alike
        "tests.harness.agents.planted_tiers:overwrites_shared_ids",
        "--hostile",
        "--save-dir",
        str(tmp_path),
    )
    assert code == 1, output
    shown = " ".join(output.split())
    assert re.search(
        r"W2 at request \d+: message \d+, reply \d+'s calls: "
        r"tool_calls\[\]\.id (call_\d+) \(\w+ .*\) was duplicated: sent twice; "
        r"tool_calls\[\]\.id \1 \(\w+ .*\) was dropped \[tier: invalid\]",
        shown,
    ), output
    saved = next((tmp_path / "wire").glob("W2-*.yaml"))
    text = saved.read_text()
    assert "--hostile" in text.splitlines()[2] and Scenario.from_yaml(saved).meta["violation"]["tier"] == "invalid"


def test_hostile_is_refused_without_an_agent() -> None:
    done = CliRunner().invoke(main, ["fuzz", "--hostile", "-n", "1"])
    assert done.exit_code == 2 and "--hostile is for a wire campaign" in done.output


def test_a_hostile_campaign_serves_a_status_the_wire_never_uses() -> None:
    result = run_agent_campaign(planted.agent, 60, hostile=True, save=False)
    assert result.ok, result.failure and str(result.failure.violation)
    assert result.stats.kinds["unused status"] > 0 and result.stats.kinds["duplicate ids"] > 0


def test_w6_says_the_wait_measured_against_the_wait_asked() -> None:
    asked = Scenario(
        prompts=("hi",),
        turns=(
            ModelTurn(kind="error", message="slow down", wire=(("status", 429), ("retry_after", 0.2))),
            ModelTurn(text="Done."),
        ),
    )
    _, judgement = replay_agent(planted.retry_without_wait, asked)
    (violation,) = judgement.violations
    assert violation.invariant == "W6" and violation.tier == "provider"
    assert "HTTP 429 asked for Retry-After: 0.2" in violation.message
    assert re.fullmatch(r"it came 0\.\d{3}s after the 429, 0\.2s asked", violation.measured)


TOOLS = (Tool("add", {"type": "object", "properties": {"a": {"type": "integer"}}}),)


@pytest.mark.parametrize("provider", sorted(ERROR_STATUSES))
@settings(max_examples=300, database=None, deadline=None)
@given(data=st.data())
def test_each_wire_is_served_only_the_statuses_its_provider_sends(provider: str, data: st.DataObject) -> None:
    count = iter(range(1, 100))
    reply = data.draw(replies(TOOLS, lambda: f"call_{next(count)}", provider))
    kind = kind_of(reply, provider)
    assert kind not in ("duplicate ids", "unused status")
    if kind == "error status":
        assert status_of(reply) in ERROR_STATUSES[provider]
        # AWS and Ollama send none
        assert (dict(reply.wire).get("retry_after") is None) == (provider not in SENDS_RETRY_AFTER)
    if kind == "in-band error":
        assert dict(reply.wire)["error_event"] in IN_BAND_ERRORS[provider]


def test_every_reply_kind_says_who_could_send_it() -> None:
    from harness.agents import KINDS, TIERS, kinds_for, tier_of

    assert {tier_of(kind) for kind in KINDS} == set(TIERS)
    assert set(KINDS) - set(kinds_for()) == {
        "duplicate ids",
        "unused status",
        "invalid arguments to a strict tool",
        "non-JSON arguments to a strict tool",
    }
    assert kinds_for(hostile=True) == KINDS
    assert {k: tier_of(k) for k in ("cut stream", "dropped connection", "cut inside an event", "error status")} == {
        "cut stream": "network",
        "dropped connection": "network",
        "cut inside an event": "network",
        "error status": "provider",
    }
