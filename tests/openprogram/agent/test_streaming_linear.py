"""Streaming a reply costs time and memory linear in its length (DESIGN 4, Robustness).

Behaviour, not time: memory held by a consumer that only awaits ``result()``, the snapshots a
streaming consumer sees (each ``message_update`` shows exactly the deltas so far), that the lazy
snapshots behave as ordinary models wherever a user touches them, and that a long reply does not
hold up another run on the same event loop.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import pickle
import random
import tracemalloc
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from harness import ScriptedProvider, turn
from harness.script import estimate_usage
from openprogram import function
from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop
from openprogram.agent.events import AgentEvent, AgentEventMessageUpdate, observe_runs
from openprogram.providers import builder as builder_module
from openprogram.providers.builder import MessageBuilder
from openprogram.types import AssistantMessage, TextContent, TextDeltaEvent, ThinkingContent

EVENT = TypeAdapter(AgentEvent)


def _reply(size: int) -> str:
    return ("abcdefghij" * (size // 10 + 1))[:size]


async def _result_only(text: str, chunk: int = 4) -> list[Any]:
    provider = ScriptedProvider(turn.text(text), chunk_size=chunk)
    return await agent_loop(["write"], AgentContext(), AgentLoopConfig(provider=provider, clock=lambda: 0)).result()


def _memory_of_a_result_only_run(size: int) -> tuple[int, int]:
    """(peak while the run streams, still held afterwards by what ``result()`` returned), in bytes."""
    text = _reply(size)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        messages = asyncio.run(_result_only(text))
        gc.collect()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert messages[-1].text == text
    return peak - base, held - base


def test_a_result_only_consumer_of_a_200_kb_reply_holds_a_small_multiple_of_the_text() -> None:
    size = 200_000
    peak, held = _memory_of_a_result_only_run(size)
    assert peak < 20 * size, f"peak {peak / size:.1f}x the text"
    assert held < 20 * size, f"held {held / size:.1f}x the text"


def test_memory_grows_linearly_with_the_reply() -> None:
    small, _ = _memory_of_a_result_only_run(50_000)
    large, _ = _memory_of_a_result_only_run(200_000)
    assert large < 6 * small, f"4x the text took {large / small:.1f}x the memory"


def _streamed(text: str, *, thinking: str | None = None, chunk: int = 4) -> tuple[list[Any], list[Any]]:
    async def main() -> tuple[list[Any], list[Any]]:
        provider = ScriptedProvider(turn.text(text, thinking=thinking), chunk_size=chunk)
        stream = agent_loop(["write"], AgentContext(), AgentLoopConfig(provider=provider, clock=lambda: 0))
        events = [event async for event in stream]
        return events, await stream.result()

    return asyncio.run(main())


def test_every_update_shows_exactly_the_deltas_so_far() -> None:
    text = _reply(2_000) + " ünï ✓"
    events, messages = _streamed(text, thinking="first " * 50)
    updates = [e for e in events if e.type == "message_update"]
    texts = {"text_delta": "", "thinking_delta": ""}
    seen = 0
    for update in updates:
        inner = update.assistant_message_event
        if inner.type in texts:
            texts[inner.type] += inner.delta
            seen += 1
        assert update.message is inner.partial or update.message == inner.partial
        partial = update.message
        assert isinstance(partial, AssistantMessage)
        shown_thinking = "".join(b.thinking for b in partial.content if isinstance(b, ThinkingContent))
        assert shown_thinking == texts["thinking_delta"]
        assert partial.text == texts["text_delta"]
    assert seen == len(text) // 4 + 1 + 300 // 4
    assert texts["text_delta"] == text == messages[-1].text


def test_lazy_snapshots_dump_compare_copy_and_pickle_like_ordinary_events() -> None:
    events, _ = _streamed("hello world, streamed in small pieces", chunk=4)
    update = next(e for e in events if e.type == "message_update" and e.assistant_message_event.type == "text_delta")
    twin = next(e for e in _streamed("hello world, streamed in small pieces", chunk=4)[0] if e == update)
    assert twin == update and twin is not update
    dumped = update.model_dump_json()
    assert '"text":"hell"' in dumped and '"delta":"hell"' in dumped
    assert EVENT.validate_json(dumped) == update
    assert EVENT.validate_json(dumped).model_dump_json() == dumped  # the same bytes, fields in the same order
    fresh_events = _streamed("hello world, streamed in small pieces", chunk=4)[0]
    fresh = next(e for e in fresh_events if e.type == "message_update")
    assert copy.deepcopy(fresh) == fresh and copy.copy(fresh) == fresh
    assert pickle.loads(pickle.dumps(fresh)) == fresh
    assert "partial=AssistantMessage" in repr(next(e for e in _streamed("abc")[0] if e.type == "message_update"))
    eager = AgentEventMessageUpdate(message=update.message, assistant_message_event=update.assistant_message_event)
    assert eager == update and eager.model_dump_json() == dumped


def test_the_builder_shows_a_streaming_block_as_it_stands() -> None:
    builder = MessageBuilder(model="m", provider="p")
    index, _start = builder.text_start()
    first = builder.text_delta(index, "ab")
    second = builder.text_delta(index, "cd")
    assert builder.block(index) == TextContent(text="abcd") and builder.received_deltas(index)
    assert second.partial.text == "abcd" and first.partial.text == "ab"  # each as it stood
    end = builder.text_end(index)
    assert end.content == "abcd" and builder.done().message.text == "abcd"
    assert isinstance(first, TextDeltaEvent) and first.model_dump()["partial"]["content"] == (
        {"type": "text", "text": "ab"},
    )


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["text", "thinking", "args"]), st.text(max_size=6)),  # a delta to a block
        st.tuples(st.just("read"), st.sampled_from(["text", "thinking", "args"])),  # a block read as it stands
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(steps=_STEPS, fold=st.sampled_from([1, 2, 3, 256]), reads=st.integers(0, 2**32))
def test_every_partial_and_every_block_show_exactly_the_deltas_so_far_however_they_are_folded(
    steps: list[tuple[str, str]], fold: int, reads: int
) -> None:
    # deltas are folded into a block's text in batches (and when read): no batch boundary and no
    # read in between may change what any event, read early or late, says the text was
    rng = random.Random(reads)
    with mock.patch.object(builder_module, "_FOLD_EVERY", fold):
        builder = MessageBuilder(model="m", provider="p")
        indices = {"text": builder.text_start()[0], "thinking": builder.thinking_start()[0]}
        indices["args"] = builder.toolcall_start("c1", "f")[0]
        so_far = dict.fromkeys(indices, "")
        later: list[tuple[Any, dict[str, str]]] = []  # events whose partial is read only at the end
        for kind, value in steps:
            if kind == "read":
                block = builder.block(indices[value])
                shown = block.text if value == "text" else block.thinking if value == "thinking" else None
                assert value == "args" or shown == so_far[value]
                continue
            add = {"text": builder.text_delta, "thinking": builder.thinking_delta, "args": builder.toolcall_delta}
            event = add[kind](indices[kind], value)
            so_far[kind] += value
            if rng.random() < 0.5:  # read now, as a live consumer does
                _check_partial(event.partial, so_far)
            else:
                later.append((event, dict(so_far)))
        ends = [builder.text_end(indices["text"]), builder.thinking_end(indices["thinking"])]
        assert [end.content for end in ends] == [so_far["text"], so_far["thinking"]]
        call = builder.toolcall_end(indices["args"]).tool_call
        assert call.raw_arguments in (None, so_far["args"])
        for event, expected in later:
            _check_partial(event.partial, expected)
        final = builder.done().message
        assert final.text == so_far["text"] and final.content[1].thinking == so_far["thinking"]


def _check_partial(partial: AssistantMessage, expected: dict[str, str]) -> None:
    assert partial.text == expected["text"]
    assert "".join(b.thinking for b in partial.content if isinstance(b, ThinkingContent)) == expected["thinking"]


def test_a_consumer_that_iterates_after_awaiting_result_still_gets_every_other_event() -> None:
    async def main() -> tuple[list[str], list[Any]]:
        provider = ScriptedProvider(turn.text("some text to stream"), chunk_size=4)
        stream = agent_loop(["write"], AgentContext(), AgentLoopConfig(provider=provider, clock=lambda: 0))
        messages = await stream.result()
        return [e.type async for e in stream], messages

    kinds, messages = asyncio.run(main())
    assert kinds == ["agent_start", "turn_start", "message_start", "message_end", "message_start", "message_end",
                     "turn_end", "agent_end"]  # fmt: skip
    assert messages[-1].text == "some text to stream"


def test_a_long_reply_does_not_hold_up_another_run_on_the_same_loop() -> None:
    async def main() -> list[str]:
        finished: list[str] = []

        async def one(name: str, text: str) -> None:
            provider = ScriptedProvider(turn.text(text), chunk_size=4)
            stream = agent_loop(["go"], AgentContext(), AgentLoopConfig(provider=provider, clock=lambda: 0))
            async for _event in stream:
                pass
            finished.append(name)

        await asyncio.gather(one("long", _reply(100_000)), one("short", "hi"))
        return finished

    assert asyncio.run(main()) == ["short", "long"]


@function(register=False)
def lookup(key: int) -> str:
    """Return the value stored under a key."""
    return "välue ✓"


def test_the_scripted_usage_estimate_is_the_same_when_computed_incrementally() -> None:
    async def main() -> tuple[ScriptedProvider, list[Any]]:
        turns = [turn.tool_call("lookup", key=i) for i in range(6)] + [turn.text("done ✓", thinking="hm")]
        provider = ScriptedProvider(*turns)
        context = AgentContext(system_prompt="sÿstem", tools=[lookup.to_agent_tool()])
        stream = agent_loop(["look ✓"], context, AgentLoopConfig(provider=provider, clock=lambda: 0))
        return provider, await stream.result()

    provider, messages = asyncio.run(main())
    replies = [m for m in messages if isinstance(m, AssistantMessage)]
    assert len(replies) == len(provider.requests) == 7
    for number, (request, reply) in enumerate(zip(provider.requests, replies, strict=True)):
        assert reply.usage == estimate_usage(request, provider.turns[number])


def test_events_read_after_the_run_are_the_events_an_observer_saw_as_they_happened() -> None:
    # Without an observer the loop's own events are kept unbuilt until read (push_new): built
    # late they must be what was pushed, field for field, also as exclude_unset dumps show them.
    async def main() -> tuple[list[Any], list[Any]]:
        seen: list[Any] = []

        def script() -> ScriptedProvider:
            return ScriptedProvider(turn.tool_call("lookup", key=1), turn.text("done"))

        context = AgentContext(tools=[lookup.to_agent_tool()])
        with observe_runs(seen.append):
            watched = agent_loop(["go"], context, AgentLoopConfig(provider=script(), clock=lambda: 7))
            await watched.result()
        late = agent_loop(["go"], context, AgentLoopConfig(provider=script(), clock=lambda: 7))
        await late.result()
        return [e for e in seen if e.type != "message_update"], [e async for e in late]

    observed, read_late = asyncio.run(main())
    assert [e.type for e in read_late] == [e.type for e in observed]
    assert "tool_execution_end" in [e.type for e in read_late]
    assert read_late == observed
    assert [e.model_dump(exclude_unset=True) for e in read_late] == [e.model_dump(exclude_unset=True) for e in observed]


def test_an_event_stream_hands_over_whatever_a_producer_pushed_tuples_too() -> None:
    # EventStream is public: a producer of other events may push tuples, which must not be
    # mistaken for the loop's unbuilt events.
    from openprogram.agent.events import AgentEventTurnStart, EventStream

    async def main() -> list[Any]:
        stream: EventStream[Any, None] = EventStream()
        stream.push((AgentEventTurnStart, {"type": "turn_start"}, ()))
        stream.push_new(AgentEventTurnStart, {"type": "turn_start"}, ())
        stream.end(None)
        return [event async for event in stream]

    pushed, built = asyncio.run(main())
    assert pushed == (AgentEventTurnStart, {"type": "turn_start"}, ())
    assert built == AgentEventTurnStart()
