"""The wire invariants in reports, read as a person would read the page (parsed, not grepped):
``harness fuzz --agent --html`` (the summary and the time split, the invariants' verdicts, the
declared deviations, a failure's shrunk conversation with the violation on its request), and a
recorded conversation judged by W1 and W2 (``harness cassettes show --html``)."""

from __future__ import annotations

from pathlib import Path

from harness.agents import INVARIANTS, Deviation, judge_recording, kinds_for, run_agent_campaign
from harness.recording._tools import read_steps
from harness.report import cassette_report, wire_campaign_report
from tests.harness.agents import planted
from tests.harness.report.dom import parse
from tests.harness.report.worlds import DEMO_CASSETTE, HOSTILE, tools_of, wire_campaign

COMMAND = "harness fuzz --agent tests.harness.agents.planted:drop_second_result --seed 21 --examples 40"


def _page(result: object, **kwargs: object) -> str:
    return wire_campaign_report(result, command=COMMAND, invariants=INVARIANTS, tools_of=tools_of, **kwargs)  # type: ignore[arg-type]


def test_a_violation_is_shown_on_the_request_it_concerns_with_the_scenario_that_serves_it(tmp_path: Path) -> None:
    result = wire_campaign("drop_second_result", str(tmp_path))
    document = parse(_page(result))
    summary = document.find("summary", tag="p").text()
    assert "VIOLATION" in summary and f"{result.stats.conversations} conversations" in summary
    assert f"{result.stats.requests} requests" in summary and "seed 21" in summary and "in process" in summary
    assert COMMAND in document.text()
    verdicts = {
        row.attrs["data-invariant"]: row.attrs["data-verdict"]
        for row in document.find(id="invariants").find_all(tag="tr")
        if "data-invariant" in row.attrs
    }
    # the console's rows, from the same computation; each held one says how often it was put to the test
    assert verdicts == {v.invariant: v.verdict for v in result.verdicts(INVARIANTS)}
    assert verdicts["W1"] == "VIOLATED"
    others = [v for k, v in verdicts.items() if k != "W1"]
    assert all(v.startswith(("held (exercised in ", "not reached (stopped at W1)")) for v in others)
    times = document.find(id="time").text()
    assert "wall time" in times and "the agent" in times and "the harness" in times
    # the failure: saved, the command that serves it, its replies as YAML
    failure = result.failure
    saved = document.find(id="saved").text()
    assert str(failure.path) in saved and f"harness emulate --script {failure.path}" in saved
    assert "call_2" in document.find("scenario").text()
    # the timeline: the prompt, each request with its reply, the end; W1 on request 2
    timeline = document.find("harness-timeline")
    assert timeline.attrs["data-verdict"] == "fail"
    kinds = [e.attrs["data-kind"] for e in timeline.find_all("entry")]
    assert kinds == ["user"] + ["model"] * len(failure.run.exchanges) + ["end"]
    (marked,) = timeline.find_all("violation")
    assert marked.attrs["id"] == f"t1-w{failure.violation.request}" == "t1-w2"
    assert "violates [W1]" in marked.text() and marked.find(tag="details").attrs.get("open") is not None
    # what request 2 carried: the two calls of reply 1, one result only (the defect), and the menu
    carried = marked.find("messages")
    roles = [li.attrs["data-role"] for li in carried.find_all(tag="li")]
    assert roles == ["user", "assistant", "tool"]
    assert "call_1" in carried.find_all(tag="li")[2].text()
    assert "add" in marked.text() and "lookup" in marked.text()  # the tools offered
    first = timeline.find_all("model")[0].find(tag="summary").text()
    served = failure.run.exchanges[0].reply.calls
    assert len(served) >= 2 and "tool calls" in first and all(f"{c.name}(" in first for c in served)
    assert "the agent returned" in timeline.find("end").text()
    oracle = timeline.find("oracle").text()
    assert "What the wire invariants said: 1 problem(s)" in oracle and "W1 at request 2" in oracle


def test_what_a_clock_measured_is_shown_on_the_page_though_the_saved_file_leaves_it_out(tmp_path: Path) -> None:
    result = wire_campaign("retry_without_wait", str(tmp_path), examples=100)
    violation = result.failure.violation
    assert violation.invariant == "W6" and violation.measured  # how soon the retry came
    saved = result.failure.path.read_text(encoding="utf-8").splitlines()
    assert not any(violation.measured in line for line in saved if not line.startswith("#"))  # the body: same per seed
    assert violation.measured in parse(_page(result)).find("harness-timeline").find("oracle").text()


