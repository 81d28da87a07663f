"""What a user of ``harness fuzz --agent`` and ``agent_test`` meets at the edges of the contract:
an agent of the wrong shape or a declaration the judge cannot use is one usage error (exit 2)
before any run; a declared deviation says whether the campaign needed it; the same seed saves the
same scenario; the pytest entry runs under the plugin's Hypothesis profiles in a user's project."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import types
from pathlib import Path

import openai
import pytest

from harness.agents import Deviation, agent_test, kinds_for, replay_agent, run_agent_campaign
from tests.harness.agents import planted
from tests.harness.support import console_script, run_cli

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]


def fuzz_process(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``harness fuzz`` run from a user's project directory (its modules importable
    from there, this checkout's tests importable for the planted loop)."""
    env = dict(os.environ, COLUMNS="200", PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [console_script(), "fuzz", *args], cwd=project, capture_output=True, text=True, env=env, timeout=300
    )


def fuzz(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``harness fuzz ARGS`` from a user's project directory as :func:`fuzz_process` runs it, but in
    this process through click's ``CliRunner``: a fresh interpreter importing the SDKs cost 3 CPU
    seconds a call, more than most campaigns here. What the command imported from the project
    (its ``agents.py``) is dropped afterwards and ``sys.path`` put back, so the next project's
    module of the same name is its own. The console script itself is run by the test that needs
    a process of its own (test_verdicts: the command exits although a thread of the agent sleeps).
    A project that declares deviations on one of the planted loops (``slow = planted.slow_retry``)
    sets them on this process's function: they are put back too, so no other test meets them."""
    path, modules = list(sys.path), set(sys.modules)
    functions = [f for f in vars(planted).values() if isinstance(f, types.FunctionType)]
    declared = [(f, vars(f).get("wire_deviations")) for f in functions]
    try:
        return run_cli("fuzz", *args, cwd=project, env=dict(os.environ, COLUMNS="200"))
    finally:
        for function, before in declared:
            vars(function).pop("wire_deviations", None)
            if before is not None:
                function.wire_deviations = before  # type: ignore[attr-defined]  # an agent's declaration
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            file = getattr(sys.modules[name], "__file__", None) or "/"
            if Path(file).is_relative_to(project):
                del sys.modules[name]


AGENTS = """
from harness.agents import Deviation
from tests.harness.agents import planted


def no_keywords(prompt):
    return "never called"


def no_api_key(prompt, *, base_url):
    return "never called"


async def needs_http_client(prompt, *, base_url, api_key, http_client):
    return await planted.async_agent(prompt, base_url=base_url, api_key=api_key, http_client=http_client)


def wrong_answer(prompt, *, base_url, api_key, http_client=None):
    planted.agent(prompt, base_url=base_url, api_key=api_key, http_client=http_client)
    return "5"


strings = planted.make()
strings.wire_deviations = ["W5"]

one = planted.make()
one.wire_deviations = Deviation("W5", "a partial answer beats none")

cut = planted.make("return_cut_text")
cut.wire_deviations = [
    Deviation("W5", "a partial answer beats none", kinds=("cut stream", "cut inside an event")),
    Deviation("W6", "declared, but nothing here needs it"),
]
"""


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("agents:no_keywords", "cannot be called as agent(prompt, *, base_url, api_key)"),
        ("agents:no_api_key", "unexpected keyword argument 'api_key'"),
        ("agents:strings", "wire_deviations holds 'W5' (str)"),
        ("agents:one", "not one Deviation"),
    ],
)
def test_an_agent_no_run_could_use_is_a_usage_error_before_any_run(tmp_path: Path, target: str, message: str) -> None:
    # Before: every run raised TypeError (exit 1, NOTHING TESTED, after the whole table), or the
    # first violation judged crashed the campaign as an internal error.
    (tmp_path / "agents.py").write_text(AGENTS)
    done = fuzz(tmp_path, "--agent", target, "-n", "3")
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in " ".join(done.stderr.split()), done.stderr
    assert "Traceback" not in done.stderr and "conversations" not in done.stdout


