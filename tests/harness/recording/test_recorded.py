"""Record once, replay forever, as a user's project does it: pytester runs against the emulator.

Each provider's agent run is recorded with sentinel credentials (``--record-mode=once``, the
emulator as upstream), the cassette is searched for the sentinels, replayed with the network
blocked (``--block-network``: no emulator is started) for a byte-identical trace, then asked a
changed prompt (the mismatch diff) and handed a corrupt cassette (the error, the file untouched).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.recording import _cassette as cassettes
from tests.harness.support import failure_sections

pytest_plugins = ["pytester"]

SENTINELS = {
    "OPENAI_API_KEY": "sk-sentinel-openai-7f3a9c",
    "ANTHROPIC_API_KEY": "sk-ant-sentinel-41d8e2",
    "GEMINI_API_KEY": "AIza-sentinel-gemini-93b1",
    "AWS_ACCESS_KEY_ID": "AKIASENTINEL0000KEY1",
    "AWS_SECRET_ACCESS_KEY": "sentinel/aws/secret/5c2e7d",
    "AWS_SESSION_TOKEN": "sentinel-aws-session-token-8a6f",
}

CASES = [
    ("openai", "chat.completions", True),
    ("openai", "responses", True),
    ("anthropic", "messages", True),
    ("gemini", "streamGenerateContent", True),
    ("bedrock", "converse", False),
    ("bedrock", "converse-stream", True),
]

AGENT = '''
import os
from pathlib import Path

import pytest

from harness.emulator import Emulator
from harness.script import turn
from openprogram import function, runtime

PROVIDER, ENDPOINT, STREAM = {provider!r}, {endpoint!r}, {stream!r}


@function(register=False)
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {{city}}"


@pytest.fixture
def upstream(recorded):
    if not recorded.records:  # a replay needs no server
        yield None
        return
    script = [turn.tool_call("weather", city="Paris"), turn.text({answer!r})]
    with Emulator(*script) as emulator:
        yield emulator.base_url


def test_agent(recorded, upstream, trace, clock):
    backend = recorded(PROVIDER, ENDPOINT, model="m-1", stream=STREAM, upstream=upstream, keys="env")
    text = runtime.exec(os.environ.get("AGENT_PROMPT", "Weather in Paris?"), tools=[weather], provider=backend)
    assert text == {answer!r}
    Path(os.environ["AGENT_TRACE"]).write_text(trace.last.to_json(indent=1), encoding="utf-8")
'''

ANSWER = "Sunny in Paris today: no umbrella needed."


@pytest.fixture
def sentinel_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in SENTINELS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    return SENTINELS


def _project(pytester: pytest.Pytester, provider: str, endpoint: str, stream: bool) -> Path:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nharness_vcr = strict\n")
    pytester.makepyfile(test_agent=AGENT.format(provider=provider, endpoint=endpoint, stream=stream, answer=ANSWER))
    return pytester.path / "cassettes" / "test_agent" / "test_agent.yaml"


def _run(
    pytester: pytest.Pytester, *args: str, trace: Path | None = None, prompt: str | None = None
) -> pytest.RunResult:
    os.environ["AGENT_TRACE"] = str(trace or pytester.path / "unused-trace.json")
    if prompt is None:
        os.environ.pop("AGENT_PROMPT", None)
    else:
        os.environ["AGENT_PROMPT"] = prompt
    try:
        # -rN: no short test summary, which repeats each message (whole, not clipped, when CI is set)
        return pytester.runpytest("-p", "no:cacheprovider", "-q", "-rN", *args)
    finally:
        os.environ.pop("AGENT_TRACE", None)
        os.environ.pop("AGENT_PROMPT", None)


@pytest.mark.parametrize(("provider", "endpoint", "stream"), CASES, ids=[f"{p}-{e}-{s}" for p, e, s in CASES])
def test_record_then_replay_offline(
    pytester: pytest.Pytester, sentinel_env: dict[str, str], provider: str, endpoint: str, stream: bool
) -> None:
    cassette = _project(pytester, provider, endpoint, stream)
    live, replayed = pytester.path / "live.json", pytester.path / "replayed.json"

    _run(pytester, "--record-mode=once", trace=live).assert_outcomes(passed=1)

    text = cassette.read_text(encoding="utf-8")
    for name, value in sentinel_env.items():
        assert value not in text, f"{name} reached the cassette"
    loaded = cassettes.load(cassette)
    assert len(loaded) == 2  # the tool call, then the answer
    for interaction in loaded:
        assert interaction.request.route.provider == provider  # the real host, not 127.0.0.1:PORT
        assert interaction.request.route.endpoint == endpoint
        for part in (interaction.request, interaction.response):
            assert not any(value in v for _, v in part.headers for value in sentinel_env.values())
            assert not any(value in part.body.text for value in sentinel_env.values())
        names = {name.lower() for name, _ in interaction.request.headers}
        assert not names & {"authorization", "x-api-key", "x-goog-api-key", "x-amz-security-token"}
    if provider != "bedrock":  # JSON bodies are readable structured text in the file
        assert '"role": "user"' in text or '"text": "Weather in Paris?"' in text

    _run(pytester, "--block-network", trace=replayed).assert_outcomes(passed=1)
    assert replayed.read_bytes() == live.read_bytes()
    if stream:  # the trace holds every streamed delta: they arrive one event at a time on replay too
        assert live.read_text(encoding="utf-8").count('"type": "text_delta"') > 1

    changed = _run(pytester, "--block-network", prompt="Weather in Oslo?")
    changed.assert_outcomes(failed=1)  # one mismatch, one failure (not a teardown error besides)
    output = changed.stdout.str()
    assert f"{cassette}: request 1 (POST https://" in output
    assert "matches no unused recorded interaction (record mode 'none')" in output
    assert "Weather in Paris?" in output and "Weather in Oslo?" in output
    assert "--- recorded interaction 0" in output and "+++ request 1" in output

    corrupt = b"interactions:\n- request: [unclosed\n"
    cassette.write_bytes(corrupt)
    broken = _run(pytester, "--block-network")
    broken.assert_outcomes(errors=1)
    assert f"{cassette}: the cassette does not parse" in broken.stdout.str()
    assert cassette.read_bytes() == corrupt


@pytest.mark.parametrize("mode", ["once", "new_episodes", "all", "rewrite"])
def test_a_corrupt_cassette_is_never_overwritten_by_a_record_mode(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makepyfile(test_two=TWO_CALLS)
    cassette = pytester.path / "cassettes" / "test_two" / "test_two.yaml"
    cassette.parent.mkdir(parents=True)
    corrupt = b"version: 1\ninteractions: {not: [a list\n"
    cassette.write_bytes(corrupt)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--record-mode={mode}")
    result.assert_outcomes(errors=1)
    assert f"{cassette}: the cassette does not parse" in result.stdout.str()
    assert cassette.read_bytes() == corrupt


def test_a_credential_in_a_reply_is_never_written(pytester: pytest.Pytester, sentinel_env: dict[str, str]) -> None:
    pytester.makepyfile(
        test_leak=f"""
        from harness.emulator import Emulator
        from harness.script import turn
        from openprogram import runtime

        def test_leak(recorded):
            with Emulator(turn.text("your key is {SENTINELS["OPENAI_API_KEY"]}")) as emulator:
                backend = recorded("openai", model="m-1", stream=False, upstream=emulator.base_url)
                runtime.exec("hi", provider=backend)
        """
    )
    result = _run(pytester, "--record-mode=once")
    result.assert_outcomes(passed=1, errors=1)
    output = result.stdout.str()
    assert "not written, it would hold a credential from the environment" in output
    assert "the value of OPENAI_API_KEY in interactions[0].response.body.string: choices[0].message.content" in output
    assert SENTINELS["OPENAI_API_KEY"] not in output.replace("your key is " + SENTINELS["OPENAI_API_KEY"], "")
    assert not (pytester.path / "cassettes").exists() or not list((pytester.path / "cassettes").rglob("*.yaml"))


TWO_CALLS = """
import os
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

