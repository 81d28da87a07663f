"""A getter's bare ``""`` is one user message with empty text (DESIGN 4: a str is one user message).

It used to be taken for "nothing queued" (a falsy return) and dropped, so a message the user did
send never reached the history; ``None`` and an empty sequence still mean nothing is queued.
"""

from __future__ import annotations

import asyncio
from typing import Any

from harness import ScriptedProvider
from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop
from openprogram.types import UserMessage


def _run(returns: list[Any]) -> tuple[list[Any], ScriptedProvider]:
    async def steering() -> Any:
        return returns.pop(0) if returns else []

    async def main() -> tuple[list[Any], ScriptedProvider]:
        provider = ScriptedProvider("first", "second", strict=False)
        config = AgentLoopConfig(provider=provider, get_steering_messages=steering, clock=lambda: 7)
        return await agent_loop(["hi"], AgentContext(), config).result(), provider

    return asyncio.run(main())


def test_a_bare_empty_string_from_the_steering_getter_is_one_empty_user_message() -> None:
    messages, provider = _run(["", ""])  # before the first call, then after its turn_end
    users = [m for m in messages if isinstance(m, UserMessage)]
    assert [u.content for u in users] == ["hi", "", ""]
    assert len(provider.requests) == 2  # the queued message keeps the inner loop going for one more round
    assert provider.requests[1].messages[-1] == UserMessage(content="", timestamp=7)


def test_none_and_an_empty_list_still_mean_nothing_is_queued() -> None:
    messages, provider = _run([None, []])
    assert [m.role for m in messages] == ["user", "assistant"]
    assert len(provider.requests) == 1
