"""The plugin in someone else's test suite: a project with vcrpy cassettes, pytest-recording's marker
and its own filters, which never asked for the harness's record-replay.

Installed, the plugin must leave every outcome of such a project as pytest-recording alone gives it;
the project gets the harness's stricter matching, scrubbing and swallowed-mismatch failures by
asking, with one ini option (``harness_vcr = strict``). The cases are the ones the plugin changed
in real projects: a cassette whose request bodies differ from what the code now sends (a plain
``vcr`` test matches on vcrpy's default ``match_on``, which ignores bodies), a test that expects
vcrpy's refusal with ``pytest.raises``, and a ``before_record_request`` handed an object without a
``uri`` (pytest-recording's own suite does it).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.support import run_in_process

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[3]

CASSETTE = """\
interactions:
- request:
    body: '{"model": "m", "max_tokens": 8192}'
    headers:
      Content-Type: [application/json]
    method: POST
    uri: http://api.example.test/v1/messages
  response:
    body: {string: '{"text": "recorded"}'}
    headers:
      Content-Type: [application/json]
    status: {code: 200, message: OK}
version: 1
"""

PROJECT = """
import json, urllib.request
import pytest
import vcr.errors


def post(path, body):
    request = urllib.request.Request(
        "http://api.example.test" + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as reply:
        return json.loads(reply.read())


@pytest.mark.vcr
def test_the_client_sends_more_tokens_than_recorded():
    assert post("/v1/messages", {"model": "m", "max_tokens": 64000}) == {"text": "recorded"}


@pytest.mark.vcr
def test_an_unrecorded_request_is_refused():
    with pytest.raises(vcr.errors.CannotOverwriteExistingCassetteException):
        post("/v1/other", {})


@pytest.mark.vcr(filter_headers=[])
def test_the_record_hook_takes_any_request(vcr, request):
    bare = type("Request", (), {"headers": {"authorization": "something"}})  # no uri, no body, no method
    kept = vcr._before_record_request(bare)
    strict = request.config.getini("harness_vcr") == "strict"
    assert kept.headers == ({} if strict else {"authorization": "something"})
"""


@pytest.fixture
def peer(pytester: pytest.Pytester) -> pytest.Pytester:
    """The project: three plain vcr tests and the cassettes they replay (the record mode is none)."""
    pytester.makepyfile(test_client=PROJECT)
    for name in ("test_the_client_sends_more_tokens_than_recorded", "test_an_unrecorded_request_is_refused"):
        path = pytester.path / "cassettes" / "test_client" / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CASSETTE, encoding="utf-8")
    return pytester


def test_a_project_that_never_asked_keeps_every_outcome_pytest_recording_gives(peer: pytest.Pytester) -> None:
    # vcrpy's match_on ignores the body; the test's own pytest.raises gets vcrpy's refusal; the
    # project's filter_headers=[] leaves the headers alone, and no harness hook reads a uri
    result = run_in_process(peer, "--record-mode=none")
    result.assert_outcomes(passed=3)


def test_the_strict_ini_option_gives_the_plain_marker_the_harness_checks(peer: pytest.Pytester) -> None:
    result = run_in_process(peer, "--record-mode=none", "-o", "harness_vcr=strict")
    result.assert_outcomes(passed=2, failed=1)  # the test's own pytest.raises still gets its refusal
    output = result.stdout.str()
    assert "_ test_the_client_sends_more_tokens_than_recorded _" in output, output
    # the harness's matching, in the harness's words: the field, both values, once, no traceback
    assert output.count("body differs at max_tokens: sent 64000, recorded 8192") == 1, output
    assert "Traceback" not in output and "raise CannotOverwrite" not in output, output


def test_a_harness_vcr_value_it_does_not_know_is_a_usage_error(peer: pytest.Pytester) -> None:
    result = run_in_process(peer, "-o", "harness_vcr=strcit")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "harness_vcr ini option: 'strcit' is not one of plain, strict" in result.stderr.str()


def test_the_peer_suite_check_names_each_test_whose_outcome_the_plugin_changed(tmp_path: Path) -> None:
    # .ci/peer_suite.py runs pytest-recording's own suite with and without the plugin (in CI, after
    # the README's suite); what it compares is each test's outcome in the two --junitxml files
    spec = importlib.util.spec_from_file_location("peer_suite", ROOT / ".ci" / "peer_suite.py")
    assert spec is not None and spec.loader is not None
    peer_suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer_suite)
    cases = {
        "without": '<testcase classname="t" name="a"/><testcase classname="t" name="b"/>'
        '<testcase classname="t" name="c"><skipped/></testcase>',
        "with": '<testcase classname="t" name="a"/><testcase classname="t" name="b"><failure/></testcase>'
        '<testcase classname="t" name="c"><skipped/></testcase><testcase classname="t" name="d"><error/></testcase>',
    }
    for name, body in cases.items():
        (tmp_path / f"{name}.xml").write_text(f"<testsuites><testsuite>{body}</testsuite></testsuites>")
    without, with_plugin = (peer_suite.outcomes(tmp_path / f"{name}.xml") for name in cases)
    assert without == {"t::a": "passed", "t::b": "passed", "t::c": "skipped"}
    assert peer_suite.differences(without, with_plugin) == [
        "t::b: passed without the harness, failed with it",
        "t::d: not run without the harness, error with it",
    ]
    assert peer_suite.differences(without, without) == []


def test_loading_the_plugin_imports_none_of_what_it_brings() -> None:
    # every session of every project that installs the package imports the plugin: Hypothesis, vcrpy,
    # YAML, the SDKs and the loop are imported by the fixtures and hooks that use them, never at load
    # (benchmarks/plugin_import.py measures what the load costs; its budget is 50 ms)
    heavy = (
        "openprogram",
        "hypothesis",
        "vcr",
        "yaml",
        "httpx",
        "httpx2",
        "openai",
        "anthropic",
        "botocore",
        "pydantic",
    )
    code = f"import sys, harness.pytest_plugin; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