def test_two(recorded):
    calls = int(os.environ.get("CALLS", "2"))
    with Emulator(turn.text("one"), turn.text("two")) as emulator:
        upstream = emulator.base_url if recorded.records else None
        backend = recorded("anthropic", model="m-1", upstream=upstream)
        for number in range(calls):
            runtime.exec(f"question {number}", provider=backend)
    assert os.environ.get("FAIL") != "1", "asked to fail"
"""


def test_unused_interactions_fail_at_teardown_unless_allowed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_two=TWO_CALLS)
    pytester.makeconftest("")
    assert pytester.runpytest("--record-mode=once").ret == 0
    monkeypatch.setenv("CALLS", "1")
    result = _run(pytester, "--block-network")
    result.assert_outcomes(passed=1, errors=1)
    assert "1 of 2 recorded interaction(s) were never requested" in result.stdout.str()
    assert "interaction 1 (POST https://api.anthropic.com/v1/messages)" in result.stdout.str()
    pytester.makeconftest("import pytest\n@pytest.fixture\ndef vcr_config():\n    return {'allow_unused': True}\n")
    _run(pytester, "--block-network").assert_outcomes(passed=1)


def test_rewrite_replaces_the_cassette_only_when_the_test_passes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_two=TWO_CALLS)
    cassette = pytester.path / "cassettes" / "test_two" / "test_two.yaml"
    assert pytester.runpytest("--record-mode=once").ret == 0
    before = cassette.read_bytes()
    monkeypatch.setenv("CALLS", "1")
    monkeypatch.setenv("FAIL", "1")
    failed = pytester.runpytest("--record-mode=rewrite")
    failed.assert_outcomes(failed=1)
    assert cassette.read_bytes() == before
    assert "the new recording was not saved because the test failed" in failed.stdout.str()
    kept = pytester.runpytest("--record-mode=rewrite", "--harness-keep-failed-recordings")
    kept.assert_outcomes(failed=1)
    assert len(cassettes.load(cassette)) == 1
    monkeypatch.setenv("FAIL", "0")
    cassette.write_bytes(before)
    pytester.runpytest("--record-mode=rewrite").assert_outcomes(passed=1)
    assert len(cassettes.load(cassette)) == 1  # the unused second exchange is gone with the rewrite


def test_a_recording_killed_mid_write_leaves_the_old_cassette_whole(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_two=TWO_CALLS)
    cassette = pytester.path / "cassettes" / "test_two" / "test_two.yaml"
    assert pytester.runpytest("--record-mode=once").ret == 0
    before = cassette.read_bytes()
    # the process dies after the new text is written to disk and before it replaces the cassette
    pytester.makeconftest(
        "import os, signal\n"
        "def pytest_configure(config):\n"
        "    os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    process = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--record-mode=rewrite", "test_two.py"],
        cwd=pytester.path,
        env={**os.environ, "CALLS": "1"},
        capture_output=True,
        timeout=240,
    )
    assert process.returncode == -signal.SIGKILL, process.stdout.decode()[-2000:]
    assert cassette.read_bytes() == before
    assert len(cassettes.load(cassette)) == 2


MARKED_TEST = textwrap.dedent(  # a user's test under @pytest.mark.vcr; PROMPT and FAIL change it between runs
    """
            import asyncio, os
            import openai, pytest
            from harness.emulator import Emulator
            from harness.script import turn

            @pytest.mark.vcr
            @pytest.mark.allow_model_requests
            def test_marked():
                async def ask(base_url):
                    key = os.environ.get("OPENAI_API_KEY", "k")
                    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=key, max_retries=0)
                    messages = [{"role": "user", "content": os.environ.get("PROMPT", "hi")}]
                    reply = await client.chat.completions.create(model="m", messages=messages)
                    await client.close()
                    return reply.choices[0].message.content
                with Emulator(turn.text("hello")) as emulator:
                    assert asyncio.run(ask(emulator.base_url)) == "hello"
                assert os.environ.get("FAIL") != "1"
    """
)


def test_the_vcr_marker_gets_scrubbing_and_readable_bodies(pytester: pytest.Pytester, sentinel_env: dict) -> None:
    pytester.makepyfile(test_marked=MARKED_TEST)
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    text = (pytester.path / "cassettes" / "test_marked" / "test_marked.yaml").read_text(encoding="utf-8")
    assert sentinel_env["OPENAI_API_KEY"] not in text
    assert "authorization" not in text.lower()
    assert '"content": "hi"' in text  # the JSON body pretty-printed


def test_a_failing_vcr_marker_test_keeps_its_old_cassette(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_marked=MARKED_TEST)
    cassette = pytester.path / "cassettes" / "test_marked" / "test_marked.yaml"
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    before = cassette.read_bytes()
    monkeypatch.setenv("FAIL", "1")
    monkeypatch.setenv("PROMPT", "changed")
    _run(pytester, "--record-mode=new_episodes").assert_outcomes(failed=1)
    assert cassette.read_bytes() == before


STREAMED_MARKED_TEST = textwrap.dedent(  # a user's streaming client under the plain vcr marker
    """
            import asyncio, os
            import openai, pytest
            from harness.emulator import Emulator
            from harness.script import turn

            @pytest.mark.vcr
            @pytest.mark.allow_model_requests
            def test_streamed():
                async def ask(base_url):
                    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="k", max_retries=0)
                    messages = [{"role": "user", "content": "hi"}]
                    stream = await client.chat.completions.create(model="m", messages=messages, stream=True)
                    parts = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
                    await client.close()
                    return parts
                with Emulator(turn.text("hello from a streamed reply")) as emulator:
                    parts = asyncio.run(ask(emulator.base_url))
                    answered = not emulator.remaining
                assert answered == (os.environ.get("REPLAY") != "1")  # a replay never reaches the emulator
                assert "".join(parts) == "hello from a streamed reply"
                assert len([part for part in parts if part]) > 1
    """
)


def test_a_streamed_reply_under_the_plain_vcr_marker_replays_event_by_event(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # in a fresh process, as a user runs it (in-process, the suite's own imports hid the failure)
    pytester.makepyfile(test_streamed=STREAMED_MARKED_TEST)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--record-mode=once").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_streamed" / "test_streamed.yaml"
    assert "data: " in cassette.read_text(encoding="utf-8")
    monkeypatch.setenv("REPLAY", "1")
    replayed = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--record-mode=none")
    replayed.assert_outcomes(passed=1)
    assert len(cassettes.load(cassette)) == 1  # replayed from the cassette, nothing recorded again


KEYS_ENV_CASES = [
    ("openai", "chat.completions", False),
    ("openai", "responses", True),
    ("anthropic", "messages", True),
    ("gemini", "streamGenerateContent", True),
    ("bedrock", "converse-stream", True),
]


def test_keys_env_records_with_the_environments_key_and_replays_without_one(
    pytester: pytest.Pytester, sentinel_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # one project, a test module per provider and endpoint (each agent asks recorded(..., keys="env"))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nharness_vcr = strict\n")
    modules = {
        f"test_{provider}_{endpoint.replace('.', '_').replace('-', '_')}": AGENT.format(
            provider=provider, endpoint=endpoint, stream=stream, answer=ANSWER
        )
        for provider, endpoint, stream in KEYS_ENV_CASES
    }
    pytester.makepyfile(**modules)
    _run(pytester, "--record-mode=once").assert_outcomes(passed=len(modules))
    for name in modules:
        assert (pytester.path / "cassettes" / name / "test_agent.yaml").is_file(), name
    for name in sentinel_env:  # CI: no key anywhere
        monkeypatch.delenv(name)
    replayed = _run(pytester, "--block-network")
    replayed.assert_outcomes(passed=len(modules))
    assert "needs" not in replayed.stdout.str()


SCHEMA_AGENT = """
import os
from harness.emulator import Emulator
from harness.script import turn
from openprogram import function, runtime