def test_a_deviation_that_could_never_apply_is_refused_where_it_is_declared() -> None:
    with pytest.raises(ValueError, match=r"unknown reply kind.*'cut strem'.*cut stream"):
        Deviation("W5", "partial answers", kinds=("cut strem",))
    with pytest.raises(ValueError, match=r"kinds=\('cut stream',\)"):
        Deviation("W5", "partial answers", kinds="cut stream")  # type: ignore[arg-type]


def test_an_agent_that_requires_http_client_is_served_in_process(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text(AGENTS)
    done = fuzz(tmp_path, "--agent", "agents:needs_http_client", "-n", "5")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "in process" in done.stdout and "no violation" in done.stdout


def test_a_database_given_to_a_wire_campaign_is_a_usage_error_not_ignored(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text(AGENTS)
    done = fuzz(tmp_path, "--agent", "agents:wrong_answer", "--database", str(tmp_path / "db"))
    assert done.returncode == 2 and "--database is for our loop's campaigns" in done.stderr, done.stderr


def test_each_declared_deviation_says_whether_the_campaign_needed_it(tmp_path: Path) -> None:
    (tmp_path / "agents.py").write_text(AGENTS)
    examples = 2 * len(kinds_for())  # the first phase serves each kind once: a cut stream among them
    done = fuzz(tmp_path, "--agent", "agents:cut", "-n", str(examples), "--save-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    shown = " ".join(done.stdout.split())
    assert "declared: W5 after cut stream, cut inside an event: a partial answer beats none (covered" in shown
    said = f"declared: W6 after any reply: declared, but nothing here needs it (not met in {examples} conversations)"
    assert said in shown


def test_the_same_seed_finds_and_saves_the_same_scenario(tmp_path: Path) -> None:
    first, second = (
        run_agent_campaign(planted.retry_without_wait, save_dir=tmp_path / name).failure for name in ("a", "b")
    )
    assert first is not None and second is not None and first.path is not None and second.path is not None
    assert first.path.name == second.path.name
    # the file differs at most in the header's measured gap (a comment): never in what it serves
    bodies = [
        [line for line in p.read_text().splitlines() if not line.startswith("# Violated:")]
        for p in (first.path, second.path)
    ]
    assert bodies[0] == bodies[1]


AGENT_TESTS = """
from harness.agents import agent_test
from tests.harness.agents import planted

CALLS = []


def run(prompt, *, base_url, api_key, http_client=None):
    CALLS.append(prompt)
    return planted.agent(prompt, base_url=base_url, api_key=api_key, http_client=http_client)


test_clean_on_the_wire = agent_test(run)
test_history_on_the_wire = agent_test(planted.rewrite_history)


def test_zz_count():
    print("CONVERSATIONS", len(CALLS))
"""


def test_agent_test_runs_under_the_harness_ci_profile_in_a_users_project(pytester: pytest.Pytester) -> None:
    # the user's project imports the planted loop from this checkout, as from a package it depends
    # on; in process, as tests/harness/pytest_plugin runs the plugin's profiles (its entry point in
    # a fresh interpreter: test_plugin_loads_from_the_entry_point_in_a_fresh_interpreter)
    pytester.makepyfile(test_agent_on_the_wire=AGENT_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-s", "--harness-profile", "harness-ci")
    result.assert_outcomes(passed=2, failed=1)
    # harness-ci's 50 derandomized examples, each at least one conversation of the agent (a run
    # whose draws overran Hypothesis's buffer is thrown away and another drawn)
    counted = re.search(r"CONVERSATIONS (\d+)", result.stdout.str())
    assert counted is not None and 50 <= int(counted.group(1)) <= 80, result.stdout.str()
    # a readable failure: the invariant, the request, and the replies as a scenario file
    result.stdout.fnmatch_lines(["*W2 at request *", "*the replies as a scenario (harness emulate --script FILE)*"])
    result.stdout.fnmatch_lines(["*turns:*"])


def test_the_readmes_agent_is_the_one_ci_fuzzes_from_the_docs() -> None:
    """The README's new-user agent is the docs' agent, which test_frameworks.py fuzzes in CI's
    agents venv through the console script from an empty project (test_new_user_path.py runs the
    README's own lines wherever pydantic-ai is installed)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    docs = (REPO / "docs" / "wire-campaigns.md").read_text(encoding="utf-8")
    shown = re.search(r"<!-- readme-agent: agent\.py[^>]*-->\n```py\n(.*?)```", readme, re.S)
    assert shown is not None
    fuzzed = next(b for b in re.findall(r"```python\n(.*?)```", docs, re.S) if "async def run(" in b)
    assert shown.group(1) == fuzzed.replace("# myproject/agent.py\n", "")


NEVER_REACHES = """
from harness.agents import agent_test


def never(prompt, *, base_url, api_key):
    raise ValueError("no client configured")


def wrong(prompt):
    return "never called"


test_never = agent_test(never)
test_wrong = agent_test(wrong)
"""


def test_agent_test_fails_an_agent_that_never_reaches_the_emulator(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_never_reaches=NEVER_REACHES)
    result = pytester.runpytest("-p", "no:cacheprovider", "--harness-profile", "harness-ci")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_never_reaches:never: inconclusive (harness fuzz exits 3 on it)*",
            "*no run sent a request to the emulator; the first one raised ValueError: no client configured*",
            '*File "*test_never_reaches.py", line *, in never*',
            "*test_never_reaches:wrong: it cannot be called as agent(prompt, *, base_url, api_key)*",
        ],
        consecutive=False,
    )


def test_the_exercised_table_tells_arguments_that_fail_the_schema_from_valid_calls(tmp_path: Path) -> None:
    # Before: every call naming a listed tool was counted as a "valid call", whatever its arguments.
    budget = str(2 * len(kinds_for()))  # the first phase serves each kind once, invalid arguments among them
    done = fuzz(tmp_path, "--agent", "tests.harness.agents.planted:agent", "--examples", budget)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = dict(re.findall(r"replies \(\w+\): ([a-z -]+?)\s*│\s*(\d+)", done.stdout))
    assert int(rows.get("invalid arguments", 0)) > 0, done.stdout
    assert int(rows.get("valid call", 0)) > 0, done.stdout


def test_a_factory_made_agent_is_saved_under_the_name_the_user_typed_with_a_command_that_reproduces_it(
    tmp_path: Path,
) -> None:
    # Before: the scenario said agent: tests.harness.agents.planted:planted_return_cut_text (the
    # factory's module) and "Found by: harness fuzz --agent <that> --seed 21", without --max-turns.
    first, again = tmp_path / "first", tmp_path / "again"
    for project in (first, again):
        project.mkdir()
        (project / "dev.py").write_text(
            "from tests.harness.agents import planted\n\ntypo = planted.make('return_cut_text')\n"
        )
    done = fuzz(first, "--agent", "dev:typo", "--examples", "40", "--max-turns", "4")
    assert done.returncode == 1, done.stdout + done.stderr
    [saved] = (first / "cassettes" / "scenarios" / "wire").glob("*.yaml")
    text = saved.read_text()
    assert "agent: dev:typo" in text
    command = re.search(r"^# Found by: (.+)$", text, re.MULTILINE)[1]  # type: ignore[index]
    assert command == "harness fuzz --agent dev:typo --seed 21 --examples 40 --max-turns 4"
    rerun = fuzz(again, *command.split()[2:])
    assert rerun.returncode == 1, rerun.stdout + rerun.stderr
    [found] = (again / "cassettes" / "scenarios" / "wire").glob("*.yaml")
    assert found.name == saved.name  # the same violation, shrunk to the same replies


def test_a_campaign_failing_on_its_first_conversation_counts_it(tmp_path: Path) -> None:
    # Before: "0 conversations, 0 requests, 0.0s" above the violation it had just found.
    (tmp_path / "agents.py").write_text(AGENTS)
    done = fuzz(tmp_path, "--agent", "agents:wrong_answer")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "VIOLATION W4" in done.stdout
    summary = re.search(r"^(\d+) conversations, (\d+) requests", done.stdout, re.MULTILINE)
    assert summary is not None, done.stdout
    assert int(summary[1]) >= 1 and int(summary[2]) >= 1, summary[0]
    assert re.search(r"runs that returned\s*│\s*1 ", done.stdout), done.stdout  # the table shows that run


def test_one_deviation_not_in_a_list_is_refused_saying_so_by_the_python_entries() -> None:
    # Before: "'Deviation' object is not iterable", from deep inside the campaign.
    one = planted.make()
    one.wire_deviations = Deviation("W5", "a partial answer beats none")  # type: ignore[attr-defined]
    for entry in (lambda: run_agent_campaign(one, 2, save=False), lambda: agent_test(one)):
        with pytest.raises(TypeError, match=r"a list of Deviation values: \[Deviation\(...\)\], not one Deviation"):
            entry()


@pytest.mark.parametrize(
    "agent", [planted.agent, planted.async_agent, planted.loopback_agent], ids=lambda a: a.__name__
)
def test_every_reply_is_drawn_on_the_tests_own_thread(agent: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hypothesis draws belong to the thread running the test: the agent's requests (a worker
    thread, the shared event loop, the loopback server's threads) are handed to it for each draw."""
    from harness.agents import _plans

    threads: set[str] = set()
    draw = _plans.PlannedReplies.__call__

    def spy(self: object, number: int, request: object) -> object:
        threads.add(threading.current_thread().name)
        return draw(self, number, request)  # type: ignore[arg-type]

    monkeypatch.setattr(_plans.PlannedReplies, "__call__", spy)
    result = run_agent_campaign(agent, 8, save=False)  # type: ignore[arg-type]
    assert result.ok and result.stats.requests >= 8
    assert threads == {threading.current_thread().name}


def test_a_scenario_directory_that_cannot_be_written_is_refused_before_the_campaign(tmp_path: Path) -> None:
    # Before: the campaign ran, found and shrank the failure, then lost it to an internal error
    # (NotADirectoryError) when saving it.
    (tmp_path / "agents.py").write_text(AGENTS)
    (tmp_path / "a-file").write_text("")
    done = fuzz(tmp_path, "--agent", "agents:wrong_answer", "--save-dir", str(tmp_path / "a-file" / "sub"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "a-file is a file, so the scenario cannot be saved under it" in done.stderr
    assert "conversations" not in done.stdout


def forgets_calls(prompt: str, *, base_url: str, api_key: str, http_client: object = None) -> str:
    """Asks again with only the prompt whenever the model calls a tool: no result, no history."""
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0)
    for _ in range(4):
        message = (
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": prompt}], tools=planted.TOOLS
            )
            .choices[0]
            .message
        )
        if not message.tool_calls:
            return message.content or ""
    raise RuntimeError("no answer")


def test_a_deviation_for_invalid_arguments_covers_what_follows_a_call_failing_its_schema(tmp_path: Path) -> None:
    # Before: a call whose arguments fail its tool's schema was judged a "valid call", so a
    # deviation declared for "invalid arguments" (a kind the vocabulary draws) never applied.
    scenario = tmp_path / "invalid.yaml"
    scenario.write_text(
        "name: invalid arguments\nprompts: ['What is 2 + 3?']\n"
        "turns:\n  - calls: [{name: add, args: {a: two, b: 3}, id: call_1}]\n  - Done.\n"
    )
    why = "a call its schema refuses is dropped, and the model asked again"
    # the one reply breaks W1 (no result) and W2 (its call gone from the history): one finding,
    # which one deviation declared for that reply covers (before: one deviation per invariant)
    declared = [Deviation("W1", why, kinds=("invalid arguments",))]
    run, judgement = replay_agent(forgets_calls, scenario, deviations=declared)
    assert run.returned == "Done." and judgement.ok, [str(v) for v in judgement.violations]
    assert [v.invariants for v, _ in judgement.declared] == [("W1", "W2")]
    # the same agent after a call that fits the schema is not covered: still one finding
    scenario.write_text(scenario.read_text().replace("a: two", "a: 2"))
    _, valid = replay_agent(forgets_calls, scenario, deviations=declared)
    (finding,) = valid.violations
    assert finding.invariants == ("W1", "W2") and "the same reply also broke W2 at request 2" in str(finding)
    assert all(v.kinds == ("valid call",) for v in (finding, *finding.also))
