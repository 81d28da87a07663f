"""Campaigns seeded by a recorded conversation (DESIGN 6, "Cassette-seeded campaigns").

The recordings are made here: a planted agent talks to the emulator serving a scripted
conversation while vcrpy (the format the ``recorded`` fixture and ``harness proxy`` write) records
it, so every cassette is one a user could have.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import vcr
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from harness.agents import (
    SeedError,
    WireViolationError,
    agent_test,
    load_wire_regressions,
    replay_agent,
    run_agent_campaign,
    run_seeded_campaign,
)
from harness.agents._seeded import read_seeds
from harness.cli import main
from harness.emulator import Emulator, script_of
from harness.scenarios import Call, ModelTurn, Scenario
from tests.harness.agents import planted

SHARED = Path(__file__).resolve().parents[4] / "shared" / "provider-cassettes"
PROMPT = "Add 1 to each number from 1 to 5, one call at a time."
DEEP = [ModelTurn(calls=(Call("add", {"a": n, "b": 1}, id=f"call_{n}"),)) for n in range(1, 6)]
"""Five tool rounds, then the answer: six recorded replies, past the fourth round where the deep defects live."""
EXAMPLES = 10


def record(path: Path, agent: Callable[..., Any], turns: list[ModelTurn], *prompts: str) -> Path:
    """``agent``'s conversations with the emulator serving ``turns`` (once per prompt), recorded as a cassette."""
    emulator = Emulator(script_of(turns * max(1, len(prompts))))
    base_url = emulator.start()
    try:
        with vcr.use_cassette(str(path), record_mode="all", filter_headers=["authorization", "x-api-key"]):
            for prompt in prompts or (PROMPT,):
                answer = agent(prompt, base_url=base_url, api_key="sk-test")
                if hasattr(answer, "__await__"):
                    import asyncio

                    asyncio.run(answer)
    finally:
        emulator.stop()
    assert path.is_file(), "the recording was not written"
    return path


@pytest.fixture(scope="module")
def chat_cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seeded") / "deep.yaml"
    return record(path, planted.agent, [*DEEP, ModelTurn(text="The answers are 2, 3, 4, 5 and 6.")])


@pytest.mark.parametrize(
    ("agent", "invariant", "fault"),
    [
        (planted.deep_retry_without_wait, "W6", "preceded by a 429 with Retry-After"),
        (planted.deep_return_cut_text, "W5", "cut stream"),
    ],
)
def test_a_defect_past_the_fourth_round_is_found_from_a_recording_and_missed_from_scratch(
    chat_cassette: Path, tmp_path: Path, agent: Callable[..., Any], invariant: str, fault: str
) -> None:
    # a seed whose ten examples mutate a step past the fourth round with each fault (which seed
    # does depends on the vocabulary drawn from: issue 36's kinds moved it from 0 to 1)
    (seeded,) = run_seeded_campaign(agent, chat_cassette, examples=EXAMPLES, seed=1, save_dir=tmp_path)
    failure = seeded.result.failure
    assert failure is not None and failure.violation.invariant == invariant, seeded.finding()
    assert not seeded.recording_fails and seeded.mutated >= 1
    (mutation,) = seeded.mutations  # shrunk to the one mutation it needs, named by its recorded step
    assert mutation.startswith(("recorded reply 5 of 6 (add#call_5)", "recorded reply 6 of 6")), mutation
    assert fault in mutation
    # the saved scenario carries the recorded prompt, loads as harness emulate --script reads it, and replays
    assert failure.path is not None
    saved = Scenario.from_yaml(failure.path)
    assert saved.prompts == (PROMPT,) and saved.meta["seeded_from"]["mutations"] == [mutation]
    assert len(Emulator.from_file(failure.path).script) == len(failure.run.replies)  # what harness emulate serves
    _, judgement = replay_agent(agent, failure.path)
    assert invariant in {v.invariant for v in judgement.violations}
    # the same budget at the same seed, from scratch: the conversations are too short to reach the defect
    scratch = run_agent_campaign(agent, EXAMPLES, 1, save=False)
    assert scratch.failure is None, f"a campaign from scratch found it too: {scratch.failure}"


