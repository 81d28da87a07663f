"""Each kind of report opened in a real browser (headless Chromium), as a person would open it:
what the page shows once its scripts ran (the DOM Chromium dumps), that nothing went wrong in its
console, and a screenshot of it.

Debian's ``chromium`` package; ``.ci/run`` installs it where it can. Without it these tests skip,
saying so. Screenshots go to the test's temporary directory, or to ``$HARNESS_REPORT_SHOTS``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.checking._check import problems_of
from harness.recording._tools import read_steps
from harness.report import campaign_report, cassette_report, trace_report
from tests.harness.report.dom import Element, parse
from tests.harness.report.test_where_users_meet_it import FAILING_TEST
from tests.harness.report.worlds import DEMO_CASSETTE, broken_run, failing_campaign, long_trace, nested_trace

pytest_plugins = ["pytester"]

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser() -> str:
    for name in _BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("headless Chromium is not installed (apt-get install chromium): the browser tests need it")


class Opened:
    """A report as the browser showed it: the DOM after its scripts ran, and its console."""

    def __init__(self, dom: Element, console: list[str], screenshot: Path) -> None:
        self.dom = dom
        self.console = console
        self.screenshot = screenshot


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("HARNESS_REPORT_SHOTS")
    directory = Path(chosen) if chosen else tmp_path_factory.mktemp("shots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture(scope="module")
def browser() -> str:
    return _browser()


@pytest.fixture
def open_report(browser: str, shots: Path, tmp_path: Path) -> Iterator[object]:
    def open_(path: Path, name: str, height: int = 1800) -> Opened:
        url = path.resolve().as_uri()
        common = [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--host-resolver-rules=MAP * ~NOTFOUND",  # a report that reached out would log an error
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
        ]
        dumped = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True, timeout=120)
        assert dumped.returncode == 0, dumped.stderr[-2000:]
        console = [line for line in dumped.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
        screenshot = shots / f"{name}.png"
        shot = subprocess.run(
            [*common, f"--screenshot={screenshot}", f"--window-size=1280,{height}", url],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert shot.returncode == 0 and screenshot.is_file(), shot.stderr[-2000:]
        return Opened(parse(dumped.stdout), console, screenshot)

    yield open_


def _visible_text(element: Element) -> str:
    """Text a reader sees without unfolding anything: closed <details> show only their summary."""
    if element.tag == "details" and "open" not in element.attrs:
        summary = next((c for c in element.children if isinstance(c, Element) and c.tag == "summary"), None)
        return _visible_text(summary) if summary is not None else ""
    if element.tag in ("script", "style"):
        return ""
    return "".join(c if isinstance(c, str) else _visible_text(c) for c in element.children)


def _assert_clean(opened: Opened) -> None:
    assert not opened.console, f"the browser's console: {opened.console}"
    assert opened.screenshot.stat().st_size > 10_000, "the screenshot is (nearly) blank"


def test_a_run_report_in_the_browser(open_report: object, tmp_path: Path) -> None:
    scenario, trace = broken_run()
    page = tmp_path / "run.html"
    page.write_text(trace_report(trace, title="a broken run", problems=problems_of(scenario, trace)), encoding="utf-8")
    opened = open_report(page, "run-broken")  # type: ignore[operator]
    _assert_clean(opened)
    timeline = opened.dom.find("harness-timeline")
    marked = timeline.find("violation")
    seen = _visible_text(marked)
    assert "violates" in seen and "[event_grammar]" in seen and "call_2" in seen
    assert "the reference model predicted" in _visible_text(timeline.find("oracle"))
    assert timeline.find("toolbar")  # the optional script ran: fold / unfold buttons
    end = timeline.find_all("end")[-1]
    assert "stop" in _visible_text(end)


def test_a_nested_run_in_the_browser(open_report: object, tmp_path: Path) -> None:
    page = tmp_path / "nested.html"
    page.write_text(trace_report(nested_trace(), title="an expert asks a model of its own"), encoding="utf-8")
    opened = open_report(page, "run-nested", height=1200)  # type: ignore[operator]
    _assert_clean(opened)
    timeline = opened.dom.find("harness-timeline")
    nested = timeline.find("nested")
    assert "nested run 1, inside expert#call_1" in _visible_text(nested)  # visible without unfolding
    assert "ended stop" in " ".join(_visible_text(nested).split())
    assert "every invariant holds" in _visible_text(timeline)


def test_a_cassette_report_in_the_browser(open_report: object, tmp_path: Path) -> None:
    page = tmp_path / "cassette.html"
    page.write_text(cassette_report(read_steps(DEMO_CASSETTE), source=DEMO_CASSETTE.name), encoding="utf-8")
    opened = open_report(page, "cassette", height=1000)  # type: ignore[operator]
    _assert_clean(opened)
    seen = _visible_text(opened.dom.find("harness-timeline"))
    assert "request 3" in seen.lower() and "get_weather" in seen and "recording ends (stop)" in seen


def test_a_campaign_report_in_the_browser(open_report: object, tmp_path: Path) -> None:
    result = failing_campaign(str(tmp_path / "saved"))
    page = tmp_path / "campaign.html"
    page.write_text(campaign_report(result, command="harness fuzz --seed 2024 --examples 400"), encoding="utf-8")
    opened = open_report(page, "campaign-violation", height=2600)  # type: ignore[operator]
    _assert_clean(opened)
    seen = _visible_text(opened.dom.find(tag="main"))
    assert "VIOLATION" in seen and "seed 2024" in seen and "Loop boundaries reached" in seen
    timeline = opened.dom.find("harness-timeline")
    assert "violates" in _visible_text(timeline.find("violation"))


def test_a_pytest_html_report_in_the_browser(open_report: object, pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html", reason="pytest-html (the dev extra) is not installed")
    pytester.makepyfile(test_agent=FAILING_TEST)
    result = pytester.runpytest_subprocess("--html=report.html", "--self-contained-html", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    opened = open_report(pytester.path / "report.html", "pytest-html", height=2000)  # type: ignore[operator]
    _assert_clean(opened)
    timelines = opened.dom.find_all("harness-timeline")  # drawn by pytest-html's script from its data
    assert timelines, "pytest-html showed no harness timeline"
    failing = next(t for t in timelines if "test_answers_wrong" in t.text())
    runs = next(a for a in failing.ancestors() if "harness-runs" in a.classes)
    assert "open" in runs.attrs  # the failing test's timeline is unfolded
    assert "five" in _visible_text(failing) and "stop" in _visible_text(failing.find_all("end")[-1])


def test_a_50_request_run_in_the_browser(open_report: object, tmp_path: Path) -> None:
    page = tmp_path / "long.html"
    page.write_text(trace_report(long_trace(), title="fifty requests"), encoding="utf-8")
    opened = open_report(page, "run-50-requests", height=2400)  # type: ignore[operator]
    _assert_clean(opened)
    timeline = opened.dom.find("harness-timeline")
    seen = _visible_text(timeline)
    assert "request 50" in seen.lower() and "Done: all pages read." in seen  # one line each, folded
    assert "max_iterations" not in [e.attrs["data-reason"] for e in timeline.find_all("end")]
