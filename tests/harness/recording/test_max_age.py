"""``max_age``: how old a cassette may get before a test warns, fails or records it anew, under the
``recorded`` fixture and the plain ``vcr`` marker, as a user's project meets it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from harness.recording import _age as age
from harness.recording import _cassette as cassettes

pytest_plugins = ["pytester"]

RECORDED = """
import pytest
from harness.emulator import Emulator
from harness.script import turn
from openprogram import runtime

@pytest.mark.recorded({options})
def test_agent(recorded):
    with Emulator(turn.text("fresh")) as emulator:
        upstream = emulator.base_url if recorded.records else None
        backend = recorded("openai", model="m-1", upstream=upstream)
        assert runtime.exec("hi", provider=backend, tools=[]) == "fresh"
    print("EMULATOR ASKED", len(emulator.requests))
"""

MARKED = """
import asyncio
import openai, pytest
from harness.emulator import Emulator
from harness.script import turn

@pytest.fixture
def vcr_config():
    return dict({options})

@pytest.mark.vcr
@pytest.mark.allow_model_requests
def test_agent():
    async def ask(base_url):
        client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key="k", max_retries=0)
        reply = await client.chat.completions.create(model="m", messages=[{{"role": "user", "content": "hi"}}])
        await client.close()
        return reply.choices[0].message.content
    with Emulator(turn.text("fresh")) as emulator:
        assert asyncio.run(ask(emulator.base_url)) == "fresh"
    print("EMULATOR ASKED", len(emulator.requests))
