"""DESIGN 4, Robustness: one test per promise, each driven through the public surface only.

Every promise here was found broken once (the issue "Every promise holds under faults"): streams
that never ended, a cancel that did not stop work, nested runs that lost the outer run's
provider, menu, clock or cancel event, faults that escaped the error path, tools that rewrote the
committed history, stray events, getters that corrupted the history, and noise from real backends.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import logging
import threading
import typing
import warnings
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from openai import AsyncOpenAI

from harness import ScriptedProvider, turn
from openprogram import ExecError, agentic_function, function, providers, runtime
from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop
from openprogram.providers import ModelRequest
from openprogram.providers.openai import OpenAIChatProvider
from openprogram.tools import AgentTool, AgentToolResult
from openprogram.types import (
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.openprogram.support import Clock, make_tool

TIMEOUT = 5.0


def collect(stream: Any) -> Any:
    async def drain() -> list[Any]:
        return [event async for event in stream]

    return drain()


def types_of(events: list[Any]) -> list[str]:
    return [event.type for event in events]


def results_of(messages: list[Any]) -> list[tuple[str, str, bool]]:
    return [(m.tool_call_id, m.text, m.is_error) for m in messages if isinstance(m, ToolResultMessage)]


class Events(AsyncIterator[Any]):
    """A provider whose reply is a fixed list of events (or raises ``raises`` when asked)."""

    def __init__(self, *replies: list[Any] | BaseException) -> None:
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest, cancel_event: asyncio.Event | None = None) -> AsyncIterator[Any]:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        for event in reply:
            await asyncio.sleep(0)
            yield event

    def __anext__(self) -> Any:  # pragma: no cover - only here to satisfy the ABC
        raise StopAsyncIteration


# ---------------------------------------------------------------------------------------------
# The stream ends in every case
# ---------------------------------------------------------------------------------------------


def test_the_stream_ends_when_its_task_is_cancelled_before_it_starts() -> None:
    async def main() -> tuple[str, str]:
        stream = agent_loop(["hi"], AgentContext(), AgentLoopConfig(provider=ScriptedProvider("x")))
        assert stream.task is not None
        stream.task.cancel()  # before the task ever ran
        outcomes = []
        for waiting in (stream.result(), collect(stream)):
            try:
                await asyncio.wait_for(waiting, TIMEOUT)
                outcomes.append("returned")
            except asyncio.CancelledError:
                outcomes.append("cancelled")
        return outcomes[0], outcomes[1]

    assert asyncio.run(main()) == ("cancelled", "cancelled")


def test_a_second_consumer_of_one_stream_is_refused_at_once() -> None:
    async def main() -> tuple[list[str], str]:
        gate = asyncio.Event()

        async def slow() -> str:
            await gate.wait()
            return "ok"

        tool = make_tool("slow", slow)
        provider = ScriptedProvider(turn.tool_call("slow"), "done")
        stream = agent_loop(["hi"], AgentContext(tools=[tool]), AgentLoopConfig(provider=provider))
        first = asyncio.ensure_future(collect(stream))
        await asyncio.sleep(0.01)  # the first consumer is waiting for the next event
        try:
            await asyncio.wait_for(collect(stream), TIMEOUT)
            second = "got events"
        except RuntimeError as exc:
            second = str(exc)
        gate.set()
        events = await asyncio.wait_for(first, TIMEOUT)
        return types_of(events), second

    events, second = asyncio.run(main())
    assert events[0] == "agent_start" and events[-1] == "agent_end"  # the first consumer got every event
    assert "consumer" in second


def _two_call_run(started: list[str], gate: asyncio.Event) -> Any:
    async def first() -> str:
        started.append("first")
        await gate.wait()
        return "1"

    def second() -> str:
        started.append("second")
        return "2"

    tools = [make_tool("first", first), make_tool("second", second)]
    provider = ScriptedProvider(turn.tool_calls(turn.tool_call("first"), turn.tool_call("second")), "done")
    return agent_loop(["hi"], AgentContext(tools=tools), AgentLoopConfig(provider=provider))


def test_aclose_cancels_the_run_so_no_tool_starts_after_the_consumer_has_gone() -> None:
    async def main() -> list[str]:
        started: list[str] = []
        gate = asyncio.Event()
        stream = _two_call_run(started, gate)
        async for event in stream:
            if event.type == "tool_execution_start":
                break
        await asyncio.wait_for(stream.aclose(), TIMEOUT)
        gate.set()
        await asyncio.sleep(0.01)
        assert stream.task is not None and stream.task.done()
        return started

    assert asyncio.run(main()) == ["first"]


def test_async_with_cancels_the_run_when_the_consumer_leaves_the_block_early() -> None:
    async def main() -> list[str]:
        started: list[str] = []
        gate = asyncio.Event()
        async with _two_call_run(started, gate) as stream:
            async for event in stream:
                if event.type == "tool_execution_start":
                    break
        gate.set()
        await asyncio.sleep(0.01)
        return started

    assert asyncio.run(main()) == ["first"]


# ---------------------------------------------------------------------------------------------
# Cancel stops work
# ---------------------------------------------------------------------------------------------


def test_cancel_during_a_call_skips_the_rest_of_the_batch_and_ends_aborted() -> None:
    ran: list[str] = []
    cancel = None

    def first() -> str:
        ran.append("first")
        assert cancel is not None
        cancel.set()
        return "1"

    def other() -> str:
        ran.append("other")
        return "2"

    async def main() -> list[Any]:
        nonlocal cancel
        cancel = asyncio.Event()
        tools = [make_tool("first", first), make_tool("other", other)]
        provider = ScriptedProvider(
            turn.tool_calls(turn.tool_call("first"), turn.tool_call("other"), turn.tool_call("other")),
            "never asked",
            strict=False,
        )
        stream = agent_loop(["hi"], AgentContext(tools=tools), AgentLoopConfig(provider=provider), cancel)
        events = await asyncio.wait_for(collect(stream), TIMEOUT)
        assert len(provider.requests) == 1
        return events

    events = asyncio.run(main())
    assert ran == ["first"]
    end = events[-1]
    assert end.reason == "aborted"
    assert results_of(list(end.messages)) == [
        ("call_1", "1", False),
        ("call_2", "Skipped due to cancellation.", True),
        ("call_3", "Skipped due to cancellation.", True),
    ]
    assert end.messages[-1].stop_reason == "aborted"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_nested_run_receives_the_outer_cancel_event(kind: str) -> None:
    seen: list[Any] = []

    @function(register=False)
    async def probe(cancel_event: asyncio.Event | None = None) -> str:
        seen.append(cancel_event)
        return "probed"

    if kind == "sync":

        @agentic_function(register=False)
        def researcher() -> str:
            return runtime.exec("inner", tools=[probe])

    else:

        @agentic_function(register=False)
        async def researcher() -> str:  # type: ignore[misc]
            return await runtime.aexec("inner", tools=[probe])

    provider = ScriptedProvider(turn.tool_call("researcher"), turn.tool_call("probe"), "inner done", "outer done")

    async def main() -> tuple[str, asyncio.Event]:
        cancel = asyncio.Event()
        text = await runtime.aexec("go", tools=[researcher], provider=provider, cancel_event=cancel)
        return text, cancel

    text, cancel = asyncio.run(main())
    assert text == "outer done"
    assert seen == [cancel]


def test_cancelling_aexec_stops_a_worker_thread_nested_run() -> None:
    inner_runs: list[int] = []

    @function(register=False)
    async def step(n: int) -> str:
        inner_runs.append(n)
        await asyncio.sleep(0.05)
        return f"step {n}"

    @agentic_function(register=False, thread=True)
    def researcher() -> str:
        return runtime.exec("inner", tools=[step])

    provider = ScriptedProvider(
        turn.tool_call("researcher"), *[turn.tool_call("step", n=i) for i in range(20)], "inner", "outer", strict=False
    )

    async def main() -> int:
        task = asyncio.ensure_future(runtime.aexec("go", tools=[researcher], provider=provider))
        while not inner_runs:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        after = len(inner_runs)
        await asyncio.sleep(0.3)
        assert len(inner_runs) == after  # nothing of the nested run went on after aexec raised
        return after

    assert asyncio.run(main()) <= 2


# ---------------------------------------------------------------------------------------------
# Nested runs keep the outer run's context
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_nested_exec_in_an_agent_loop_run_uses_its_provider_menu_and_clock(kind: str) -> None:
    @function(register=False)
    def lookup(q: str) -> str:
        return f"found {q}"

    @function  # registered: a nested exec that saw the whole registry would offer it
    def unrelated_registered_tool() -> str:
        return "x"

    if kind == "sync":

        @agentic_function(register=False)
        def researcher(topic: str) -> str:
            return runtime.exec(f"research {topic}")

    else:

        @agentic_function(register=False)
        async def researcher(topic: str) -> str:  # type: ignore[misc]
            return await runtime.aexec(f"research {topic}")

    provider = ScriptedProvider(
        turn.tool_call("researcher", topic="tides"), turn.tool_call("lookup", q="t"), "the moon", "done"
    )

    async def main() -> list[Any]:
        context = AgentContext(tools=[lookup, researcher])
        stream = agent_loop(["go"], context, AgentLoopConfig(provider=provider, clock=Clock()))
        return await asyncio.wait_for(stream.result(), TIMEOUT)

    try:
        messages = asyncio.run(main())
    finally:
        from openprogram import registry

        registry.unregister("unrelated_registered_tool")
    assert messages[-1].text == "done"
    assert [[t.name for t in r.tools] for r in provider.requests] == [["lookup", "researcher"]] * 4
    stamps = [m.timestamp for r in provider.requests for m in r.messages]
    assert all(stamp < 2000 for stamp in stamps)  # the injected clock, never the wall clock
    provider.assert_complete()


def test_a_sync_nested_exec_passing_the_runs_cancel_event_runs_normally() -> None:
    @function(register=False)
    def lookup() -> str:
        return "found"

    @agentic_function(register=False)
    def researcher(cancel_event: asyncio.Event | None = None) -> str:
        return runtime.exec("inner", tools=[lookup], cancel_event=cancel_event)

    provider = ScriptedProvider(turn.tool_call("researcher"), turn.tool_call("lookup"), "inner", "outer")

    async def main() -> str:
        return await runtime.aexec("go", tools=[researcher], provider=provider, cancel_event=asyncio.Event())

    assert asyncio.run(main()) == "outer"
    assert provider.requests[3].messages[-1].text == "inner"


class _ChatServer:
    """A loopback server answering OpenAI chat completions with scripted replies, in order."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                server.bodies.append(json.loads(self.rfile.read(length)))
                message = server.replies.pop(0) if server.replies else {"role": "assistant", "content": "late"}
                reason = "tool_calls" if message.get("tool_calls") else "stop"
                body = json.dumps(
                    {
                        "id": f"chatcmpl-{len(server.bodies)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "gpt-test",
                        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> _ChatServer:
        self.thread.start()
        # a fake, and it says so: the real-request guard lets no loopback URL through by itself
        self._undeclare = providers.register_fake_base_url(self.url)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._undeclare()
        self.httpd.shutdown()
        self.httpd.server_close()


def _call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}],
    }


