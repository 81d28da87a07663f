"""``harness cassettes show | lint | to-scenario``: cassettes as data, the way a user meets them.

Small hand-written cassettes pin the exact behaviour (follow-ups, errors, a second conversation,
unusable input); the third-party recordings in ``../shared/provider-cassettes`` show it holds
for real traffic: every one of them converts to a scenario that ``harness run`` passes.
"""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from harness.checking._check import check
from harness.cli import main
from harness.recording._conformance import default_cassette_dir
from harness.recording._tools import to_scenario
from harness.scenarios._scenario import Scenario
from tests.harness.support import chat_completion, console_script, run_cli, run_in_process

pytest_plugins = ["pytester"]

CASSETTES = default_cassette_dir()
CHAT_URI = "https://api.openai.com/v1/chat/completions"
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    },
}


def interaction(messages: list[dict[str, Any]], status: int, reply: str, **request: Any) -> dict[str, Any]:
    body = {"model": "gpt-4o-mini", "messages": messages, "tools": [ADD], **request}
    return {
        "request": {"method": "POST", "uri": CHAT_URI, "body": json.dumps(body), "headers": {}},
        "response": {
            "status": {"code": status, "message": "OK" if status == 200 else "Bad Request"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": reply},
        },
    }


def write(path: Path, *interactions: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}), encoding="utf-8")
    return path


CALL = {"id": "call_add_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
SYSTEM = {"role": "system", "content": "Be brief."}
ASK = {"role": "user", "content": "1+2?"}
CALLED = {"role": "assistant", "content": None, "tool_calls": [CALL]}
RESULT = {"role": "tool", "tool_call_id": "call_add_1", "content": "3"}
ANSWER = {"role": "assistant", "content": "It is 3."}
MORE = {"role": "user", "content": "And doubled?"}


@pytest.fixture
def conversation(tmp_path: Path) -> Path:
    """A tool loop, then a follow-up question the user asked after the answer."""
    return write(
        tmp_path / "conversation.yaml",
        interaction([SYSTEM, ASK], 200, chat_completion(None, [CALL], "tool_calls")),
        interaction([SYSTEM, ASK, CALLED, RESULT], 200, chat_completion("It is 3.")),
        interaction([SYSTEM, ASK, CALLED, RESULT, ANSWER, MORE], 200, chat_completion("6.")),
    )


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result


# ---------------------------------------------------------------------------------------------
# show
# ---------------------------------------------------------------------------------------------


def test_show_renders_each_interaction_with_only_what_its_request_added(conversation: Path) -> None:
    result = invoke("cassettes", "show", str(conversation))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{conversation}: 3 interaction(s), openai",
        "#0 openai chat.completions · gpt-4o-mini · whole · HTTP 200",
        "   system: Be brief.",
        "   user: 1+2?",
        "   ← reply (toolUse)",
        '     call add({"a": 1, "b": 2}) [call_add_1]',
        "     usage: 10 in, 5 out",
        "#1 openai chat.completions · gpt-4o-mini · whole · HTTP 200",
        "   tool add [call_add_1] → 3",
        "   ← reply (stop): It is 3.",
        "     usage: 10 in, 5 out",
        "#2 openai chat.completions · gpt-4o-mini · whole · HTTP 200",
        "   user: And doubled?",
        "   ← reply (stop): 6.",
        "     usage: 10 in, 5 out",
        f"seed a wire campaign with it: harness fuzz --agent MODULE:CALLABLE --from-cassette {conversation}",
    ]


