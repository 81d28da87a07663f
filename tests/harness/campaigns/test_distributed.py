"""Campaigns beyond one machine: pytest-xdist, a shared Redis example database, HypoFuzz.

Each "machine" is its own process in its own directory (its own ``.hypothesis``), so nothing is
shared but what a team would share: the checkout and, for the database tests, a real
``redis-server`` this module starts on a free loopback port. See docs/distributed-campaigns.md.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from harness.campaigns import _profiles as profiles

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[3]
PROPERTIES = ROOT / "tests" / "property" / "test_loop_properties.py"
# a representative quarter of the property suite (the main property, a variant, the cap), to keep this fast
SUBSET = [
    f"{PROPERTIES}::{name}"
    for name in (
        "test_every_run_agrees_with_the_reference_model_and_the_invariants",
        "test_runs_whose_tools_set_the_cancel_event",
        "test_runs_under_a_tight_iteration_cap",
        "test_a_model_that_never_stops_is_stopped_by_the_cap",
    )
]
_INHERITED = ("CI", "HARNESS_", "PYTEST_XDIST", "PYTEST_CURRENT_TEST", "HYPOTHESIS_")


def _environment(**extra: str) -> dict[str, str]:
    """This process's environment without what would leak the outer run's choices into a child."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED)}
    env.update(extra)
    return env


# ---------------------------------------------------------------------------------------------
# pytest-xdist: the property suite gives the same results, the plugin works in every worker
# ---------------------------------------------------------------------------------------------

# per-worker Hypothesis home (observations), so two workers never append to one file
_OBSERVER = """
import os
from hypothesis.configuration import set_hypothesis_home_dir

def pytest_configure(config):
    set_hypothesis_home_dir(os.path.join(os.getcwd(), "home", os.environ.get("PYTEST_XDIST_WORKER", "main")))
"""


def _run_property_suite(directory: Path, *extra: str) -> tuple[dict[str, str], Counter[tuple[str, str, str]]]:
    """(outcome of each test, every example tried) of the property suite run as CI runs it."""
    directory.mkdir()
    (directory / "observer.py").write_text(_OBSERVER)
    command = [
        sys.executable, "-m", "pytest", *SUBSET, "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
        "-p", "no:cacheprovider", "-p", "observer", "-q", "--junitxml", str(directory / "junit.xml"),
        "--harness-scenario-dir", str(directory / "scenarios"), *extra,
    ]  # fmt: skip
    env = _environment(
        CI="true",  # the harness_ci_profile ini option: derandomized, 50 examples
        PYTHONPATH=str(directory),
        HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY="1",
        HYPOTHESIS_EXPERIMENTAL_OBSERVABILITY_NOCOVER="1",
    )
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    outcomes = {}
    for case in ElementTree.parse(directory / "junit.xml").iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = kinds[0] if kinds else "passed"
    examples: Counter[tuple[str, str, str]] = Counter()
    for path in (directory / "home").glob("*/observed/*_testcases.jsonl"):
        for line in path.read_text().splitlines():
            seen = json.loads(line)
            examples[(seen["property"], seen["representation"], seen["status"])] += 1
    return outcomes, examples