def test_a_clean_campaign_says_every_invariant_held(tmp_path: Path) -> None:
    result = wire_campaign("", str(tmp_path), examples=15)
    document = parse(_page(result))
    assert document.find("summary", tag="p").text().startswith("no violation")
    rows = document.find(id="invariants").find_all(tag="tr")[1:]
    shown = [r.attrs["data-verdict"] for r in rows]
    assert shown[:5] == [v.verdict for v in result.verdicts(INVARIANTS)][:5]
    assert all(v.startswith("held (exercised in ") for v in shown[:5])  # W1-W5: every clean campaign tests them
    assert shown[5].startswith("held (exercised in ") or shown[5] == "not exercised"  # W6: a 429 or 503 drawn
    assert not document.find_all("harness-timeline")  # nothing to show but the tables
    assert len(document.find(id="exercised").find_all(tag="tr")) > 3


def test_declared_deviations_are_listed_and_counted_on_their_invariant() -> None:
    why = f"this agent prefers a partial answer to none {HOSTILE}"
    declared = [Deviation("W5", why)]
    examples = 2 * len(kinds_for())  # the first phase serves each kind once: a cut stream among them
    result = run_agent_campaign(planted.make("return_cut_text"), examples, deviations=declared, save=False)
    assert result.ok and result.stats.declared["W5"]
    html = _page(result, deviations=declared)
    assert HOSTILE not in html  # shown, never obeyed
    document = parse(html)
    assert f"W5 after any reply: {why}" in document.find(id="deviations").text()
    row = next(r for r in document.find(id="invariants").find_all(tag="tr") if r.attrs.get("data-invariant") == "W5")
    assert row.attrs["data-verdict"].startswith("held (exercised in ")
    assert str(result.stats.declared["W5"]) in row.text()


def test_a_campaign_that_reached_nothing_says_so() -> None:
    def offline(prompt: str, *, base_url: str, api_key: str) -> str:
        raise ConnectionError("this agent talks to a hard-coded host")

    result = run_agent_campaign(offline, 3, save=False)
    document = parse(_page(result))
    assert document.find("summary", tag="p").text().startswith("INCONCLUSIVE: NOTHING TESTED")
    assert "ConnectionError" in document.find(id="nothing-tested").text()
    rows = document.find(id="invariants").find_all(tag="tr")[1:]
    assert {r.attrs["data-verdict"] for r in rows} == {"not exercised"}  # 0 requests: nothing held


# -- a recording judged by W1 and W2 ---------------------------------------------------------------

CHAT = DEMO_CASSETTE.with_name("test_demo_agent[openai-chat.completions].yaml")


def _edited(tmp_path: Path, old: str, new: str, occurrence: int) -> Path:
    """A copy of the recorded chat conversation with one request's history edited."""
    text = CHAT.read_text(encoding="utf-8")
    at = -1
    for _ in range(occurrence):
        at = text.index(old, at + 1)
    path = tmp_path / "edited.yaml"
    path.write_text(text[:at] + new + text[at + len(old) :], encoding="utf-8")
    return path


def _judged_page(path: Path) -> object:
    steps = read_steps(path)
    return parse(cassette_report(steps, source=path.name, judged=judge_recording(steps)))


def test_a_recording_whose_history_was_rewritten_breaks_w2_on_that_request(tmp_path: Path) -> None:
    # the third request repeats the assistant's first message with other words
    path = _edited(tmp_path, '"content": "Let me check the forecast."', '"content": "I will look it up."', 2)
    timeline = _judged_page(path).find("harness-timeline")
    assert timeline.attrs["data-verdict"] == "fail"
    (marked,) = timeline.find_all("violation")
    assert marked.attrs["id"] == "t1-i2" and "violates [W2]" in marked.text()
    oracle = timeline.find("oracle").text()
    assert "What the wire invariants said: 1 problem(s)" in oracle
    assert (
        "W2 at interaction #2" in oracle and "'Let me check the forecast.'" in oracle and "I will look it up." in oracle
    )
    assert "W1, W2 over 1 conversation(s)" in timeline.find(tag="table").text()