def _text(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


@pytest.fixture
def nested_chat_server() -> Iterator[_ChatServer]:
    replies = [_call("researcher", "c1", topic="tides"), _call("lookup", "c2", q="t"), _text("the moon"), _text("done")]
    with _ChatServer(replies) as server:
        yield server


def test_a_sync_nested_exec_on_a_real_backend_uses_the_outer_client_and_cancel_event(
    nested_chat_server: _ChatServer,
) -> None:
    @function(register=False)
    def lookup(q: str) -> str:
        return f"found {q}"

    seen: dict[str, Any] = {}

    @agentic_function(register=False)
    def researcher(topic: str, cancel_event: asyncio.Event | None = None) -> str:
        seen["cancel_event"] = cancel_event
        return runtime.exec(f"research {topic}", cancel_event=cancel_event)

    async def main() -> tuple[str, asyncio.Event]:
        client = AsyncOpenAI(api_key="test-key", base_url=nested_chat_server.url, max_retries=0)
        provider = OpenAIChatProvider(client, model="gpt-test", stream=False)
        cancel = asyncio.Event()
        try:
            text = await runtime.aexec("go", tools=[lookup, researcher], provider=provider, cancel_event=cancel)
        finally:
            await client.close()
        return text, cancel

    text, cancel = asyncio.run(main())
    assert text == "done"
    assert seen["cancel_event"] is cancel
    assert len(nested_chat_server.bodies) == 4
    assert [m["role"] for m in nested_chat_server.bodies[1]["messages"]] == ["user"]  # the nested run's own history
    assert nested_chat_server.bodies[3]["messages"][-1]["content"] == "the moon"


def test_sequential_sync_exec_on_a_real_backend_prints_no_noise(caplog: pytest.LogCaptureFixture) -> None:
    replies = [_text(f"answer {i}") for i in range(3)] * 2
    with _ChatServer(replies) as server, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        caplog.set_level(logging.DEBUG, logger="asyncio")
        built = OpenAIChatProvider(model="gpt-test", stream=False, api_key="test-key", base_url=server.url)
        client = AsyncOpenAI(api_key="test-key", base_url=server.url, max_retries=0)
        given = OpenAIChatProvider(client, model="gpt-test", stream=False)
        texts = [runtime.exec(f"q{i}", tools=[], provider=p) for p in (built, given) for i in range(3)]
        gc.collect()  # the providers (and their clients) stay alive, as in a program that uses them
    assert texts == [f"answer {i}" for i in range(3)] * 2
    noise = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert noise == []
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage() or "closed" in r.getMessage()]


