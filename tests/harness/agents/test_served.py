"""Green means tested (issue 35): a campaign serves every kind its tiers allow and counts what it
served, per tier and kind; a tool declared ``strict: true`` is never sent arguments its schema
refuses at the ``provider`` tier; and the findings say what happened (a call moved to a turn of its
own, a reply served again on every request), one finding per causing reply."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from harness.agents import kinds_for, replay_agent, run_agent_campaign, tier_of
from harness.agents._replies import STRICT_KINDS, request_features
from harness.cli import main
from harness.scenarios._scenario import Scenario
from harness.scenarios._scenario_parts import Call, ModelTurn
from tests.harness.agents import planted, planted_served

STRICT = "tests.harness.agents.planted_served:strict_agent"


def served(output: str) -> dict[str, int]:
    """The served rows of the summary's table: ``{kind: count}``."""
    return {kind.strip(): int(n) for kind, n in re.findall(r"replies \(\w+\): ([a-zA-Z ,-]+?)\s*│\s*(\d+)", output)}


def test_a_campaign_serves_every_kind_of_its_tiers_and_a_strict_tool_only_valid_arguments(tmp_path: Path) -> None:
    """At the default seed, twice as many conversations as kinds (the first phase needs that many): every kind of
    the campaign's tiers is served and counted, in the summary and on the HTML page; ``add`` is
    declared strict, so the default campaign never sends it arguments its schema refuses, while
    ``lookup`` gets them; ``--hostile`` serves them to ``add`` too, as the ``invalid`` tier."""
    planted_served.ADD_ARGUMENTS.clear()
    runner = CliRunner()
    examples = 2 * len(kinds_for(hostile=True))  # the first phase, which serves each kind once, runs from there
    done = runner.invoke(main, ["fuzz", "--agent", STRICT, "-n", str(examples)], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    counts = served(done.output)
    # an OpenAI chat request enables OpenAI's own kinds (the quota error, the content filter), not reasoning
    assert set(counts) == set(kinds_for(features=request_features("openai", {}))) and all(counts.values()), done.output
    assert re.search(r"replies of the provider tier\s*│\s*\d+", done.output)
    # the same seed, the same campaign: the first phase included
    again = run_agent_campaign(planted_served.strict_agent, examples, save=False).stats
    assert {kind: again.kinds[kind] for kind in counts} == counts
    assert planted_served.ADD_ARGUMENTS  # add was called, and each time with what its schema accepts
    assert all(
        jsonschema.Draft202012Validator(planted_served.ADD_SCHEMA).is_valid(json.loads(text))
        for text in planted_served.ADD_ARGUMENTS
    ), planted_served.ADD_ARGUMENTS

    report = tmp_path / "report.html"
    done = runner.invoke(
        main,
        ["fuzz", "--agent", STRICT, "-n", str(examples), "--hostile", "--html", str(report)],
        env={"COLUMNS": "200"},
    )
    assert done.exit_code == 0, done.output
    counts = served(done.output)
    invalid = [kind for kind in kinds_for(hostile=True) if tier_of(kind) == "invalid"]
    assert set(STRICT_KINDS) <= set(invalid) and all(counts.get(kind, 0) > 0 for kind in invalid), done.output
    openai = request_features("openai", {})
    assert set(counts) == set(kinds_for(hostile=True, features=openai)) and all(counts.values()), done.output
    page = report.read_text()
    assert "replies of the invalid tier" in page and "replies (invalid): invalid arguments to a strict tool" in page


def test_a_call_moved_to_a_turn_of_its_own_is_said_moved_not_lost() -> None:
    two = Scenario(
        prompts=("hi",),
        turns=(
            ModelTurn(calls=(Call("add", {"a": 1, "b": 2}, id="call_1"), Call("lookup", {"word": "x"}, id="call_2"))),
            ModelTurn(text="Done."),
        ),
    )
    run, judgement = replay_agent(planted_served.moves_calls, two)
    (finding,) = judgement.violations
    assert finding.invariant == "W2" and not finding.also, str(finding)
    assert finding.message == (
        'message 2, reply 1\'s calls: tool_calls[].id call_2 (lookup {"word": "x"}) was moved to message 4, '
        "an assistant turn of its own"
    ), finding.message
    assert run.returned == "Done."


def test_w3_names_the_reply_served_again_on_every_request() -> None:
    cut = ModelTurn(text="Done.", wire=(("cut_mid_event", True),))
    run, judgement = replay_agent(planted_served.retries_failures, Scenario(prompts=("hi",), turns=(cut,)))
    (finding,) = judgement.violations
    assert finding.invariant == "W3", str(finding)
    assert re.fullmatch(
        r"the run sent request (\d+), beyond its bound of (\d+) requests: its last \2 requests were each answered "
        r"with the same reply, a cut inside an event, served again on every request after reply 1; a run that "
        r"retries a failing reply until its own step limit never ends on it",
        finding.message,
    ), finding.message
    # one cut, then a whole answer: the answer, in two requests
    run, judgement = replay_agent(
        planted_served.retries_failures, Scenario(prompts=("hi",), turns=(cut, ModelTurn(text="Done.")))
    )
    assert judgement.ok and run.returned == "Done." and len(run.exchanges) == 2


def test_w2_counts_the_messages_the_wire_carries_an_empty_one_too() -> None:
    answers = Scenario(prompts=("hi",), turns=(ModelTurn(text="Not yet."), ModelTurn(text="Done.")))
    _, judgement = replay_agent(planted_served.blanks_answers, answers)
    (finding,) = judgement.violations
    assert finding.message == (
        "message 2 (reply 1's), assistant 'Not yet.', was dropped: request 1 and its reply had 2 message(s), this "
        "request carries 2 (1 of them empty, or an assistant's calls sent apart from its text)"
    ), finding.message


def test_w2_says_a_message_came_back_without_its_text_not_as_an_empty_string() -> None:
    """``content: null`` next to the calls (the text dropped) was said as ``now assistant ''``."""
    said = Scenario(
        prompts=("hi",),
        turns=(
            ModelTurn(text="Let me check.", calls=(Call("add", {"a": 2, "b": 3}, id="call_1"),)),
            ModelTurn(text="Done."),
        ),
    )
    _, judgement = replay_agent(planted.rewrite_history, said)
    (finding,) = judgement.violations
    assert finding.message == (
        "message 2 (reply 1's), assistant 'Let me check.' calling add#call_1, came back without its text"
    ), finding.message
