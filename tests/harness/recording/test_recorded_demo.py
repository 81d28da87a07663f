"""The example agent (harness/cli/_demo.py) replayed from the project's own cassettes, one per provider.

The cassettes in ``cassettes/demo/`` were recorded by this file against the loopback emulator
playing the demo's script (see ``cassettes/README.md``). In CI they replay offline: a change in
what a backend sends (a prompt, a tool schema, a request field) fails here with a diff.
Re-record: ``python -m pytest tests/harness/recording/test_recorded_demo.py --record-mode=rewrite``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli._demo import demo_script, trip_advisor
from harness.emulator import Emulator
from harness.recording import _cassette as cassettes
from harness.recording._recorded import RecordedFixture
from openprogram import runtime

CASSETTES = Path(__file__).resolve().parents[3] / "cassettes" / "demo"
ANSWER = "Paris: 65.3°F with light rain. Pack a light jacket and an umbrella."

BACKENDS = [
    ("openai", "chat.completions", True),
    ("openai", "responses", True),
    ("anthropic", "messages", True),
    ("gemini", "streamGenerateContent", True),
    ("bedrock", "converse-stream", True),
]


@pytest.fixture
def vcr_cassette_dir() -> str:
    return str(CASSETTES)


@pytest.fixture
def upstream(recorded: RecordedFixture) -> Iterator[str | None]:
    if not recorded.records:  # a replay needs no server
        yield None
        return
    with Emulator(*demo_script().turns) as emulator:
        yield emulator.base_url


@pytest.mark.parametrize(("provider", "endpoint", "stream"), BACKENDS, ids=[f"{p}-{e}" for p, e, _ in BACKENDS])
def test_demo_agent(
    recorded: RecordedFixture, upstream: str | None, trace: object, provider: str, endpoint: str, stream: bool
) -> None:
    backend = recorded(provider, endpoint, model="demo-model", stream=stream, upstream=upstream)
    with runtime.use(backend, model="demo-model"):
        assert trip_advisor("Paris") == ANSWER
    run = trace.last  # type: ignore[attr-defined]
    results = [(m.tool_name, m.is_error) for m in run.tool_results]
    assert results == [("get_weather", False), ("convert_temperature", True), ("convert_temperature", False)]


def test_every_provider_has_its_recording_routed_to_its_real_host() -> None:
    files = sorted(CASSETTES.glob("*.yaml"))
    assert len(files) == len(BACKENDS)
    for path in files:
        loaded = cassettes.load(path)
        assert len(loaded) == 3, path  # parallel calls, the correction, the answer
        assert {(i.request.route.provider, i.request.route.endpoint) for i in loaded} <= {
            (p, e) for p, e, _ in BACKENDS
        }
        assert "127.0.0.1" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted(CASSETTES.glob("*.yaml")), ids=lambda p: p.stem)
def test_harness_conformance_replays_the_demo_cassettes(path: Path) -> None:
    from harness.recording._conformance import replay_cassette

    report = replay_cassette(path)
    assert [i["stop_reason"] for i in report["interactions"]] == ["toolUse", "toolUse", "stop"]
    assert report["interactions"][-1]["text"] == ANSWER
