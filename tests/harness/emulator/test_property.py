"""Fidelity as a property: for any generated turn, our OpenAI and Anthropic backends decoding the
emulator's rendering give the message ``ScriptedProvider`` gives for that turn (ids, signatures
and usage aside)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.emulator import Emulator
from harness.script import ScriptedCall, ScriptedProvider, Turn
from openprogram.providers import ModelRequest
from openprogram.types import AssistantMessage, TextContent, ThinkingContent, ToolCall, UserMessage
from tests.harness.emulator.wirecheck import one_reply

BACKENDS = [
    ("openai", "chat.completions", True),
    ("openai", "chat.completions", False),
    ("openai", "responses", True),
    ("openai", "responses", False),
    ("anthropic", "messages", True),
    ("anthropic", "messages", False),
]

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
names = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=6,
)
calls = st.builds(
    lambda name, args: ScriptedCall(name=name, args=args), names, st.dictionaries(names, values, max_size=3)
)


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    """Thinking, text and calls in that order (the order every API can carry), any of them absent."""
    blocks: list[Any] = []
    if draw(st.booleans()):
        blocks.append(("thinking", draw(texts)))
    if draw(st.booleans()):
        blocks.append(("text", draw(texts)))
    blocks += draw(st.lists(calls, max_size=3))
    return Turn(blocks=tuple(blocks), stop_reason=draw(st.sampled_from(["stop", "length"])))


def _normalized(message: AssistantMessage) -> tuple[Any, ...]:
    """The message without what differs by design: ids, signatures, usage, and empty text or
    thinking blocks (an API sends no block for nothing, ScriptedProvider opens one)."""
    out: list[Any] = []
    for block in message.content:
        if isinstance(block, TextContent) and block.text:
            out.append(("text", block.text))
        elif isinstance(block, ThinkingContent) and block.thinking:
            out.append(("thinking", block.thinking))
        elif isinstance(block, ToolCall):
            out.append(("call", block.name, block.arguments, block.raw_arguments))
    return (message.stop_reason, message.error_message, tuple(out))


def _scripted(scripted: Turn) -> AssistantMessage:
    async def run() -> AssistantMessage:
        request = ModelRequest(messages=(UserMessage(content="hi"),))
        events = [event async for event in ScriptedProvider(scripted).stream(request)]
        return events[-1].message

    return asyncio.run(run())


@pytest.mark.parametrize(("provider", "endpoint", "stream"), BACKENDS, ids=[f"{p}-{e}-{s}" for p, e, s in BACKENDS])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripted=turns())
def test_our_backend_reads_the_emulators_rendering_of_any_turn_as_scripted_provider_gives_it(
    provider: str, endpoint: str, stream: bool, scripted: Turn
) -> None:
    decoded = one_reply(Emulator(scripted), provider, endpoint, stream=stream)
    assert _normalized(decoded) == _normalized(_scripted(scripted))