# ---------------------------------------------------------------------------------------------
# Faults take the error path
# ---------------------------------------------------------------------------------------------


def _tool_call_message(stop_reason: Any) -> AssistantMessage:
    return AssistantMessage(content=(ToolCall(id="c1", name="boom", arguments={}),), stop_reason=stop_reason)


def test_an_error_event_ends_the_run_whatever_its_message_stop_reason_says() -> None:
    ran: list[str] = []
    tool = make_tool("boom", lambda: ran.append("boom") or "x")
    message = _tool_call_message("stop").model_copy(update={"error_message": "overloaded"})
    provider = Events([StartEvent(partial=AssistantMessage()), ErrorEvent(reason="error", error=message)])
    with pytest.raises(ExecError) as info:
        runtime.exec("go", tools=[tool], provider=provider)
    assert info.value.reason == "error"
    assert ran == []
    final = info.value.messages[-1]
    assert final.stop_reason == "error" and final.error_message == "overloaded"


def test_a_provider_raising_cancelled_error_unprompted_takes_the_error_path() -> None:
    provider = Events(asyncio.CancelledError("the SDK gave up"))

    async def main() -> Any:
        stream = agent_loop(["hi"], AgentContext(), AgentLoopConfig(provider=provider))
        return await asyncio.wait_for(collect(stream), TIMEOUT)

    events = asyncio.run(main())
    assert events[-1].reason == "error"
    assert events[-1].messages[-1].error_message.startswith("CancelledError")