LimitType = float if os.environ.get("CHANGED") else int

@function(register=False)
def weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return "sunny"

@function(register=False)
def search(query: str, limit: LimitType = 3) -> str:
    \"\"\"Search the web.\"\"\"
    return "nothing"

def test_agent(recorded):
    with Emulator(turn.text("ok")) as emulator:
        upstream = emulator.base_url if recorded.records else None
        backend = recorded({provider!r}, model="m-1", upstream=upstream)
        assert runtime.exec("hi", tools=[weather, search], provider=backend) == "ok"
"""


def test_a_changed_tool_schema_is_one_failure_naming_the_tool_and_the_path(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, sentinel_env: dict[str, str]
) -> None:
    providers = ["anthropic", "bedrock", "gemini", "openai"]  # one test module each, run in this order
    pytester.makepyfile(**{f"test_{provider}": SCHEMA_AGENT.format(provider=provider) for provider in providers})
    _run(pytester, "--record-mode=once").assert_outcomes(passed=len(providers))
    monkeypatch.setenv("CHANGED", "1")
    result = _run(pytester, "--block-network")
    result.assert_outcomes(failed=len(providers))  # not "1 failed, 1 error" for any of them
    sections = failure_sections(result.stdout.str())
    assert len(sections) == len(providers), result.stdout.str()
    for provider, output in zip(providers, sections, strict=True):
        assert output.count("matches no unused recorded interaction") == 1, (provider, output)
        assert "ExecError" not in output, provider
        [line] = [line for line in output.splitlines() if line.startswith("first difference: ")]
        assert '.properties.limit.type: sent "number", recorded "integer"' in line, provider
        assert line.endswith("(in the tool 'search')"), provider


CORRUPT_PROJECT = """
import pytest
from openprogram import runtime

