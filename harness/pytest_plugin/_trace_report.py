"""What a failing test's report shows of its runs: the ``harness trace`` section.

Every test that ran the loop under a collector (``_run_fixtures``) gets its runs as a timeline
in its report when it fails; the call's failure is also noted on the item, so the ``scripted``
fixture's teardown does not fail the test a second time for a script the failure cut short.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from harness.pytest_plugin._run_fixtures import CALL_FAILED, COLLECTOR

if TYPE_CHECKING:
    from pluggy import Result


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Result[Any], None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        item.stash[CALL_FAILED] = True
    if not report.failed:
        return
    collector = item.stash.get(COLLECTOR, None)
    if collector is not None and len(collector):
        report.sections.append(("harness trace", str(collector)))
