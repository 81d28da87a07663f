"""Green means tested (issue 35): a campaign that could not test what it claims says inconclusive
(exit 3, and why) instead of "no violation"; every distinct exception its runs raised is shown
with the agent's frames; it shows progress where no terminal is; the long-lived mode is one call
(``serve_lines`` in Python, a snippet in node); an agent's answer can come in a file, so a
framework that logs to stdout is not judged by a log line; ``agent_test`` saves what it found."""

from __future__ import annotations

import html as html_module
import io
import json
import os
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.agents import ProcessAgent, serve_lines
from harness.agents._first_failure import agent_traceback
from harness.agents._process_agent import AgentProcessError
from harness.cli import main, missing_piece
from tests.harness.agents.test_agent_contract import REPO, fuzz, fuzz_process

pytest_plugins = ["pytester"]


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_long_lived_agent_that_caches_its_client_across_conversations_is_inconclusive(tmp_path: Path) -> None:
    # Before: "100 conversations, 1 requests", "99 runs raised", a note about runs the campaign
    # had abandoned (none had been), then "no violation" and exit 0. Through the installed command,
    # not a terminal: its progress comes as plain lines on stderr.
    command = f"{sys.executable} -m tests.harness.agents.planted cached_client"
    done = fuzz_process(tmp_path, "--agent-cmd", command, "--agent-cmd-mode", "lines", "-n", "6")
    out = flat(done.stdout)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "no violation" not in out and "INCONCLUSIVE (exit 3)" in out
    assert re.search(
        r"- \d+ request\(s\) came under the base URL of a conversation that had already ended \(the first: "
        r"conversation 1's, while conversation 2 ran\): the agent shares state across conversations, such as a "
        r"model client cached without its base URL\. Build the client in each conversation from the base_url it "
        r"is given",
        out,
    ), out
    assert "runs the campaign had abandoned" not in out  # none was: the old note said what had not happened
    assert re.search(r"- only 1 of \d+ conversation\(s\) reached a judged reply \(fewer than half\)", out), out
    # each distinct exception: the refused requests raised BadRequestError in the agent's own frames
    assert "BadRequestError" in out and "in cached_client" in out
    assert "harness/agents/_" not in out  # serve_lines' own frames are left out
    assert re.search(r"wall time [\d.]+s: start-up [\d.]+s, exploring [\d.]+s \(", out), out
    assert "(0/s" not in out
    assert "harness fuzz: exploring: 0/6 conversations" in done.stderr, done.stderr
    assert re.search(r"harness fuzz: exploring: [1-6]/6 conversations, [\d.]+ ", done.stderr), done.stderr


AGENTS = """
from tests.harness.agents import planted

mostly = planted.raises_mostly
"""


def test_an_agent_that_raises_in_most_conversations_is_not_green_and_shows_each_exception(tmp_path: Path) -> None:
    # Before: "runs that raised TypeError 1" in the table, and no traceback anywhere.
    (tmp_path / "agents.py").write_text(AGENTS)
    page = tmp_path / "r.html"
    done = fuzz(tmp_path, "--agent", "agents:mostly", "-n", "9", "--html", str(page))
    out = done.stdout
    assert done.returncode == 3, out + done.stderr
    # the six misconfigured runs raise before their first request; the three others may raise on
    # what they were served (an in-band error, a malformed chunk): each exception is told apart
    assert re.search(
        r"- only 3 of 9 conversation\(s\) reached a judged reply \(fewer than half\); \d+ run\(s\)", flat(out)
    )
    assert re.search(
        r"the runs raised \d+ distinct exception\(s\), in \d+ run\(s\); each with the agent's frames:", out
    )
    heads = re.findall(r"^((?:ValueError|KeyError): .*? \(first in conversation \d+\))$", out, re.M)
    assert heads == [
        "ValueError: settings of conversation 2: no model configured: raised in 3 runs (first in conversation 2)",
        "KeyError: 'profile-1': raised in 3 runs (first in conversation 3)",
    ], out
    frames = re.findall(r'File ".*?", line \d+, in (\w+)', out)
    assert frames[:4] == ["raises_mostly", "_read_settings", "raises_mostly", "_profile"], out
    assert "harness/agents/_" not in out and "threading.py" not in out
    shown = html_module.unescape(page.read_text())
    assert 'data-exit="3"' in shown and "INCONCLUSIVE" in shown
    assert all(head in shown for head in heads) and "in _read_settings" in shown and "in _profile" in shown
    assert "only 3 of 9 conversation(s) reached a judged reply" in shown