def test_example_0_is_the_recording_unchanged_and_says_when_the_recording_itself_fails(tmp_path: Path) -> None:
    both = ModelTurn(calls=(Call("add", {"a": 1, "b": 2}, id="call_a"), Call("lookup", {"word": "x"}, id="call_b")))
    cassette = record(tmp_path / "two.yaml", planted.agent, [both, ModelTurn(text="3, and x.")])
    (held,) = run_seeded_campaign(planted.agent, cassette, examples=1, save=False)
    assert held.result.failure is None and held.mutated == 0
    assert "example 0 was the recording unchanged, 0 mutated examples ran" in held.headline()
    (failed,) = run_seeded_campaign(planted.drop_second_result, cassette, examples=5, save=False)
    assert failed.recording_fails and failed.mutated == 0  # nothing mutated could say more
    finding = failed.finding() or ""
    assert finding.startswith("the recorded conversation itself fails W1"), finding
    assert failed.result.failure is not None
    served = failed.result.failure.run.replies
    assert [c.id for c in served[0].calls] == ["call_a", "call_b"]  # the recorded ids, exactly


def test_harness_fuzz_from_cassette_reports_example_0_the_mutated_examples_and_the_finding(
    chat_cassette: Path, tmp_path: Path
) -> None:
    agent = "tests.harness.agents.planted:deep_retry_without_wait"
    args = ["fuzz", "--agent", agent, "--from-cassette", str(chat_cassette), "--examples", str(EXAMPLES)]
    page = tmp_path / "seeded.html"
    args += ["--seed", "0", "--save-dir", str(tmp_path), "--conversation", "1", "--html", str(page)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    flat = " ".join(result.output.split())
    assert "example 0 was the recording unchanged" in flat and "mutated examples ran" in flat
    assert "finding: W6 after: recorded reply" in flat
    assert load_wire_regressions(tmp_path, agent)
    shown = page.read_text(encoding="utf-8")  # the page says how to run this seeded campaign again
    assert "harness-timeline" in shown and f"--from-cassette {chat_cassette} --conversation 1 --seed 0" in shown
    _the_failure_is_drawn_on_the_recording(shown, flat)


def _the_failure_is_drawn_on_the_recording(shown: str, flat: str) -> None:
    """The page's spine: a row per recorded step with the requests it answered, the fault marked on
    the step it precedes (the step the finding names), and the same words on the failure's requests."""
    from tests.harness.report.dom import parse

    page = parse(shown)
    rows = page.find_all(cls="spine-row", tag="li")
    assert [row.attrs.get("data-step") for row in rows] == [str(n) for n in range(1, 7)]
    assert "recorded reply 1 of 6" in rows[0].text() and "add#call_1" in rows[0].text()
    (marked,) = [row for row in rows if row.attrs.get("data-kind") != "recorded"]
    step = marked.attrs["data-step"]
    assert f"finding: W6 after: recorded reply {step} of 6" in flat  # the step the finding names
    assert marked.attrs["data-kind"] == "fault" and "fault before it: preceded by a 429" in " ".join(
        marked.text().split()
    )
    served = [" ".join(code.text().split()) for code in page.find(cls="harness-timeline").find_all(tag="code")]
    assert any(text.startswith(f"the fault before recorded reply {step} of 6") for text in served), served
    assert any(text.endswith("served on the retry after the fault") for text in served), served


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("absent.yaml", None, "no such file"),
        ("empty.yaml", "", "the file is empty"),
        ("notes.yaml", "just: notes\n", "not a cassette a campaign can replay"),
    ],
)
def test_a_file_no_campaign_can_be_seeded_from_is_one_line_and_exit_2(
    tmp_path: Path, name: str, content: str | None, said: str
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    args = ["fuzz", "--agent", "tests.harness.agents.planted:agent", "--from-cassette", str(path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert said in line and str(path) in line and "harness proxy" in line
    with pytest.raises(SeedError, match=said):
        run_seeded_campaign(planted.agent, path, examples=1, save=False)


def test_conversation_needs_a_cassette_and_one_it_holds(chat_cassette: Path) -> None:
    lone = CliRunner().invoke(main, ["fuzz", "--agent", "tests.harness.agents.planted:agent", "--conversation", "1"])
    assert lone.exit_code == 2 and "give it with --from-cassette" in lone.output
    args = ["fuzz", "--agent", "tests.harness.agents.planted:agent", "--from-cassette", str(chat_cassette)]
    beyond = CliRunner().invoke(main, [*args, "--conversation", "2"])
    assert beyond.exit_code == 2 and "holds 1 conversation; give a number from 1 to 1" in beyond.output


@pytest.fixture
def twelve_examples() -> Iterator[None]:
    before = settings.get_current_profile_name()
    settings.register_profile("seeded-twelve", max_examples=12, deadline=None, database=None, derandomize=True)
    settings.load_profile("seeded-twelve")
    yield
    settings.load_profile(before)


def test_agent_test_from_cassette_finds_the_deep_defect_and_replays_it_first(
    chat_cassette: Path, tmp_path: Path, twelve_examples: None
) -> None:
    test = agent_test(planted.deep_retry_without_wait, from_cassette=chat_cassette, regressions=tmp_path)
    with pytest.raises(WireViolationError, match=r"W6 after: recorded reply \d of 6"):
        test()
    with pytest.raises(WireViolationError, match=r"the saved regression .* still fails"):
        test()


def test_agent_test_from_cassette_is_inconclusive_when_nothing_reached_the_wire(
    chat_cassette: Path, tmp_path: Path, twelve_examples: None
) -> None:
    def offline(prompt: str, *, base_url: str, api_key: str) -> str:
        raise RuntimeError("never sends a request")

    with pytest.raises(AssertionError, match=r"example 0 was the recording unchanged.*inconclusive"):
        agent_test(offline, from_cassette=chat_cassette, regressions=tmp_path)()


def test_an_agent_cmd_is_seeded_from_a_recording(chat_cassette: Path, tmp_path: Path) -> None:
    script = tmp_path / "agent.py"
    root = Path(__file__).resolve().parents[3]
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(root)!r})\nfrom harness.agents import serve_lines\n"
        "from tests.harness.agents import planted\nserve_lines(planted.agent)\n",
        encoding="utf-8",
    )
    args = ["fuzz", "--agent-cmd", f"{sys.executable} {script}", "--agent-cmd-mode", "lines"]
    args += ["--from-cassette", str(chat_cassette), "--examples", "3"]
    result = CliRunner().invoke(main, [*args, "--save-dir", str(tmp_path)])
    flat = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "example 0 was the recording unchanged, 2 mutated examples ran" in flat


