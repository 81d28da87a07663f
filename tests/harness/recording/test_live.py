"""Live runs: ``--live``, the ``live`` marker and ``live_backend``, as a user's project meets them.

A live test must never run by accident (it spends money) and never be refused by the guard when
the user did ask for it. The pytester projects below check both sides: skipped, with a reason
naming what is missing, without ``--live`` or without the key; let through the guard with both
(and no other test is); and, pointed at the loopback emulator by the SDK's own base-URL variable,
a real end-to-end run that stays offline.
"""

from __future__ import annotations

import pytest

from harness.recording import _live as live
from harness.recording._live import LIVE, LiveError, settings
from openprogram import providers
from tests.harness.support import ATTEMPTS_FIXTURE

pytest_plugins = ["pytester"]

ENV_VARS = sorted(
    {name for row in LIVE.values() for names in row.credentials for name in names}
    | {row.base_url_var for row in LIVE.values()}
    | {row.model_var for row in LIVE.values()}
    | {row.endpoint_var for row in LIVE.values() if row.endpoint_var}
    | {"AWS_REGION", "AWS_DEFAULT_REGION", "CI", providers.ALLOW_MODEL_REQUESTS_ENV}
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, pytester: pytest.Pytester) -> pytest.MonkeyPatch:
    """No provider variable of the machine leaks into a test; the user's project quiet about asyncio."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return monkeypatch


# ---------------------------------------------------------------------------------------------
# harness.recording._live: what the environment gives
# ---------------------------------------------------------------------------------------------


def test_settings_default_to_the_documented_models_and_endpoints() -> None:
    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "GOOGLE_API_KEY": "k", "AWS_PROFILE": "p"}
    chosen = {name: settings(name, environ=env) for name in LIVE}
    assert [(s.endpoint, s.model, s.base_url) for s in chosen.values()] == [
        ("chat.completions", "gpt-4o-mini", None),
        ("messages", "claude-3-5-haiku-latest", None),
        ("streamGenerateContent", "gemini-2.0-flash", None),
        ("converse-stream", "anthropic.claude-3-5-haiku-20241022-v1:0", None),
    ]
    assert chosen["openai"].connection.keys == "env" and chosen["openai"].connection.base_url is None


def test_settings_read_models_endpoints_base_urls_and_region_from_the_environment() -> None:
    env = {
        "OPENAI_API_KEY": "k",
        "OPENAI_BASE_URL": "https://proxy.example/openai/v1/",
        "HARNESS_OPENAI_MODEL": "gpt-4.1",
        "HARNESS_OPENAI_ENDPOINT": "responses",
        "AWS_ACCESS_KEY_ID": "a",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "HARNESS_BEDROCK_ENDPOINT": "converse",
    }
    openai = settings("openai", environ=env)
    assert (openai.endpoint, openai.model, openai.base_url) == ("responses", "gpt-4.1", "https://proxy.example/openai")
    assert openai.connection.base_url == "https://proxy.example/openai" and openai.connection.keys == "env"
    bedrock = settings("bedrock", environ=env)
    assert (bedrock.endpoint, bedrock.region) == ("converse", "eu-west-1")
    assert settings("openai", "chat.completions", model="o3", environ=env).model == "o3"  # arguments win


def test_missing_credentials_name_what_to_set() -> None:
    assert live.missing_credentials("openai", {}) == "OPENAI_API_KEY"
    assert live.missing_credentials("gemini", {}) == "GEMINI_API_KEY, or GOOGLE_API_KEY"
    assert live.missing_credentials("bedrock", {"AWS_ACCESS_KEY_ID": "a"}) == (
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE"
    )
    assert live.missing_credentials("gemini", {"GOOGLE_API_KEY": "k"}) is None
    assert live.missing_credentials("openai", {"OPENAI_API_KEY": ""}) == "OPENAI_API_KEY"  # empty is unset


@pytest.mark.parametrize(
    ("provider", "env", "message"),
    [
        ("openai", {}, "a live openai backend needs OPENAI_API_KEY in the environment"),
        ("mistral", {}, "no live backend for the provider 'mistral' (known: anthropic, bedrock, gemini, openai)"),
        (
            "openai",
            {"OPENAI_API_KEY": "k", "HARNESS_OPENAI_ENDPOINT": "completions"},
            "no openai endpoint 'completions' (from HARNESS_OPENAI_ENDPOINT); known: chat.completions, responses",
        ),
        (
            "openai",
            {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:9"},
            "OPENAI_BASE_URL='http://127.0.0.1:9': expected the OpenAI SDK's form, ending in /v1",
        ),
    ],
)
def test_settings_refuse_what_cannot_work_saying_why(provider: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(LiveError) as raised:
        settings(provider, environ=env)
    assert str(raised.value) == message


# ---------------------------------------------------------------------------------------------
# The plugin, as a user's project uses it
# ---------------------------------------------------------------------------------------------

CONFTEST = ATTEMPTS_FIXTURE

USER_TESTS = """
import pytest
from openprogram import runtime


@pytest.mark.live
def test_marked(live_backend, attempts):
    result = runtime.exec_result("hi", tools=[], provider=live_backend)
    # past the guard: the backend looked the provider's host up (the conftest refused the lookup)
    assert attempts == ["api.openai.com"], result.messages[-1].error_message
    assert not result.messages[-1].error_message.startswith("real model request refused")


