"""The forms of a trace meant for people and snapshot files: ``Trace.snapshot()`` and ``render(full=True)``.

A snapshot test stores one of these and fails when it changes, so each must be small enough to
review, hold nothing that varies between two runs of one scenario, and leave nothing out that a
reviewer needs (a tool result cut to 120 characters is a snapshot that cannot catch a change
past them).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness import ScriptedProvider, turn
from harness.clock import DeterministicClock
from harness.trace._snapshot import snapshot
from harness.trace._trace import Trace
from harness.trace._trace_recorder import RunCollector, TraceRecorder
from openprogram import agentic_function, function, runtime
from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop, observe_runs
from openprogram.tools import as_agent_tool

LONG_RESULT = "weather report: " + "sunny, " * 80 + "END OF REPORT"


def lookup(q: str) -> str:
    return LONG_RESULT if q == "long" else f"found {q}"


LOOKUP = {
    "spec": {
        "name": "lookup",
        "description": "Look something up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    },
    "execute": lookup,
}


def record(*turns: Any, prompt: str = "what is the weather?") -> Trace:
    """One run of the loop on a script, with a ledger and the scenario clock."""

    async def main() -> Trace:
        provider = ScriptedProvider(*turns)
        recorder = TraceRecorder()
        config = AgentLoopConfig(provider=provider, clock=DeterministicClock())
        context = AgentContext(tools=recorder.wrap_tools([as_agent_tool(LOOKUP)]))
        with observe_runs(recorder.on_event):
            stream = agent_loop([prompt], context, config)
            async for _ in stream:
                pass
            messages = await stream.result()
        return recorder.finish(provider.requests, new_messages=messages)

    return asyncio.run(main())


def two_requests() -> Trace:
    return record(turn.tool_call("lookup", q="weather"), turn.text("It is sunny today, as the lookup said."))


def test_the_snapshot_of_a_two_request_run_is_small_and_has_no_streaming_detail() -> None:
    trace = two_requests()
    text = trace.snapshot_json()

    assert len(text.encode()) < 3_000, text
    assert len(text) * 3 < len(trace.to_json())  # the full record is mostly streaming partials
    assert "partial" not in text and "delta" not in text and "message_update" not in text

    data = trace.snapshot()
    assert list(data) == ["reason", "error", "messages", "requests", "ledger", "nested"]
    assert data["reason"] == "stop" and data["error"] is None and data["nested"] == []
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "toolResult", "assistant"]
    assert data["messages"][1]["content"] == [
        {"type": "toolCall", "id": "call_1", "name": "lookup", "arguments": {"q": "weather"}}
    ]
    assert data["messages"][2] == {
        "role": "toolResult",
        "tool_call_id": "call_1",
        "tool_name": "lookup",
        "content": "found weather",
        "timestamp": 1_704_067_200_002,
    }
    assert data["ledger"] == [
        {
            "tool_name": "lookup",
            "tool_call_id": "call_1",
            "arguments": {"q": "weather"},
            "outcome": "returned",
            "text": "found weather",
            "is_error": False,
        }
    ]


def test_each_request_shows_only_what_the_previous_one_had_not_sent() -> None:
    first, second = two_requests().snapshot()["requests"]

    assert first["tools"] == ["lookup"] and first["message_count"] == 1 and first["repeats"] == 0
    assert [m["content"] for m in first["messages"]] == ["what is the weather?"]
    # the second request re-sends the prompt; the snapshot says so instead of repeating it
    assert second["message_count"] == 3 and second["repeats"] == 1
    assert [m["role"] for m in second["messages"]] == ["assistant", "toolResult"]


def test_the_snapshot_is_byte_stable_across_runs_and_round_trips_through_json() -> None:
    one, two = two_requests(), two_requests()

    assert one.snapshot_json() == two.snapshot_json()
    assert json.loads(one.snapshot_json()) == one.snapshot() == snapshot(one)  # no nested runs here
    assert json.loads(json.dumps(one.snapshot())) == one.snapshot()
    assert one.snapshot_json().endswith("}\n")  # a file a snapshot tool can store as it is


def test_the_snapshot_changes_when_the_conversation_does() -> None:
    base = two_requests().snapshot_json()
    other = record(turn.tool_call("lookup", q="rain"), turn.text("It is sunny today, as the lookup said."))

    assert other.snapshot_json() != base
    assert '"found rain"' in other.snapshot_json()


def test_the_full_rendering_keeps_a_long_tool_result_whole() -> None:
    trace = record(turn.tool_call("lookup", q="long"), turn.text("x" * 300))

    short, full = trace.render(), trace.render(full=True)
    assert LONG_RESULT not in short and "..." in short  # a failure report stays readable
    assert f"tool lookup#call_1 -> {LONG_RESULT}" in full
    assert "x" * 300 in full
    assert full.splitlines()[0] == "agent_start" and len(full.splitlines()) == len(short.splitlines())
    assert LONG_RESULT in trace.snapshot()["messages"][2]["content"]


def test_a_nested_run_is_in_the_snapshot_with_its_own_messages() -> None:
    @function(register=False)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @agentic_function(register=False)
    def expert(question: str) -> str:
        """Ask the arithmetic expert."""
        return runtime.exec(question, tools=[add])

    provider = ScriptedProvider(
        turn.tool_call("expert", question="2+2?"),
        turn.tool_call("add", a=2, b=2),
        turn.text("4"),
        turn.text("the expert says 4"),
    )
    collector = RunCollector()
    collector.watch(provider)
    with observe_runs(collector.on_event), runtime.use(provider):
        assert runtime.exec("ask the expert", tools=[expert], clock=DeterministicClock()) == "the expert says 4"

    data = collector.last.snapshot()
    assert data["ledger"] is None  # the collector keeps no ledger, and the snapshot does not invent one
    assert len(data["requests"]) == 4
    (nested,) = data["nested"]
    assert nested["run"] == "nested run 1 inside expert#call_1" and nested["reason"] == "stop"
    assert [m["role"] for m in nested["messages"]] == ["user", "assistant", "toolResult", "assistant"]
    assert nested["messages"][-1]["content"] == "4"
    assert data["messages"][-1]["content"] == "the expert says 4"
    json.dumps(data)  # JSON-able as it is