LOGS_TO_STDOUT = """
    import json, os, sys

    def answer(prompt, answer_file):
        print("INFO framework: calling the model")  # a logger on stdout: never the answer
        with open(answer_file, "w") as file:
            file.write(f"  the answer to {prompt}\\n")

    if os.environ.get("HARNESS_AGENT_MODE") != "lines":
        answer(sys.stdin.read(), os.environ["HARNESS_ANSWER_FILE"])
    for line in sys.stdin:
        asked = json.loads(line)
        answer(asked["prompt"], asked["env"]["HARNESS_ANSWER_FILE"])
        print(json.dumps({"conversation": asked["conversation"], "answer": None}), flush=True)
"""


@pytest.mark.parametrize("mode", ["process", "lines"])
def test_an_answer_written_to_the_answer_file_is_the_answer_whatever_stdout_logs(
    tmp_path: Path, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: a framework whose logger wrote INFO lines to stdout made a log line the answer (a false W4).
    (tmp_path / "agent.py").write_text(textwrap.dedent(LOGS_TO_STDOUT), encoding="utf-8")
    agent = ProcessAgent([sys.executable, str(tmp_path / "agent.py")], mode=mode)
    try:
        for number in (1, 2):
            said = agent(f"q{number}", base_url=f"http://127.0.0.1:9/conversation/{number}", api_key="k")
            assert said == f"the answer to q{number}"  # stripped, as stdout is
    finally:
        agent.wire_close()
    assert "INFO framework: calling the model" in capsys.readouterr().err  # the run's output, kept in its log


def test_serve_lines_runs_a_python_agent_per_line_its_prints_kept_out_of_the_answers() -> None:
    seen: list[tuple[str, str, str | None]] = []

    async def agent(prompt: str, *, base_url: str, api_key: str) -> str:
        import os

        print("a framework's banner")
        seen.append((prompt, base_url, os.environ.get("OPENAI_BASE_URL")))
        if prompt == "fail":
            raise LookupError("no such model")
        return f"answered {prompt}"

    root = "http://127.0.0.1:9/conversation/"
    asked = [
        {"conversation": n, "prompt": p, "env": {"HARNESS_BASE_URL": f"{root}{n}", "OPENAI_BASE_URL": f"{root}{n}/v1"}}
        for n, p in ((1, "hi"), (2, "fail"))
    ]
    answers = io.StringIO()
    before = os.environ.get("OPENAI_BASE_URL")
    serve_lines(agent, given=io.StringIO("".join(json.dumps(a) + "\n" for a in asked)), answers=answers)
    assert os.environ.get("OPENAI_BASE_URL") == before  # no conversation's URL outlives it (the next client reads it)
    lines = [json.loads(line) for line in answers.getvalue().splitlines()]
    assert lines == [
        {"conversation": 1, "answer": "answered hi"},
        {"conversation": 2, "error": "LookupError: no such model"},
    ]
    assert seen == [("hi", f"{root}1", f"{root}1/v1"), ("fail", f"{root}2", f"{root}2/v1")]


def _node_snippet() -> str:
    """The long-lived loop the docs give node users, wherever the docs keep it."""
    for page in sorted((REPO / "docs").rglob("*.md")):
        found = re.search(r"```js\n(// serve_lines\.mjs.*?)```", page.read_text(encoding="utf-8"), re.S)
        if found:
            return found.group(1)
    raise AssertionError("no docs page shows serve_lines.mjs")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (the snippet is for Node 20)")
def test_the_documented_node_snippet_serves_the_lines_protocol(tmp_path: Path) -> None:
    (tmp_path / "serve_lines.mjs").write_text(_node_snippet(), encoding="utf-8")
    (tmp_path / "agent.mjs").write_text(
        'import { serveLines } from "./serve_lines.mjs";\n'
        "await serveLines(async (prompt, { baseUrl }) => {\n"
        '  console.log("a framework log line");\n'
        '  if (prompt === "fail") throw new Error("boom");\n'
        "  return `${prompt} at ${baseUrl}`;\n"
        "});\n",
        encoding="utf-8",
    )
    agent = ProcessAgent(["node", str(tmp_path / "agent.mjs")], mode="lines")
    try:
        assert agent("hi", base_url="http://127.0.0.1:9/conversation/1", api_key="k") == (
            "hi at http://127.0.0.1:9/conversation/1"
        )
        with pytest.raises(AgentProcessError, match="conversation 2 answered with an error: boom") as raised:
            agent("fail", base_url="http://127.0.0.1:9/conversation/2", api_key="k")
        assert "Error: boom" in agent_traceback(raised.value)
    finally:
        agent.wire_close()


AGENT_TEST = """
from harness.agents import agent_test
from tests.harness.agents import planted

test_cut = agent_test(planted.keep_text_on_stream_error)
"""
TEN = """
from hypothesis import settings

settings.register_profile("wire-ten", max_examples=10, deadline=None, database=None, derandomize=True)
"""


def test_an_agent_test_failure_saves_its_scenario_names_the_exit_and_shows_no_harness_source(
    pytester: pytest.Pytester,
) -> None:
    # Before: the failure showed _agent_test.py's source and saved nothing.
    pytester.makepyfile(test_agent=AGENT_TEST)
    pytester.makeconftest(TEN)
    result = pytester.runpytest("--harness-profile", "wire-ten", "--harness-scenario-dir", "saved")
    result.assert_outcomes(failed=1)
    saved = sorted((pytester.path / "saved" / "wire").glob("W5-*.yaml"))
    assert len(saved) == 1, result.stdout.str()
    text = result.stdout.str()
    assert f"violation (harness fuzz exits 1 on it); saved as {saved[0]}, replayed first" in flat(text)
    assert "replayed first by this test from now on" in text
    assert "_agent_test.py" not in text and "plan.campaign()" not in text


def test_a_missing_optional_piece_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: "internal error: ModuleNotFoundError: No module named 'starlette' (this is a bug in the harness)".
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # importing it raises ModuleNotFoundError
    done = CliRunner().invoke(main, ["fuzz", "--agent-cmd", f"{sys.executable} -c pass", "-n", "1"])
    said = [line for line in done.output.splitlines() if line.startswith("Error:")]
    assert done.exit_code == 2, done.output
    assert said == ["Error: uvicorn is not installed, though openprogram needs it: reinstall it (pip install -e .)"]
    assert "bug in the harness" not in done.output
    missing = ModuleNotFoundError("No module named 'google.genai'", name="google.genai")
    assert missing_piece(missing) == (
        'google.genai is not installed: it comes with the "gemini" extra (pip install -e ".[gemini]")'
    )


STOPPED = """
from harness.agents import agent_test
from tests.harness.agents import planted

test_stopped = agent_test(planted.agent)
"""


def test_ctrl_c_during_an_agent_test_ends_pytest_with_130(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: pytest's own 2 for an interrupted session, where harness fuzz says 130.
    from harness.agents import _agent_test

    def interrupted(self: object) -> None:  # Ctrl-C arrives on the campaign's thread
        raise KeyboardInterrupt

    monkeypatch.setattr(_agent_test._Plan, "_campaign", interrupted)
    pytester.makepyfile(test_stopped=STOPPED)
    result = pytester.runpytest()
    assert result.ret == 130, result.stdout.str()
    result.stdout.fnmatch_lines(["*interrupted (harness fuzz exits 130 on it)*"])