WIRES = {
    "responses": planted.responses_agent,  # a chain linked by previous_response_id: one conversation
    "anthropic": planted.anthropic_agent,
    "gemini": planted.gemini_agent,
    "bedrock": planted.bedrock_agent,
}


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_recording_of_each_wire_seeds_a_campaign(tmp_path: Path, wire: str) -> None:
    turns = [
        ModelTurn(calls=(Call("add", {"a": 1, "b": 1}, id="c1"),)),
        ModelTurn(calls=(Call("add", {"a": 2, "b": 1}, id="c2"),)),
        ModelTurn(text="2 and 3."),
    ]
    cassette = record(tmp_path / f"{wire}.yaml", WIRES[wire], turns)
    (seed,) = read_seeds(cassette)
    assert seed.prompt == PROMPT and len(seed.replies) == 3 and [t.name for t in seed.menu][:1] == ["add"]
    (seeded,) = run_seeded_campaign(WIRES[wire], cassette, examples=3, seed=0, save=False)
    assert not seeded.recording_fails, seeded.finding()
    assert seeded.mutated == 2 and seeded.result.stats.reached >= 1
    if wire == "bedrock":
        _no_retry_after_on_bedrock(seed)


def test_a_third_party_bedrock_recording_is_read_as_a_seed() -> None:
    folder = SHARED / "bedrock"
    if not folder.is_dir():
        pytest.skip(f"the shared provider cassettes are not here ({folder})")
    (seed, *_) = read_seeds(folder / "openinference__oi-bedrock__cassettes__test_converse_tool_use_message.yaml")
    assert seed.provider == "bedrock" and seed.prompt and seed.menu and seed.replies