def test_a_recording_that_answers_a_call_by_the_wrong_id_breaks_w1_on_that_request(tmp_path: Path) -> None:
    # the second request answers call_2 twice and call_3 never
    path = _edited(
        tmp_path,
        '"tool_call_id": "call_000000000000000000000003"',
        '"tool_call_id": "call_000000000000000000000002"',
        1,
    )
    timeline = _judged_page(path).find("harness-timeline")
    marked = timeline.find_all("violation")
    assert marked[0].attrs["id"] == "t1-i1"
    assert "[W1]" in marked[0].find("violation-note").text()
    oracle = timeline.find("oracle").text()
    assert "convert_temperature (id call_000000000000000000000003); request 2 carries 0 result(s)" in oracle
    assert "get_weather (id call_000000000000000000000002); request 2 carries 2 result(s)" in oracle


def test_recordings_that_keep_the_rules_are_judged_and_hold() -> None:
    for name in ("openai-chat.completions", "openai-responses", "anthropic-messages", "gemini-streamGenerateContent"):
        path = DEMO_CASSETTE.with_name(f"test_demo_agent[{name}].yaml")
        timeline = _judged_page(path).find("harness-timeline")
        assert timeline.attrs["data-verdict"] == "ok", name
        quiet = timeline.find("oracle").text()
        assert "What the wire invariants said: nothing" in quiet and "interactions #0-#2" in quiet, name


def test_a_single_request_is_left_unjudged() -> None:
    steps = read_steps(CHAT)[:1]
    assert judge_recording(steps) is None
    timeline = parse(cassette_report(steps, source="one.yaml", judged=None)).find("harness-timeline")
    assert timeline.attrs["data-verdict"] == "unjudged" and not timeline.find_all("oracle")


def test_each_fault_served_is_said_on_the_request_it_answered() -> None:
    from harness.agents import replay_agent
    from harness.report import wire_timeline
    from harness.scenarios import ModelTurn, Scenario

    turns = (
        ModelTurn(kind="error", message="slow down", wire=(("status", 429), ("retry_after", 0.05))),
        ModelTurn(text="Done.", wire=(("malformed_chunk", True),)),
        ModelTurn(text="Done."),
    )
    run, judgement = replay_agent(planted.agent, Scenario(name="faults", prompts=("2 + 3?",), turns=turns))
    timeline = wire_timeline(run, title="faults", violations=judgement.violations, tools_of=tools_of)
    document = parse(_fragment(timeline))
    requests = document.find_all("model")
    first, second = (r.find(tag="summary").text() for r in requests[:2])
    assert "HTTP 429" in first and "Retry-After: 0.05 s" in requests[0].text()
    assert "malformed" in second and "a chunk whose JSON is broken" in requests[1].text()


def _fragment(timeline: object) -> str:
    from harness.report._env import render

    return render("fragment.html.j2", timelines=[timeline], failed=True)


def test_a_history_sent_as_item_references_is_shown_as_the_items_they_name() -> None:
    """The page reads a Responses request as W2 does: the call an ``item_reference`` names is shown
    in the history the next request carried, not left out."""
    from harness.agents import replay_agent
    from harness.report import wire_timeline
    from harness.scenarios import Call, ModelTurn, Scenario

    turns = (ModelTurn(calls=(Call("add", {"a": 2, "b": 3}, id="call_1"),)), ModelTurn(text="Done."))
    scenario = Scenario(name="references", prompts=("2 + 3?",), turns=turns)
    run, judgement = replay_agent(planted.referencing_responses_agent, scenario)
    assert not judgement.violations, judgement.violations
    timeline = wire_timeline(run, title="references", tools_of=tools_of)
    second = [e for e in timeline.lanes[0].entries if e.kind == "model"][1]
    assert [m.role for m in second.messages] == ["user", "assistant", "tool"], second.messages
    assert [c.name for c in second.messages[1].calls] == ["add"]


def test_every_wire_fault_a_scenario_can_name_has_its_words_on_the_campaign_page() -> None:
    """A turn's ``wire:`` fault shows on the page as what was served: a fault added to the scenario
    vocabulary without its words would show as a clean reply."""
    from harness.report._campaign_page import _WIRE_FAULTS
    from harness.scenarios._scenario_parts import WIRE_FAULTS

    assert set(WIRE_FAULTS) <= set(_WIRE_FAULTS), sorted(set(WIRE_FAULTS) - set(_WIRE_FAULTS))