def test_a_malformed_done_event_takes_the_error_path() -> None:
    provider = Events([StartEvent(partial=AssistantMessage()), DoneEvent.model_construct(type="done", reason="stop")])
    result = runtime.exec_result("go", tools=[], provider=provider)
    assert result.reason == "error"
    assert "done" in (result.messages[-1].error_message or "")


class BadStr(Exception):
    def __str__(self) -> str:
        raise ValueError("no text for you")


def test_an_exception_whose_str_fails_is_reported_by_its_type_name() -> None:
    def boom() -> str:
        raise BadStr

    provider = ScriptedProvider(turn.tool_call("boom"), "done")
    runtime.exec("go", tools=[make_tool("boom", boom)], provider=provider)
    assert results_of(list(provider.requests[1].messages)) == [
        (provider.requests[1].messages[-1].tool_call_id, "BadStr", True)
    ]
    failing = Events(BadStr())
    result = runtime.exec_result("go", tools=[], provider=failing)
    assert result.reason == "error"
    assert result.messages[-1].error_message == "BadStr"


def _schema_tool(name: str, parameters: dict[str, Any]) -> AgentTool:
    async def execute(*_: Any) -> AgentToolResult:
        return AgentToolResult(content="x")

    return AgentTool(name=name, description="", parameters=parameters, execute=execute)