def test_show_reports_an_error_reply_with_the_providers_message(tmp_path: Path) -> None:
    error = json.dumps({"error": {"message": "Invalid schema for function 'add'", "type": "invalid_request_error"}})
    path = write(tmp_path / "error.yaml", interaction([ASK], 400, error))
    result = invoke("cassettes", "show", str(path))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-2].startswith("   ← error: HTTP 400")
    assert "Invalid schema for function 'add'" in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such cassette file"),
        ("interactions: [\n  - {request: ", "not a YAML cassette"),
        ("version: 1\n", "not a vcrpy cassette (no interactions)"),
    ],
)
def test_show_and_to_scenario_refuse_unusable_files_in_one_line(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    for command in ("show", "to-scenario"):
        result = invoke("cassettes", command, str(path))
        assert result.exit_code == 2, result.output
        error = [line for line in result.output.splitlines() if line.startswith("Error:")]
        assert len(error) == 1 and message in error[0], result.output


def test_show_decodes_a_streamed_reply_as_the_sdk_reads_it() -> None:
    path = CASSETTES / "openai" / "llm__cassettes__test_tools__test_tool_use_basic.yaml"
    if not path.is_file():
        pytest.skip(f"provider cassettes not found: {CASSETTES} (set HARNESS_PROVIDER_CASSETTES to the folder)")
    lines = invoke("cassettes", "show", str(path)).output.splitlines()
    assert lines[1] == "#0 openai chat.completions · gpt-4o-mini · streamed · HTTP 200"
    assert '     call multiply({"a": 1231, "b": 2331}) [call_1EYWDzueHEp8OsB8jJSEp7WB]' in lines
    assert "   tool multiply [call_1EYWDzueHEp8OsB8jJSEp7WB] → 2869461" in lines
    assert any(line.startswith("   ← reply (stop): The result of") for line in lines)


# ---------------------------------------------------------------------------------------------
# to-scenario
# ---------------------------------------------------------------------------------------------


def test_to_scenario_scripts_the_recorded_turns_results_and_follow_ups(conversation: Path) -> None:
    data, notes = to_scenario(conversation)
    assert notes == []
    assert data["prompts"] == ["1+2?"]
    assert data["config"] == {"model": "gpt-4o-mini", "system_prompt": "Be brief."}
    assert data["tools"] == [
        {
            "name": "add",
            "description": "Add two integers.",
            "parameters": ADD["function"]["parameters"],
            "plan": [{"return": "3"}],
        }
    ]
    assert data["turns"] == [
        {"calls": [{"name": "add", "args": {"a": 1, "b": 2}, "id": "call_add_1"}]},
        "It is 3.",
        "6.",
    ]
    assert data["follow_ups"] == {1: ["And doubled?"]}
    assert data["meta"]["expect"] == {
        "requests": 3,
        "executed": ["add#call_add_1"],
        "reason": "stop",
        "final_text": "6.",
    }
    result = check(Scenario.from_data(data))
    assert result.ok, result.problems


def test_to_scenario_ends_at_an_error_and_leaves_a_second_conversation_out(tmp_path: Path) -> None:
    error = json.dumps({"error": {"message": "Rate limited", "type": "rate_limit_error"}})
    path = write(
        tmp_path / "two.yaml",
        interaction([ASK], 200, chat_completion("3.")),
        interaction([{"role": "user", "content": "Something else"}], 200, chat_completion("Sure.")),
    )
    data, notes = to_scenario(path)
    assert data["turns"] == ["3."] and notes == [
        "interactions 1-1 start a new conversation; only the first one was converted"
    ]
    failing = write(tmp_path / "error.yaml", interaction([ASK], 429, error))
    data, notes = to_scenario(failing)
    assert data["turns"] == [{"error": data["turns"][0]["error"]}] and "Rate limited" in data["turns"][0]["error"]
    assert data["meta"]["expect"]["reason"] == "error"
    assert check(Scenario.from_data(data)).ok


def test_a_recording_that_stops_after_tool_calls_ends_the_scripted_run_at_the_cap(tmp_path: Path) -> None:
    path = write(tmp_path / "calls.yaml", interaction([ASK], 200, chat_completion(None, [CALL], "tool_calls")))
    data, _ = to_scenario(path)
    assert data["config"]["max_iterations"] == 1 and data["meta"]["expect"]["reason"] == "max_iterations"
    assert check(Scenario.from_data(data)).ok


def test_to_scenario_writes_a_file_that_harness_run_replays(conversation: Path, tmp_path: Path) -> None:
    out = tmp_path / "replay.yaml"
    harness = console_script()
    converted = subprocess.run(
        [harness, "cassettes", "to-scenario", str(conversation), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert converted.returncode == 0, converted.stderr
    assert converted.stdout.strip() == f"wrote {out} (3 turn(s)); replay it with: harness run {out}"
    assert out.read_text(encoding="utf-8").startswith(f"# harness cassettes to-scenario {conversation}\n")
    ran = subprocess.run([harness, "run", str(out)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.splitlines() == [f"ok   {out} (reason=stop, requests=3)", "all 1 scenario(s) passed"]


def test_to_scenario_prints_to_stdout_and_notes_to_stderr(tmp_path: Path) -> None:
    path = write(
        tmp_path / "two.yaml",
        interaction([ASK], 200, chat_completion("3.")),
        interaction([{"role": "user", "content": "Something else"}], 200, chat_completion("Sure.")),
    )
    result = CliRunner().invoke(main, ["cassettes", "to-scenario", str(path)])
    assert result.exit_code == 0
    assert Scenario.from_yaml(result.stdout).turns[0].text == "3."  # type: ignore[union-attr]
    assert result.stderr == "note: interactions 1-1 start a new conversation; only the first one was converted\n"


def _third_party() -> list[Any]:
    if not (CASSETTES / "index.json").is_file():
        reason = f"provider cassettes not found: {CASSETTES} (set HARNESS_PROVIDER_CASSETTES to the folder)"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="missing")]
    entries = json.loads((CASSETTES / "index.json").read_text(encoding="utf-8"))
    return [pytest.param(entry["file"], id=entry["file"]) for entry in entries]


@pytest.mark.cassettes
@pytest.mark.parametrize("file", _third_party())
def test_every_third_party_cassette_converts_to_a_scenario_that_passes(file: str) -> None:
    data, _ = to_scenario(CASSETTES / file)
    scenario = Scenario.from_yaml(Scenario.from_data(data).to_yaml())  # through the file format, as harness run
    result = check(scenario)
    assert result.ok, "\n".join(f"[{p.name}] {p.message}" for p in result.problems)
    assert len(result.trace.requests) == len(data["turns"])


# ---------------------------------------------------------------------------------------------
# lint
# ---------------------------------------------------------------------------------------------

FAKE_KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t"  # the shape of an OpenAI key, valid nowhere


def clean(**request: Any) -> dict[str, Any]:
    return interaction([ASK], 200, chat_completion("3."), **request)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's project: one test replaying its cassette, in the layout the recorded fixture uses."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_app.py").write_text(
        "def test_answer(recorded):\n    pass\n\n\nclass TestSuite:\n    def test_in_class(self, recorded):\n"
        "        pass\n",
        encoding="utf-8",
    )
    (tmp_path / "tests" / "test_plain.py").write_text("def test_plain():\n    pass\n", encoding="utf-8")
    write(tmp_path / "cassettes" / "test_app" / "test_answer.yaml", clean())
    write(tmp_path / "cassettes" / "test_app" / "TestSuite.test_in_class[gpt-4o].yaml", clean())
    (tmp_path / "cassettes" / "scenarios").mkdir()
    (tmp_path / "cassettes" / "scenarios" / "saved.yaml").write_text("prompts: [hi]\n", encoding="utf-8")
    return tmp_path


def lint_lines(*args: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["cassettes", "lint", *args], env=env)
    assert "Traceback" not in result.output
    return result.exit_code, result.output.splitlines()


def test_lint_passes_cassettes_their_tests_use(project: Path) -> None:
    assert lint_lines() == (0, ["2 cassettes, no findings"])  # scenarios/ is not a cassette folder


def test_lint_reports_each_problem_on_one_line_and_exits_1(project: Path) -> None:
    cassettes = project / "cassettes"
    leaky = clean()
    leaky["request"]["headers"] = {"Authorization": ["Bearer x"], "x-api-key": ["y"]}
    leaky["request"]["uri"] += "?key=abc"
    write(cassettes / "test_app" / "test_leaky.yaml", leaky)
    echoed = interaction([ASK], 200, chat_completion(f"your key is {FAKE_KEY}"))
    write(cassettes / "test_app" / "test_echo.yaml", echoed)
    secret = interaction(
        [{"role": "user", "content": "the token is harness-lint-secret-value"}], 200, chat_completion("ok")
    )
    write(cassettes / "test_app" / "test_env.yaml", secret)
    elsewhere = clean()
    elsewhere["request"]["uri"] = "https://example.com/v1/generate"  # no provider's host, no provider's path
    write(cassettes / "test_plain" / "test_plain.yaml", elsewhere)
    write(cassettes / "test_gone" / "test_x.yaml", clean())
    write(cassettes / "loose.yaml", clean())
    (cassettes / "test_app" / "broken.yaml").write_text("interactions: [\n", encoding="utf-8")
    status, lines = lint_lines(env={"MY_SERVICE_TOKEN": "harness-lint-secret-value"})
    assert status == 1
    found: dict[str, list[str]] = {line.partition(": ")[0].removeprefix("cassettes/"): [] for line in lines[:-1]}
    for line in lines[:-1]:
        path, _, reason = line.partition(": ")
        found[path.removeprefix("cassettes/")].append(reason)
    assert found["test_app/test_leaky.yaml"] == [
        "interaction 0: request header 'authorization' carries a credential or an identity",
        "interaction 0: request header 'x-api-key' carries a credential or an identity",
        "interaction 0: the request URI has a key= query parameter (a credential)",
        "orphaned: test_app.py has no test function test_leaky",
    ]
    assert found["test_app/test_echo.yaml"][0].endswith("looks like an OpenAI or Anthropic API key (sk-...)")
    assert FAKE_KEY not in "\n".join(lines)  # a finding never repeats the secret
    assert found["test_app/test_env.yaml"][0].startswith("holds the value of MY_SERVICE_TOKEN in line ")
    assert "harness-lint-secret-value" not in "\n".join(lines)
    unroutable, unused = found["test_plain/test_plain.yaml"]
    assert unroutable.startswith("interaction 0: no backend for host 'example.com': neither a provider's host nor")
    assert unroutable.endswith(": /v1/generate")
    assert unused == "unused: test_plain.py uses neither the recorded fixture nor the vcr marker"
    assert found["test_gone/test_x.yaml"] == [
        "orphaned: no test module test_gone.py (next to the cassettes folder or under tests)"
    ]
    assert found["loose.yaml"] == ["orphaned: not at <test module>/<test name>.yaml, so no test can be found for it"]
    assert found["test_app/broken.yaml"][0].startswith("not a YAML cassette")
    assert lines[-1] == f"{len(lines) - 1} finding(s) in 9 cassettes"


def test_lint_finds_pytest_recording_cassettes_beside_their_test_module(tmp_path: Path) -> None:
    tests = tmp_path / "tests" / "unit"
    tests.mkdir(parents=True)
    (tests / "test_bot.py").write_text(
        "import pytest\n\n@pytest.mark.vcr\ndef test_hi():\n    pass\n", encoding="utf-8"
    )
    write(tests / "cassettes" / "test_bot" / "test_hi.yaml", clean())
    write(tests / "cassettes" / "test_bot" / "test_bye.yaml", clean())
    status, lines = lint_lines(str(tests / "cassettes"), "--tests", str(tmp_path / "tests"))
    assert status == 1
    assert lines == [
        f"{tests}/cassettes/test_bot/test_bye.yaml: orphaned: test_bot.py has no test function test_bye",
        "1 finding(s) in 2 cassettes",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere"], "Error: nowhere: no such directory"),
        (["cassettes", "--tests", "missing"], "Error: --tests missing: no such directory (or pass --no-usage)"),
    ],
)
def test_lint_refuses_unusable_folders_with_status_2(project: Path, args: list[str], message: str) -> None:
    status, lines = lint_lines(*args)
    assert status == 2 and lines[-1] == message


def _dated(path: Path, recorded_at: str | None) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.pop("recorded_at", None)
    if recorded_at is not None:
        data["recorded_at"] = recorded_at
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def test_lint_max_age_reports_old_and_undated_cassettes_and_passes_fresh_ones(project: Path) -> None:
    from datetime import UTC, datetime, timedelta

    folder = project / "cassettes" / "test_app"
    fresh = (datetime.now(UTC) - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    _dated(folder / "test_answer.yaml", fresh)
    _dated(folder / "TestSuite.test_in_class[gpt-4o].yaml", fresh)
    assert lint_lines("--max-age", "30d") == (0, ["2 cassettes, no findings"])
    assert lint_lines() == (0, ["2 cassettes, no findings"])  # no --max-age: age is not a rule

    _dated(folder / "test_answer.yaml", "2025-01-02T03:04:05Z")
    _dated(folder / "TestSuite.test_in_class[gpt-4o].yaml", None)
    status, lines = lint_lines("--max-age", "30d")
    assert status == 1
    old = next(line for line in lines if "test_answer.yaml" in line)
    assert "recorded " in old and "(2025-01-02 UTC), older than --max-age 30 days" in old
    assert old.endswith("re-record it: --record-mode=rewrite")
    undated = next(line for line in lines if "test_in_class" in line)
    assert "has no recorded_at date" in undated
    assert lines[-1] == "2 finding(s) in 2 cassettes"


@pytest.mark.parametrize("age", ["soon", "0", "-3d"])
def test_lint_max_age_refuses_an_age_it_cannot_read_with_status_2(project: Path, age: str) -> None:
    status, lines = lint_lines("--max-age", age)
    assert status == 2 and lines[-1].startswith("Error: --max-age: max_age ") and "is not a positive age" in lines[-1]


def test_a_cassette_the_recorder_dates_passes_lint_max_age_through_the_console_script(tmp_path: Path) -> None:
    """The date lint reads is written in the recorder's own format (``date_text``, what the
    persister writes as ``recorded_at``), and the installed command reads it."""
    from datetime import UTC, datetime

    from harness.recording._age import date_text

    path = write(tmp_path / "cassettes" / "test_app" / "test_answer.yaml", clean())
    _dated(path, date_text(datetime.now(UTC)))
    done = subprocess.run(
        [console_script(), "cassettes", "lint", "--no-usage", "--max-age", "1d", str(tmp_path / "cassettes")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "1 cassette, no findings", done.stdout + done.stderr


def test_lint_on_the_third_party_cassettes_finds_the_identities_they_kept_and_no_false_key() -> None:
    if not (CASSETTES / "index.json").is_file():
        pytest.skip(f"provider cassettes not found: {CASSETTES} (set HARNESS_PROVIDER_CASSETTES to the folder)")
    status, lines = lint_lines(str(CASSETTES), "--no-usage")
    assert status == 1
    # their README: organisation and project names and cookies were left in, no key or signature
    assert all(" header '" in line and line.endswith("carries a credential or an identity") for line in lines[:-1])
    assert any("'openai-organization'" in line for line in lines)
    assert any("'anthropic-organization-id'" in line for line in lines)
    assert lines[-1].endswith("finding(s) in 49 cassettes")


def test_the_projects_own_cassettes_pass_lint(monkeypatch: pytest.MonkeyPatch) -> None:
    # cassettes/demo/ is named by test_recorded_demo.py's vcr_cassette_dir fixture, not after a module
    monkeypatch.chdir(Path(__file__).resolve().parents[3])
    status, lines = lint_lines()
    assert status == 0 and len(lines) == 1 and lines[0].endswith("cassettes, no findings"), lines


def test_lint_without_a_folder_finds_pytest_recordings_tests_cassettes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_app.py").write_text("def test_answer(recorded):\n    pass\n", encoding="utf-8")
    write(tmp_path / "tests" / "cassettes" / "test_app" / "test_answer.yaml", clean())
    assert lint_lines() == (0, ["1 cassette, no findings"])
    (tmp_path / "tests" / "cassettes" / "test_app" / "test_answer.yaml").rename(tmp_path / "elsewhere.yaml")
    (tmp_path / "tests" / "cassettes" / "test_app").rmdir()
    (tmp_path / "tests" / "cassettes").rmdir()
    code, lines = lint_lines()
    assert code == 2 and "no cassettes/ nor tests/cassettes/ here" in lines[-1]


def test_bare_lint_reads_pytest_recordings_flat_layout_with_no_tests_folder(tmp_path: Path) -> None:
    # test modules at the project's root, their cassettes/ beside them: "--tests tests: no such directory"
    (tmp_path / "test_app.py").write_text("def test_answer(recorded):\n    pass\n", encoding="utf-8")
    write(tmp_path / "cassettes" / "test_app" / "test_answer.yaml", clean())

    def bare(*args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
        if not process:  # in this process: the console script's own run is the first one below
            return run_cli("cassettes", "lint", *args, cwd=tmp_path)
        command = [console_script(), "cassettes", "lint", *args]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    done = bare(process=True)
    assert (done.returncode, done.stdout.strip()) == (0, "1 cassette, no findings"), done.stdout + done.stderr
    write(tmp_path / "cassettes" / "test_app" / "test_gone.yaml", clean())
    done = bare()
    assert (
        done.returncode == 1 and "test_gone.yaml: orphaned: test_app.py has no test function test_gone" in done.stdout
    )
    named = bare("--tests", "tests")  # a folder the user names must exist
    assert named.returncode == 2 and "--tests tests: no such directory" in named.stderr


# ---------------------------------------------------------------------------------------------
# cassettes recorded under the plain vcr marker: the emulator's 127.0.0.1:PORT, not a provider host
# ---------------------------------------------------------------------------------------------

VCR_MARKED = """
import pytest
from harness.emulator import Emulator
from harness.script import turn

PROVIDER, STREAM = {provider!r}, {stream!r}


def ask(base):
    if PROVIDER == "openai":
        import openai

        client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
        messages = [{{"role": "user", "content": "Weather?"}}]
        if not STREAM:
            return client.chat.completions.create(model="m-1", messages=messages).choices[0].message.content
        chunks = client.chat.completions.create(model="m-1", messages=messages, stream=True)
        return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    if PROVIDER == "anthropic":
        import anthropic

        client = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
        messages = [{{"role": "user", "content": "Weather?"}}]
        with client.messages.stream(model="m-1", max_tokens=50, messages=messages) as stream:
            return "".join(stream.text_stream)
    if PROVIDER == "gemini":
        from google import genai

        client = genai.Client(api_key="k", http_options={{"base_url": base + "/", "api_version": "v1beta"}})
        if not STREAM:
            return client.models.generate_content(model="m-1", contents="Weather?").text
        return "".join(c.text or "" for c in client.models.generate_content_stream(model="m-1", contents="Weather?"))
    import boto3

    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=base,
        aws_access_key_id="k", aws_secret_access_key="k",
    )
    messages = [{{"role": "user", "content": [{{"text": "Weather?"}}]}}]
    if not STREAM:
        return client.converse(modelId="m-1", messages=messages)["output"]["message"]["content"][0]["text"]
    events = client.converse_stream(modelId="m-1", messages=messages)["stream"]
    return "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)


@pytest.mark.vcr
@pytest.mark.allow_model_requests
def test_marked():
    with Emulator(turn.text("Sunny in Paris.")) as emulator:
        assert ask(emulator.base_url) == "Sunny in Paris."
"""


VCR_MARKED_CASES = [  # (provider, stream, the endpoint show names)
    ("openai", False, "chat.completions"),
    ("openai", True, "chat.completions"),
    ("anthropic", True, "messages"),
    ("gemini", False, "generateContent"),
    ("gemini", True, "streamGenerateContent"),
    ("bedrock", False, "converse"),
    ("bedrock", True, "converse-stream"),
]


def test_show_lint_and_to_scenario_read_a_cassette_the_plain_vcr_marker_recorded_against_the_emulator(
    pytester: pytest.Pytester,
) -> None:
    # one project, one test module per provider and wire shape: one recording session for all
    modules = {f"test_{case[0]}_{case[1]}": case for case in VCR_MARKED_CASES}
    pytester.makepyfile(**{name: VCR_MARKED.format(provider=p, stream=s) for name, (p, s, _) in modules.items()})
    run_in_process(pytester, "--record-mode=once").assert_outcomes(passed=len(modules))
    for name, (provider, stream, endpoint) in modules.items():
        cassette = pytester.path / "cassettes" / name / "test_marked.yaml"
        assert "127.0.0.1:" in cassette.read_text(encoding="utf-8"), name  # the emulator's address, as recorded
        shown = invoke("cassettes", "show", str(cassette))
        assert shown.exit_code == 0, (name, shown.output)
        whole = "streamed" if stream else "whole"
        heading = f"#0 {provider} {endpoint} · m-1 · {whole} · HTTP 200"
        assert shown.stdout.splitlines()[1].startswith(heading), (name, shown.stdout)
        assert "← reply (stop): Sunny in Paris." in shown.stdout, name
        converted = invoke("cassettes", "to-scenario", str(cassette))
        assert converted.exit_code == 0 and "Sunny in Paris." in converted.stdout, (name, converted.output)
    linted = invoke("cassettes", "lint", "--tests", ".")  # pytester's project is the working directory
    expected = (0, [f"{len(modules)} cassettes, no findings"])
    assert (linted.exit_code, linted.stdout.splitlines()) == expected, linted.stdout


# ---------------------------------------------------------------------------------------------
# lint: a body that contradicts its Content-Encoding, and interactions recorded twice
# ---------------------------------------------------------------------------------------------


def _encoded(body: str | bytes, encoding: str | None) -> dict[str, Any]:
    recorded = clean()
    recorded["response"]["body"]["string"] = body
    if encoding is not None:
        recorded["response"]["headers"]["Content-Encoding"] = [encoding]
    return recorded


@pytest.mark.parametrize(
    ("body", "encoding", "finding"),
    [
        (
            chat_completion("3."),
            "gzip",
            "interaction 0: the response body is stored decoded but says content-encoding: gzip, so a replaying"
            " client fails to decompress it: remove the content-encoding header (or re-record)",
        ),
        (chat_completion("3."), "br", "the response body is stored decoded but says content-encoding: br"),
        (
            gzip.compress(chat_completion("3.").encode(), mtime=0),
            None,
            "interaction 0: the response body is stored gzip-compressed but says content-encoding: identity, so a"
            " replaying client reads compressed bytes: add content-encoding: gzip, or store the body decoded",
        ),
        (gzip.compress(chat_completion("3.").encode(), mtime=0), "gzip", None),  # as vcrpy keeps it by default: fine
        (chat_completion("3."), "identity", None),
    ],
)
def test_lint_reports_a_body_that_contradicts_its_content_encoding(
    project: Path, body: str | bytes, encoding: str | None, finding: str | None
) -> None:
    path = project / "cassettes" / "test_app" / "test_answer.yaml"
    path.write_text(yaml.dump({"interactions": [_encoded(body, encoding)], "version": 1}), encoding="utf-8")
    status, lines = lint_lines()
    if finding is None:
        assert (status, lines) == (0, ["2 cassettes, no findings"])
    else:
        assert status == 1 and len(lines) == 2, lines
        assert lines[0].startswith("cassettes/test_app/test_answer.yaml: ") and finding in lines[0], lines


@pytest.mark.parametrize(
    ("order", "finding"),
    [
        (
            "ABAB",  # `all` re-recorded and appended: the whole conversation twice
            "interactions 2-3 repeat interactions 0-1, request and reply alike (a re-record that appended instead"
            " of replacing?): delete interactions 2-3, or re-record the test with --record-mode=rewrite",
        ),
        ("ABB", "interaction 2 repeats interaction 1, request and reply alike"),
        ("AB", None),
    ],
)
def test_lint_reports_interactions_recorded_twice_with_the_fix(project: Path, order: str, finding: str | None) -> None:
    recorded = {
        "A": interaction([ASK], 200, chat_completion(None, [CALL], "tool_calls")),
        "B": interaction([ASK, CALLED, RESULT], 200, chat_completion("It is 3.")),
    }
    write(project / "cassettes" / "test_app" / "test_answer.yaml", *(recorded[name] for name in order))
    status, lines = lint_lines()
    if finding is None:
        assert (status, lines) == (0, ["2 cassettes, no findings"])
    else:
        assert status == 1 and lines[-1] == "1 finding(s) in 2 cassettes", lines
        assert lines[0].startswith(f"cassettes/test_app/test_answer.yaml: {finding}"), lines


def test_the_same_request_answered_anew_is_no_duplicate(project: Path) -> None:
    again = [interaction([ASK], 200, chat_completion(text)) for text in ("One.", "Two.")]  # a retry, a new reply
    write(project / "cassettes" / "test_app" / "test_answer.yaml", *again)
    assert lint_lines() == (0, ["2 cassettes, no findings"])


def test_lint_reports_a_streamed_reply_cut_inside_its_last_event(project: Path) -> None:
    delta = {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "3."}}]}
    usage = {"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 5}}
    first, last = f"data: {json.dumps(delta)}\n\n", f"data: {json.dumps(usage)}\n\n"
    cut = last[: last.index('"usage"') + 12]  # a recording killed inside its final usage event
    cassette = project / "cassettes" / "test_app" / "test_answer.yaml"
    for body in (first + last, first + cut):
        recorded = clean(stream=True)
        recorded["response"]["headers"]["content-type"] = ["text/event-stream"]
        recorded["response"]["body"]["string"] = body
        write(cassette, recorded)
        status, lines = lint_lines()
        if body == first + last:
            assert (status, lines) == (0, ["2 cassettes, no findings"])
    assert (status, lines[0]) == (
        1,
        f"cassettes/test_app/test_answer.yaml: interaction 0: the streamed reply ends inside an event (its last"
        f" {len(cut)} bytes are no whole event), so a replay reads a shorter reply and no error: re-record the test",
    )


MALFORMED = [  # shapes vcrpy cannot replay, which the recorded fixture and the vcr marker refuse at setup
    ("request", "headers", [["content-type", "application/json"]], "interactions[0].request.headers is a list"),
    ("response", "headers", [["content-type", "application/json"]], "interactions[0].response.headers is a list"),
    ("response", "body", "3.", "interactions[0].response.body has no string"),
    ("request", "body", None, "interactions[0].request has no body"),  # vcrpy failed: Request.__init__() missing
]


@pytest.mark.parametrize(
    ("side", "key", "value", "reason"),
    MALFORMED,
    ids=["request-headers", "response-headers", "body", "no-request-body"],
)
def test_lint_and_show_refuse_an_interaction_pytest_would_refuse_naming_it(
    tmp_path: Path, side: str, key: str, value: Any, reason: str
) -> None:
    """lint passes only what replays: a shape the replay refuses (headers as a list, a body without
    its string) is a finding with the path in it, and show cannot read it either (exit 2)."""
    bad = clean()
    bad[side][key] = value
    if value is None:
        del bad[side][key]
    path = write(tmp_path / "cassettes" / "test_app" / "test_answer.yaml", bad)

    def harness(*args: str) -> subprocess.CompletedProcess[str]:
        if key == "headers" and side == "request":  # one case through the installed console script
            return subprocess.run([console_script(), *args], capture_output=True, text=True, timeout=120)
        return run_cli(*args)  # the others in this process: the same command, no interpreter to start

    lint = harness("cassettes", "lint", "--no-usage", str(tmp_path / "cassettes"))
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert f"test_app/test_answer.yaml: {reason}" in lint.stdout, lint.stdout
    show = harness("cassettes", "show", str(path))
    assert show.returncode == 2 and reason in show.stderr and "Traceback" not in show.stderr, show.stderr


def test_lint_reads_cassettes_written_with_vcrpys_json_serializer(project: Path) -> None:
    # vcr_config's serializer: "json" makes pytest-recording write <test>.json; lint counted 0 cassettes
    leaky = clean()
    leaky["request"]["headers"] = {"Authorization": ["Bearer x"]}
    path = project / "cassettes" / "test_app" / "test_answer.json"
    (project / "cassettes" / "test_app" / "test_answer.yaml").unlink()
    path.write_text(json.dumps({"interactions": [leaky], "version": 1}, indent=4), encoding="utf-8")
    status, lines = lint_lines()
    assert status == 1
    assert lines == [
        "cassettes/test_app/test_answer.json: interaction 0: request header 'authorization' carries a credential"
        " or an identity",
        "1 finding(s) in 2 cassettes",
    ]
