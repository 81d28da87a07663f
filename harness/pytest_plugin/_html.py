"""Each test's harness timelines in pytest-html's report (``pytest --html=FILE``).

Registered by the plugin only when pytest-html is installed and writing a report, so a session
without it imports nothing of this, and a session with it renders only for tests that ran the
loop. The timelines go in the test's ``extras`` (pytest-html shows them under its row), unfolded
where the test failed; the stylesheet goes once into the report's summary.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pluggy import Result

_OWN = pytest.StashKey[Any]()


class HtmlTimelines:
    """The pytest-html side of the plugin: one extra per test that ran the loop."""

    def __init__(self, collector_key: Any, call_failed_key: Any) -> None:
        self.collector_key = collector_key
        self.call_failed_key = call_failed_key

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        """A test that ran the loop without the ``trace`` or ``scripted`` fixture (a recorded one,
        say) is watched here, so its report shows its runs too."""
        if item.stash.get(self.collector_key, None) is not None:
            yield
            return
        from harness.trace import RunCollector
        from openprogram import runtime
        from openprogram.agent.events import observe_runs

        collector = RunCollector(bound_provider=runtime.current_provider)
        item.stash[_OWN] = collector
        with observe_runs(collector.on_event):
            yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Result[pytest.TestReport], None]:
        outcome = yield
        report = outcome.get_result()
        # pytest-html shows a test's extras of every phase together: add them once, at teardown,
        # when the test's runs are all known and so is whether it failed
        if report.when != "teardown":
            return
        collector = item.stash.get(self.collector_key, None) or item.stash.get(_OWN, None)
        if collector is None or not len(collector):
            return
        from pytest_html import extras

        from harness.report import timelines_fragment

        failed = bool(item.stash.get(self.call_failed_key, False)) or report.failed
        try:
            fragment = timelines_fragment(collector.runs, title=item.nodeid, failed=failed)
        except Exception as exc:  # the report must not fail the test it reports on
            fragment = f"<p class='harness-timeline'>harness: could not draw the timeline ({type(exc).__name__})</p>"
        # pytest-html's documented hand-over: an ``extras`` attribute, which pytest's TestReport does not declare
        report.extras = [*getattr(report, "extras", []), extras.html(fragment)]  # type: ignore[attr-defined]

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str]) -> None:
        from harness.report import stylesheet

        prefix.append(stylesheet())
