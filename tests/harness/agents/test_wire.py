"""The ways an agent meets the wire campaign: in process (sync and async), on loopback, from the
command line, as a pytest test; and the emulator's additions they rely on."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner
from hypothesis import settings

from harness.agents import WireViolationError, agent_test, replay_agent, run_agent_campaign
from harness.agents._campaign import DEFAULT_EXAMPLES
from harness.cli import main
from harness.emulator import Emulator, fault
from harness.script import turn
from tests.harness.agents import planted
from tests.harness.support import emulate_process


def test_an_async_agent_is_given_an_async_client_answering_in_process(tmp_path: Path) -> None:
    result = run_agent_campaign(planted.async_agent, 30, save_dir=tmp_path)
    assert result.ok, result.failure and str(result.failure.violation)
    assert result.in_process and result.stats.conversations == 30
    assert "runs on openai chat.completions" in {label for label, _ in result.stats.rows()}


def test_an_agent_without_http_client_is_served_on_loopback(tmp_path: Path) -> None:
    result = run_agent_campaign(planted.loopback_agent, 15, save_dir=tmp_path)
    assert result.ok, result.failure and str(result.failure.violation)
    assert not result.in_process and result.stats.requests >= 15


def test_serving_the_saved_scenario_by_hand_reproduces_the_failure(tmp_path: Path) -> None:
    found = run_agent_campaign(planted.return_cut_text, save_dir=tmp_path)
    assert found.failure is not None and found.failure.path is not None
    with emulate_process(found.failure.path) as base:
        assert planted.return_cut_text("hi", base_url=base, api_key="k") == "Done."  # the cut text, as found
    with emulate_process(found.failure.path) as base, pytest.raises(planted.CutStream):
        planted.agent("hi", base_url=base, api_key="k")


def test_harness_fuzz_agent_prints_the_table_and_exits_1_with_the_shrunk_scenario(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    failed = runner.invoke(
        main, ["fuzz", "--agent", "tests.harness.agents.planted:return_cut_text", "--save-dir", str(tmp_path)], env=env
    )
    assert failed.exit_code == 1, failed.output
    assert f"harness fuzz: {DEFAULT_EXAMPLES} conversations, seed 21" in failed.output
    assert "VIOLATION W5" in failed.output and "W5 at request 1" in failed.output
    assert re.search(r"saved as .*wire/W5-\w+\.yaml \(serve it: harness emulate --script", failed.output)
    passed = runner.invoke(
        main, ["fuzz", "--agent", "tests.harness.agents.planted:agent", "-n", "12", "--seed", "3"], env=env
    )
    assert passed.exit_code == 0, passed.output
    assert "12 conversations" in passed.output and "no violation" in passed.output
    assert "W1 every tool call of a reply is answered exactly once" in passed.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "no_such_module:agent"], "no module named 'no_such_module'"),
        (["--agent", "tests.harness.agents.planted:TOOLS"], "is not callable"),
        (["--agent", "tests.harness.agents.planted:agent", "--tools", "x"], "give one of them"),
    ],
)
def test_harness_fuzz_agent_refuses_what_it_cannot_use_as_a_usage_error(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["fuzz", *args])
    assert result.exit_code == 2 and message in result.output, result.output


@pytest.fixture
def ten_examples() -> Iterator[None]:
    before = settings.get_current_profile_name()
    settings.register_profile("wire-test-ten", max_examples=10, deadline=None, database=None, derandomize=True)
    settings.load_profile("wire-test-ten")
    yield
    settings.load_profile(before)


def test_agent_test_is_a_campaign_under_the_active_profile(ten_examples: None, tmp_path: Path) -> None:
    agent_test(planted.agent, regressions=tmp_path)()
    # a W5 ten examples find at the default seed (the kinds drawn decide which defect that is)
    with pytest.raises(WireViolationError, match=r"W5 at request \d"):
        agent_test(planted.keep_text_on_stream_error, regressions=tmp_path)()


def test_agent_test_replays_the_saved_regressions_of_its_agent_first(ten_examples: None, tmp_path: Path) -> None:
    found = run_agent_campaign(planted.retry_without_wait, save_dir=tmp_path)
    assert found.failure is not None
    with pytest.raises(WireViolationError, match="W6 at request 2"):
        agent_test(planted.retry_without_wait, regressions=tmp_path)()
    run, judgement = replay_agent(planted.agent, found.failure.scenario)
    assert judgement.ok and run.returned == "Done."


def test_the_emulator_answers_a_synchronous_sdk_client_and_can_repeat_its_last_entry() -> None:
    emulator = Emulator(fault.status(429, retry_after=0.01), turn.text("again"), after_last="repeat")
    client = openai.OpenAI(base_url="http://emulator/v1", api_key="k", http_client=emulator.sync_http_client())
    for _ in range(3):  # the SDK waits the Retry-After, retries, then the last entry answers forever
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "again"
    assert len(emulator.requests) == 4


def test_kept_alive_requests_on_loopback_do_not_wait_for_a_delayed_ack() -> None:
    # Before the emulator's sockets said they were TCP, asyncio left Nagle on: every kept-alive
    # request after the first waited ~44 ms for the client's delayed ACK (a loopback campaign paid
    # it on each request). A median under 35 ms cannot happen with the stall (at least 40 ms).
    with Emulator([turn.text("x")] * 16) as emulator:
        client = openai.OpenAI(base_url=f"{emulator.base_url}/v1", api_key="k", max_retries=0)
        times = []
        for _ in range(16):
            started = time.perf_counter()
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            times.append(time.perf_counter() - started)
    assert statistics.median(times[1:]) < 0.035, [round(t * 1000, 1) for t in times]


def broken_agent(prompt: str, *, base_url: str, api_key: str) -> str:
    raise ValueError("no client configured")


def test_a_campaign_whose_agent_never_reaches_the_emulator_is_not_green() -> None:
    result = CliRunner().invoke(main, ["fuzz", "--agent", "tests.harness.agents.test_wire:broken_agent", "-n", "5"])
    assert result.exit_code == 3, result.output  # inconclusive: green means tested, and red means a violation
    assert "INCONCLUSIVE: NOTHING TESTED" in result.output and "ValueError: no client configured" in result.output


def test_an_anthropic_sdk_loop_is_judged_on_the_anthropic_wire(tmp_path: Path) -> None:
    result = run_agent_campaign(planted.anthropic_agent, 30, save_dir=tmp_path)
    assert result.ok, result.failure and str(result.failure.violation)
    assert {wire for wire, _ in result.stats.wires.items()} == {"anthropic messages (streamed)"}
    assert result.stats.endings["raised CutStream"] > 0  # the cut reached it before the stop reason


def test_harness_emulate_shows_its_journal_and_starts_its_script_over(tmp_path: Path) -> None:
    import httpx2

    found = run_agent_campaign(planted.return_cut_text, save_dir=tmp_path)
    assert found.failure is not None and found.failure.path is not None
    with emulate_process(found.failure.path) as base:
        for _ in range(2):  # the same scenario, twice, without restarting the server
            assert planted.return_cut_text("hi", base_url=base, api_key="k") == "Done."
            journal = httpx2.get(f"{base}/_emulator/requests").json()
            assert [(r["number"], r["endpoint"], r["streaming"]) for r in journal] == [(1, "chat.completions", True)]
            assert journal[0]["body"]["messages"] == [{"role": "user", "content": "hi"}]
            assert httpx2.post(f"{base}/_emulator/reset").status_code == 204


def test_a_seed_is_one_campaign() -> None:
    first, second = (run_agent_campaign(planted.agent, 25, seed=5, save=False).stats for _ in range(2))
    assert (first.kinds, first.endings, first.requests) == (second.kinds, second.endings, second.requests)
    other = run_agent_campaign(planted.agent, 25, seed=6, save=False).stats
    assert (other.kinds, other.requests) != (first.kinds, first.requests)


def test_a_conversation_hypothesis_would_throw_away_is_not_run() -> None:
    """Hypothesis replays fixed choices when it mutates or shrinks a conversation, and throws the
    example away when they run out: every conversation after the first draws its plan of replies
    before the agent starts, so such an example costs no run of the agent (before, each cost a
    whole real conversation, one in six of a campaign)."""
    started = []

    def counted(prompt: str, *, base_url: str, api_key: str, http_client: Any) -> str:
        started.append(prompt)
        return planted.agent(prompt, base_url=base_url, api_key=api_key, http_client=http_client)

    result = run_agent_campaign(counted, 60, seed=21, save=False)
    assert result.ok and result.stats.conversations == 60
    assert len(started) - 60 <= 3, f"{len(started) - 60} runs of the agent thrown away"


def test_history_kept_on_the_server_is_judged_through_previous_response_id(tmp_path: Path) -> None:
    kept = run_agent_campaign(planted.responses_agent, 30, save=False)
    assert kept.ok, kept.failure and str(kept.failure.violation)
    assert set(kept.stats.wires) == {"openai responses"}
    stale = run_agent_campaign(planted.stale_responses_agent, save_dir=tmp_path)
    assert stale.failure is not None and stale.failure.violation.invariant == "W2", stale.failure
    assert len(stale.failure.scenario.turns) <= 3


def test_an_item_reference_is_judged_as_the_item_it_names() -> None:
    """Responses reads ``{"type": "item_reference", "id": ...}`` as the output item it stored under
    that id (the AI SDK resends its history so): the history is whole, and one that references
    only the messages of a reply, not its call, has lost the call."""
    whole = run_agent_campaign(planted.referencing_responses_agent, 30, save=False)
    assert whole.ok, whole.failure and str(whole.failure.violation)
    lossy = run_agent_campaign(planted.lossy_referencing_responses_agent, 30, save=False)
    assert lossy.failure is not None and lossy.failure.violation.invariant == "W2", lossy.failure


_CALLS = [0]


def unsteady_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """Every other run stops after the first reply, calls or not (W1 and W4 allow it): the same
    replies, different requests, so no campaign can replay it."""
    _CALLS[0] += 1
    if _CALLS[0] % 2:
        return planted.agent(prompt, base_url=base_url, api_key=api_key, http_client=http_client)
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0)
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
    return reply.choices[0].message.content or ""


def test_an_agent_that_answers_the_same_replies_differently_is_reported_as_unsteady(tmp_path: Path) -> None:
    command = [
        "fuzz",
        "--agent",
        "tests.harness.agents.test_wire:unsteady_agent",
        "-n",
        "30",
        "--save-dir",
        str(tmp_path),
    ]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 3, result.output  # inconclusive: nothing it found could be reproduced
    shown = " ".join(result.output.split())
    assert "INCONCLUSIVE: UNSTEADY AGENT (exit 3)" in shown and "sent different requests for the same replies" in shown


def test_a_call_gemini_cannot_carry_is_owed_no_result(tmp_path: Path) -> None:
    """Gemini's ``functionCall.args`` is a JSON object: argument text that is not one comes as the
    finish reason ``MALFORMED_FUNCTION_CALL`` without the call, so an agent that asks again without
    a result breaks no invariant (nor does one that leaves Gemini's optional ids out of its history)."""
    scenario = tmp_path / "gemini.yaml"
    scenario.write_text(
        "name: malformed call on gemini\nprompts: ['What is 2 + 3?']\n"
        "turns:\n  - calls: [{name: add, raw: '{\"a\": 1', id: call_1}]\n"
        "  - calls: [{name: add, args: {a: 2, b: 3}, id: call_2}]\n  - It is 5.\n"
    )
    run, judgement = replay_agent(planted.gemini_agent, scenario)
    assert run.returned == "It is 5." and len(run.exchanges) == 3
    assert judgement.ok, [str(v) for v in judgement.violations]


def test_a_google_genai_loop_is_judged_on_the_gemini_wire(tmp_path: Path) -> None:
    result = run_agent_campaign(planted.gemini_agent, 30, save_dir=tmp_path)
    assert result.ok, result.failure and str(result.failure.violation)
    assert set(result.stats.wires) == {"gemini generateContent"}


def test_an_in_band_error_scenario_served_by_hand_reproduces_its_w5(tmp_path: Path) -> None:
    """The new kinds shrink to a scenario whose ``wire:`` fault ``harness emulate`` serves as found:
    the planted loop that keeps the text before an error event returns it again, the clean one raises
    the SDK's ``APIError``."""
    found = run_agent_campaign(planted.keep_text_on_stream_error, save_dir=tmp_path)
    assert found.failure is not None and found.failure.path is not None
    assert found.failure.violation.invariant == "W5"
    assert "error_event" in found.failure.path.read_text()
    with emulate_process(found.failure.path) as base:
        assert planted.keep_text_on_stream_error("hi", base_url=base, api_key="k") == "Done."
    with emulate_process(found.failure.path) as base, pytest.raises(openai.APIError):
        planted.agent("hi", base_url=base, api_key="k")
