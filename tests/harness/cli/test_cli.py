"""The ``harness`` command on a user's project, the way a user meets it.

Each test builds a small project in a temporary directory (a package of tools, scenario files)
and runs the command from its root: a handful through the installed console script and
``python -m harness`` (what a user really types: the current directory is not on the console
script's ``sys.path``), the many small cases through click's CliRunner. Every test asserts the
exit status and that no traceback reaches the output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from harness.campaigns._loop_campaign import load_tools, run_campaign
from harness.cli import main
from tests.harness.support import console_script, emulate_process

TOOLS = '''
from openprogram import agentic_function, function, runtime


@function(register=False)
def lookup(key: str, limit: int = 3) -> str:
    """Look a key up in the catalogue."""
    return f"{key}:{limit}"


@agentic_function(register=False)
def summarize(text: str) -> str:
    """Summarize a text with the model."""
    return runtime.exec(f"Summarize: {text}", tools=[])


@agentic_function(register=False)
def research(topic: str) -> str:
    """Research a topic with the model, which may look keys up (the outer menu)."""
    return runtime.exec(f"Research: {topic}")
'''

MODULES = {
    "tools.py": TOOLS,
    "exits.py": '''
        import sys
        from openprogram import function


        @function(register=False)
        def shutdown(code: int) -> str:
            """Stop everything."""
            sys.exit(code)
        ''',
    "interrupts.py": '''
        from openprogram import function


        @function(register=False)
        def interrupt() -> str:
            """Ctrl-C, from inside a tool."""
            raise KeyboardInterrupt
        ''',
    "cancels.py": '''
        import asyncio
        from openprogram import function


        @function(register=False)
        async def give_up() -> str:
            """Cancels itself."""
            raise asyncio.CancelledError()
        ''',
    "flaky.py": '''
        import itertools
        from openprogram import function

        _counter = itertools.count()


        @function(register=False)
        def ticket() -> str:
            """A new ticket number (different every call)."""
            return f"ticket-{next(_counter)}"
        ''',
    "broken.py": "raise RuntimeError('the database is not configured')\n",
    "quits.py": "import sys\nsys.exit('no config')\n",
    "syntax.py": "def f(:\n",
    "needs_dep.py": "import a_dependency_that_is_not_installed\n",
    "empty.py": "X = 1\n",
    "listed.py": "from myagent.tools import lookup\nTOOLS = [lookup, print]\n",
    "none_listed.py": "TOOLS = []\n",
}

LOOKUP_SCENARIO = """\
prompts: [find a]
tools:
  - name: lookup
    python: myagent.tools:lookup
turns:
  - calls: [{name: lookup, args: {key: a}}]
  - done
meta:
  expect: {reason: stop, results: ['a:3'], final_text: done}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user's project root, made the current directory; its modules are forgotten afterwards."""
    root = tmp_path / "project"
    package = root / "myagent"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name, source in MODULES.items():
        (package / name).write_text(textwrap.dedent(source))
    scenarios = root / "scenarios"
    (scenarios / "more").mkdir(parents=True)
    (scenarios / "lookup.yaml").write_text(LOOKUP_SCENARIO)
    (scenarios / "more" / "text.yml").write_text("prompts: [hi]\nturns: [hello]\nmeta: {expect: {final_text: hello}}\n")
    monkeypatch.chdir(root)
    saved_path = list(sys.path)
    yield root
    sys.path[:] = saved_path
    for name in [m for m in sys.modules if m == "myagent" or m.startswith("myagent.")]:
        del sys.modules[name]


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args), env={"COLUMNS": "200"})  # rich tables: one line per row
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def shell(project: Path, *command: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "COV_"))}
    env["COLUMNS"] = "200"
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, env=env, timeout=120)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


# -- through the installed console script and python -m (what a user types) -------------------------


