"""The timeline renderer, read as a person would read its page (parsed, not grepped): escaping,
nested lanes under their tool, the oracle's objection on its event, the end reason."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.recording._tools import read_steps
from harness.report import (
    MissingReportExtra,
    campaign_report,
    cassette_report,
    run_report,
    timelines_fragment,
    trace_report,
)
from harness.report._env import environment
from tests.harness.report.dom import parse
from tests.harness.report.worlds import (
    DEMO_CASSETTE,
    HOSTILE,
    broken_run,
    checked,
    failing_campaign,
    long_trace,
    nested_trace,
)


def test_every_value_is_escaped_and_the_page_runs_only_its_own_script() -> None:
    html = trace_report(nested_trace(), title=f"title {HOSTILE}")
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    document = parse(html)
    (script,) = document.find_all(tag="script")  # the report's own, inlined
    assert "alert" not in script.text()
    assert not document.find_all(tag="img")
    assert HOSTILE in document.find(tag="h1").text()  # shown as text, as written
    assert not [e for e in document.iter() if any(k.startswith("on") for k in e.attrs)]


def test_the_page_needs_nothing_from_outside() -> None:
    html = trace_report(nested_trace())
    document = parse(html)
    assert not [e for e in document.iter() if "src" in e.attrs or e.tag == "link"]
    assert "http://" not in html and "https://" not in html
    assert "@media print" in html


def test_a_nested_run_is_a_lane_of_its_own_under_the_tool_that_started_it() -> None:
    document = parse(trace_report(nested_trace()))
    (timeline,) = document.find_all("harness-timeline")
    lanes = timeline.find_all("lane")
    assert len(lanes) == 2
    nested = timeline.find("nested")
    assert nested.attrs["data-lane"] == "nested run 1, inside expert#call_1"
    tool = next(a for a in nested.ancestors() if "entry" in a.classes)
    assert tool.attrs["data-kind"] == "tool" and "expert" in tool.find(tag="summary").text()
    inner = [e.attrs["data-kind"] for e in nested.find_all("entry")]
    assert inner == ["turn", "user", "model", "tool", "turn", "model", "end"]
    assert "add" in nested.find("tool").find(tag="summary").text()
    # the outer run goes on after the tool: its own end, not the nested one's
    outer_end = [e for e in timeline.find_all("end") if nested not in e.ancestors()]
    assert [e.attrs["data-reason"] for e in outer_end] == ["stop"]


def test_a_broken_rule_marks_the_event_it_is_about_and_shows_the_reference_side_by_side() -> None:
    from harness.checking._check import problems_of

    scenario, trace = broken_run()
    document = parse(trace_report(trace, problems=problems_of(scenario, trace)))
    timeline = document.find("harness-timeline")
    assert timeline.attrs["data-verdict"] == "fail"
    (marked,) = timeline.find_all("violation")
    assert marked.attrs["data-kind"] == "tool" and "call_2" in marked.find(tag="summary").text()
    assert marked.find(tag="details").attrs.get("open") is not None  # unfolded
    links = [a.attrs["href"] for a in marked.find_all(tag="a")]
    assert links == ["#t1-problem-1", "#t1-problem-2"]
    problem = document.find(id="t1-problem-2")
    assert "[reference]" in problem.text()
    expected, actual = (td.text() for td in problem.find("sbs").find_all(tag="td"))
    assert expected.startswith("tool_execution_end fetch#call_2") and actual.startswith("message_start tool")


def test_without_given_problems_the_invariants_judge_the_run() -> None:
    _, trace = broken_run()
    timeline = parse(trace_report(trace)).find("harness-timeline")
    assert "event_grammar" in timeline.find("oracle").text()
    assert timeline.find_all("violation")
    clean = parse(trace_report(nested_trace())).find("harness-timeline")
    assert clean.attrs["data-verdict"] == "ok" and "every invariant holds" in clean.find("oracle").text()


@pytest.mark.parametrize(
    ("name", "reason", "also"),
    [
        ("cap-with-queued-steering", "max_iterations", "steering"),
        ("error-finish", "error", None),
        ("raising-tool", "stop", None),
    ],
)
def test_the_end_reason_is_shown_where_the_run_ended(name: str, reason: str, also: str | None) -> None:
    result = checked(name)
    document = parse(run_report([(name, result)]))
    end = document.find("harness-timeline").find_all("end")[-1]
    assert end.attrs["data-reason"] == reason and reason in end.find("end-reason").text()
    if also:
        assert document.find("harness-timeline").find(also).attrs["data-kind"] == "user"


def test_a_steering_message_mid_batch_shows_the_skipped_call_and_why() -> None:
    document = parse(run_report([("steering-mid-batch-skip", checked("steering-mid-batch-skip"))]))
    timeline = document.find("harness-timeline")
    skipped = [e for e in timeline.find_all("entry") if e.attrs.get("data-status") == "skipped"]
    assert len(skipped) == 2 and all("queued" in e.text() for e in skipped)
    kinds = [e.attrs["data-kind"] for e in timeline.find_all("entry")]
    steering = timeline.find("steering")
    assert kinds.index("user", 2) > kinds.index("tool")  # the message entered after the batch
    assert steering.attrs["data-kind"] == "user"


def test_a_tools_progress_updates_are_shown() -> None:
    document = parse(run_report([("tool-updates", checked("tool-updates"))]))
    tool = document.find("harness-timeline").find("tool")
    assert "update(s)" in tool.find(tag="summary").text() and "progress update 1" in tool.text()


def test_a_stream_that_raised_ends_the_timeline_saying_so() -> None:
    _, trace = broken_run()
    raised = trace.model_copy(update={"error": "RuntimeError: boom <b>", "reason": None})
    end = parse(trace_report(raised)).find("harness-timeline").find_all("end")[-1]
    assert end.attrs["data-reason"] == "raised" and "RuntimeError: boom <b>" in end.text()


def test_a_recorded_conversation_reads_like_a_run() -> None:
    steps = read_steps(DEMO_CASSETTE)
    timeline = parse(cassette_report(steps, source=DEMO_CASSETTE.name)).find("harness-timeline")
    kinds = [e.attrs["data-kind"] for e in timeline.find_all("entry")]
    assert kinds == ["user", "model", "tool", "tool", "model", "tool", "model", "end"]
    first_tool = timeline.find("tool")
    assert "get_weather" in first_tool.find(tag="summary").text() and "Paris" in first_tool.text()
    assert "demo-model" in timeline.find(tag="table").text()
    assert "stop" in timeline.find("end").text()


def test_a_campaign_report_holds_its_tables_and_the_shrunk_violation(tmp_path: Path) -> None:
    result = failing_campaign(str(tmp_path))
    document = parse(campaign_report(result, command="harness fuzz --seed 2024"))
    assert "seed 2024" in document.find(tag="h1").text()
    assert len(document.find(id="exercised").find_all(tag="tr")) > 5
    assert document.find(id="boundaries").find_all("reached")
    assert "steering:" in document.find("scenario").text()
    timeline = document.find("harness-timeline")
    assert timeline.attrs["data-verdict"] == "fail"
    marked = timeline.find_all("violation")
    assert marked and all(m.attrs["data-kind"] == "tool" for m in marked)


def test_a_tests_runs_as_a_fragment_unfolded_when_the_test_failed() -> None:
    trace = nested_trace()
    closed = parse(timelines_fragment([trace], title="t::test"))
    opened = parse(timelines_fragment([trace, trace], title="t::test", failed=True))
    assert "open" not in closed.find("harness-runs").attrs and "open" in opened.find("harness-runs").attrs
    keys = [t.attrs["id"] for t in opened.find_all("harness-timeline")]
    assert len(keys) == len(set(keys)) == 2  # anchors stay unique on a page of many


def test_without_jinja2_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    environment.cache_clear()
    monkeypatch.setitem(sys.modules, "jinja2", None)
    try:
        with pytest.raises(MissingReportExtra, match=r"'report' extra"):
            trace_report(nested_trace())
    finally:
        environment.cache_clear()


def test_a_50_request_run_stays_small_and_quick_to_draw() -> None:
    import time

    trace = long_trace()
    assert len(trace.requests) == 50
    trace_report(trace)  # the templates compiled
    started = time.perf_counter()
    html = trace_report(trace)
    seconds = time.perf_counter() - started
    document = parse(html)
    assert len(document.find_all("model")) == 50 and len(document.find_all("tool")) == 49
    assert len(html.encode()) < 400_000, f"{len(html.encode())} bytes"
    assert seconds < 5, f"{seconds:.2f} s to draw"  # about 0.2 s; generous for a loaded machine
    # the tools' schemas are shown once, not fifty times
    assert html.count("Look a page up.") == 1
