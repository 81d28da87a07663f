"""Verdicts a user can act on (issue 26), through the installed ``harness`` command: a campaign
that always ends, the first failure shown whole, honest tables, a client that insists on httpx."""

from __future__ import annotations

import html as html_module
import re
import time
from pathlib import Path
from types import SimpleNamespace

from harness.agents import INVARIANTS, run_agent_campaign
from harness.agents._campaign_result import verdicts
from tests.harness.agents import planted
from tests.harness.agents.test_agent_contract import fuzz, fuzz_process

AGENTS = """
from harness.agents import Deviation
from tests.harness.agents import planted

slow = planted.slow_retry
slow.wire_deviations = [Deviation("W3", "it waits 3 s before retrying a 429, whatever Retry-After says")]

stuck = planted.executor_agent
stuck.wire_deviations = [Deviation("W3", "its executor thread sleeps 120 s after a 429 and cannot be cancelled")]

raises = planted.raises_deep
chatty = planted.chatty
httpx_only = planted.httpx_only

all_text = planted.all_the_text
all_text.wire_deviations = [
    Deviation("W4", "it returns all the text of the run, the preamble of its calls too", kinds=("text and a call",))
]
"""


def project(tmp_path: Path) -> Path:
    (tmp_path / "agents.py").write_text(AGENTS)
    return tmp_path


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_slow_retry_under_a_short_bound_is_counted_late_not_judged_as_another_conversation(tmp_path: Path) -> None:
    # 2 s: long enough that a loaded machine still sends the first request in time, short enough
    # that the 3 s wait before the retry outlives the bound
    done = fuzz(project(tmp_path), "--agent", "agents:slow", "--time-bound", "2", "--save-dir", str(tmp_path))
    out = flat(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no violation" in out
    assert re.search(r"note: \d+ request\(s\) arrived from runs the campaign had abandoned", out), out
    assert "declared: W3 after any reply: it waits 3 s before retrying a 429, whatever Retry-After says (covered" in out
    assert not list(tmp_path.rglob("*.yaml"))


def test_an_uncancellable_executor_thread_is_left_behind_and_the_command_still_exits(tmp_path: Path) -> None:
    # Before: the verdict was printed, then the interpreter joined the executor's thread in
    # concurrent.futures.thread._python_exit, and the command hung until killed.
    started = time.monotonic()
    done = fuzz_process(project(tmp_path), "--agent", "agents:stuck", "--time-bound", "1", "--save-dir", str(tmp_path))
    took = time.monotonic() - started
    out = flat(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"note: \d+ abandoned run\(s\) were still running at the verdict: left behind", out), out
    assert took < 100, f"{took:.0f} s: the command waited for a thread that sleeps 120 s"


def test_a_first_run_that_raises_two_calls_deep_shows_its_traceback_and_no_hint_that_does_not_fit(
    tmp_path: Path,
) -> None:
    # Before: one line, "the first one raised TypeError: Cannot instantiate typing.Union", under a
    # hint about base_url that pointed the wrong way.
    done = fuzz(project(tmp_path), "--agent", "agents:raises", "-n", "3", "--html", str(tmp_path / "r.html"))
    assert done.returncode == 3, done.stdout + done.stderr  # inconclusive: green means tested
    out = done.stdout
    assert "INCONCLUSIVE: NOTHING TESTED (exit 3)" in out
    assert "TypeError: Cannot instantiate typing.Union" in out
    frames = re.findall(r'File ".*?", line \d+, in (\w+)', out)
    assert frames[:3] == ["raises_deep", "_client", "_options"], out  # then typing's own frame
    assert "harness/agents/_" not in out and "threading.py" not in out  # the harness's own frames left out
    assert "base_url + '/v1'" not in out  # a TypeError says nothing about base URLs
    # what the agent logged and warned is shown once, with its run, not once per run in the summary
    assert out.count("building the client for") == 1, out
    assert "planted: this framework's option is deprecated" in out
    assert "building the client for" not in done.stderr
    page = html_module.unescape((tmp_path / "r.html").read_text())
    assert "Cannot instantiate typing.Union" in page and "building the client for" in page


def test_an_agent_that_prints_every_run_does_not_flood_the_summary(tmp_path: Path) -> None:
    done = fuzz(project(tmp_path), "--agent", "agents:chatty", "-n", "20")
    assert done.returncode == 0, done.stdout + done.stderr
    said = done.stdout + done.stderr
    assert "chatty: starting a run" not in said and "chatty: a run" not in said  # kept with each conversation


def test_an_agent_that_ignores_an_http_client_not_from_httpx_is_served_on_loopback_and_told(tmp_path: Path) -> None:
    done = fuzz(project(tmp_path), "--agent", "agents:httpx_only", "-n", "10")
    out = flat(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "note: the agent ignored the http_client it was given in 10 conversation(s)" in out
    assert "on loopback" in out and "no violation" in out


def test_an_async_agent_that_wants_an_httpx_async_client_is_served_anyway() -> None:
    result = run_agent_campaign(planted.async_httpx_only, 10, save=False)
    assert result.ok and result.stats.requests > 0
    assert result.stats.bypassed == 10 and not result.in_process


def test_a_w4_by_design_agent_declared_by_kinds_passes_as_declared(tmp_path: Path) -> None:
    done = fuzz(project(tmp_path), "--agent", "agents:all_text", "--save-dir", str(tmp_path))
    out = flat(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "declared: W4 after text and a call: it returns all the text of the run" in out
    assert re.search(r"\(covered \d+ violation\(s\)\)", out), out


def _console_rows(stdout: str) -> dict[str, str]:
    rows = {}
    for line in stdout.splitlines():
        found = re.match(r"\W*(W\d) .*?[│|]\s*(.+?)\s*[│|]\s*$", line)
        if found:
            rows[found.group(1)] = found.group(2)
    return rows


def test_the_text_table_and_the_html_table_say_the_same_per_invariant(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    target = "tests.harness.agents.planted:rewrite_history"
    done = fuzz(project(tmp_path), "--agent", target, "--save-dir", str(tmp_path), "--html", str(page))
    assert done.returncode == 1, done.stdout + done.stderr
    console = _console_rows(done.stdout)
    shown = dict(re.findall(r'data-invariant="(W\d)" data-verdict="([^"]+)"', page.read_text()))
    assert set(console) == set(INVARIANTS) and console == {k: html_module.unescape(v) for k, v in shown.items()}
    assert console["W2"] == "VIOLATED"
    allowed = ("VIOLATED", "held (exercised in ", "not reached (stopped at W2)")
    assert all(v.startswith(allowed) for v in console.values())


def test_nothing_tested_holds_nothing(tmp_path: Path) -> None:
    done = fuzz(project(tmp_path), "--agent", "agents:raises", "-n", "2")
    rows = _console_rows(done.stdout)
    assert set(rows.values()) == {"not exercised"}, rows


def test_an_invariant_the_campaign_stopped_before_is_not_reached_and_one_exercised_says_how_often() -> None:
    stats = SimpleNamespace(exercised={"W3": 4, "W2": 1}, declared={"W3": 2})
    failure = SimpleNamespace(violation=SimpleNamespace(invariant="W1"))
    rows = {v.invariant: v.text for v in verdicts(SimpleNamespace(stats=stats, failure=failure), INVARIANTS)}
    assert rows == {
        "W1": "VIOLATED",
        "W2": "held (exercised in 1 conversation)",
        "W3": "held (exercised in 4 conversations) (2 declared deviation(s))",
        "W4": "not reached (stopped at W1)",
        "W5": "not reached (stopped at W1)",
        "W6": "not reached (stopped at W1)",
        "W7": "not reached (stopped at W1)",
        "W8": "not reached (stopped at W1)",
    }
    clean = {v.invariant: v.verdict for v in verdicts(SimpleNamespace(stats=stats, failure=None), INVARIANTS)}
    assert clean["W4"] == "not exercised"


def test_a_time_bound_without_an_agent_is_a_usage_error() -> None:
    from click.testing import CliRunner

    from harness.cli import main

    done = CliRunner().invoke(main, ["fuzz", "--time-bound", "1", "-n", "1"])
    assert (
        done.exit_code == 2
        and "--time-bound is for a wire campaign: give it with --agent or --agent-cmd" in done.output
    )
    done = CliRunner().invoke(main, ["fuzz", "--agent", "tests.harness.agents.planted:agent", "--time-bound", "0"])
    assert done.exit_code == 2 and "--time-bound" in done.output
