"""Bytes at any boundary and stalls (issue 36): the emulator delivers a reply's bytes cut where TCP
may cut them (inside an event, a UTF-8 character, an event-stream frame's prelude) and holds a
stalled stream open and silent until the client gives up or the emulator stops; the official
SDKs read a split reply whole; a campaign draws both by default, finds a reader that takes each
read as whole events (W4 or W1 when it loses an event quietly, W8 when the loss makes it
raise) and a client with no read timeout (W3), and their twins hold."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from harness.agents import replay_agent, run_agent_campaign
from harness.agents._replies import WELL_FORMED, kind_of, tier_of
from harness.emulator import Emulator, fault
from harness.scenarios import ScenarioError
from harness.scenarios._scenario import Scenario
from harness.script import turn
from tests.harness.agents import planted_delivery

ANSWER = "The answer is 5 € 🙂"
CHAT = [{"role": "user", "content": "q"}]


def _scenario_file(tmp_path: Path, wire: str) -> Path:
    path = tmp_path / "split.yaml"
    path.write_text(f"prompts: [q]\nturns:\n  - wire: {wire}\n    turn: {ANSWER}\n", encoding="utf-8")
    return path


def test_a_split_reply_arrives_in_exactly_the_pieces_the_scenario_names_cut_inside_a_character(
    tmp_path: Path,
) -> None:
    emulator = Emulator.from_file(_scenario_file(tmp_path, "{split: [7, 2]}"))
    body = {"model": "m", "messages": CHAT, "stream": True}
    with emulator.sync_http_client() as client, client.stream("POST", "http://x/v1/chat/completions", json=body) as got:
        pieces = list(got.iter_raw())
    whole = b"".join(pieces)
    sizes = [7, 2] * len(pieces)
    assert [len(p) for p in pieces[:-1]] == sizes[: len(pieces) - 1] and len(pieces[-1]) <= sizes[len(pieces) - 1]
    assert whole.startswith(b"data: ") and whole.rstrip().endswith(b"data: [DONE]")  # the bytes unchanged
    assert "€".encode() in whole and "🙂".encode() in whole  # as UTF-8 on the wire, not escaped
    # the body is UTF-8: a piece that alone is not was cut inside a character
    with pytest.raises(UnicodeDecodeError):
        for piece in pieces:
            piece.decode("utf-8")


def test_the_official_sdks_read_a_split_reply_whole_in_process() -> None:
    split = (1,), (3, 250), (17,)
    emulator = Emulator(*(fault.split(sizes, turn.text(ANSWER)) for sizes in split * 2))
    chat = openai.OpenAI(base_url="http://x/v1", api_key="k", http_client=emulator.sync_http_client(), max_retries=0)
    for _ in split:
        stream = chat.chat.completions.create(model="m", messages=CHAT, stream=True)  # type: ignore[arg-type]
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == ANSWER

    async def messages() -> list[str]:
        client = anthropic.AsyncAnthropic(base_url="http://x", api_key="k", http_client=emulator.http_client())
        said = []
        for _ in split:
            async with client.messages.stream(model="c", max_tokens=10, messages=CHAT) as stream:  # type: ignore[arg-type]
                said.append("".join([text async for text in stream.text_stream]))
        return said

    assert asyncio.run(messages()) == [ANSWER] * 3


def test_boto3_reads_a_bedrock_stream_split_inside_its_frames_preludes_on_loopback() -> None:
    import boto3
    from botocore.config import Config

    # 5 bytes a piece: every frame's 12-byte prelude (lengths and their CRC) is cut twice
    in_process = Emulator(fault.split([5], turn.text(ANSWER)))
    body = {"messages": [{"role": "user", "content": [{"text": "q"}]}]}
    with in_process.sync_http_client() as raw, raw.stream("POST", "http://x/model/m/converse-stream", json=body) as got:
        pieces = list(got.iter_raw())
    assert int.from_bytes(b"".join(pieces)[:4], "big") > 12 and {len(p) for p in pieces[:-1]} == {5}
    with Emulator(fault.split([5], turn.text(ANSWER)), fault.split([1], turn.text(ANSWER))) as emulator:
        client = boto3.client(
            "bedrock-runtime",
            endpoint_url=emulator.base_url,
            region_name="us-east-1",
            aws_access_key_id="x",
            aws_secret_access_key="x",
            config=Config(retries={"max_attempts": 0}),
        )
        for _ in range(2):
            reply = client.converse_stream(modelId="m", messages=[{"role": "user", "content": [{"text": "q"}]}])
            text = "".join(
                e["contentBlockDelta"]["delta"].get("text", "") for e in reply["stream"] if "contentBlockDelta" in e
            )
            assert text == ANSWER


def test_a_stalled_stream_raises_the_clients_read_timeout_in_process_sync_and_async() -> None:
    emulator = Emulator(
        fault.stall(1, turn.text("hi")), fault.stall(0, turn.text("hi")), fault.stall(1, turn.text("hi"))
    )
    chat = openai.OpenAI(base_url="http://x/v1", api_key="k", http_client=emulator.sync_http_client(), max_retries=0)
    started = time.monotonic()
    got: list[str] = []
    with pytest.raises(openai.APITimeoutError):
        for chunk in chat.chat.completions.create(model="m", messages=CHAT, stream=True, timeout=0.2):  # type: ignore[arg-type]
            got.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
    assert got == ["hi"] and 0.2 <= time.monotonic() - started < 2  # its first event, then silence
    with pytest.raises(openai.APITimeoutError):  # not streamed: the status and headers, no body
        chat.chat.completions.create(model="m", messages=CHAT, timeout=0.2)  # type: ignore[arg-type]

    async def stalled() -> None:
        async with emulator.http_client(timeout=0.2) as client:
            body = {"model": "m", "messages": CHAT, "stream": True}
            async with client.stream("POST", "http://x/v1/chat/completions", json=body) as response:
                async for _ in response.aiter_raw():
                    pass

    with pytest.raises(httpx2.ReadTimeout):
        asyncio.run(stalled())


def test_a_stalled_stream_on_loopback_waits_for_the_client_or_closes_when_the_emulator_stops() -> None:
    before = threading.active_count()
    outcome: list[Any] = []

    def read(timeout: float | None) -> None:
        client = openai.OpenAI(base_url=f"{emulator.base_url}/v1", api_key="k", max_retries=0, timeout=timeout)
        try:
            outcome.extend(client.chat.completions.create(model="m", messages=CHAT, stream=True))  # type: ignore[arg-type]
        except Exception as exc:  # what the client saw is what the test checks
            outcome.append(exc)

    with Emulator(fault.stall(1, turn.text("hi")), fault.stall(1, turn.text("hi"))) as emulator:
        read(0.3)
        assert isinstance(outcome[-1], openai.APITimeoutError)
        waiting = threading.Thread(target=read, args=(None,))  # no read timeout: it waits as long as it is held
        waiting.start()
        time.sleep(0.5)
        assert waiting.is_alive()
    waiting.join(5)
    assert not waiting.is_alive() and isinstance(outcome[-1], openai.APIConnectionError)  # closed, not hung
    assert threading.active_count() <= before


def test_a_slow_first_byte_comes_within_a_sane_read_timeout_and_not_within_a_short_one() -> None:
    emulator = Emulator(fault.slow_first_byte(0.3, turn.text("late")), fault.slow_first_byte(0.3, turn.text("late")))
    with emulator.sync_http_client(timeout=0.1) as client, pytest.raises(httpx2.ReadTimeout):
        client.post("http://x/v1/chat/completions", json={"model": "m", "messages": CHAT})
    with Emulator(fault.slow_first_byte(0.3, turn.text("late"))) as served:
        chat = openai.OpenAI(base_url=f"{served.base_url}/v1", api_key="k", max_retries=0, timeout=2.0)
        started = time.monotonic()
        assert chat.chat.completions.create(model="m", messages=CHAT).choices[0].message.content == "late"  # type: ignore[arg-type]
        assert time.monotonic() - started >= 0.3


def test_the_scenario_file_writes_each_delivery_and_refuses_a_bad_one_in_one_line() -> None:
    data = {
        "prompts": ["q"],
        "turns": [
            {"wire": {"split": [3, 1]}, "turn": ANSWER},
            {"wire": "stall", "turn": "hi"},
            {"wire": {"slow_first_byte": 0.2}, "turn": "hi"},
        ],
    }
    scenario = Scenario.from_data(data)
    assert [t.wire for t in scenario.turns] == [(("split", (3, 1)),), (("stall", 1),), (("slow_first_byte", 0.2),)]
    assert Scenario.from_yaml(scenario.to_yaml()).turns == scenario.turns
    kinds = [kind_of(t) for t in scenario.turns]
    assert kinds == ["split bytes", "stalled stream", "slow first byte"]
    assert {tier_of(k) for k in kinds} == {"network"}
    assert {"split bytes", "slow first byte"} <= WELL_FORMED and "stalled stream" not in WELL_FORMED
    for wire, said in (
        ("{split: [0]}", "split takes the sizes"),
        ("{stall: -1}", "stall takes"),
        ("{slow_first_byte: x}", "slow_first_byte takes"),
    ):
        with pytest.raises(ScenarioError, match=said) as refused:
            Scenario.from_yaml(f"prompts: [q]\nturns:\n  - wire: {wire}\n    turn: hi\n")
        assert "\n" not in str(refused.value).strip()


def test_a_reader_that_takes_each_read_as_whole_events_is_found_and_its_twin_holds(tmp_path: Path) -> None:
    result = run_agent_campaign(planted_delivery.whole_events, save_dir=tmp_path)
    failure = result.failure
    assert failure is not None and failure.violation.invariant in ("W4", "W1", "W8"), failure and str(failure.violation)
    assert len(failure.scenario.turns) == 1 and kind_of(failure.scenario.turns[0]) == "split bytes"
    assert failure.path is not None
    _, again = replay_agent(planted_delivery.whole_events, failure.path)
    assert [v.invariant for v in again.violations][:1] == [failure.violation.invariant]
    _, twin = replay_agent(planted_delivery.buffered_events, failure.path)
    assert twin.ok, [str(v) for v in twin.violations]
    held = run_agent_campaign(planted_delivery.buffered_events, save=False)
    assert held.ok, held.failure and str(held.failure.violation)
    assert held.stats.kinds["split bytes"] > 0 and held.stats.kinds["stalled stream"] > 0


def test_a_client_with_no_read_timeout_is_found_waiting_on_a_stall_and_its_twin_holds(tmp_path: Path) -> None:
    result = run_agent_campaign(planted_delivery.no_read_timeout, save_dir=tmp_path, time_bound=3.0)
    failure = result.failure
    assert failure is not None and failure.violation.invariant == "W3", failure and str(failure.violation)
    message = str(failure.violation)
    assert "the stream stalled after its first event" in message or "stalled before its first event" in message
    assert "(no bytes, connection open); the run was still waiting at the time bound (3 s)" in message
    assert "the client has no read timeout below the time bound" in message
    assert [kind_of(t) for t in failure.scenario.turns] == ["stalled stream"]
    assert failure.path is not None
    _, again = replay_agent(planted_delivery.no_read_timeout, failure.path)
    assert [v.invariant for v in again.violations] == ["W3"]
    _, twin = replay_agent(planted_delivery.with_read_timeout, failure.path)
    assert twin.ok, [str(v) for v in twin.violations]
    held = run_agent_campaign(planted_delivery.with_read_timeout, save=False, time_bound=3.0)
    assert held.ok, held.failure and str(held.failure.violation)
    assert held.stats.kinds["slow first byte"] > 0