def test_rec(recorded):
    runtime.exec("hi", provider=recorded("openai", model="m-1"), tools=[])

@pytest.mark.vcr
def test_marked():
    import httpx2
    httpx2.get("https://api.openai.com/v1/models")
"""

_GOOD = {
    "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions", "body": "{}", "headers": {}},
    "response": {"status": {"code": 200, "message": "OK"}, "headers": {}, "body": {"string": "{}"}},
}


def _shaped(**changes: dict) -> str:
    import copy

    import yaml

    interaction = copy.deepcopy(_GOOD)
    for side, change in changes.items():
        interaction[side].update(change)
        interaction[side] = {key: value for key, value in interaction[side].items() if value is not None}
    return yaml.safe_dump({"version": 1, "interactions": [interaction]})


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "interactions:\n- request: [unclosed\n",
            "the cassette does not parse: line 3, column 1: did not find expected ',' or ']' "
            "(while parsing a flow sequence at line 2, column 12)",
        ),
        (
            _shaped(request={"headers": [["content-type", "application/json"]]}),
            "interactions[0].request.headers is a list; vcrpy stores headers as a mapping of name to values",
        ),
        (_shaped(response={"status": None}), "interactions[0].response has no status code"),
        (_shaped(request={"body": None}), "interactions[0].request has no body"),
    ],
    ids=["yaml", "headers-list", "no-status", "no-request-body"],
)
def test_a_broken_cassette_says_its_path_and_reason_once(pytester: pytest.Pytester, text: str, reason: str) -> None:
    pytester.makepyfile(test_c=CORRUPT_PROJECT)
    folder = pytester.path / "cassettes" / "test_c"
    folder.mkdir(parents=True)
    for name in ("test_rec", "test_marked"):
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    result = _run(pytester)
    result.assert_outcomes(errors=2)
    output = result.stdout.str()
    for name in ("test_rec", "test_marked"):
        assert output.count(f"{folder / name}.yaml: {reason}") == 1, output
    for noise in ("<unicode string>", "During handling", "direct cause", "Traceback", "KeyError", "ValueError"):
        assert noise not in output
    assert (folder / "test_rec.yaml").read_text(encoding="utf-8") == text


@pytest.mark.parametrize("mode", ["none", "once"])
def test_a_directory_where_the_cassette_goes_is_one_error_at_setup(pytester: pytest.Pytester, mode: str) -> None:
    # the recorded fixture called it "no interactions; record it", then failed at teardown with
    # IsADirectoryError from os.replace after the whole test had run against the provider
    pytester.makepyfile(test_c=CORRUPT_PROJECT)
    folder = pytester.path / "cassettes" / "test_c"
    for name in ("test_rec", "test_marked"):
        (folder / f"{name}.yaml").mkdir(parents=True)
    result = _run(pytester, f"--record-mode={mode}")
    result.assert_outcomes(errors=2)
    output = result.stdout.str()
    for name in ("test_rec", "test_marked"):
        assert output.count(f"{folder / name}.yaml: a directory, not a cassette file; move it away") == 1, output
    assert "IsADirectoryError" not in output and "Traceback" not in output


TYPO_PROJECT = """
import pytest

