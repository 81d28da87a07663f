"""Where a user meets a report: the ``harness`` command's ``--html`` flags, run in a directory of
their own (the installed console script for ``run`` and ``cassettes show``, click's runner for the
rest), and pytest-html's report of a user's project (through pytester, in process)."""

from __future__ import annotations

import html as htmllib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.report.dom import parse
from tests.harness.report.worlds import DEMO_CASSETTE, ROOT, SCENARIOS
from tests.harness.support import console_script, run_cli

pytest_plugins = ["pytester"]

WRONG_EXPECTATION = """\
name: expects the wrong answer
prompts: [Build it]
turns:
  - Built.
meta:
  expect:
    final_text: Not built.
"""


def _harness(cwd: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """``harness ARGS`` run in ``cwd``: with ``process``, the installed console script (the first
    test of each command here); otherwise in this process through click's runner, which spares
    a fresh interpreter (~3 CPU s) and leaves nothing behind: the project's modules it imported
    (``agent``, ``planted``) are dropped and ``sys.path`` put back."""
    if process:
        return subprocess.run([console_script(), *args], cwd=cwd, capture_output=True, text=True, timeout=300)
    path, modules = list(sys.path), set(sys.modules)
    try:
        return run_cli(*args, cwd=cwd)
    finally:
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            if Path(getattr(sys.modules[name], "__file__", None) or "/").is_relative_to(cwd):
                del sys.modules[name]


def test_harness_run_html_shows_each_scenario_and_the_failing_one(tmp_path: Path) -> None:
    shutil.copy(SCENARIOS / "steering-mid-batch-skip.yaml", tmp_path / "a.yaml")
    (tmp_path / "b.yaml").write_text(WRONG_EXPECTATION, encoding="utf-8")
    done = _harness(tmp_path, "run", "a.yaml", "b.yaml", "--html", "run.html", process=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "wrote run.html" in done.stderr
    document = parse((tmp_path / "run.html").read_text(encoding="utf-8"))
    timelines = document.find_all("harness-timeline")
    assert [t.attrs["data-verdict"] for t in timelines] == ["ok", "fail"]
    assert "final_text" in timelines[1].find("oracle").text()
    assert "1 passed, 1 failed" in document.find("summary", tag="p").text()


def test_harness_cassettes_show_html_draws_the_recorded_conversation(tmp_path: Path) -> None:
    done = _harness(tmp_path, "cassettes", "show", str(DEMO_CASSETTE), "--html", "cassette.html", process=True)
    assert done.returncode == 0, done.stderr
    assert "interaction(s)" in done.stdout  # the text timeline is still printed
    timeline = parse((tmp_path / "cassette.html").read_text(encoding="utf-8")).find("harness-timeline")
    assert len(timeline.find_all("model")) == 3 and timeline.find("end")


def test_harness_cassettes_show_html_judges_a_rewritten_history(tmp_path: Path) -> None:
    recorded = DEMO_CASSETTE.with_name("test_demo_agent[openai-chat.completions].yaml").read_text(encoding="utf-8")
    said = '"content": "Let me check the forecast."'
    second = recorded.index(said, recorded.index(said) + 1)
    rewritten = recorded[:second] + '"content": "I will look it up."' + recorded[second + len(said) :]
    (tmp_path / "rewritten.yaml").write_text(rewritten, encoding="utf-8")
    done = _harness(tmp_path, "cassettes", "show", "rewritten.yaml", "--html", "cassette.html")
    assert done.returncode == 0, done.stderr
    timeline = parse((tmp_path / "cassette.html").read_text(encoding="utf-8")).find("harness-timeline")
    assert timeline.attrs["data-verdict"] == "fail"
    assert timeline.find("violation").attrs["id"] == "t1-i2" and "W2 at interaction #2" in timeline.text()


def test_harness_fuzz_html_holds_the_campaign_and_its_seed(tmp_path: Path) -> None:
    done = _harness(tmp_path, "fuzz", "--examples", "30", "--seed", "5", "--html", "fuzz.html")
    assert done.returncode == 0, done.stdout + done.stderr
    document = parse((tmp_path / "fuzz.html").read_text(encoding="utf-8"))
    assert "seed 5" in document.find(tag="h1").text()
    assert "harness fuzz --seed 5 --examples 30" in document.text()
    assert document.find(id="exercised") and document.find(id="boundaries")


PLANTED_AGENT = """\
from planted import make

run = make("drop_second_result")  # of two calls in one reply, only the first result goes back
"""


def test_harness_fuzz_agent_html_shows_the_shrunk_conversation(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "harness" / "agents" / "planted.py", tmp_path / "planted.py")
    (tmp_path / "agent.py").write_text(PLANTED_AGENT, encoding="utf-8")
    done = _harness(tmp_path, "fuzz", "--agent", "agent:run", "--html", "wire.html")  # the default 100
    assert done.returncode == 1, done.stdout + done.stderr
    assert "wrote wire.html" in done.stderr and "VIOLATION" in done.stdout
    (saved,) = (tmp_path / "cassettes" / "scenarios" / "wire").glob("W1-*.yaml")
    document = parse((tmp_path / "wire.html").read_text(encoding="utf-8"))
    assert re.search(
        r"VIOLATION · agent \S+ · \d+ conversations · \d+ requests · seed 21",
        _flat(document.find("summary", tag="p").text()),
    )
    assert "harness fuzz --agent agent:run --seed 21" in document.text()
    assert "--examples" not in _flat(document.text())  # the default is not spelled out
    w1 = next(r for r in document.find(id="invariants").find_all(tag="tr") if r.attrs.get("data-invariant") == "W1")
    assert w1.attrs["data-verdict"] == "VIOLATED"
    assert f"harness emulate --script {saved.relative_to(tmp_path)}" in document.find(id="saved").text()
    marked = document.find("harness-timeline").find("violation")
    assert marked.attrs["data-kind"] == "model" and "violates [W1]" in marked.text()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_harness_fuzz_agent_html_to_an_unwritable_path_is_refused_before_the_campaign(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "harness" / "agents" / "planted.py", tmp_path / "planted.py")
    (tmp_path / "agent.py").write_text(PLANTED_AGENT, encoding="utf-8")
    done = _harness(tmp_path, "fuzz", "--agent", "agent:run", "--html", "no/such/dir/wire.html")
    assert done.returncode == 2 and "cannot write" in done.stderr and "conversations" not in done.stdout


def test_an_unwritable_html_path_is_a_usage_error(tmp_path: Path) -> None:
    done = _harness(tmp_path, "run", str(SCENARIOS / "follow-up.yaml"), "--html", "no/such/dir/run.html")
    assert done.returncode == 2 and "cannot write" in done.stderr and "Traceback" not in done.stderr


FAILING_TEST = """
from harness import turn
from openprogram import function, runtime


@function(register=False)
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b


def test_adds(scripted):
    scripted(turn.tool_call("add", a=1, b=2), turn.text("3"))
    assert runtime.exec("what is 1+2?", tools=[add]) == "3"


def test_answers_wrong(scripted):
    scripted(turn.tool_call("add", a=2, b=2), turn.text("five"))
    assert runtime.exec("what is 2+2?", tools=[add]) == "4"


def test_without_the_loop():
    assert True


def test_without_the_fixtures():
    from harness import ScriptedProvider

    with runtime.use(ScriptedProvider(turn.text("hello"))):
        assert runtime.exec("say hello", tools=[]) == "hello"
"""


def _extras(report: Path) -> dict[str, list[str]]:
    """pytest-html keeps its rows as JSON in one attribute: each test's HTML extras."""
    blob = re.search(r'data-jsonblob="([^"]*)"', report.read_text(encoding="utf-8"))
    assert blob is not None
    tests = json.loads(htmllib.unescape(blob.group(1)))["tests"]
    return {
        nodeid: [x["content"] for row in rows for x in row.get("extras", []) if x["format_type"] == "html"]
        for nodeid, rows in tests.items()
    }


def test_pytest_html_carries_each_tests_timeline_failures_opened(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html", reason="pytest-html (the dev extra) is not installed")
    pytester.makepyfile(test_agent=FAILING_TEST)
    result = pytester.runpytest("--html=report.html", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=1)
    extras = _extras(pytester.path / "report.html")
    assert "hello" in parse(extras["test_agent.py::test_without_the_fixtures"][0]).find("harness-timeline").text()
    failing, passing = extras["test_agent.py::test_answers_wrong"], extras["test_agent.py::test_adds"]
    assert not extras["test_agent.py::test_without_the_loop"]
    fragment = parse(failing[0])
    assert fragment.find("harness-runs").attrs.get("open") is not None
    timeline = fragment.find("harness-timeline")
    assert "test_answers_wrong" in timeline.text() and "five" in timeline.text()
    assert timeline.find("end").attrs["data-reason"] == "stop"
    assert parse(passing[0]).find("harness-runs").attrs.get("open") is None
    assert "harness-timeline" in (pytester.path / "report.html").read_text(encoding="utf-8").split("<style>", 1)[-1]


def test_without_html_the_plugin_adds_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=FAILING_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:html")
    result.assert_outcomes(passed=3, failed=1)
    assert "harness trace" in result.stdout.str()


def test_without_the_report_extra_html_is_a_usage_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from click.testing import CliRunner

    from harness.cli import main
    from harness.report._env import environment

    environment.cache_clear()
    monkeypatch.setitem(sys.modules, "jinja2", None)
    try:
        result = CliRunner().invoke(main, ["fuzz", "--examples", "5", "--html", "fuzz.html"])
    finally:
        environment.cache_clear()
    assert result.exit_code == 2 and "'report' extra" in result.output
    assert "scenarios" not in result.output  # refused before the campaign ran