@pytest.mark.parametrize(
    ("name", "parameters", "says"),
    [
        ("dangling", {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}}, r"\$ref"),
        ("invalid", {"type": "object", "properties": {"a": {"type": 5}}}, "schema"),
        ("bad name!", {"type": "object", "properties": {}}, "name"),
        ("x" * 65, {"type": "object", "properties": {}}, "name"),
    ],
)
def test_a_bad_tool_schema_or_name_is_refused_when_the_menu_is_built(
    name: str, parameters: dict[str, Any], says: str
) -> None:
    tool = _schema_tool(name, parameters)
    provider = ScriptedProvider("never asked", strict=False)

    async def main() -> None:
        agent_loop(["hi"], AgentContext(tools=[tool]), AgentLoopConfig(provider=provider))

    with pytest.raises(ValueError, match=says) as loop_error:
        asyncio.run(main())
    assert name in str(loop_error.value)
    with pytest.raises(ValueError, match=says) as exec_error:
        runtime.exec("hi", tools=[tool], provider=provider)
    assert name in str(exec_error.value)
    assert provider.requests == ()


# ---------------------------------------------------------------------------------------------
# Tools cannot rewrite history; stray events are dropped
# ---------------------------------------------------------------------------------------------


def test_tools_get_a_deep_copy_of_their_arguments() -> None:
    def mutate(items: list[Any], meta: dict[str, Any]) -> str:
        items.append("added")
        meta["inner"]["x"] = "changed"
        return "ok"

    tool = AgentTool(
        name="mutate",
        description="",
        parameters={"type": "object", "properties": {"items": {"type": "array"}, "meta": {"type": "object"}}},
        execute=make_tool("mutate", mutate).execute,
    )
    provider = ScriptedProvider(turn.tool_call("mutate", items=["a"], meta={"inner": {"x": "orig"}}), "done")
    result = runtime.exec_result("go", tools=[tool], provider=provider)
    committed = next(m for m in result.messages if isinstance(m, AssistantMessage) and m.tool_calls)
    expected = {"items": ["a"], "meta": {"inner": {"x": "orig"}}}
    assert committed.tool_calls[0].arguments == expected
    sent = provider.requests[1].messages[1]
    assert isinstance(sent, AssistantMessage) and sent.tool_calls[0].arguments == expected


def test_on_update_after_the_tool_returned_is_dropped() -> None:
    stashed: list[Any] = []

    @function(register=False)
    async def first(on_update: Any = None) -> str:
        stashed.append(on_update)
        return "1"

    @function(register=False)
    async def second(on_update: Any = None) -> str:
        stashed[0]("stale")  # the first call's callback, after it returned
        on_update("fresh")
        return "2"

    tools = [first, second]
    provider = ScriptedProvider(turn.tool_calls(turn.tool_call("first"), turn.tool_call("second")), "done")

    async def main() -> list[Any]:
        stream = agent_loop(["hi"], AgentContext(tools=tools), AgentLoopConfig(provider=provider))
        events = await asyncio.wait_for(collect(stream), TIMEOUT)
        stashed[0]("after the run")  # must neither raise nor emit
        return events

    events = asyncio.run(main())
    updates = [(e.tool_call_id, e.partial_result) for e in events if e.type == "tool_execution_update"]
    assert updates == [("call_2", "fresh")]


# ---------------------------------------------------------------------------------------------
# Getters supply user messages, in one of three shapes
# ---------------------------------------------------------------------------------------------


