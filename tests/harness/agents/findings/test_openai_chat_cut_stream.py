"""Standalone reproduction (no harness code): a streamed OpenAI chat reply whose body ends cleanly
after a text delta, without its ``finish_reason`` chunk and ``data: [DONE]`` (a proxy or gateway
closing it; the ``network`` tier), is returned as a complete answer by pydantic-ai and LangChain;
a connection reset mid-chunk is not (the ``openai`` SDK raises ``APIConnectionError``).
pydantic-ai's model-profile flag ``openai_chat_streaming_requires_finish_reason`` makes it raise.

docs/wire-campaigns.md, "Findings"; run by CI in the agents environment with ``-p no:harness``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="the findings need the frameworks: pip install -e '.[agents]'")
pytest.importorskip("langchain_openai", reason="the findings need the frameworks: pip install -e '.[agents]'")

import openai
from langchain_openai import ChatOpenAI
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelAPIError, ModelConnectionError
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.profiles.openai import OpenAIModelProfile
from pydantic_ai.providers.openai import OpenAIProvider


def _chunk(delta: dict[str, Any]) -> bytes:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}
    return (
        f"data: {json.dumps({**body, 'choices': [{'index': 0, 'delta': delta, 'finish_reason': None}]})}\n\n".encode()
    )


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
EVENTS = [_chunk({"role": "assistant", "content": ""}), _chunk({"content": "The answer"}), _chunk({"content": " is"})]
"""Three chunks, then no finish_reason chunk and no [DONE]: the body ends after the third."""


async def _ends_cleanly(writer: asyncio.StreamWriter) -> None:
    writer.write(HEAD + b"".join(EVENTS))  # a close-delimited body, closed after a whole event
    await writer.drain()


async def _ends_inside_an_event(writer: asyncio.StreamWriter) -> None:
    writer.write(HEAD + EVENTS[0] + EVENTS[1] + EVENTS[2][:40])  # the last data: line without its end
    await writer.drain()


async def _reset_mid_chunk(writer: asyncio.StreamWriter) -> None:
    writer.write(HEAD + EVENTS[0] + EVENTS[1][:30])
    await writer.drain()
    await asyncio.sleep(0.05)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST


async def _serving(reply: Callable[[asyncio.StreamWriter], Awaitable[None]], client: Any) -> Any:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.lower().split(b"\r\n")
        length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length"))
        await reader.readexactly(length)
        await reply(writer)
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        return await client(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1")


async def _pydantic_ai(base_url: str, requires_finish_reason: bool = False) -> str:
    provider = OpenAIProvider(base_url=base_url, api_key="k")
    profile = OpenAIModelProfile(openai_chat_streaming_requires_finish_reason=requires_finish_reason)
    agent = Agent(OpenAIChatModel("gpt-test", provider=provider, profile=profile))

    async def ignore(context: Any, events: Any) -> None:
        async for _ in events:
            pass

    return str((await agent.run("hi", event_stream_handler=ignore)).output)


async def _langchain(base_url: str) -> str:
    model = ChatOpenAI(model="gpt-test", base_url=base_url, api_key="k", streaming=True, max_retries=0)
    message = await model.ainvoke("hi")
    assert "finish_reason" not in message.response_metadata
    return str(message.content)


def test_pydantic_ai_returns_a_body_that_ended_cleanly_without_finish_reason_as_its_answer() -> None:
    assert asyncio.run(_serving(_ends_cleanly, _pydantic_ai)) == "The answer is"
    assert asyncio.run(_serving(_ends_inside_an_event, _pydantic_ai)) == "The answer"  # the half event dropped


def test_pydantic_ai_raises_on_it_with_the_profile_flag() -> None:
    with pytest.raises(ModelAPIError, match="without a `finish_reason`"):
        asyncio.run(_serving(_ends_cleanly, lambda url: _pydantic_ai(url, requires_finish_reason=True)))


def test_pydantic_ai_raises_on_a_reset_mid_chunk() -> None:
    with pytest.raises(ModelConnectionError) as raised:  # the SDK's APIConnectionError, wrapped
        asyncio.run(_serving(_reset_mid_chunk, _pydantic_ai))
    assert isinstance(raised.value.__cause__, openai.APIConnectionError)


def test_langchain_returns_a_body_that_ended_cleanly_without_finish_reason_as_its_answer() -> None:
    assert asyncio.run(_serving(_ends_cleanly, _langchain)) == "The answer is"
    assert asyncio.run(_serving(_ends_inside_an_event, _langchain)) == "The answer"


def test_langchain_raises_on_a_reset_mid_chunk() -> None:
    with pytest.raises(openai.APIConnectionError):
        asyncio.run(_serving(_reset_mid_chunk, _langchain))


def test_the_reproduction_ran_without_harness_code() -> None:
    # a finding is the framework's only if it reproduces with nothing of ours loaded (DESIGN 6)
    import sys
    from pathlib import Path

    if any((folder / "harness" / "__init__.py").exists() for folder in Path(__file__).resolve().parents):
        pytest.skip("run in the checkout, whose conftest loads harness: .ci/run runs a copy from outside it")

    ours = sorted(m for m in sys.modules if m.split(".")[0] in ("harness", "openprogram"))
    assert not ours, f"harness code was loaded: {ours[:5]}"