def test_the_property_suite_gives_the_same_results_and_examples_under_xdist(tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (it is in the dev extra)")
    # -n 0: this project's conftest spreads a run without -n over the CPUs; the baseline is serial
    serial, serial_examples = _run_property_suite(tmp_path / "serial", "-n", "0")
    spread, spread_examples = _run_property_suite(tmp_path / "xdist", "-n", "2")
    assert len(serial) == len(SUBSET) and set(serial.values()) == {"passed"}, serial
    assert spread == serial
    # derandomized: every property tried exactly the same examples, whichever worker ran it
    assert len({prop for prop, _, _ in serial_examples}) == len(SUBSET)
    assert sum(serial_examples.values()) >= len(SUBSET) * 3
    assert spread_examples == serial_examples


_WORKER_TESTS = '''
import os
from pathlib import Path

import pytest
from hypothesis import settings

from harness import turn
from harness.checking._regressions import ScenarioFailure, assert_scenario
from harness.scenarios._scenario import Scenario
from openprogram import runtime

WRONG = """
prompts: [hi]
turns: [hello]
meta:
  expect: {reason: error}
"""


def test_the_ci_profile_and_the_scenario_dir_reach_the_worker(harness_scenario_dir):
    assert os.environ["PYTEST_XDIST_WORKER"].startswith("gw")
    assert settings.get_current_profile_name() == "harness-ci" and settings.default.derandomize
    assert harness_scenario_dir == Path(os.environ["HARNESS_SCENARIO_DIR"]) == Path.cwd() / "found"


def test_the_scripted_and_clock_fixtures_work_in_a_worker(scripted, trace, clock):
    scripted(turn.text("hello"))
    assert runtime.exec("hi") == "hello"
    assert len(trace.runs) == 1


def test_a_failing_test_keeps_its_trace_section(scripted, trace):
    scripted(turn.text("hello"))
    runtime.exec("hi")
    assert False, "deliberately failing"


@pytest.mark.parametrize("worker_round", range(6))
def test_every_worker_saves_the_same_failure(worker_round):
    with pytest.raises(ScenarioFailure) as failure:
        assert_scenario(Scenario.from_yaml(WRONG))
    assert failure.value.path is not None and failure.value.path.parent == Path.cwd() / "found"
'''


def test_the_harness_plugin_works_in_xdist_workers(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is not installed (it is in the dev extra)")
    for name in [k for k in os.environ if k.startswith(_INHERITED)]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CI", "true")
    pytester.makeini("[pytest]\nharness_ci_profile = harness-ci\nharness_scenario_dir = found\n")
    pytester.makepyfile(test_workers=_WORKER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-v")
    result.assert_outcomes(passed=8, failed=1)
    result.stdout.fnmatch_lines(
        [
            "harness: hypothesis profile 'harness-ci' (from harness_ci_profile ini option, CI is set), scenario dir *",
            "*[[]gw*[]] PASSED*test_the_ci_profile_and_the_scenario_dir_reach_the_worker*",
            "*- harness trace -*",  # the report section crossed from the worker to the controller
            "*deliberately failing*",
        ]
    )
    found = sorted(p.name for p in (pytester.path / "found").iterdir())
    assert len(found) == 1 and found[0].startswith("expectation-"), found  # six saves, one whole file
    assert "# Violated: expectation" in (pytester.path / "found" / found[0]).read_text()


_SAVER = """
import sys
from harness.checking._check import Problem
from harness.checking._regressions import save_regression
from harness.scenarios._scenario import Scenario

scenario = Scenario.from_yaml(sys.argv[2])
for _ in range(int(sys.argv[3])):
    save_regression(scenario, Problem("reference", "a long reply"), sys.argv[1])
"""


def test_concurrent_saves_of_one_regression_never_show_a_partial_file(tmp_path: Path) -> None:
    from harness.checking._check import Problem
    from harness.checking._regressions import regression_text
    from harness.scenarios._scenario import Scenario

    source = tmp_path / "big.yaml"
    source.write_text(f"prompts: [hi]\nturns: [{'x' * 20_000}]\n")
    expected = regression_text(Scenario.from_yaml(source), Problem("reference", "a long reply"))
    folder = tmp_path / "found"
    savers = [
        subprocess.Popen([sys.executable, "-c", _SAVER, str(folder), str(source), "40"], env=_environment())
        for _ in range(2)
    ]
    reads = 0
    try:
        while any(s.poll() is None for s in savers):
            for path in folder.glob("*.yaml") if folder.is_dir() else ():
                assert path.read_text(encoding="utf-8") == expected, "a reader saw a partly written regression"
                reads += 1
    finally:
        for saver in savers:
            saver.wait(timeout=120)
    assert [s.returncode for s in savers] == [0, 0]
    assert reads > 0
    assert [p.name for p in folder.iterdir() if p.name.endswith(".yaml")] == [p.name for p in folder.iterdir()]
    assert len(list(folder.iterdir())) == 1  # one file, no temporary left behind


# ---------------------------------------------------------------------------------------------
# The example database: URLs, then a real Redis shared by two "machines"
# ---------------------------------------------------------------------------------------------


def test_example_database_urls_build_hypothesis_databases(tmp_path: Path) -> None:
    from hypothesis.database import DirectoryBasedExampleDatabase, MultiplexedDatabase, ReadOnlyDatabase

    assert profiles.example_database("none") is None
    shared = profiles.example_database(str(tmp_path / "shared"))
    assert shared == DirectoryBasedExampleDatabase(str(tmp_path / "shared"))
    assert profiles.example_database(f"dir:{tmp_path / 'shared'}") == shared
    ci = profiles.example_database(str(tmp_path / "shared"), read_only=True, local=tmp_path / "local")
    assert isinstance(ci, MultiplexedDatabase)
    ci.save(b"key", b"found in CI")
    assert list(ci.fetch(b"key")) == [b"found in CI"]
    assert list(shared.fetch(b"key")) == []  # the shared database was only read
    assert list(DirectoryBasedExampleDatabase(tmp_path / "local").fetch(b"key")) == [b"found in CI"]
    assert isinstance(profiles.example_database(str(tmp_path), read_only=True, local=None), ReadOnlyDatabase)
    with pytest.raises(profiles.ExampleDatabaseError, match="unknown scheme; use redis://"):
        profiles.example_database("s3://bucket/db")


def test_an_unreachable_redis_is_one_usage_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("redis", reason="the redis package is not installed (it is in the distributed extra)")
    monkeypatch.setenv(profiles.DB_ENV_VAR, f"redis://127.0.0.1:{_free_port()}/0")
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*HARNESS_EXAMPLE_DB: example database 'redis://127.0.0.1:*': cannot reach*"])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real redis-server of our own on a free loopback port, for this test only."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("the redis-server binary is not on PATH (apt-get install redis-server; .ci/run installs it)")
    redis = pytest.importorskip("redis", reason="the redis package is not installed (it is in the dev extra)")
    for _ in range(5):
        port = _free_port()
        server = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)
        deadline = time.monotonic() + 10
        while server.poll() is None and time.monotonic() < deadline:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        if server.poll() is None:
            break
    else:  # pragma: no cover - five ports taken between probe and bind
        pytest.fail("redis-server did not start on a free port")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        client.close()
        server.terminate()
        server.wait(timeout=10)


_BUG = """
import os
from hypothesis import given, strategies as st

@given(st.integers(min_value=0))
def test_a_bug_one_machine_found(n):
    with open("tried.log", "a") as log:
        log.write(f"{n}\\n")
    assert n < 1000
"""


def _machine(root: Path, name: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[int]]:
    """A fresh machine: its own directory and .hypothesis, the same test file; one pytest run."""
    home = root / name
    home.mkdir()
    (home / "test_bug.py").write_text(_BUG)
    (home / "pytest.ini").write_text("[pytest]\nharness_ci_profile = harness-ci\n")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_bug.py"]
    done = subprocess.run(command, cwd=home, env=_environment(**env), capture_output=True, text=True, timeout=300)
    return done, [int(n) for n in (home / "tried.log").read_text().split()]


def _contents(url: str) -> dict[bytes, set[bytes]]:
    import redis

    client = redis.Redis.from_url(url)
    try:
        return {key: set(client.smembers(key)) for key in client.keys("*")}
    finally:
        client.close()


def test_a_failure_found_on_one_machine_is_the_first_example_on_the_next(redis_url: str, tmp_path: Path) -> None:
    found, tried = _machine(tmp_path, "a", HARNESS_EXAMPLE_DB=redis_url)
    assert found.returncode == 1 and "n=1000" in found.stdout, found.stdout + found.stderr
    assert "example database redis://127.0.0.1:" in found.stdout  # the report header says where
    assert len(tried) > 1 and tried[0] != 1000  # machine A had to search for it
    shared = _contents(redis_url)
    assert any(key.startswith(b"hypothesis-example:") for key in shared), shared

    replayed, tried = _machine(tmp_path, "b", HARNESS_EXAMPLE_DB=redis_url)
    assert replayed.returncode == 1 and "n=1000" in replayed.stdout, replayed.stdout + replayed.stderr
    assert tried[0] == 1000  # the saved failure is the very first example machine B tries

    # CI: derandomized, read-only; the team's failure comes first, and the database is untouched
    before = _contents(redis_url)
    in_ci, tried = _machine(tmp_path, "ci", HARNESS_EXAMPLE_DB=redis_url, HARNESS_EXAMPLE_DB_READONLY="1", CI="1")
    assert in_ci.returncode == 1 and "n=1000" in in_ci.stdout, in_ci.stdout + in_ci.stderr
    assert "hypothesis profile 'harness-ci'" in in_ci.stdout and "(read-only)" in in_ci.stdout
    assert tried[0] == 1000
    assert _contents(redis_url) == before
    # without the shared database the same derandomized run starts from its own first example
    alone, tried = _machine(tmp_path, "alone", CI="1")
    assert tried[0] != 1000, alone.stdout


def test_harness_fuzz_replays_the_shared_database_first(tmp_path: Path) -> None:
    from harness.campaigns._loop_campaign import run_campaign
    from openprogram.agent.agent_loop import agent_loop

    def wrong_loop(prompts: Any, context: Any, config: Any, cancel_event: Any = None) -> Any:
        # a planted bug: with three or more tools the run starts with a prompt nobody sent
        extra = ["an extra prompt"] if len(context.tools) >= 3 else []
        return agent_loop([*prompts, *extra], context, config, cancel_event)

    database = profiles.example_database(str(tmp_path / "shared"))
    first = run_campaign(300, seed=5, loop=wrong_loop, save_dir=tmp_path / "found", database=database)
    assert first.failure is not None and first.stats.scenarios > 0, "the first campaign had to search"
    again = run_campaign(300, seed=6, loop=wrong_loop, save_dir=tmp_path / "found", database=database)
    assert again.failure is not None and again.stats.scenarios == 0  # the first scenario it ran failed
    assert len(again.failure.scenario.tools) >= 3


def test_harness_fuzz_refuses_an_unusable_database_url() -> None:
    from harness.cli import main

    result = CliRunner().invoke(main, ["fuzz", "--examples", "1", "--database", "s3://bucket"])
    assert result.exit_code == 2
    assert "--database: example database 's3://bucket': unknown scheme" in result.output


# ---------------------------------------------------------------------------------------------
# HypoFuzz runs the property suite unchanged
# ---------------------------------------------------------------------------------------------


def test_hypofuzz_fuzzes_the_property_suite_unchanged(redis_url: str, tmp_path: Path) -> None:
    command = shutil.which("hypothesis")
    if importlib.util.find_spec("hypofuzz") is None or command is None:
        pytest.skip('hypofuzz is not installed (pip install -e ".[fuzzing]" to run this smoke test)')
    suite = str(ROOT / "tests" / "property")
    # -p no:recording, as documented: pytest-recording's autouse fixture reads Node.fspath, which
    # pytest adds only for the length of pytest.main; HypoFuzz collects inside pytest.main and sets
    # fixtures up after it, so with the plugin loaded every property fails its fixture setup
    fuzz = subprocess.Popen(
        [command, "fuzz", "--no-dashboard", "-n", "1", "--", suite, "-p", "no:cacheprovider", "-p", "no:recording"],
        cwd=tmp_path,
        # the shared database: HypoFuzz uses the profile's, and Redis lets the test list what it wrote
        env=_environment(HARNESS_SCENARIO_DIR=str(tmp_path / "found"), HARNESS_EXAMPLE_DB=redis_url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its worker process gets the interrupt with it
    )

    def fuzzed() -> set[bytes]:  # the tests HypoFuzz has reported fuzzing progress for
        return {key for key in _contents(redis_url) if key.endswith(b".hypofuzz.reports")}

    deadline = time.monotonic() + 300
    while fuzz.poll() is None and time.monotonic() < deadline and not fuzzed():
        time.sleep(1)
    time.sleep(3)  # a few seconds of fuzzing
    if fuzz.poll() is None:
        os.killpg(fuzz.pid, signal.SIGINT)  # it fuzzes until stopped, like Ctrl-C
    out, err = fuzz.communicate(timeout=60)
    started = re.search(r"using 1 process to fuzz (\d+) tests(.*)", out)
    assert started and int(started.group(1)) >= 9 and "skipped" not in started.group(2), out + err  # all, unchanged
    assert fuzzed(), "HypoFuzz reported no fuzzing of any property:\n" + out + err
    assert "Found a failing input" not in out + err, out + err  # a fixture-setup failure counts as one
    assert not (tmp_path / "found").exists(), "HypoFuzz found a failure:\n" + out + err
    # click's exit on an interrupt; the worker process, interrupted too, may print its traceback after it
    assert fuzz.returncode == 1 and "Aborted!" in err, err
    assert err.rstrip().endswith(("Aborted!", "KeyboardInterrupt")), err


def test_hypofuzz_with_pytest_recording_loaded_stops_at_once_saying_how(tmp_path: Path) -> None:
    command = shutil.which("hypothesis")
    if importlib.util.find_spec("hypofuzz") is None or command is None:
        pytest.skip('hypofuzz is not installed (pip install -e ".[fuzzing]" to run this smoke test)')
    suite = str(ROOT / "tests" / "property")
    done = subprocess.run(
        [command, "fuzz", "--no-dashboard", "-n", "1", "--", suite, "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=_environment(HARNESS_SCENARIO_DIR=str(tmp_path / "found")),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error, before any fuzzing
    assert "HypoFuzz cannot set up pytest-recording's fixtures" in done.stdout + done.stderr
    assert "-p no:recording" in done.stdout + done.stderr
