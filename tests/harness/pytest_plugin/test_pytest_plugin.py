"""The pytest plugin, as a user's project sees it: test files run in a fresh directory by pytester.

The plugin is not imported by these test files: it arrives through the package's ``pytest11``
entry point, exactly as in a project that only ran ``pip install openprogram``. One test runs
pytest in a subprocess to prove that; the rest run in-process for speed.
"""

from __future__ import annotations

import ast
import os
import re
import textwrap
from pathlib import Path

import pytest

from harness.clock import DEFAULT_EPOCH_MS, DeterministicClock

pytest_plugins = ["pytester"]

AGENT = '''
from openprogram import function, runtime
from harness import turn


@function
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def ask(question, **kwargs):
    return runtime.exec(question, tools=[add], **kwargs)
'''


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A user's project: an agent module and nothing else (no conftest, no plugin import)."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("HARNESS_SCENARIO_DIR", raising=False)
    pytester.makepyfile(agent=AGENT)
    pytester.syspathinsert()
    return pytester


def write_test(pytester: pytest.Pytester, source: str, name: str = "test_user") -> None:
    pytester.makepyfile(**{name: textwrap.dedent(source)})


# ---------------------------------------------------------------------------------------------
# scripted
# ---------------------------------------------------------------------------------------------


def test_plugin_loads_from_the_entry_point_in_a_fresh_interpreter(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from agent import ask, turn

        def test_agent_adds(scripted, trace):
            provider = scripted(turn.tool_call("add", a=2, b=3), turn.text("5"))
            assert ask("what is 2+3?") == "5"
            assert trace.last.tool_results[0].text == "5"
            assert len(provider.requests) == 2
        """,
    )
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_plugin_works_with_pytest_recording_disabled(project: pytest.Pytester) -> None:
    # the HypoFuzz command needs -p no:recording; the harness's hook into pytest-recording must
    # then lie idle rather than stop pytest with "unknown hook"
    write_test(
        project,
        """
        from agent import ask, turn

        def test_agent_adds(scripted):
            scripted(turn.tool_call("add", a=2, b=3), turn.text("5"))
            assert ask("what is 2+3?") == "5"
        """,
    )
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:recording")
    result.assert_outcomes(passed=1)


def test_under_hypofuzz_pytest_recording_is_refused_with_the_fix(project: pytest.Pytester) -> None:
    class Collector:  # stands for what HypoFuzz hands pytest.main to collect its targets
        pass

    Collector.__module__ = "hypofuzz.collection"
    write_test(project, "def test_nothing():\n    pass\n")
    refused = project.runpytest_inprocess("-p", "no:cacheprovider", plugins=[Collector()])
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*HypoFuzz cannot set up pytest-recording's fixtures*-p no:recording"])
    fixed = project.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:recording", plugins=[Collector()])
    fixed.assert_outcomes(passed=1)
    project.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)  # without HypoFuzz: as ever


def test_scripted_binds_the_provider_and_passes_when_the_script_is_used_up(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from agent import ask, turn
        from openprogram import runtime

        def test_agent(scripted):
            provider = scripted(turn.tool_call("add", a=1, b=2), turn.text("3"))
            assert runtime.current_provider() is provider
            assert ask("1+2?") == "3"
            assert scripted.provider is provider
            assert [len(r.messages) for r in scripted.requests] == [1, 3]

        def test_binding_does_not_leak_between_tests():
            assert runtime.current_provider() is None
        """,
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_scripted_fails_at_teardown_naming_the_unconsumed_turns(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from agent import ask, turn

        def test_agent_stops_early(scripted):
            scripted(turn.text("3"), turn.tool_call("add", a=9, b=9), turn.text("never said"))
            assert ask("1+2?") == "3"
        """,
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_agent_stops_early*",
            "*scripted provider: 2 of 3 scripted turn(s) were never requested (the agent made 1 request(s)):",
            '*turn 2: call add({"a": 9, "b": 9})',
            "*turn 3: text 'never said'",
            "*@pytest.mark.harness_incomplete_ok*",
        ]
    )


def test_scripted_reports_requests_beyond_the_script(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from agent import ask, turn

        def test_agent_asks_too_often(scripted):
            scripted(turn.tool_call("add", a=1, b=1))
            try:
                ask("1+1?")
            except Exception:
                pass
        """,
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ScriptedProvider: request 2 is beyond the script (1 turn(s) scripted)*"])


def test_incomplete_scripts_can_be_allowed_by_marker_or_attribute(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import pytest
        from agent import ask, turn

        @pytest.mark.harness_incomplete_ok
        def test_marker(scripted):
            scripted(turn.text("3"), turn.text("unused"))
            assert ask("1+2?") == "3"

        def test_attribute(scripted):
            scripted.incomplete_ok = True
            scripted(turn.text("3"), turn.text("unused"))
            assert ask("1+2?") == "3"
        """,
    )
    project.runpytest("-p", "no:cacheprovider", "--strict-markers").assert_outcomes(passed=2)


def test_a_failing_test_is_not_also_blamed_for_its_unused_script(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from agent import ask, turn

        def test_wrong_answer(scripted):
            scripted(turn.text("4"), turn.text("unused"))
            assert ask("1+2?") == "3"
        """,
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert "never requested" not in result.stdout.str()


def test_scripted_works_in_async_tests(project: pytest.Pytester) -> None:
    pytest.importorskip("pytest_asyncio")
    write_test(
        project,
        """
        import pytest
        from agent import add, turn
        from openprogram import runtime

        @pytest.mark.asyncio
        async def test_async_agent(scripted, trace):
            scripted(turn.tool_call("add", a=4, b=4), turn.text("8"))
            assert await runtime.aexec("4+4?", tools=[add]) == "8"
            assert trace.last.reason == "stop"
            assert len(trace.last.requests) == 2
            trace.check()
        """,
    )
    project.runpytest("-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning").assert_outcomes(passed=1)


# ---------------------------------------------------------------------------------------------
# trace
# ---------------------------------------------------------------------------------------------


def test_trace_collects_every_run_with_nested_runs_inline(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from harness import turn
        from openprogram import agentic_function, function, runtime

        @function
        def add(a: int, b: int) -> int:
            "Add two integers."
            return a + b

        @agentic_function
        def expert(question: str) -> str:
            "Ask the arithmetic expert."
            return runtime.exec(question)

        def test_runs(scripted, trace):
            scripted(
                turn.tool_call("expert", question="2+2?"),   # outer run
                turn.tool_call("add", a=2, b=2),             # nested run, inside the expert tool
                turn.text("4"),                              # nested run answers
                turn.text("the expert says 4"),              # outer run answers
                turn.text("second run"),                     # a second top-level run
            )
            assert runtime.exec("ask the expert", tools=[expert, add]) == "the expert says 4"
            assert runtime.exec("again", tools=[]) == "second run"

            assert len(trace) == 2
            first, second = trace.runs
            assert first.event_types.count("agent_start") == 2      # the nested run is inline
            assert len(first.requests) == 4 and len(second.requests) == 1
            assert first.final_text == "the expert says 4"
            assert trace.last.final_text == "second run"
            assert trace.events[0].type == "agent_start" and len(trace.events) == len(first.events) + len(second.events)
            assert len(trace.requests) == 5
            trace.check()

            text = str(trace)
            assert "=== run 1 of 2: reason=stop, 4 request(s) ===" in text
            assert "  agent_start (nested run)" in text
            assert "[request 1] assistant [toolUse]: call expert#call_1" in text
        """,
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_trace_watches_a_provider_passed_to_the_loop_directly(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import asyncio
        from harness import ScriptedProvider, turn
        from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop

        def test_direct_loop(trace, clock):
            provider = trace.watch(ScriptedProvider(turn.text("hi")))

            async def main():
                stream = agent_loop(["hello"], AgentContext(), AgentLoopConfig(provider=provider, clock=clock))
                return await stream.result()

            messages = asyncio.run(main())
            assert [m.timestamp for m in messages] == [clock.start, clock.start + 1]
            assert trace.last.requests == list(provider.requests)
            trace.check()
        """,
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_failing_test_shows_the_conversation(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from agent import ask, turn

        def test_wrong(scripted, trace):
            scripted(turn.tool_call("add", a=2, b=2), turn.text("five"))
            assert ask("2+2?") == "4"
        """,
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- harness trace -*",
            "=== run 1 of 1: reason=stop, 2 request(s) ===",
            "agent_start",
            "-- turn 1 --",
            "  user: 2+2?",
            '  [request 1] assistant [toolUse]: call add#call_1 {"a": 2, "b": 2}',
            "  tool add#call_1 -> 4",
            "-- turn 2 --",
            "  [request 2] assistant [stop]: five",
            "agent_end reason=stop (4 new messages)",
        ]
    )


def test_the_conversation_is_shown_with_scripted_alone_but_not_for_passing_tests(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from agent import ask, turn

        def test_fails(scripted):
            scripted(turn.text("no"))
            assert ask("2+2?") == "4"

        def test_passes(scripted):
            scripted(turn.text("4"))
            assert ask("2+2?") == "4"
        """,
    )
    result = project.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(failed=1, passed=1)
    assert result.stdout.str().count("harness trace") == 1
    result.stdout.fnmatch_lines(["  [request 1] assistant [stop]: no"])  # an exact line


# ---------------------------------------------------------------------------------------------
# clock and frozen_time
# ---------------------------------------------------------------------------------------------


def test_deterministic_clock() -> None:
    clock = DeterministicClock()
    assert [clock(), clock(), clock()] == [DEFAULT_EPOCH_MS, DEFAULT_EPOCH_MS + 1, DEFAULT_EPOCH_MS + 2]
    assert clock.advance(1_000) == DEFAULT_EPOCH_MS + 1_003 == clock.now
    assert clock() == DEFAULT_EPOCH_MS + 1_003 and clock.calls == 4
    clock.reset()
    assert clock() == DEFAULT_EPOCH_MS
    stepped = DeterministicClock(start=0, step=10)
    assert [stepped(), stepped()] == [0, 10]
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        DeterministicClock(step=-1)


def test_clock_fixture_stamps_every_message(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import pytest
        from agent import ask, turn

        def test_clock(scripted, trace, clock):
            scripted(turn.tool_call("add", a=1, b=1), turn.text("2"))
            assert ask("1+1?", clock=clock) == "2"
            stamps = [m.timestamp for m in trace.last.new_messages]
            assert stamps == list(range(1_704_067_200_000, 1_704_067_200_000 + 4))

        @pytest.mark.harness_clock(start=0, step=1000)
        def test_clock_marker(clock):
            assert [clock(), clock()] == [0, 1000]
        """,
    )
    project.runpytest("-p", "no:cacheprovider", "--strict-markers").assert_outcomes(passed=2)


def test_frozen_time_freezes_the_wall_clock(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import datetime, time
        import pytest

        def helper():
            return time.time()

        def test_frozen(frozen_time):
            assert datetime.datetime.now(datetime.timezone.utc).isoformat() == "2024-01-01T00:00:00+00:00"
            assert time.time() == helper() == 1_704_067_200.0
            frozen_time.tick(60)
            assert time.time() == 1_704_067_260.0

        @pytest.mark.harness_frozen_time("2030-05-01T12:00:00+00:00")
        def test_marker(frozen_time):
            assert datetime.datetime.now(datetime.timezone.utc).year == 2030

        def test_asyncio_still_runs(frozen_time):
            import asyncio
            asyncio.run(asyncio.sleep(0.01))
        """,
    )
    project.runpytest("-p", "no:cacheprovider", "--strict-markers").assert_outcomes(passed=3)


def test_frozen_time_works_inside_hypothesis_given_tests(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import datetime, time
        from hypothesis import given, settings, strategies as st

        @given(st.integers(min_value=0, max_value=10))
        def test_ticking_does_not_trip_the_deadline(frozen_time, seconds):
            # a frozen clock that jumps would look like a slow example to Hypothesis' deadline
            before = time.time()
            frozen_time.tick(seconds + 1)
            assert time.time() - before == seconds + 1
            assert time.perf_counter() >= 0

        @settings(max_examples=20)
        @given(st.text())
        def test_code_under_test_sees_frozen_time(frozen_time, text):
            assert datetime.datetime.now().year == 2024 or datetime.datetime.now() > datetime.datetime(2024, 1, 1)
            assert int(time.time()) >= 1_704_067_200

        @given(st.integers())
        def test_direct_reads_in_the_test_body_are_frozen(frozen_time, n):
            frozen_time.move_to("2024-01-01T00:00:00+00:00")
            assert time.time() == 1_704_067_200.0
        """,
    )
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    assert "DeadlineExceeded" not in result.stdout.str() and "FailedHealthCheck" not in result.stdout.str()


# ---------------------------------------------------------------------------------------------
# Hypothesis profiles, scenario dir, markers
# ---------------------------------------------------------------------------------------------

PROFILE_PROBE = """
from hypothesis import settings

def test_profile():
    current = settings.default
    print("PROFILE", settings.get_current_profile_name(), current.max_examples, current.derandomize,
          current.deadline, current.database, current.print_blob)
"""


def test_harness_profile_option_loads_the_ci_profile(project: pytest.Pytester) -> None:
    write_test(project, PROFILE_PROBE)
    result = project.runpytest("-p", "no:cacheprovider", "-s", "--harness-profile", "harness-ci")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "harness: hypothesis profile 'harness-ci' (from --harness-profile)",
            "*PROFILE harness-ci 50 True None None True",
        ]
    )


def test_harness_profile_option_loads_the_deep_profile(project: pytest.Pytester) -> None:
    write_test(project, PROFILE_PROBE)
    result = project.runpytest("-p", "no:cacheprovider", "-s", "--harness-profile=harness-deep")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*PROFILE harness-deep 5000 False None *"])


REPO = Path(__file__).resolve().parents[3]

EXAMPLE_COUNTER = """
from hypothesis import given, settings, strategies as st

calls = []

@given(st.integers())
def test_counts_its_examples(n):
    calls.append(n)

def test_report():
    current = settings.default
    print("EXAMPLES", len(calls), "PROFILE", settings.get_current_profile_name(), current.max_examples,
          current.derandomize)
"""


def test_ci_alone_leaves_a_users_hypothesis_tests_alone(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a fresh interpreter, as on a user's CI machine: Hypothesis chooses its own profile for CI,
    # and the plugin does not replace it with the harness's 50 examples
    monkeypatch.setenv("CI", "true")
    write_test(project, EXAMPLE_COUNTER)
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*EXAMPLES 100 PROFILE ci 100 True"])
    assert "harness:" not in result.stdout.str()


def test_a_users_own_profile_is_respected_with_ci_set(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    project.makeconftest(
        """
        from hypothesis import settings

        settings.register_profile("mine", max_examples=7, derandomize=False)
        settings.load_profile("mine")
        """
    )
    write_test(project, EXAMPLE_COUNTER)
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*EXAMPLES 7 PROFILE mine 7 False"])


def _this_projects_ini() -> str:
    """This repository's own ``[tool.pytest.ini_options]`` section, verbatim."""
    text = (REPO / "pyproject.toml").read_text()
    start = text.index("[tool.pytest.ini_options]")
    end = text.find("\n[", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_this_projects_suite_runs_harness_ci_under_ci(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makefile(".toml", pyproject=_this_projects_ini())
    write_test(project, PROFILE_PROBE)
    monkeypatch.setenv("CI", "true")
    result = project.runpytest("-s", "test_user.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["harness: hypothesis profile 'harness-ci' (from harness_ci_profile ini option, CI is set)"]
    )
    result.stdout.fnmatch_lines(["*PROFILE harness-ci 50 True None None True"])
    # an explicit Hypothesis profile is respected
    result = project.runpytest("-s", "--hypothesis-profile", "default", "test_user.py")
    result.stdout.fnmatch_lines(["*PROFILE default 100 False *"])
    # and without CI the ini option does nothing
    monkeypatch.delenv("CI")
    assert "harness:" not in project.runpytest("-s", "test_user.py").stdout.str()


def test_the_plugin_imports_nothing_heavy_for_a_session_without_its_fixtures(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")  # the CI variable alone imports nothing either
    write_test(
        project,
        """
        import sys

        def test_plain(request):
            assert request.config.pluginmanager.hasplugin("harness")
            heavy = ("openprogram", "harness.script", "hypothesis", "jsonschema", "pydantic")
            print("LOADED", sorted(m for m in heavy if m in sys.modules))
        """,
    )
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*LOADED []"])


def test_without_ci_or_option_the_profile_is_left_alone(project: pytest.Pytester) -> None:
    from hypothesis import settings

    # in-process, "left alone" means: whatever this (outer) session had, e.g. harness-ci under CI
    expected = f"*PROFILE {settings.get_current_profile_name()} {settings.default.max_examples} *"
    write_test(project, PROFILE_PROBE)
    result = project.runpytest("-p", "no:cacheprovider", "-s")
    result.stdout.fnmatch_lines([expected])
    assert "harness:" not in result.stdout.str()


def test_the_profile_can_come_from_the_ini_file(project: pytest.Pytester) -> None:
    write_test(project, PROFILE_PROBE)
    project.makeini("[pytest]\nharness_profile = harness-deep\n")
    project.runpytest("-p", "no:cacheprovider", "-s").stdout.fnmatch_lines(["*PROFILE harness-deep 5000 *"])


def test_an_unknown_profile_is_a_usage_error(project: pytest.Pytester) -> None:
    from hypothesis import settings

    before = settings.get_current_profile_name()
    write_test(project, PROFILE_PROBE)
    result = project.runpytest("-p", "no:cacheprovider", "--harness-profile", "nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-profile: no Hypothesis profile named 'nope'*"])
    assert settings.get_current_profile_name() == before  # the refused name is not left as the current one


def test_the_profile_is_restored_after_the_session(project: pytest.Pytester) -> None:
    from hypothesis import settings

    before = settings.get_current_profile_name()
    write_test(project, PROFILE_PROBE)
    project.runpytest("-p", "no:cacheprovider", "--harness-profile", "harness-deep").assert_outcomes(passed=1)
    assert settings.get_current_profile_name() == before


def test_scenario_dir_option_sets_the_fixture_and_the_environment(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        import os

        def test_dir(harness_scenario_dir):
            assert harness_scenario_dir.is_absolute()
            assert harness_scenario_dir.name == "regressions"
            assert os.environ["HARNESS_SCENARIO_DIR"] == str(harness_scenario_dir)
        """,
    )
    result = project.runpytest("-p", "no:cacheprovider", "--harness-scenario-dir", "regressions")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["harness: scenario dir */regressions"])
    assert "HARNESS_SCENARIO_DIR" not in os.environ  # restored after the session


def test_scenario_dir_can_come_from_the_ini_file(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nharness_scenario_dir = saved/scenarios\n")
    write_test(
        project,
        """
        import os

        def test_dir(harness_scenario_dir, pytestconfig):
            assert harness_scenario_dir == pytestconfig.rootpath / "saved" / "scenarios"
            assert os.environ["HARNESS_SCENARIO_DIR"] == str(harness_scenario_dir)
        """,
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_scenario_dir_defaults_to_cassettes_scenarios(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        def test_dir(harness_scenario_dir, pytestconfig):
            assert harness_scenario_dir == pytestconfig.rootpath / "cassettes" / "scenarios"
        """,
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_markers_and_options_are_registered(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:cacheprovider", "--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.harness_incomplete_ok:*",
            "@pytest.mark.harness_frozen_time(when):*",
            "@pytest.mark.harness_clock*",
        ]
    )
    result = project.runpytest("-p", "no:cacheprovider", "--help")
    result.stdout.fnmatch_lines(["*--harness-profile=NAME*", "*--harness-scenario-dir=DIR*"])


def test_the_examples_in_the_docs(project: pytest.Pytester) -> None:
    write_test(
        project,
        """
        from agent import ask, turn
        from openprogram import runtime

        def test_the_agent_recovers_from_a_bad_call(scripted, trace):
            scripted(turn.tool_call("add", a="two", b=3), turn.tool_call("add", a=2, b=3), turn.text("5"))
            assert ask("2 + 3?") == "5"
            run = trace.last
            assert run.reason == "stop"
            assert run.tool_results[0].is_error
            assert len(run.requests) == 3
            trace.check()

        def test_the_tool_result_reaches_the_model(scripted):
            provider = scripted(turn.tool_call("add", a=2, b=3), turn.text("5"))
            ask("2 + 3?")
            assert provider.requests[1].messages[-1].text == "5"

        def test_timestamps_are_reproducible(scripted, trace, clock):
            scripted(turn.text("hi"))
            runtime.exec("hello", tools=[], clock=clock)
            assert [m.timestamp for m in trace.last.new_messages] == [1704067200000, 1704067200001]
            clock.advance(60_000)
            assert clock.now == 1704067260002
        """,
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_the_snapshot_example_in_the_docs(project: pytest.Pytester) -> None:
    # the value the guide shows inside inline-snapshot's snapshot(...) is what the run gives
    guide = (REPO / "docs" / "pytest-plugin.md").read_text()
    shown = re.search(r"assert trace\.last\.snapshot\(\) == snapshot\(\n(.*?)\n    \)\n", guide, re.DOTALL)
    assert shown is not None, "the inline-snapshot example is missing from docs/pytest-plugin.md"
    expected = ast.literal_eval(textwrap.dedent(shown.group(1)))
    write_test(
        project,
        f"""
        import json
        from agent import ask, turn

        def test_the_conversation(scripted, trace, clock):
            scripted(turn.tool_call("add", a=2, b=3), turn.text("5"))
            ask("2 + 3?", clock=clock)
            assert trace.last.snapshot() == {expected!r}
            assert json.loads(trace.last.snapshot_json()) == trace.last.snapshot()
        """,
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


# ---------------------------------------------------------------------------------------------
# What the plugin module itself holds
# ---------------------------------------------------------------------------------------------


def test_loading_the_plugin_imports_neither_the_trace_layer_nor_the_invariants() -> None:
    import subprocess
    import sys

    code = (
        "import sys, harness.pytest_plugin as plugin\n"
        "heavy = ('harness.trace._trace', 'harness.trace._trace_recorder', 'harness.oracle._run_invariants',\n"
        "         'harness.oracle._reference')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_harness_package_loads_its_names_on_first_use() -> None:
    import subprocess
    import sys

    code = (
        "import sys, harness\n"
        "print('harness.script' in sys.modules, 'openprogram' in sys.modules)\n"
        "from harness import ScriptedProvider, turn\n"
        "from harness.script import ScriptedProvider as direct\n"
        "assert ScriptedProvider is direct and harness.turn is turn\n"
        "assert set(harness.__all__) <= set(dir(harness))\n"
        "try:\n"
        "    harness.no_such_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["False False", "module 'harness' has no attribute 'no_such_name'"]


def test_the_plugin_keeps_its_documented_names() -> None:
    from datetime import UTC, datetime

    import harness.pytest_plugin as plugin

    for name in plugin.__all__:
        assert getattr(plugin, name) is not None
    import harness.clock

    assert harness.clock.FROZEN_AT == "2024-01-01T00:00:00+00:00"
    assert datetime.fromisoformat(harness.clock.FROZEN_AT) == datetime.fromtimestamp(DEFAULT_EPOCH_MS / 1000, UTC)
    assert plugin.CI_PROFILE == "harness-ci" and plugin.DEEP_PROFILE == "harness-deep"


def test_a_collector_without_a_checker_says_so() -> None:
    from harness.trace._trace_recorder import RunCollector

    collector = RunCollector()
    with pytest.raises(RuntimeError, match="no checker given"):
        collector.check()
    assert str(collector) == "(no agent runs observed)" and len(collector) == 0
    with pytest.raises(LookupError, match="no run was observed"):
        _ = collector.last


def test_the_profiles_register_on_demand() -> None:
    from hypothesis import settings

    from harness.campaigns import _profiles as profiles

    profiles.register()
    profiles.register()  # again is harmless
    ci, deep = settings.get_profile(profiles.CI_PROFILE), settings.get_profile(profiles.DEEP_PROFILE)
    assert (ci.max_examples, ci.derandomize, ci.deadline, ci.database) == (50, True, None, None)
    assert (deep.max_examples, deep.deadline) == (5_000, None)