"""

PROJECTS = {"recorded": RECORDED, "vcr": MARKED}


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "-q", "-rN", "-s", "-W", "default", *args)


def _project(pytester: pytest.Pytester, kind: str, options: str) -> Path:
    pytester.makepyfile(test_agent=PROJECTS[kind].format(options=options))
    return pytester.path / "cassettes" / "test_agent" / "test_agent.yaml"


def _date(cassette: Path) -> datetime | None:
    return age.recorded_at(yaml.safe_load(cassette.read_text(encoding="utf-8")))


def _age_by(cassette: Path, days: int) -> None:
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    data["recorded_at"] = age.date_text(datetime.now(UTC) - timedelta(days=days))
    cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


@pytest.mark.parametrize("kind", sorted(PROJECTS))
def test_a_recording_is_dated_and_a_fresh_one_replays_quietly(pytester: pytest.Pytester, kind: str) -> None:
    cassette = _project(pytester, kind, "max_age='30d', max_age_action='fail'")
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    recorded = _date(cassette)
    assert recorded is not None and abs(datetime.now(UTC) - recorded) < timedelta(minutes=5)
    assert cassette.read_text(encoding="utf-8").startswith("version: 1\nrecorded_at: ")
    result = _run(pytester, "--block-network")
    result.assert_outcomes(passed=1)
    assert "CassetteAgeWarning" not in result.stdout.str()


@pytest.mark.parametrize("kind", sorted(PROJECTS))
def test_an_old_cassette_warns_naming_it_its_age_and_how_to_rerecord(pytester: pytest.Pytester, kind: str) -> None:
    cassette = _project(pytester, kind, "max_age='30d'")
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    _age_by(cassette, 41)
    result = _run(pytester, "--block-network")
    result.assert_outcomes(passed=1)
    output = result.stdout.str()
    assert "CassetteAgeWarning" in output
    assert f"{cassette}: recorded 41 days ago (" in output
    assert "older than its max_age of 30 days; re-record it: --record-mode=rewrite" in output


@pytest.mark.parametrize("kind", sorted(PROJECTS))
def test_an_old_cassette_fails_once_when_asked(pytester: pytest.Pytester, kind: str) -> None:
    cassette = _project(pytester, kind, "max_age=30 * 86400, max_age_action='fail'")
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    _age_by(cassette, 41)
    before = cassette.read_bytes()
    result = _run(pytester, "--block-network")
    result.assert_outcomes(errors=1)
    output = result.stdout.str()
    assert output.count(f"{cassette}: recorded 41 days ago") == 1, output
    assert "Traceback" not in output
    assert cassette.read_bytes() == before


@pytest.mark.parametrize("kind", sorted(PROJECTS))
def test_an_old_cassette_is_recorded_anew_when_recording_is_allowed(pytester: pytest.Pytester, kind: str) -> None:
    cassette = _project(pytester, kind, "max_age='30d', max_age_action='rerecord'")
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    _age_by(cassette, 41)
    renewed = _run(pytester, "--record-mode=once")
    renewed.assert_outcomes(passed=1)
    assert "EMULATOR ASKED 1" in renewed.stdout.str()  # sent again, not replayed
    recorded = _date(cassette)
    assert recorded is not None and datetime.now(UTC) - recorded < timedelta(minutes=5)
    assert len(cassettes.load(cassette)) == 1  # anew, not added to
    _age_by(cassette, 41)  # in replay it cannot be renewed: it warns
    replayed = _run(pytester, "--block-network")
    replayed.assert_outcomes(passed=1)
    assert "re-records it in a mode that records, not in replay" in replayed.stdout.str()


def test_new_episodes_keeps_the_date_of_the_oldest_interaction(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_agent="""
        import os
        from harness.emulator import Emulator
        from harness.script import turn
        from openprogram import runtime

        def test_agent(recorded):
            with Emulator(turn.text("one"), turn.text("two")) as emulator:
                backend = recorded("openai", model="m-1", upstream=emulator.base_url if recorded.records else None)
                for n in range(int(os.environ["CALLS"])):
                    runtime.exec(f"question {n}", provider=backend, tools=[])
        """
    )
    cassette = pytester.path / "cassettes" / "test_agent" / "test_agent.yaml"
    monkeypatch.setenv("CALLS", "1")
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    _age_by(cassette, 10)
    old = _date(cassette)
    monkeypatch.setenv("CALLS", "2")
    _run(pytester, "--record-mode=new_episodes").assert_outcomes(passed=1)
    assert len(cassettes.load(cassette)) == 2
    assert _date(cassette) == old
    # rewrite records everything anew, even when the emulator sends the very same bytes again
    _run(pytester, "--record-mode=rewrite").assert_outcomes(passed=1)
    renewed = _date(cassette)
    assert renewed is not None and datetime.now(UTC) - renewed < timedelta(minutes=5)


def test_an_undated_cassette_warns_that_its_age_is_unknown(pytester: pytest.Pytester) -> None:
    cassette = _project(pytester, "recorded", "max_age='30d'")
    _run(pytester, "--record-mode=once").assert_outcomes(passed=1)
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    del data["recorded_at"]  # recorded before cassettes were dated
    cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    result = _run(pytester, "--block-network")
    result.assert_outcomes(passed=1)
    assert f"{cassette}: the cassette has no recorded_at date" in result.stdout.str()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("max_age='30 days'", "max_age '30 days' is not a positive age"),
        ("max_age='30d', max_age_action='delete'", "max_age_action 'delete' is not one of 'warn', 'fail', 'rerecord'"),
        ("max_age_action='fail'", "max_age_action needs a max_age"),
    ],
)
def test_a_bad_max_age_is_one_line_saying_what_is_accepted(
    pytester: pytest.Pytester, options: str, message: str
) -> None:
    _project(pytester, "recorded", options)
    result = _run(pytester)
    result.assert_outcomes(errors=1)
    assert f"@pytest.mark.recorded: {message}" in result.stdout.str()


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("30d", 30 * 86400), ("1w2d", 9 * 86400), ("12h", 43200), (90, 90), (timedelta(hours=1), 3600)],
)
def test_max_age_reads_units_seconds_and_timedeltas(value: object, seconds: int) -> None:
    assert age.parse_max_age(value) == timedelta(seconds=seconds)
