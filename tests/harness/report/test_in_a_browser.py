"""Each kind of report opened in a real browser (headless Chromium), as a person would open it:
what the page shows once its scripts ran (``innerText`` leaves out what is folded away), what
is visible, what a click on its buttons does, that its console stays silent (no message, no
uncaught exception, no failed load, every host unresolvable), and a full-page screenshot.

Driven over the DevTools protocol on a pipe (``browser.py``). Debian's ``chromium`` package;
``.ci/run`` installs it where it can; without it these tests skip, saying so. Screenshots go to
the module's temporary directory, or to ``$HARNESS_REPORT_SHOTS``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.checking._check import problems_of
from harness.recording._tools import read_steps
from harness.report import campaign_report, cassette_report, trace_report
from tests.harness.report.browser import Browser, Page, find_browser
from tests.harness.report.test_where_users_meet_it import FAILING_TEST
from tests.harness.report.worlds import DEMO_CASSETTE, broken_run, failing_campaign, long_trace, nested_trace

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    binary = find_browser()
    if binary is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium): the browser tests need it")
    opened = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("HARNESS_REPORT_SHOTS")
    directory = Path(chosen) if chosen else tmp_path_factory.mktemp("shots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _open(browser: Browser, shots: Path, path: Path, name: str) -> Page:
    page = browser.open(path)
    assert page.console() == [], f"the browser's console for {name}"
    shot = page.screenshot(shots / f"{name}.png")
    assert shot.stat().st_size > 10_000, "the screenshot is (nearly) blank"
    return page


def _seen(page: Page, selector: str, index: int = 0) -> str:
    """What a reader sees of an element: its rendered text (folded parts left out)."""
    text = page.evaluate(f"document.querySelectorAll({json.dumps(selector)})[{index}]?.innerText ?? null")
    assert text is not None, f"nothing matches {selector!r}"
    return " ".join(str(text).split())


def _visible(page: Page, selector: str) -> list[bool]:
    return page.evaluate(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.checkVisibility())")


def _click(page: Page, label: str) -> None:
    clicked = page.evaluate(
        "(() => { const b = [...document.querySelectorAll('button')]"
        f".find(b => b.textContent === {json.dumps(label)});"
        " if (!b) return false; b.click(); return true; })()"
    )
    assert clicked, f"no button {label!r}"


def test_a_run_report_in_the_browser(browser: Browser, shots: Path, tmp_path: Path) -> None:
    scenario, trace = broken_run()
    path = tmp_path / "run.html"
    path.write_text(trace_report(trace, title="a broken run", problems=problems_of(scenario, trace)), encoding="utf-8")
    page = _open(browser, shots, path, "run-broken")
    assert _visible(page, ".harness-timeline") == [True]
    marked = _seen(page, ".entry.violation")
    assert "violates [event_grammar], [reference]" in marked and "call_2" in marked and "RuntimeError" in marked
    assert "the reference model predicted" in _seen(page, ".oracle")
    assert "stop" in _seen(page, ".entry.end")

    _click(page, "fold all")  # the objection stays on its line: the badges are in the summary
    folded = _seen(page, ".entry.violation")
    assert "violates" not in folded and "⚠ event_grammar" in folded

    _click(page, "only what the oracle objects to")
    shown = page.evaluate("[...document.querySelectorAll('.entry')].filter(e => e.checkVisibility()).map(e => e.id)")
    assert shown == [page.evaluate("document.querySelector('.entry.violation').id"), "t1-r0-end"]

    browser.send("Emulation.setEmulatedMedia", {"media": "print"}, session=page.session)
    assert _visible(page, ".toolbar") == [False]  # on paper, no buttons


def test_a_nested_run_in_the_browser(browser: Browser, shots: Path, tmp_path: Path) -> None:
    path = tmp_path / "nested.html"
    path.write_text(trace_report(nested_trace(), title="an expert asks a model of its own"), encoding="utf-8")
    page = _open(browser, shots, path, "run-nested")
    assert _visible(page, ".lane.nested") == [True]  # without unfolding anything
    lane = _seen(page, ".lane.nested")
    assert lane.startswith("nested run 1, inside expert#call_1 · ended stop")
    assert "2+2?" in lane and "add" in lane
    tool = page.evaluate("document.querySelector('.lane.nested').closest('.entry').dataset.kind")
    assert tool == "tool" and "every invariant holds" in _seen(page, ".oracle")


def test_a_50_request_run_in_the_browser(browser: Browser, shots: Path, tmp_path: Path) -> None:
    path = tmp_path / "long.html"
    path.write_text(trace_report(long_trace(), title="fifty requests"), encoding="utf-8")
    page = _open(browser, shots, path, "run-50-requests")
    seen = _seen(page, ".harness-timeline").lower()
    assert "request 50" in seen and "done: all pages read." in seen
    assert "look a page up." not in seen  # the schemas are folded away
    loaded = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
    assert loaded < 5000, f"{loaded:.0f} ms to load"  # a few hundred on the development machine


def test_a_cassette_report_in_the_browser(browser: Browser, shots: Path, tmp_path: Path) -> None:
    path = tmp_path / "cassette.html"
    path.write_text(cassette_report(read_steps(DEMO_CASSETTE), source=DEMO_CASSETTE.name), encoding="utf-8")
    page = _open(browser, shots, path, "cassette")
    seen = _seen(page, ".harness-timeline")
    assert "get_weather" in seen and "recording ends (stop)" in seen and "Pack a light jacket" in seen


def test_a_campaign_report_in_the_browser(browser: Browser, shots: Path, tmp_path: Path) -> None:
    result = failing_campaign(str(tmp_path / "saved"))
    path = tmp_path / "campaign.html"
    path.write_text(campaign_report(result, command="harness fuzz --seed 2024 --examples 400"), encoding="utf-8")
    page = _open(browser, shots, path, "campaign-violation")
    seen = _seen(page, "main")
    assert "VIOLATION" in seen and "seed 2024" in seen and "Loop boundaries reached" in seen
    assert "steering:" in _seen(page, "pre.scenario")
    assert _visible(page, ".entry.violation") and all(_visible(page, ".entry.violation"))
    assert "violates [error_feedback]" in _seen(page, ".entry.violation")


def test_a_pytest_html_report_in_the_browser(browser: Browser, shots: Path, pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html", reason="pytest-html (the dev extra) is not installed")
    pytester.makepyfile(test_agent=FAILING_TEST)
    result = pytester.runpytest_subprocess("--html=report.html", "--self-contained-html", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    page = _open(browser, shots, pytester.path / "report.html", "pytest-html")
    # pytest-html draws its rows with script, from its data: the timelines are there once it ran
    titles = page.evaluate("[...document.querySelectorAll('.harness-timeline h4')].map(h => h.textContent)")
    assert len(titles) == 3
    visible = dict(zip(titles, _visible(page, ".harness-timeline"), strict=True))
    assert visible == {
        "test_agent.py::test_answers_wrong": True,  # the failure, unfolded
        "test_agent.py::test_adds": False,  # passed rows are folded by pytest-html
        "test_agent.py::test_without_the_fixtures": False,
    }
    failing = titles.index("test_agent.py::test_answers_wrong")
    seen = _seen(page, ".harness-timeline", failing)
    assert "five" in seen and "stop · 4 new message(s)" in seen


def test_a_wire_campaign_report_in_the_browser(browser: Browser, shots: Path, tmp_path: Path) -> None:
    from harness.agents import INVARIANTS
    from harness.report import wire_campaign_report
    from tests.harness.report.worlds import tools_of, wire_campaign

    result = wire_campaign("drop_second_result", str(tmp_path / "saved"))
    path = tmp_path / "wire.html"
    command = "harness fuzz --agent planted:drop_second_result --seed 21 --examples 40"
    path.write_text(
        wire_campaign_report(result, command=command, invariants=INVARIANTS, tools_of=tools_of), encoding="utf-8"
    )
    page = _open(browser, shots, path, "wire-campaign-violation")
    summary = _seen(page, "p.summary")
    assert summary.startswith("VIOLATION") and "served in process" in summary and "seed 21" in summary
    assert _seen(page, "#invariants tr[data-invariant=W1]").endswith("VIOLATED")
    assert "held (exercised in " in _seen(page, "#invariants tr[data-invariant=W2]")
    assert f"harness emulate --script {result.failure.path}" in _seen(page, "#saved")
    # the violation is on request 2, unfolded: what it carried shows the result that went missing
    assert _visible(page, ".entry.violation") == [True]
    marked = _seen(page, ".entry.violation")
    assert marked.startswith("REQUEST 2") and "violates [W1]" in marked
    assert "the conversation it carried: 3 message(s)" in marked and "for call_1" in marked
    assert "for call_2" not in marked
    # request 1 stays folded to its line: the two calls it was served
    first = _seen(page, "#t1-w1")
    served = result.failure.run.exchanges[0].reply.calls
    assert all(c.name in first for c in served) and "the conversation it carried" not in first
    _click(page, "only what the oracle objects to")
    shown = page.evaluate("[...document.querySelectorAll('.entry')].filter(e => e.checkVisibility()).map(e => e.id)")
    assert shown == ["t1-w2", "t1-end"]


def test_a_recording_judged_by_the_wire_invariants_in_the_browser(
    browser: Browser, shots: Path, tmp_path: Path
) -> None:
    from harness.agents import judge_recording

    recorded = DEMO_CASSETTE.with_name("test_demo_agent[openai-chat.completions].yaml").read_text(encoding="utf-8")
    said = '"content": "Let me check the forecast."'
    second = recorded.index(said, recorded.index(said) + 1)
    cassette = tmp_path / "rewritten.yaml"
    cassette.write_text(recorded[:second] + '"content": "I will look it up."' + recorded[second + len(said) :])
    steps = read_steps(cassette)
    path = tmp_path / "judged.html"
    path.write_text(cassette_report(steps, source=cassette.name, judged=judge_recording(steps)), encoding="utf-8")
    page = _open(browser, shots, path, "cassette-judged")
    assert _seen(page, ".oracle").startswith("What the wire invariants said: 1 problem(s)")
    assert _visible(page, ".entry.violation") == [True]
    marked = _seen(page, ".entry.violation")
    assert "interaction #2" in marked and "violates [W2]" in marked and "Pack a light jacket" in marked


def test_a_seeded_campaign_drawn_on_its_recording_in_the_browser(browser: Browser, shots: Path, tmp_path: Path) -> None:
    from harness.agents import INVARIANTS, run_seeded_campaign
    from harness.report import wire_campaign_report
    from harness.scenarios import ModelTurn
    from tests.harness.agents import planted
    from tests.harness.agents.test_seeded import DEEP, record
    from tests.harness.report.worlds import tools_of

    cassette = record(tmp_path / "deep.yaml", planted.agent, [*DEEP, ModelTurn(text="2, 3, 4, 5 and 6.")])
    (seeded,) = run_seeded_campaign(planted.deep_retry_without_wait, cassette, examples=3, seed=0, save_dir=tmp_path)
    page_text = wire_campaign_report(
        seeded.result, command=seeded.command, invariants=INVARIANTS, tools_of=tools_of, spine=seeded.spine()
    )
    path = tmp_path / "seeded.html"
    path.write_text(page_text, encoding="utf-8")
    page = _open(browser, shots, path, "wire-campaign-seeded")
    rows = page.evaluate("[...document.querySelectorAll('#spine li.spine-row')].map(r => r.dataset.kind)")
    assert rows == ["recorded"] * 4 + ["fault", "recorded"], rows  # the six recorded replies, the fault on the fifth
    marked = _seen(page, "#spine li.fault")
    assert marked.startswith("recorded reply 5 of 6 add#call_5") and "fault before it: preceded by a 429" in marked
    # its links lead to the requests of the failure it answered, whose folded lines say which step answered them
    target = page.evaluate("document.querySelector('#spine li.fault a').getAttribute('href')")
    assert target == "#t1-w5", target
    request = _seen(page, target).lower()
    assert request.startswith("request 5") and "fault before recorded reply 5 of 6" in request, request
    assert "recorded reply 5 of 6" in _seen(page, "#t1-w6").lower()  # the retry got the recorded reply