@pytest.fixture
def vcr_config():
    return {vcr_config}

{marker}
def test_typo(recorded):
    pass
"""


@pytest.mark.parametrize(
    ("vcr_config", "marker", "message"),
    [
        ("{}", "@pytest.mark.recorded(allow_unsed=True)", "@pytest.mark.recorded: unknown option 'allow_unsed'"),
        ("{}", "@pytest.mark.vcr(match_onn=['method'])", "@pytest.mark.vcr: unknown option 'match_onn'"),
        ("{'ignore_field': ['id']}", "", "the vcr_config fixture: unknown option 'ignore_field'"),
        ("{}", "@pytest.mark.recorded(max_ag='30d')", "@pytest.mark.recorded: unknown option 'max_ag'"),
        (
            "{'max_age': '30d', 'max_age_actions': 'fail'}",
            "",
            "the vcr_config fixture: unknown option 'max_age_actions'",
        ),
    ],
    ids=["recorded-marker", "vcr-marker", "vcr_config", "max_age", "max_age_action"],
)
def test_an_unknown_option_is_an_error_naming_the_closest(
    pytester: pytest.Pytester, vcr_config: str, marker: str, message: str
) -> None:
    pytester.makepyfile(test_typo=TYPO_PROJECT.format(vcr_config=vcr_config, marker=marker))
    result = _run(pytester)
    result.assert_outcomes(errors=1)
    closest = {
        "allow_unsed": "allow_unused",
        "match_onn": "match_on",
        "ignore_field": "ignore_fields",
        "max_ag": "max_age",
        "max_age_actions": "max_age_action",
    }
    typo = message.rsplit("'", 2)[1]
    assert f"{message}; did you mean {closest[typo]!r}?" in result.stdout.str()


PLAIN_MODE = """
import pytest

