"""``harness cassettes drift``: a cassette recorded in a user's project, re-sent to the emulator.

The emulator is the server whose wire does or does not match the recording: the cassette is
edited to stand for a recording made when the wire was shaped otherwise (a field renamed, an event
the server did not send yet), which is what drift against a live API finds after a change.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness.cli import main
from harness.emulator import Emulator
from harness.recording._tools import compare_replies
from harness.script import turn

pytest_plugins = ["pytester"]

SCRIPT = (turn.tool_call("weather", city="Paris"), turn.text("Sunny in Paris."))

AGENT = """
from harness.emulator import Emulator
from harness.script import turn
from openprogram import function, runtime

@function(register=False)
def weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return "sunny"

def test_agent(recorded):
    script = [turn.tool_call("weather", city="Paris"), turn.text("Sunny in Paris.")]
    with Emulator(*script) as emulator:
        backend = recorded({provider!r}, model="m-1", stream={stream!r}, upstream=emulator.base_url)
        assert runtime.exec("Weather?", tools=[weather], provider=backend) == "Sunny in Paris."
"""


@pytest.fixture(autouse=True)
def _keep_the_offline_guard() -> Iterator[None]:
    saved = socket.socket.connect, socket.socket.connect_ex, socket.socketpair
    yield
    socket.socket.connect, socket.socket.connect_ex, socket.socketpair = saved  # type: ignore[method-assign]


def _recorded(pytester: pytest.Pytester, provider: str, stream: bool) -> Path:
    pytester.makepyfile(test_agent=AGENT.format(provider=provider, stream=stream))
    pytester.runpytest("-p", "no:cacheprovider", "--record-mode=once").assert_outcomes(passed=1)
    return pytester.path / "cassettes" / "test_agent" / "test_agent.yaml"


def _drift(cassette: Path) -> tuple[int, list[str]]:
    with Emulator(*SCRIPT) as emulator:
        result = CliRunner().invoke(main, ["cassettes", "drift", str(cassette), "--base-url", emulator.base_url])
    assert "Traceback" not in result.output
    return result.exit_code, [line.removeprefix(f"{cassette}: ") for line in result.output.splitlines()]


def _edit_replies(cassette: Path, edit: object) -> None:
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    for interaction in data["interactions"]:
        interaction["response"]["body"]["string"] = edit(interaction["response"]["body"]["string"])  # type: ignore[operator]
    cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


@pytest.mark.parametrize(("provider", "stream"), [("anthropic", True), ("openai", False)])
def test_a_wire_of_the_recorded_shape_shows_no_drift(pytester: pytest.Pytester, provider: str, stream: bool) -> None:
    cassette = _recorded(pytester, provider, stream)
    assert _drift(cassette) == (0, ["no drift"])


def test_a_renamed_field_is_breaking_and_named(pytester: pytest.Pytester) -> None:
    cassette = _recorded(pytester, "openai", False)
    _edit_replies(cassette, lambda body: body.replace('"finish_reason"', '"finish_cause"'))
    code, lines = _drift(cassette)
    assert code == 1
    for index in (0, 1):
        assert f"interaction {index}: breaking: field body:choices[].finish_cause is gone" in lines
        assert f"interaction {index}: benign: new field body:choices[].finish_reason" in lines


def test_an_event_the_recording_lacks_is_benign_and_named(pytester: pytest.Pytester) -> None:
    cassette = _recorded(pytester, "anthropic", True)
    _edit_replies(cassette, lambda body: re.sub(r"event: message_delta\n.*?\n\n", "", body, flags=re.DOTALL))
    code, lines = _drift(cassette)
    assert code == 0  # the server only added
    assert "interaction 0: benign: new event 'message_delta'" in lines
    assert not [line for line in lines if "breaking" in line]


def test_a_type_change_a_lost_event_and_the_status_are_breaking() -> None:
    recorded = (200, b'data: {"type": "a", "n": 1}\n\ndata: {"type": "b"}\n\n', "text/event-stream")
    live = (500, b'data: {"type": "a", "n": "1"}\n\n', "text/event-stream")
    assert compare_replies(recorded, live) == [
        ("breaking", "status 200 is now 500"),
        ("breaking", "event 'b' is no longer sent"),
        ("breaking", "field a:n was number, is now string"),
        ("breaking", "field b:type is gone"),
    ]