def _no_retry_after_on_bedrock(seed: Any) -> None:
    """Bedrock's throttling carries no ``Retry-After``: a fault drawn for its wire has none either."""
    from hypothesis import given

    from harness.agents._seeded._mutations import mutations

    # a machine shared by several runs can be slow to draw the first examples: that is not what this checks
    @settings(max_examples=10, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(mutations(seed, hostile=False))
    def drawn(planned: list[Any]) -> None:
        for mutation in planned:
            assert "retry_after" not in dict(mutation.served.wire), mutation

    drawn()


def test_the_recording_is_followed_while_requests_match_it_and_left_once_they_do_not(chat_cassette: Path) -> None:
    from harness.agents._conversation import serving
    from harness.agents._seeded._mutations import Mutation, SeededReplies

    (seed,) = read_seeds(chat_cassette)
    outside = ModelTurn(calls=(Call("add", {"a": "one"}, id="call_1"),))  # its result comes back as error text
    elsewhere = ModelTurn(calls=(Call("lookup", {"word": "x"}, id="call_x"),))  # a result of another tool
    with serving(planted.agent) as served:
        kept = SeededReplies(seed, {0: Mutation(0, "arguments", outside)})
        run = served.converse(planted.agent, kept, prompt=seed.prompt, request_bound=12, time_bound=10)
        assert kept.diverged_at is None and run.replies == [outside, *seed.replies[1:]]
        left = SeededReplies(seed, {0: Mutation(0, "replaced", elsewhere, "replaced by a lookup call")})
        run = served.converse(planted.agent, left, prompt=seed.prompt, request_bound=12, time_bound=10)
        assert left.diverged_at == 2 and len(run.replies) == 2  # no data to draw from: the final answer
    _leaving_the_recording_is_drawn_off_the_spine(chat_cassette, seed, left.trail)


def _leaving_the_recording_is_drawn_off_the_spine(cassette: Path, seed: Any, trail: list[Any]) -> None:
    """On the page, the replies drawn once the agent left come after the last recorded step it
    reached, marked as off the recording, and the steps it never reached say so."""
    from harness.agents import INVARIANTS
    from harness.agents._seeded._mutations import spine_of
    from harness.report import wire_campaign_report
    from tests.harness.report.dom import parse

    (held,) = run_seeded_campaign(planted.agent, cassette, examples=1, save=False)
    spine = spine_of(seed, trail, held.headline())
    page = parse(wire_campaign_report(held.result, command=held.command, invariants=INVARIANTS, spine=spine))
    rows = [(row.attrs["data-kind"], " ".join(row.text().split())) for row in page.find_all(cls="spine-row", tag="li")]
    assert [kind for kind, _ in rows] == ["mutated", "drawn", *["unreached"] * 5], rows
    assert "recorded reply 1 of 6 add#call_1 · answered request 1 · mutated: replaced by" in rows[0][1]
    assert rows[1][1].startswith("left the recording: drawn reply") and "answered request 2" in rows[1][1]
    assert "off the recording" in rows[1][1] and all("not reached" in said for _, said in rows[2:])
    assert "example 0 (the recording unchanged)" in page.find(tag="section", id="spine").text()


def test_each_conversation_of_a_cassette_runs_in_turn_and_conversation_picks_one(tmp_path: Path) -> None:
    turns = [ModelTurn(calls=(Call("add", {"a": 1, "b": 1}, id="call_1"),)), ModelTurn(text="2.")]
    cassette = record(tmp_path / "two.yaml", planted.agent, turns, "First question?", "Second question?")
    assert [seed.prompt for seed in read_seeds(cassette)] == ["First question?", "Second question?"]
    both = run_seeded_campaign(planted.agent, cassette, examples=1, save=False)
    assert [(c.seed.number, c.result.failure) for c in both] == [(1, None), (2, None)]
    (second,) = run_seeded_campaign(planted.agent, cassette, conversation=2, examples=1, save=False)
    assert second.seed.prompt == "Second question?" and second.result.stats.conversations == 1