@pytest.mark.vcr(record_mode={mode!r})
def test_plain():
    pass
"""


@pytest.mark.parametrize("mode", ["sometimes", "rewrit"])
def test_a_bad_record_mode_on_the_vcr_marker_is_one_line_naming_the_modes(pytester: pytest.Pytester, mode: str) -> None:
    # vcrpy raised its ValueError from VCR() with a traceback, and its list lacks pytest-recording's rewrite
    pytester.makepyfile(test_plain=PLAIN_MODE.format(mode=mode))
    result = _run(pytester)
    result.assert_outcomes(errors=1)
    expected = f"@pytest.mark.vcr: record_mode {mode!r} is not one of none, once, new_episodes, all, rewrite"
    assert result.stdout.str().count(expected) == 1, result.stdout.str()
    assert "ValueError" not in result.stdout.str()


def test_every_accepted_option_is_documented() -> None:
    from harness.pytest_plugin._cassette_fixtures import known_options

    docs = (Path(__file__).resolve().parents[3] / "docs" / "record-replay.md").read_text(encoding="utf-8")
    options = docs[docs.index("## Options") :]
    assert sorted(name for name in known_options() if f"`{name}`" not in options) == []


def test_a_cassette_is_written_with_the_mode_the_umask_gives_and_keeps_its_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_two=TWO_CALLS)
    cassette = pytester.path / "cassettes" / "test_two" / "test_two.yaml"
    previous = os.umask(0o022)
    try:
        _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
        assert cassette.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
        cassette.chmod(0o640)  # a mode the project chose stays
        monkeypatch.setenv("CALLS", "1")
        _run(pytester, "--record-mode=rewrite").assert_outcomes(passed=1)
        assert len(cassettes.load(cassette)) == 1
        assert cassette.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(previous)


def test_a_session_loads_the_plugin_without_an_assert_rewrite_warning(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain(recorded):\n    assert recorded.mode == 'none'\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "default")  # as a user's session starts
    result.assert_outcomes(passed=1)
    assert "PytestAssertRewriteWarning" not in result.stdout.str() + result.stderr.str()


def _cut_last_event(cassette: Path) -> None:
    import yaml

    data = yaml.load(cassette.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    body = data["interactions"][-1]["response"]["body"]
    stored = body["string"]
    if isinstance(stored, bytes):  # an AWS event stream: the last message (metadata, with usage) loses its end
        body["string"] = stored[:-10]
    else:  # SSE: the stream ends inside its last JSON event (the usage chunk), before [DONE]
        last = stored.rstrip().rsplit("data: {", 1)[0]
        body["string"] = last + 'data: {"id": "chatcmpl-1", "usage": {"prompt_to'
    cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


@pytest.mark.parametrize(
    ("provider", "endpoint"),
    [
        ("openai", "chat.completions"),
        ("openai", "responses"),
        ("anthropic", "messages"),
        ("gemini", "streamGenerateContent"),
        ("bedrock", "converse-stream"),
    ],
)
def test_a_stream_cut_inside_its_last_event_replays_as_a_failure_not_a_short_success(
    pytester: pytest.Pytester, sentinel_env: dict[str, str], provider: str, endpoint: str
) -> None:
    cassette = _project(pytester, provider, endpoint, True)
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    _cut_last_event(cassette)
    result = _run(pytester, "--block-network")
    result.assert_outcomes(failed=1)
    assert "request 2" in result.stdout.str() and "is a stream cut inside its last event" in result.stdout.str()


BASE_URL_TEST = """
import os
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