def _steered(returned: Any) -> tuple[list[Any], BaseException | None]:
    polls = 0

    async def steering() -> Any:
        nonlocal polls
        polls += 1
        return returned if polls == 1 else []

    provider = ScriptedProvider("done", strict=False)
    config = AgentLoopConfig(provider=provider, get_steering_messages=steering)

    async def main() -> tuple[list[Any], BaseException | None]:
        stream = agent_loop(["hi"], AgentContext(), config)
        events: list[Any] = []
        try:
            async for event in stream:
                events.append(event)
        except Exception as exc:
            return events, exc
        return events, None

    return asyncio.run(main())


def _committed_users(events: list[Any]) -> list[str]:
    return [e.message.text for e in events if e.type == "message_end" and isinstance(e.message, UserMessage)]


def test_a_getter_returning_a_bare_string_supplies_one_user_message() -> None:
    events, error = _steered("steer me")
    assert error is None
    assert _committed_users(events) == ["hi", "steer me"]


def test_a_getter_returning_a_single_message_supplies_it() -> None:
    events, error = _steered(UserMessage(content="one"))
    assert error is None
    assert _committed_users(events) == ["hi", "one"]


@pytest.mark.parametrize("returned", [{"a": 1}, 42, [UserMessage(content="ok"), 7]])
def test_a_getter_returning_anything_else_raises_a_type_error_naming_getter_and_item_after_the_valid_ones(
    returned: Any,
) -> None:
    events, error = _steered(returned)
    assert isinstance(error, TypeError)
    assert "get_steering_messages" in str(error)
    bad = returned[-1] if isinstance(returned, list) else returned
    assert repr(bad) in str(error)
    valid = ["ok"] if isinstance(returned, list) else []
    assert _committed_users(events) == ["hi", *valid]


@pytest.mark.parametrize(
    "returned",
    [
        AssistantMessage(content=(ToolCall(id="x", name="boom", arguments={}),), stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="x", tool_name="boom", content=(TextContent(text="r"),)),
    ],
)
def test_getters_supply_user_messages_only(returned: Any) -> None:
    events, error = _steered([returned])
    assert isinstance(error, TypeError) and "get_steering_messages" in str(error)
    assert not [e for e in events if e.type == "message_end" and e.message.role != "user"]


# ---------------------------------------------------------------------------------------------
# Typed public entry points
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", ["exec", "aexec", "exec_result", "aexec_result"])
def test_the_exec_entry_points_declare_every_keyword(entry: str) -> None:
    """One declaration, ``ExecOptions``, types the keywords of all four; each docstring names them."""
    function = getattr(runtime, entry)
    parameters = list(inspect.signature(function).parameters.values())
    assert [(p.name, p.kind) for p in parameters] == [
        ("content", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("options", inspect.Parameter.VAR_KEYWORD),
    ]
    hints = typing.get_type_hints(function, localns=vars(runtime))
    assert hints["options"] == typing.Unpack[runtime.ExecOptions]
    keywords = set(typing.get_type_hints(runtime.ExecOptions))
    for name in ("tools", "toolset", "tool_choice", "max_iterations", "provider", "clock", "cancel_event"):
        assert name in keywords
    assert len(keywords) == 17 and not runtime.ExecOptions.__required_keys__
    undocumented = [name for name in keywords if f"``{name}``" not in (function.__doc__ or "")]
    assert undocumented == []


@pytest.mark.parametrize("entry", ["exec", "aexec", "exec_result", "aexec_result"])
def test_a_misspelled_keyword_is_refused_naming_it_before_any_request(entry: str) -> None:
    """``**options`` would take any name: a misspelled ``tool=`` must not silently become "every
    registered tool"."""
    provider = ScriptedProvider("never sent")

    def call() -> object:
        result = getattr(runtime, entry)("hi", tool=[], provider=provider)
        return asyncio.run(result) if inspect.iscoroutine(result) else result

    expected = rf"^{entry}\(\) got an unexpected keyword argument 'tool' \(did you mean 'tools'\?\)$"
    with pytest.raises(TypeError, match=expected):
        call()
    assert not provider.requests