def test_fixture_alone_makes_a_live_test(live_backend, attempts):
    runtime.exec_result("hi", tools=[], provider=live_backend)
    assert attempts == ["api.openai.com"]


@pytest.mark.live("anthropic")
def test_other_provider(live_backend):
    assert type(live_backend).__name__ == "AnthropicProvider"


def test_not_live_is_still_refused(attempts):
    from harness.recording._clients import backend
    result = runtime.exec_result("hi", tools=[], provider=backend("openai", "chat.completions", model="m"))
    assert result.messages[-1].error_message.startswith("real model request refused")
    assert attempts == []
"""


@pytest.fixture
def project(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def outcomes(project: pytest.Pytester, *args: str) -> dict[str, str]:
    """Test name -> ``passed``, ``failed`` or the skip reason, for one run of the project."""
    recorded = project.inline_run("-p", "no:randomly", *args)
    seen: dict[str, str] = {}
    for report in recorded.getreports("pytest_runtest_logreport"):
        name = report.nodeid.rpartition("::")[2]
        if report.skipped:
            seen[name] = report.longrepr[2].removeprefix("Skipped: ")
        elif report.failed:
            seen[name] = f"failed: {report.longreprtext}"
        elif report.when == "call":
            seen[name] = "passed"
    return seen


def test_without_live_every_live_test_is_skipped_naming_what_is_missing(project: pytest.Pytester) -> None:
    assert outcomes(project) == {
        "test_marked": "live test: needs --live and OPENAI_API_KEY",
        "test_fixture_alone_makes_a_live_test": "live test: needs --live and OPENAI_API_KEY",
        "test_other_provider": "live test: needs --live and ANTHROPIC_API_KEY",
        "test_not_live_is_still_refused": "passed",
    }


def test_with_the_keys_but_without_live_the_reason_is_the_option(
    project: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("OPENAI_API_KEY", "sk-live-test")
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-ant-live-test")
    assert set(outcomes(project).values()) == {"live test: needs --live", "passed"}


def test_with_live_but_no_key_the_reason_is_the_key(project: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-ant-live-test")
    assert outcomes(project, "--live") == {
        "test_marked": "live test: needs OPENAI_API_KEY",
        "test_fixture_alone_makes_a_live_test": "live test: needs OPENAI_API_KEY",
        "test_other_provider": "passed",
        "test_not_live_is_still_refused": "passed",
    }


def test_with_live_and_the_keys_live_tests_pass_the_guard_and_no_other_test_does(
    project: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("OPENAI_API_KEY", "sk-live-test")
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-ant-live-test")
    assert set(outcomes(project, "--live").values()) == {"passed"}


def test_an_unknown_provider_in_the_marker_fails_the_test_naming_it(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.live("mistral")
        def test_it():
            pass
        """
    )
    result = pytester.runpytest("--live")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.live('mistral'): no such provider (known: anthropic, bedrock*"])


EMULATED = """
import pytest
from harness.emulator import Emulator
from openprogram import runtime

BASE_URLS = {
    "openai": ("OPENAI_BASE_URL", "/v1"),
    "anthropic": ("ANTHROPIC_BASE_URL", ""),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", ""),
    "bedrock": ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", ""),
}


@pytest.fixture
def emulator(request, monkeypatch):
    provider = request.node.get_closest_marker("live").args[0]
    with Emulator(f"hello from the emulated {provider}") as emu:
        variable, suffix = BASE_URLS[provider]
        monkeypatch.setenv(variable, emu.base_url + suffix)
        yield emu


@pytest.mark.parametrize("provider", [
    pytest.param(name, marks=pytest.mark.live(name)) for name in BASE_URLS
])
def test_a_live_test_runs_offline_against_the_emulator(provider, emulator, live_backend):
    assert runtime.exec("hi", tools=[], provider=live_backend) == f"hello from the emulated {provider}"
    assert len(emulator.requests) == 1
"""


def test_the_base_url_variables_point_live_tests_at_the_emulator(
    pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "OPENAI_API_KEY": "sk-emulated",
        "ANTHROPIC_API_KEY": "sk-ant-emulated",
        "GEMINI_API_KEY": "emulated",
        "AWS_ACCESS_KEY_ID": "AKIDEMULATED",
        "AWS_SECRET_ACCESS_KEY": "emulated",
        "AWS_REGION": "us-east-1",
    }.items():
        clean_env.setenv(name, value)
    pytester.makepyfile(test_emulated=EMULATED)
    result = pytester.runpytest("--live", "-p", "no:randomly")
    result.assert_outcomes(passed=4)
    skipped = pytester.runpytest("-p", "no:randomly")  # the same tests without --live: nothing runs
    skipped.assert_outcomes(skipped=4)


def test_the_skip_report_points_at_the_test_not_the_plugin(project: pytest.Pytester) -> None:
    result = project.runpytest("-rs", "-p", "no:randomly")
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_user.py:5: live test: needs --live and OPENAI_API_KEY"])
    assert "pytest_plugin.py" not in result.stdout.str()