def test_proxy(recorded):
    with Emulator(turn.text("via the proxy")) as emulator:
        if recorded.records:  # the project's proxy, as {variable} names it to every client
            os.environ[{variable!r}] = emulator.base_url + {suffix!r}
        try:
            backend = recorded({provider!r}, model="m-1", stream={stream!r})
            assert runtime.exec("hi", provider=backend, tools=[]) == "via the proxy"
        finally:
            os.environ.pop({variable!r}, None)
"""

BASE_URL_VARIABLES = [  # provider, its variable, what follows the server's root in it, the provider's host
    ("openai", "OPENAI_BASE_URL", "/v1", "https://api.openai.com/v1/chat/completions"),
    ("anthropic", "ANTHROPIC_BASE_URL", "", "https://api.anthropic.com/v1/messages"),
    ("gemini", "GOOGLE_GEMINI_BASE_URL", "", "https://generativelanguage.googleapis.com/v1beta/models/m-1:"),
]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("provider", "variable", "suffix", "uri"), BASE_URL_VARIABLES, ids=["openai", "anthropic", "gemini"]
)
def test_recording_honours_the_providers_base_url_variable_as_live_backend_does(
    pytester: pytest.Pytester,
    sentinel_env: dict[str, str],
    provider: str,
    variable: str,
    suffix: str,
    uri: str,
    stream: bool,
) -> None:
    # google-genai reads GOOGLE_GEMINI_BASE_URL itself: the cassette named the proxy, and no replay matched it
    pytester.makepyfile(
        test_proxy=BASE_URL_TEST.format(provider=provider, variable=variable, suffix=suffix, stream=stream)
    )
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_proxy" / "test_proxy.yaml"
    [interaction] = cassettes.load(cassette)
    assert interaction.request.uri.startswith(uri)  # replays anywhere
    assert all(value not in cassette.read_text(encoding="utf-8") for value in sentinel_env.values())
    _run(pytester, "--block-network").assert_outcomes(passed=1)


def test_identical_requests_replay_in_the_order_they_were_recorded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_same="""
        from harness.emulator import Emulator
        from harness.script import turn
        from openprogram import runtime

        def test_same(recorded):
            with Emulator(turn.text("one"), turn.text("two"), turn.text("three")) as emulator:
                backend = recorded("openai", model="m-1", upstream=emulator.base_url if recorded.records else None)
                assert [runtime.exec("same", provider=backend, tools=[]) for _ in range(3)] == ["one", "two", "three"]
        """
    )
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    _run(pytester, "--block-network").assert_outcomes(passed=1)


def test_recording_under_block_network_is_one_failure_saying_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_two=TWO_CALLS)
    result = _run(pytester, "--record-mode=once", "--block-network")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "request 1 (POST http://127.0.0.1:" in output and "could not be sent to be recorded" in output
    assert "--block-network blocks recording: record without it, replay with it" in output
    assert "ExceptionGroup" not in output and "TaskGroup" not in output