def test_fuzz_finds_the_users_tools_in_the_current_directory(project: Path) -> None:
    done = shell(project, console_script(), "fuzz", "--tools", "myagent.tools", "-n", "15", "--seed", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 tool(s) from myagent.tools" in done.stdout and "no violation" in done.stdout
    for column in ("calls", "results", "error results", "raised"):
        assert column in done.stdout
    assert "lookup" in done.stdout and "summarize" in done.stdout and "research" in done.stdout


def test_output_piped_into_a_reader_that_has_gone_ends_quietly(project: Path) -> None:
    """``harness run scenarios | head -1``: the pipe closes under the command, which must stop
    without a traceback or an "internal error" line, as Unix tools do."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written: every write breaks the pipe
    try:
        done = subprocess.run(
            [console_script(), "run", "scenarios"],
            cwd=project,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr


def test_a_missing_module_is_a_one_line_usage_error_from_the_console_script(project: Path) -> None:
    done = shell(project, console_script(), "fuzz", "--tools", "myagnet.tools")
    assert done.returncode == 2
    assert "Error: --tools myagnet.tools: no module named 'myagnet'" in done.stderr
    assert str(project) in done.stderr  # where it looked


def test_python_dash_m_harness_runs_a_directory_with_python_tools(project: Path) -> None:
    done = shell(project, sys.executable, "-m", "harness", "run", "scenarios")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   scenarios/lookup.yaml" in done.stdout and "ok   scenarios/more/text.yml" in done.stdout
    assert done.stdout.splitlines()[-1] == "all 2 scenario(s) passed"


def test_python_dash_m_harness_shows_the_commands(project: Path) -> None:
    done = shell(project, sys.executable, "-m", "harness", "--help")
    assert done.returncode == 0
    assert "Usage: harness" in done.stdout
    for command in ("conformance", "demo", "fuzz", "run", "schema"):
        assert command in done.stdout


def test_a_tool_that_exits_is_a_finding_not_the_end_of_the_fuzzer(project: Path) -> None:
    done = shell(
        project, console_script(), "fuzz", "--tools", "myagent.exits", "-n", "8", "--seed", "3", "--save-dir", "found"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "VIOLATION [tool raised BaseException]" in done.stdout
    assert "tool 'shutdown' raised SystemExit(" in done.stdout and "minimal scenario:" in done.stdout
    (saved,) = (project / "found").glob("*.yaml")
    replay = shell(project, console_script(), "run", str(saved))
    assert replay.returncode == 1 and "tool 'shutdown' raised SystemExit(" in replay.stdout


# -- harness fuzz: bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--examples", "0"], "Invalid value for '--examples' / '-n': 0 is not in the range x>=1", id="0"),
        pytest.param(["--examples", "many"], "'many' is not a valid integer", id="not-a-number"),
        pytest.param(["--max-turns", "0"], "Invalid value for '--max-turns'", id="max-turns-0"),
        pytest.param(["--seed", "-1"], "Invalid value for '--seed'", id="negative-seed"),
        pytest.param(["--bogus"], "No such option '--bogus'", id="unknown-option"),
        pytest.param(["--tools"], "Option '--tools' requires an argument", id="tools-without-value"),
        pytest.param(["--tools", "nosuch"], "no module named 'nosuch'", id="missing-module"),
        pytest.param(["--tools", "myagent.nosuch"], "no module named 'myagent.nosuch'", id="missing-submodule"),
        pytest.param(
            ["--tools", "myagent.broken"],
            "importing myagent.broken failed: RuntimeError: the database is not configured (",
            id="raises-on-import",
        ),
        pytest.param(["--tools", "myagent.quits"], "importing myagent.quits failed: SystemExit: no config", id="exits"),
        pytest.param(["--tools", "myagent.syntax"], "importing myagent.syntax failed: SyntaxError:", id="syntax"),
        pytest.param(
            ["--tools", "myagent.needs_dep"],
            "importing myagent.needs_dep failed: ModuleNotFoundError: No module named 'a_dependency",
            id="missing-dependency",
        ),
        pytest.param(["--tools", "myagent.empty"], "defines no @function tools and no TOOLS list", id="no-tools"),
        pytest.param(["--tools", "my agent"], "'my agent' is not a module name", id="not-a-name"),
        pytest.param(
            ["--tools", "myagent.listed"], "myagent.listed.TOOLS[1] is not a tool (<built-in", id="not-a-tool"
        ),
        pytest.param(["--tools", "myagent.none_listed"], "myagent.none_listed.TOOLS is empty", id="empty-list"),
    ],
)
def test_unusable_fuzz_input_is_a_usage_error(project: Path, args: list[str], message: str) -> None:
    result = invoke("fuzz", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_fuzz_runs_the_nested_path_of_an_agentic_function(project: Path) -> None:
    tools = load_tools("myagent.tools")
    result = run_campaign(40, seed=4, tools=tools, save_dir=project / "found")
    assert result.ok, result.failure
    summarize = result.stats.per_tool["summarize"]
    # some nested runs finish (their generated model says something), so the tool returns
    assert summarize["results"] > 0, summarize
    assert result.stats.kinds["scenario with a scripted model for an @agentic_function"] > 0


@pytest.mark.parametrize(
    ("module", "raised"),
    [
        ("interrupts", "tool 'interrupt' raised KeyboardInterrupt()"),
        ("cancels", "tool 'give_up' raised CancelledError()"),
    ],
)
def test_base_exceptions_from_a_tool_are_findings_with_a_minimal_scenario(
    project: Path, module: str, raised: str
) -> None:
    result = invoke("fuzz", "--tools", f"myagent.{module}", "-n", "20", "--seed", "2", "--save-dir", "found")
    assert result.exit_code == 1, result.output
    assert raised in result.output and "minimal scenario:" in result.output
    assert len(list((project / "found").glob("*.yaml"))) == 1


def test_a_nondeterministic_tool_is_reported_by_name(project: Path) -> None:
    result = invoke("fuzz", "--tools", "myagent.flaky", "-n", "10", "--seed", "1", "--save-dir", "found")
    assert result.exit_code == 1, result.output
    assert "NONDETERMINISTIC TOOL(S)" in result.output
    assert "ticket: two runs of one scenario gave different ledgers for it" in result.output


def test_every_summary_row_says_what_it_counts(project: Path) -> None:
    result = invoke("fuzz", "-n", "20", "--seed", "5", "--save-dir", "found")
    assert result.exit_code == 0, result.output
    assert "scenarios that ended with reason error (end reason)" in result.output
    assert "calls of a tool not on the menu (not-found result)" in result.output


# -- harness run ------------------------------------------------------------------------------------


def test_run_reports_each_file_and_a_summary_and_fails_if_any_failed(project: Path) -> None:
    (project / "scenarios" / "more" / "wrong.yaml").write_text(
        "prompts: [hi]\nturns: [hello]\nmeta: {expect: {final_text: {prefix: bye}}}\n"
    )
    result = invoke("run", "scenarios")
    assert result.exit_code == 1, result.output
    assert "FAIL scenarios/more/wrong.yaml" in result.output
    assert "final_text: expected a text starting with 'bye', got 'hello'" in result.output
    assert result.output.splitlines()[-1] == "3 scenario(s): 2 passed, 1 failed"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("turns: [hi\n", "not valid YAML", id="not-yaml"),
        pytest.param("- just\n- a list\n", "a scenario is a mapping", id="a-list"),
        pytest.param("turns: [{txt: hi}]\n", "turn 1: unknown key(s) txt", id="unknown-key"),
        pytest.param(
            "config: {max_iterations: '5'}\n", "config.max_iterations: expected an integer, got '5'", id="cap"
        ),
        pytest.param("config: {max_iterations: true}\n", "config.max_iterations: expected an integer", id="cap-bool"),
        pytest.param(
            "config: {parallel_tool_calls: 'no'}\n", "config.parallel_tool_calls: expected true or false", id="parallel"
        ),
        pytest.param(
            "config: {tool_choice: any}\n",
            "config.tool_choice: expected 'auto', 'required' or 'none'",
            id="tool-choice",
        ),
        pytest.param("config: {tool_choice: {type: function}}\n", "config.tool_choice.name: required", id="pick"),
        pytest.param("steering: {0: [stop]}\n", "steering poll 0: poll numbers start at 1", id="poll-0"),
        pytest.param("steering: {two: [stop]}\n", "steering poll two: expected an integer", id="poll-name"),
        pytest.param(
            "meta: {expect: {final_text: {contain: x}}}\n",
            "meta.expect.final_text: unknown matcher 'contain'",
            id="matcher",
        ),
        pytest.param("meta: {expect: {results: [{regex: '['}]}}\n", "not a valid regular expression", id="regex"),
        pytest.param("meta: {expect: {text: hi}}\n", "meta.expect.text: unknown expectation", id="expect-key"),
        pytest.param(
            "tools: [{name: t, python: nosuch.mod:t}]\n",
            "tool 1: tool 't': python: no module named 'nosuch'",
            id="python-missing-module",
        ),
        pytest.param(
            "tools: [{name: t, python: myagent.tools:nope}]\n",
            "python: myagent.tools has no attribute 'nope'",
            id="python-missing-attribute",
        ),
        pytest.param(
            "tools: [{name: t, python: myagent.broken:t}]\n",
            "python: importing myagent.broken failed: RuntimeError",
            id="python-raises-on-import",
        ),
        pytest.param(
            "tools: [{name: t, python: myagent.tools}]\n", "expected 'package.module:attribute'", id="no-attr"
        ),
    ],
)
def test_an_unusable_scenario_file_is_reported_and_exits_2(project: Path, content: str, message: str) -> None:
    bad = project / "scenarios" / "bad.yaml"
    bad.write_text(content)
    result = invoke("run", "scenarios")
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("ERROR ")]
    assert message in result.output, result.output
    assert line.startswith(f"ERROR {Path('scenarios') / 'bad.yaml'}: ")
    assert "ok   scenarios/lookup.yaml" in result.output  # the others still ran
    assert result.output.splitlines()[-1] == "3 scenario(s): 2 passed, 0 failed, 1 could not be used"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["run"], "Missing argument 'FILES...'", id="no-files"),
        pytest.param(["run", "nosuch.yaml"], "Path 'nosuch.yaml' does not exist", id="missing-file"),
        pytest.param(["run", "empty"], "no scenario files (*.yaml, *.yml) in empty", id="empty-dir"),
        pytest.param(["run", "scenarios", "--bogus"], "No such option '--bogus'", id="bad-option"),
        pytest.param(["nosuch"], "No such command 'nosuch'", id="no-such-command"),
    ],
)
def test_unusable_run_input_is_a_usage_error(project: Path, args: list[str], message: str) -> None:
    (project / "empty").mkdir()
    (project / "empty" / "notes.txt").write_text("not a scenario")
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_a_python_tool_takes_its_schema_and_description_from_the_function(project: Path) -> None:
    from harness.scenarios._scenario import Scenario

    scenario = Scenario.from_yaml(project / "scenarios" / "lookup.yaml")
    (tool,) = scenario.tools
    assert tool.description == "Look a key up in the catalogue."
    assert tool.parameters["required"] == ["key"] and set(tool.parameters["properties"]) == {"key", "limit"}
    # so the loop validates calls against the real schema: a missing key is refused, not run
    (project / "scenarios" / "invalid.yaml").write_text(
        LOOKUP_SCENARIO.replace("args: {key: a}", "args: {limit: 1}").replace(
            "results: ['a:3']", "results: [{prefix: '!Validation failed for tool \"lookup\"'}]"
        )
    )
    assert invoke("run", "scenarios/invalid.yaml").exit_code == 0


def test_a_python_tool_keeps_the_schema_and_description_the_file_gives(project: Path) -> None:
    from harness.scenarios._scenario import Scenario

    scenario = Scenario.from_yaml(
        "tools: [{name: lookup, python: 'myagent.tools:lookup', description: Mine., parameters: {type: object}}]"
    )
    (tool,) = scenario.tools
    assert (tool.description, dict(tool.parameters)) == ("Mine.", {"type": "object"})
    assert tool.agent_tool().description == "Mine."


def test_a_call_of_a_tool_the_menu_lacks_runs_and_the_run_says_so(project: Path) -> None:
    (project / "scenarios" / "typo.yaml").write_text(
        "prompts: [go]\ntools: [{name: lookup}]\nturns: [{calls: [{name: lokup}]}, done]\n"
        "meta: {expect: {results: [{contains: 'not found'}]}}\n"
    )
    result = invoke("run", "scenarios/typo.yaml")
    assert result.exit_code == 0, result.output
    assert (
        "  note: turn 1, call 1 names tool 'lokup', which is not on the menu (tools: lookup): "
        "the loop answers it with the not-found error"
    ) in result.output


@pytest.mark.parametrize(
    ("expect", "passes"),
    [
        ("{final_text: {contains: 'is 5'}}", True),
        ("{final_text: {contains: 'is 6'}}", False),
        ("{final_text: {prefix: 'The'}}", True),
        ("{final_text: {regex: '^The answer is \\d+\\.$'}}", True),
        ("{final_text: {regex: '^answer'}}", False),
        ("{final_text: The answer is 5.}", True),
        ("{executed: [{regex: '^add#call_\\d$'}], results: ['5']}", True),
    ],
)
def test_meta_expect_takes_partial_matches(project: Path, expect: str, passes: bool) -> None:
    (project / "scenarios" / "add.yaml").write_text(
        "prompts: [add]\ntools: [{name: add, plan: [{return: 5}]}]\n"
        "turns: [{calls: [{name: add}]}, The answer is 5.]\n"
        f"meta: {{expect: {expect}}}\n"
    )
    result = invoke("run", "scenarios/add.yaml")
    assert result.exit_code == (0 if passes else 1), result.output


def test_an_internal_error_is_one_line_not_a_traceback(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.checking

    def broken(*args: object, **kwargs: object) -> None:
        raise AttributeError("'NoneType' object has no attribute 'trace'")

    monkeypatch.setattr(harness.checking, "check", broken)  # where `harness run` looks it up
    result = invoke("run", "scenarios/lookup.yaml")
    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: internal error: AttributeError: 'NoneType' object has no attribute 'trace' "
        "(this is a bug in the harness; please report it)"
    )


def test_an_agentic_function_in_a_file_is_answered_by_its_nested_turns(project: Path) -> None:
    from harness.scenarios._scenario import Scenario

    (project / "scenarios" / "agentic.yaml").write_text(
        "prompts: [go]\n"
        "tools:\n"
        "  - {name: summarize, python: 'myagent.tools:summarize', nested_turns: [short, {error: overloaded}]}\n"
        "turns:\n"
        "  - calls: [{name: summarize, args: {text: a}}, {name: summarize, args: {text: b}}]\n"
        "  - done\n"
        "meta: {expect: {results: [short, {contains: overloaded}], final_text: done}}\n"
    )
    scenario = Scenario.from_yaml(project / "scenarios" / "agentic.yaml")
    assert Scenario.from_yaml(scenario.to_yaml()) == scenario
    result = invoke("run", "scenarios/agentic.yaml")
    assert result.exit_code == 0, result.output


def test_a_python_tool_takes_its_name_from_the_function(project: Path) -> None:
    (project / "scenarios" / "named.yaml").write_text(
        "prompts: [go]\n"
        "tools: [{python: 'myagent.tools:lookup'}]\n"
        "turns: [{calls: [{name: lookup, args: {key: k}}]}, done]\n"
        "meta: {expect: {results: ['k:3'], final_text: done}}\n"
    )
    assert invoke("run", "scenarios/named.yaml").exit_code == 0
    (project / "scenarios" / "named.yaml").write_text("prompts: [go]\ntools: [{description: x}]\nturns: [done]\n")
    result = invoke("run", "scenarios/named.yaml")
    assert result.exit_code == 2
    assert "tool 1: name: required (or python: package.module:attribute, whose tool names itself)" in result.output


def test_call_ids_that_repeat_across_tools_and_rounds_keep_each_results_timestamp(project: Path) -> None:
    """Found by ``harness fuzz --tools``: the reference read a real tool's timestamp (how far its
    nested run moved the clock) by call id alone, so an earlier result under the same id, of
    another tool or of a call that never ran, gave it the wrong one: a false violation."""
    (project / "scenarios" / "dup.yaml").write_text(
        "prompts: [go]\n"
        "tools:\n"
        "  - {name: lookup, python: 'myagent.tools:lookup'}\n"
        "  - {name: summarize, python: 'myagent.tools:summarize', nested_turns: [short, shorter]}\n"
        "turns:\n"
        "  - calls: [{name: lookup, raw: '{', id: dup}, {name: nothere, args: {}, id: dup}]\n"
        "  - calls: [{name: summarize, args: {text: a}, id: dup}]\n"
        "  - calls: [{name: lookup, args: {key: a}, id: dup}, {name: summarize, args: {text: b}, id: dup}]\n"
        "  - done\n"
        "meta: {expect: {final_text: done}}\n"
    )
    result = invoke("run", "scenarios/dup.yaml")
    assert result.exit_code == 0, result.output


def test_no_generated_reply_of_an_agentic_functions_nested_run_cancels(project: Path) -> None:
    """Such a cancel stops the user's whole run from inside a body the reference cannot see, so
    every campaign over an ``@agentic_function`` reported it as a violation (seed 1, 100 examples)."""
    from hypothesis import HealthCheck, given, settings

    from harness.strategies import scenarios

    tools = load_tools("myagent.tools")
    seen: list[int] = []

    @settings(max_examples=150, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(scenarios(tools=tools))
    def nested_replies_never_cancel(scenario: object) -> None:
        nested = [t for tool in scenario.tools for t in tool.nested_turns]  # type: ignore[attr-defined]
        seen.append(len(nested))
        assert not any(t.cancel for t in nested)

    nested_replies_never_cancel()
    assert sum(seen) > 100  # the agentic tools got nested replies to check


def test_a_tool_that_an_agentic_functions_nested_run_calls_is_not_a_top_level_execution(project: Path) -> None:
    """Found by ``harness fuzz --tools`` on a user's project: the nested run of a real
    ``@agentic_function`` called a real tool, the ledger took that call as a top-level execution,
    and the reference (which cannot see inside a real tool) reported a false violation."""
    (project / "scenarios" / "research.yaml").write_text(
        "prompts: [go]\n"
        "tools:\n"
        "  - {name: lookup, python: 'myagent.tools:lookup'}\n"
        "  - name: research\n"
        "    python: 'myagent.tools:research'\n"
        "    nested_turns: [{calls: [{name: lookup, args: {key: k}}]}, found k]\n"
        "turns:\n"
        "  - calls: [{name: research, args: {topic: t}}]\n"
        "  - calls: [{name: lookup, args: {key: a}}]\n"
        "  - done\n"
        "meta: {expect: {results: [found k, 'a:3'], final_text: done}}\n"
    )
    result = invoke("run", "scenarios/research.yaml")
    assert result.exit_code == 0, result.output


# -- harness emulate ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [(None, "no such file"), ("turns: 5\n", "turns: expected a list")],
    ids=["missing file", "malformed scenario"],
)
def test_emulate_refuses_a_script_it_cannot_serve(tmp_path: Path, text: str | None, expected: str) -> None:
    script = tmp_path / "script.yaml"
    if text is not None:
        script.write_text(text)
    result = invoke("emulate", "--script", str(script), "--port", "0")
    assert result.exit_code == 2
    assert expected in result.output


def test_emulate_serves_a_scenario_to_unmodified_clients_of_another_process(tmp_path: Path) -> None:
    import anthropic
    import openai

    script = tmp_path / "script.yaml"
    script.write_text("turns:\n  - first answer\n  - second answer\n")
    with emulate_process(script) as base:
        chat = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0)
        reply = chat.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "first answer"
        claude = anthropic.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
        message = claude.messages.create(
            model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
        assert [block.text for block in message.content] == ["second answer"]


def test_fuzz_help_states_the_defaults_a_bare_harness_fuzz_uses(project: Path) -> None:
    # The help is what a user reads to reproduce a run: it must name the seed and budget the
    # command really uses (it once said 16 after the default seed had moved on).
    from harness.campaigns._loop_campaign import DEFAULT_EXAMPLES, DEFAULT_SEED

    shown = " ".join(shell(project, console_script(), "fuzz", "--help").stdout.split())
    assert re.search(rf"--seed .*\[default: {DEFAULT_SEED}\]", shown), shown
    assert re.search(rf"--examples .*\[default: {DEFAULT_EXAMPLES}[;\]]", shown), shown


def test_harness_run_refuses_a_cancelled_nested_reply_in_one_line(project: Path) -> None:
    # Through the console script, as a user's project meets it: the file is refused at load,
    # saying why and what to do, instead of being reported as a loop violation.
    (project / "nested_cancel.yaml").write_text(
        textwrap.dedent(
            """\
            tools:
              - name: research
                python: myagent.tools:research
                nested_turns: [{text: found it, cancel: true}]
            turns:
              - calls: [{name: research, args: {topic: cats}}]
              - text: done
            prompts: [look into cats]
            """
        )
    )
    done = shell(project, console_script(), "run", "nested_cancel.yaml")
    assert done.returncode != 0
    assert "tool 'research': nested_turns 1 cancel(s) the reply" in done.stdout + done.stderr
    assert "cancel a top-level reply instead" in done.stdout + done.stderr
    assert "could not be used" in done.stdout
