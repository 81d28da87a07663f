"""An agent run as a command (DESIGN section 6, "Any agent, any language"): the contract it is
given (environment, stdin, directory, its own process group), what its exit means, a run that
outlives its bound killed with everything it started, and a command that cannot start refused in
one line before any run. The agents here are small Python scripts, so none of this needs node."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.agents import ProcessAgent
from harness.agents._conversation import Serving, scripted
from harness.agents._first_failure import agent_traceback
from harness.agents._process_agent import AgentProcessError
from harness.cli import main
from harness.scenarios import ModelTurn

CONTRACT = (
    "HARNESS_BASE_URL",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_REGION",
    "HARNESS_PROMPT",
)


def _script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return [sys.executable, str(path)]


def test_a_process_is_given_the_contract_and_its_stdout_is_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen.json"
    argv = _script(
        tmp_path,
        "agent.py",
        """
        import json, os, sys
        keys = json.loads(os.environ["KEYS"])
        json.dump({"env": {k: os.environ.get(k) for k in keys}, "stdin": sys.stdin.read(), "cwd": os.getcwd(),
                   "leads_its_group": os.getpgid(0) == os.getpid()}, open(os.environ["SEEN"], "w"))
        print("  the answer\\n")
        """,
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-users-own")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "the user's session")
    monkeypatch.setenv("GEMINI_API_KEY", "the user's gemini key")
    keys = [*CONTRACT, "AWS_SESSION_TOKEN", "GEMINI_API_KEY", "HARNESS_ANSWER_FILE"]
    agent = ProcessAgent(argv, env={"SEEN": str(seen), "KEYS": json.dumps(keys)})
    answer = agent("What is 2 + 3?", base_url="http://127.0.0.1:9/conversation/4", api_key="unused")
    assert answer == "the answer"  # stripped
    said = json.loads(seen.read_text())
    root = "http://127.0.0.1:9/conversation/4"
    assert said["env"]["HARNESS_BASE_URL"] == root and said["env"]["OPENAI_BASE_URL"] == f"{root}/v1"
    assert said["env"]["ANTHROPIC_BASE_URL"] == said["env"]["GOOGLE_GEMINI_BASE_URL"] == root
    assert said["env"]["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] == root and said["env"]["AWS_REGION"] == "us-east-1"
    assert all(said["env"][k] for k in CONTRACT), said["env"]  # placeholder keys: set, never the user's
    assert said["env"]["OPENAI_API_KEY"] != "sk-the-users-own" and said["env"]["AWS_SESSION_TOKEN"] is None
    # GOOGLE_API_KEY alone: google-genai and @google/genai warn on every client when both are set
    assert said["env"]["GEMINI_API_KEY"] is None
    assert said["env"]["HARNESS_ANSWER_FILE"] and not Path(said["env"]["HARNESS_ANSWER_FILE"]).exists()
    assert said["env"]["HARNESS_PROMPT"] == said["stdin"] == "What is 2 + 3?"
    assert Path(said["cwd"]) == tmp_path and said["leads_its_group"]


def test_a_non_zero_exit_is_a_raise_with_its_stderr_kept_for_the_report(tmp_path: Path) -> None:
    argv = _script(tmp_path, "agent.py", "import sys\nprint('half an answer')\nsys.exit('TypeError: no tools here')\n")
    with pytest.raises(AgentProcessError) as raised:
        ProcessAgent(argv)("hi", base_url="http://127.0.0.1:9/conversation/1", api_key="k")
    shown = agent_traceback(raised.value)
    assert "exited with status 1" in shown and "its stderr:\nTypeError: no tools here" in shown


def test_a_long_lived_process_answers_a_line_per_conversation_on_each_ones_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")  # the user's: never the agent's
    argv = _script(
        tmp_path,
        "agent.py",
        """
        import json, os, sys
        print("loading the tools")  # not an answer: kept as output
        for line in sys.stdin:
            asked = json.loads(line)
            if asked["prompt"] == "fail":
                print("Traceback: boom", file=sys.stderr, flush=True)
                said = {"error": "boom"}
            else:
                said = {"answer": asked["env"]["OPENAI_BASE_URL"] + " " + str(os.environ.get("OPENAI_BASE_URL"))}
            print(json.dumps({"conversation": asked["conversation"], **said}), flush=True)
        """,
    )
    agent = ProcessAgent(argv, mode="lines")
    try:
        first = agent("hi", base_url="http://127.0.0.1:9/conversation/1", api_key="k")
        assert first == "http://127.0.0.1:9/conversation/1/v1 None"
        assert "loading the tools" in capsys.readouterr().err  # the run's output, kept in its log
        with pytest.raises(AgentProcessError, match="conversation 2 answered with an error: boom") as raised:
            agent("fail", base_url="http://127.0.0.1:9/conversation/2", api_key="k")
        assert "its stderr:\nTraceback: boom" in agent_traceback(raised.value)
        assert agent("hi", base_url="http://127.0.0.1:9/conversation/3", api_key="k").startswith(
            "http://127.0.0.1:9/conversation/3/v1"
        )
    finally:
        agent.wire_close()


HANGS = """
    import json, os, subprocess, sys, time

    def hang():
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(os.environ.get("PIDS", "pids"), "a") as pids:
            pids.write(f"{os.getpid()} {child.pid}\\n")
        time.sleep(60)

    if os.environ.get("HARNESS_AGENT_MODE") != "lines":
        hang()
    for line in sys.stdin:
        asked = json.loads(line)
        if asked["prompt"] == "hang":
            hang()
        print(json.dumps({"conversation": asked["conversation"], "answer": "Done."}), flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie is dead, waiting for whoever reaps it


def _all_gone(pids: Path, within: float = 3.0) -> bool:
    started = time.monotonic()
    numbers = [int(n) for n in pids.read_text().split()]
    while any(_alive(n) for n in numbers) and time.monotonic() - started < within:
        time.sleep(0.05)
    return bool(numbers) and not any(_alive(n) for n in numbers)


@pytest.mark.parametrize("mode", ["process", "lines"])
def test_a_run_past_its_bound_is_killed_with_all_it_started(tmp_path: Path, mode: str) -> None:
    pids = tmp_path / "pids"
    pids.touch()
    agent = ProcessAgent(_script(tmp_path, "hangs.py", HANGS), mode=mode, env={"PIDS": str(pids)})
    done = ModelTurn(text="Done.")
    served = Serving(agent)
    try:
        run = served.converse(agent, scripted([done]), prompt="hang", request_bound=3, time_bound=0.5)
        assert run.timed_out and run.ended == "did not end"
        assert _all_gone(pids), "the agent or the child it started outlived the kill"
        assert served.left_behind.count() == 0
        if mode == "lines":  # the next conversation gets a fresh process
            again = served.converse(agent, scripted([done]), prompt="hi", request_bound=3, time_bound=5)
            assert again.returned == "Done.", again.raised
    finally:
        served.close()
        agent.wire_close()


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("", "the command is empty"),
        ("'node agent.mjs", "cannot split"),
        ("no-such-program-for-harness agent.mjs", "no-such-program-for-harness: command not found on PATH"),
        ("./missing.mjs", "./missing.mjs: no such file"),
        (
            "./agent.mjs",
            "./agent.mjs: not executable (chmod +x it, or run it through its interpreter: 'node ./agent.mjs')",
        ),
    ],
)
def test_a_command_that_cannot_start_is_one_line_and_exit_2_before_any_run(
    command: str, said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "agent.mjs").write_text("console.log('hi')\n")
    done = CliRunner().invoke(main, ["fuzz", "--agent-cmd", command])
    assert done.exit_code == 2
    assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not done.stdout  # nothing ran


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--deviation", "W2"], "write INVARIANT=REASON"),
        (["--deviation", "W9=because"], "unknown invariant 'W9'"),
        (["--deviation", "W5:cut=because"], "unknown reply kind(s) 'cut'"),
        (["--agent-cmd-mode", "lines"], "--agent-cmd-mode says how to run --agent-cmd"),
        (["--tools", "tools"], "--tools fuzz different things"),
    ],
)
def test_options_a_command_agent_cannot_use_are_usage_errors(
    options: list[str], said: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    agent = "--agent" if "--agent-cmd-mode" in options else "--agent-cmd"
    target = "tests.harness.agents.planted:agent" if agent == "--agent" else f"{sys.executable} -c pass"
    done = CliRunner().invoke(main, ["fuzz", agent, target, *options])
    assert done.exit_code == 2 and said in done.output, done.output


def test_a_deviation_without_an_agent_is_a_usage_error() -> None:
    done = CliRunner().invoke(main, ["fuzz", "--deviation", "W2=because", "-n", "1"])
    assert done.exit_code == 2 and "--deviation is for a wire campaign" in done.output


def test_the_command_ends_within_its_bound_and_leaves_no_process_of_a_hung_agent(tmp_path: Path) -> None:
    """Through the installed command: a run that never ends is W3, its group is killed (the child
    it started too), and the command says no run was left behind."""
    pids = tmp_path / "pids"
    pids.touch()
    (tmp_path / "hangs.py").write_text(textwrap.dedent(HANGS), encoding="utf-8")
    harness = Path(sys.executable).with_name("harness")
    started = time.monotonic()
    done = subprocess.run(
        [str(harness), "fuzz", "--agent-cmd", f"{sys.executable} hangs.py", "--time-bound", "0.5", "-n", "3"],
        cwd=tmp_path,
        env={**os.environ, "PIDS": str(pids), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "VIOLATION W3" in done.stdout and "had not ended 0.5s after it started" in done.stdout
    assert "left behind" not in done.stdout
    assert _all_gone(pids)
    assert time.monotonic() - started < 60


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stopping_the_command_kills_the_agent_and_all_it_started(tmp_path: Path, stop: signal.Signals) -> None:
    """Through the installed command: the agent leads a session of its own, out of reach of the
    terminal's Ctrl-C and of its parent's death, so ``harness fuzz`` stopped mid-run kills its group
    (the child it started too) before it ends by the signal it was sent, or, for Ctrl-C (SIGINT),
    with 130, the status a shell gives an interrupted command (issue 35: it was 1, a violation)."""
    pids = tmp_path / "pids"
    pids.touch()
    (tmp_path / "hangs.py").write_text(textwrap.dedent(HANGS), encoding="utf-8")
    harness = Path(sys.executable).with_name("harness")
    running = subprocess.Popen(
        [str(harness), "fuzz", "--agent-cmd", f"{sys.executable} hangs.py", "--time-bound", "60", "-n", "3"],
        cwd=tmp_path,
        env={**os.environ, "PIDS": str(pids)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = time.monotonic()
        while len(pids.read_text().split()) < 2 and time.monotonic() - started < 60:
            time.sleep(0.05)
        assert len(pids.read_text().split()) >= 2, "the agent never started its child"
        running.send_signal(stop)
        _, stderr = running.communicate(timeout=30)
    finally:
        running.kill()
    assert running.returncode == (130 if stop == signal.SIGINT else -stop), stderr
    assert f"stopped by {stop.name}; killed 1 agent process group(s)" in stderr
    assert ("harness fuzz: interrupted (exit 130)" in stderr) == (stop == signal.SIGINT), stderr
    assert _all_gone(pids), "the agent or the child it started outlived the command"
