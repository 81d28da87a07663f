"""``runtime.exec`` / ``aexec`` / ``use``: the menu, its policies, nesting, tool_choice and finishes."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from harness import ScriptedProvider, turn
from openprogram import ExecError, agentic_function, function, registry, runtime
from openprogram.functions import Registry
from openprogram.types import UserMessage
from tests.openprogram.support import Clock, make_tool


@pytest.fixture
def reg() -> Iterator[Registry]:
    with registry.isolated() as isolated:
        yield isolated


def tool_names(request: Any) -> list[str]:
    return [spec.name for spec in request.tools]


def run_exec(provider: ScriptedProvider, content: str = "go", **kwargs: Any) -> str:
    with runtime.use(provider):
        return runtime.exec(content, **kwargs)


# --------------------------------------------------------------------------------------------
# Finishes
# --------------------------------------------------------------------------------------------


def test_exec_returns_the_text_of_the_final_reply(reg: Registry) -> None:
    @function
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    provider = ScriptedProvider(turn.tool_call("add", a=2, b=3), turn.text("it is 5", thinking="easy"))
    assert run_exec(provider, "2+3?", tools=[add]) == "it is 5"
    assert provider.requests[1].messages[-1].text == "5"
    provider.assert_complete()


def test_exec_without_a_provider_says_how_to_bind_one() -> None:
    with pytest.raises(RuntimeError, match=r"no model provider: wrap the call in `with runtime.use\(provider\):`"):
        runtime.exec("hi", tools=[])


def test_an_explicit_provider_argument_needs_no_binding() -> None:
    assert runtime.exec("hi", tools=[], provider=ScriptedProvider("direct")) == "direct"


def test_use_binds_the_model_and_restores_the_previous_binding() -> None:
    outer, inner = ScriptedProvider("outer"), ScriptedProvider("inner")
    with runtime.use(outer, model="m-outer"):
        with runtime.use(inner, model="m-inner"):
            assert runtime.current_provider() is inner
            assert runtime.exec("q", tools=[]) == "inner"
        assert runtime.exec("q", tools=[]) == "outer"
    assert runtime.current_provider() is None
    assert inner.requests[0].model == "m-inner"
    assert outer.requests[0].model == "m-outer"


def test_use_refuses_something_that_is_not_a_provider() -> None:
    with pytest.raises(TypeError, match=r"runtime.use needs a provider with a stream\(request, cancel_event\) method"):
        with runtime.use(object()):  # type: ignore[arg-type]
            pass


@pytest.mark.parametrize(
    ("script", "reason", "message"),
    [(turn.error("quota exceeded"), "error", "quota exceeded"), (turn.aborted(), "aborted", "Request was aborted")],
)
def test_an_error_or_aborted_finish_raises_exec_error(script: Any, reason: str, message: str) -> None:
    with pytest.raises(ExecError) as excinfo:
        run_exec(ScriptedProvider(script), tools=[])
    assert excinfo.value.reason == reason
    assert excinfo.value.message == message
    assert str(excinfo.value) == f"exec ended with {reason}: {message}"
    assert [m.role for m in excinfo.value.messages] == ["user", "assistant"]


def test_a_set_cancel_event_makes_exec_raise_aborted() -> None:
    async def main() -> None:
        cancel = asyncio.Event()
        cancel.set()
        provider = ScriptedProvider("never")
        with pytest.raises(ExecError) as excinfo:
            await runtime.aexec("q", tools=[], provider=provider, cancel_event=cancel)
        assert excinfo.value.reason == "aborted"
        assert provider.requests == ()

    asyncio.run(main())


def test_aexec_result_returns_text_reason_and_messages() -> None:
    async def main() -> runtime.ExecResult:
        return await runtime.aexec_result("q", tools=[], provider=ScriptedProvider("a"), clock=Clock())

    result = asyncio.run(main())
    assert (result.text, result.reason) == ("a", "stop")
    assert [(m.role, m.timestamp) for m in result.messages] == [("user", 1001), ("assistant", 1002)]


def test_exec_passes_system_prompt_history_and_a_message_prompt() -> None:
    provider = ScriptedProvider("ok")
    earlier = UserMessage(content="earlier", timestamp=1)
    run_exec(provider, tools=[], system_prompt="sys", history=[earlier])
    run_exec(ScriptedProvider("ok"), UserMessage(content="as a message"), tools=[])  # type: ignore[arg-type]
    assert provider.requests[0].system_prompt == "sys"
    assert [m.content for m in provider.requests[0].messages] == ["earlier", "go"]


def test_on_event_sees_every_event() -> None:
    seen: list[str] = []
    run_exec(ScriptedProvider("ok"), tools=[], on_event=lambda e: seen.append(e.type))
    assert seen[0] == "agent_start" and seen[-1] == "agent_end"


def test_an_on_event_consumer_that_raises_stops_the_run_and_exec_raises_its_error() -> None:
    finished: list[str] = []

    async def slow() -> str:
        await asyncio.sleep(0.05)  # real I/O: the producer yields, and the consumer catches up
        finished.append("slow")
        return "slow ok"

    def stop_early(event: Any) -> None:
        if event.type == "message_end" and event.message.role == "assistant":
            raise KeyError("consumer gave up")

    async def main() -> None:
        provider = ScriptedProvider(turn.tool_call("slow"), turn.tool_call("slow"), "done")
        with pytest.raises(KeyError, match="consumer gave up"):
            await asyncio.wait_for(
                runtime.aexec("q", tools=[make_tool("slow", slow)], provider=provider, on_event=stop_early), 5
            )
        await asyncio.sleep(0.1)  # the abandoned run must not go on in the background
        assert len(provider.requests) == 1
        assert finished == []  # the running tool was cancelled with the run

    asyncio.run(main())


# --------------------------------------------------------------------------------------------
# The menu: default, toolsets, explicit lists, entries
# --------------------------------------------------------------------------------------------


def _register_three() -> tuple[Any, Any, Any]:
    @function(toolset="math")
    def add(a: int, b: int) -> int:
        return a + b

    @function(toolset=["math", "fs"], source="fs")
    def fs_read(path: str) -> str:
        return path

    @function(source="fs")
    def fs_write(path: str, text: str) -> str:
        return "ok"

    return add, fs_read, fs_write


def test_the_default_menu_is_the_full_registry(reg: Registry) -> None:
    _register_three()
    provider = ScriptedProvider("ok")
    run_exec(provider)
    assert tool_names(provider.requests[0]) == ["add", "fs_read", "fs_write"]


@pytest.mark.parametrize("opt_out", [{"toolset": "none"}, {"tools": []}])
def test_toolset_none_and_an_empty_list_opt_out(reg: Registry, opt_out: dict[str, Any]) -> None:
    _register_three()
    provider = ScriptedProvider("ok")
    run_exec(provider, **opt_out)
    assert provider.requests[0].tools == ()


def test_a_named_toolset_offers_its_members(reg: Registry) -> None:
    _register_three()
    provider = ScriptedProvider("ok", "ok")
    run_exec(provider, toolset="math")
    run_exec(provider, toolset="full")
    assert tool_names(provider.requests[0]) == ["add", "fs_read"]
    assert tool_names(provider.requests[1]) == ["add", "fs_read", "fs_write"]


def test_an_unknown_toolset_names_the_known_ones(reg: Registry) -> None:
    _register_three()
    with pytest.raises(ValueError, match=r"unknown toolset 'web': use 'full', 'none' or one of \['fs', 'math'\]"):
        run_exec(ScriptedProvider("ok"), toolset="web")


def test_tools_and_toolset_together_are_refused() -> None:
    with pytest.raises(ValueError, match="pass either tools= or toolset=, not both"):
        run_exec(ScriptedProvider("ok"), tools=[], toolset="none")


def test_explicit_tools_are_offered_in_order_in_every_form(reg: Registry) -> None:
    add, _, _ = _register_three()

    class Obj:
        spec: ClassVar[dict[str, Any]] = {"name": "obj", "description": "an object tool"}

        def execute(self) -> str:
            return "from obj"

    entries = [
        Obj(),
        {"spec": {"type": "function", "function": {"name": "openai_style"}}, "execute": lambda: "o"},
        add,
        make_tool("made"),
    ]
    provider = ScriptedProvider(turn.tool_calls(turn.tool_call("obj"), turn.tool_call("openai_style")), "ok")
    run_exec(provider, tools=entries)
    assert tool_names(provider.requests[0]) == ["obj", "openai_style", "add", "made"]
    assert provider.requests[0].tools[0].description == "an object tool"
    assert [m.text for m in provider.requests[1].messages[2:]] == ["from obj", "o"]


def test_a_plain_callable_is_refused_naming_the_entry_and_the_fix() -> None:
    def helper(x: int) -> int:
        return x

    with pytest.raises(TypeError) as excinfo:
        run_exec(ScriptedProvider("ok"), tools=[make_tool("fine"), helper])
    assert str(excinfo.value) == (
        "tools[1]: 'helper' is a plain callable, not a tool: decorate it with @function (or @agentic_function), "
        "or pass {'spec': {...}, 'execute': fn}"
    )


def test_a_dict_spec_without_an_executor_is_refused_naming_the_entry() -> None:
    with pytest.raises(ValueError) as excinfo:
        run_exec(ScriptedProvider("ok"), tools=[{"spec": {"name": "lonely"}}])
    message = str(excinfo.value)
    assert message.startswith("tools[0]: tool entry {'spec': {'name': 'lonely'}}")
    assert "has a spec but no callable 'execute'" in message


def test_an_object_with_a_spec_but_no_execute_is_refused_naming_the_entry() -> None:
    class SpecOnly:
        spec: ClassVar[dict[str, Any]] = {"name": "half"}

        def __repr__(self) -> str:
            return "<SpecOnly>"

    with pytest.raises(ValueError) as excinfo:
        run_exec(ScriptedProvider("ok"), tools=[SpecOnly()])
    assert str(excinfo.value).startswith("tools[0]: tool object <SpecOnly> has a spec but no 'execute'")


def test_a_dict_without_a_spec_and_a_string_menu_are_refused() -> None:
    with pytest.raises(ValueError, match=r"tools\[0\]: tool entry .* has no 'spec'"):
        run_exec(ScriptedProvider("ok"), tools=[{"execute": print}])
    with pytest.raises(TypeError, match="tools= takes a list of tools, got str"):
        run_exec(ScriptedProvider("ok"), tools="add")  # type: ignore[arg-type]


def test_two_tools_with_the_same_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two tools on the menu share the name"):
        run_exec(ScriptedProvider("ok"), tools=[make_tool("x"), make_tool("x")])


# --------------------------------------------------------------------------------------------
# Policies
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "names"),
    [
        ({"tools_allow": ["add"]}, ["add"]),
        ({"tools_allow": "fs_*"}, ["fs_read", "fs_write"]),
        ({"tools_deny": ["fs_write"]}, ["add", "fs_read"]),
        ({"tools_deny": "fs_*"}, ["add"]),
        ({"tools_allow": ["fs_*", "add"], "tools_deny": ["fs_read"]}, ["add", "fs_write"]),  # deny wins
        ({"tools_allow": "add", "tools_deny": "add"}, []),
        ({"tools_source": "fs"}, ["fs_read", "fs_write"]),
        ({"tools_source": __name__}, ["add"]),  # the default source is the defining module
        ({"tools_source": ["fs", "tests.*"], "tools_deny": "fs_read"}, ["add", "fs_write"]),
    ],
)
def test_policies_trim_the_menu(reg: Registry, policy: dict[str, Any], names: list[str]) -> None:
    _register_three()
    provider = ScriptedProvider("ok")
    run_exec(provider, **policy)
    assert tool_names(provider.requests[0]) == names


def test_policies_also_trim_an_explicit_list(reg: Registry) -> None:
    add, fs_read, fs_write = _register_three()
    provider = ScriptedProvider("ok")
    run_exec(provider, tools=[fs_write, add, fs_read], tools_deny=["add"])
    assert tool_names(provider.requests[0]) == ["fs_write", "fs_read"]


def test_a_call_to_a_tool_removed_by_policy_is_not_found() -> None:
    provider = ScriptedProvider(turn.tool_call("b"), "ok")
    run_exec(provider, tools=[make_tool("a"), make_tool("b")], tools_deny="b")
    assert provider.requests[1].messages[-1].text == 'Tool "b" not found. Available tools: a'


# --------------------------------------------------------------------------------------------
# tool_choice and parallel_tool_calls
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("choice", ["auto", "required", "none", {"type": "function", "name": "a"}])
def test_valid_tool_choices_are_forwarded(choice: Any) -> None:
    provider = ScriptedProvider("ok")
    run_exec(provider, tools=[make_tool("a")], tool_choice=choice, parallel_tool_calls=False)
    assert provider.requests[0].tool_choice == choice
    assert provider.requests[0].parallel_tool_calls is False


def test_the_default_tool_choice_is_auto() -> None:
    provider = ScriptedProvider("ok")
    run_exec(provider, tools=[])
    assert provider.requests[0].tool_choice == "auto"
    assert provider.requests[0].parallel_tool_calls is None


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        (
            "any",
            'unknown tool_choice \'any\'; accepted: "auto", "required", "none", '
            '{"type": "function", "name": "<tool name>"} or None',
        ),
        (
            {"type": "function"},
            "tool_choice {'type': 'function'} is not a function pick; accepted: \"auto\", \"required\", "
            '"none", {"type": "function", "name": "<tool name>"} or None',
        ),
        (
            {"type": "function", "name": "zzz"},
            "tool_choice forces 'zzz', which is not on the menu (available: a, b)",
        ),
    ],
)
def test_invalid_tool_choices_are_refused_before_any_request(choice: Any, message: str) -> None:
    provider = ScriptedProvider("ok")
    with pytest.raises(ValueError) as excinfo:
        run_exec(provider, tools=[make_tool("a"), make_tool("b")], tool_choice=choice)
    assert str(excinfo.value) == message
    assert provider.requests == ()


def test_required_with_an_empty_menu_is_refused() -> None:
    with pytest.raises(ValueError, match=r"tool_choice='required' needs at least one tool on the menu"):
        run_exec(ScriptedProvider("ok"), tools=[], tool_choice="required")


def test_forcing_a_tool_removed_by_policy_is_refused() -> None:
    with pytest.raises(ValueError, match=r"tool_choice forces 'b', which is not on the menu \(available: a\)"):
        run_exec(
            ScriptedProvider("ok"),
            tools=[make_tool("a"), make_tool("b")],
            tools_deny="b",
            tool_choice={"type": "function", "name": "b"},
        )


# --------------------------------------------------------------------------------------------
# Nested exec
# --------------------------------------------------------------------------------------------


def _nested_script() -> ScriptedProvider:
    return ScriptedProvider(
        turn.tool_call("researcher", topic="tides"),  # outer request 1
        turn.tool_call("lookup", q="tides"),  # nested request 2
        "the moon",  # nested request 3
        "tides come from the moon",  # outer request 4
    )


def test_a_sync_nested_exec_in_a_sync_tool_inherits_the_outer_menu_after_policy(reg: Registry) -> None:
    threads: dict[str, int] = {}

    @function
    def lookup(q: str) -> str:
        threads["lookup"] = threading.get_ident()
        return f"found {q}"

    @function
    def unrelated() -> str:
        return "x"

    @agentic_function
    def researcher(topic: str) -> str:
        """Research a topic with the tools at hand."""
        threads["researcher"] = threading.get_ident()
        return runtime.exec(f"research {topic}")

    provider = _nested_script()
    threads["caller"] = threading.get_ident()
    text = run_exec(provider, tools=[lookup, researcher, unrelated], tools_deny="unrelated")

    assert text == "tides come from the moon"
    assert [tool_names(r) for r in provider.requests] == [["lookup", "researcher"]] * 4
    nested_first = provider.requests[1].messages
    assert [m.content for m in nested_first] == ["research tides"]
    assert provider.requests[2].messages[-1].text == "found tides"
    assert provider.requests[3].messages[-1].text == "the moon"  # the nested answer is the tool's result
    assert threads["lookup"] != threads["researcher"]  # the nested loop ran on a helper thread
    provider.assert_complete()


def test_a_nested_exec_trims_the_inherited_menu_with_its_own_policy(reg: Registry) -> None:
    @function
    def lookup(q: str) -> str:
        return f"found {q}"

    @function
    def other() -> str:
        return "x"

    @agentic_function
    def researcher(topic: str) -> str:
        return runtime.exec(f"research {topic}", tools_deny=["researcher"])

    provider = _nested_script()
    run_exec(provider, tools_allow=["lookup", "researcher"])  # outer menu: the registry, trimmed
    assert [tool_names(r) for r in provider.requests] == [
        ["lookup", "researcher"],
        ["lookup"],
        ["lookup"],
        ["lookup", "researcher"],
    ]


def test_an_async_nested_aexec_in_an_async_tool_inherits_the_outer_menu(reg: Registry) -> None:
    @function
    async def lookup(q: str) -> str:
        return f"found {q}"

    @agentic_function
    async def researcher(topic: str) -> str:
        return await runtime.aexec(f"research {topic}")

    @function
    def hidden() -> str:
        return "x"

    provider = _nested_script()

    async def main() -> str:
        with runtime.use(provider):
            return await runtime.aexec("go", tools=[lookup, researcher])

    assert asyncio.run(main()) == "tides come from the moon"
    assert [tool_names(r) for r in provider.requests] == [["lookup", "researcher"]] * 4
    provider.assert_complete()


def test_a_nested_exec_in_a_worker_thread_tool_inherits_the_menu(reg: Registry) -> None:
    @function
    def lookup(q: str) -> str:
        return f"found {q}"

    @agentic_function(thread=True)
    def researcher(topic: str) -> str:
        return runtime.exec(f"research {topic}")

    provider = _nested_script()
    assert run_exec(provider, tools=[lookup, researcher]) == "tides come from the moon"
    assert tool_names(provider.requests[1]) == ["lookup", "researcher"]


def test_a_nested_exec_with_explicit_tools_uses_them(reg: Registry) -> None:
    @function
    def lookup(q: str) -> str:
        return q

    @agentic_function
    def researcher(topic: str) -> str:
        return runtime.exec(topic, tools=[])

    provider = ScriptedProvider(turn.tool_call("researcher", topic="t"), "inner", "outer")
    run_exec(provider, tools=[lookup, researcher])
    assert provider.requests[1].tools == ()


def test_a_nested_exec_error_becomes_the_outer_tools_error_result(reg: Registry) -> None:
    @agentic_function
    def researcher(topic: str) -> str:
        return runtime.exec(topic)

    provider = ScriptedProvider(turn.tool_call("researcher", topic="t"), turn.error("overloaded"), "recovered")
    assert run_exec(provider, tools=[researcher]) == "recovered"
    result = provider.requests[2].messages[-1]
    assert result.is_error is True
    assert result.text == "exec ended with error: overloaded"


def test_sync_exec_called_from_async_code_runs_on_a_helper_thread() -> None:
    async def main() -> str:
        return runtime.exec("q", tools=[], provider=ScriptedProvider("from a thread"))

    assert asyncio.run(main()) == "from a thread"


def _nested_trace() -> list[str]:
    @agentic_function(register=False)
    def researcher(topic: str) -> str:
        return runtime.exec(f"research {topic}", tools=[])

    provider = ScriptedProvider(turn.tool_call("researcher", topic="t"), "inner", "outer")
    with runtime.use(provider):
        runtime.exec("go", tools=[researcher], clock=Clock())
    return [r.model_dump_json() for r in provider.requests]


def test_a_nested_exec_stamps_with_the_outer_clock_so_traces_repeat() -> None:
    first = _nested_trace()
    assert first == _nested_trace()
    # outer prompt 1001, outer reply 1002, then the nested prompt takes the outer clock's next tick
    assert '"timestamp":1003' in first[1]


# --------------------------------------------------------------------------------------------
# override: what a test binds beats provider= and an inner use, nested runs included
# --------------------------------------------------------------------------------------------


def test_override_beats_an_explicit_provider_and_an_inner_use() -> None:
    app_model, test_model = ScriptedProvider("from the app"), ScriptedProvider("one", "two")
    with runtime.override(test_model):
        assert runtime.exec("q", tools=[], provider=app_model) == "one"
        with runtime.use(app_model):
            assert runtime.exec("q", tools=[]) == "two"
        assert runtime.current_provider() is test_model
    assert app_model.requests == ()
    assert runtime.current_provider() is None


def test_override_reaches_a_nested_exec_that_names_its_own_provider(reg: Registry) -> None:
    app_model = ScriptedProvider("never asked")

    @agentic_function
    def research(topic: str) -> str:
        """Look a topic up."""
        return runtime.exec(topic, tools=[], provider=app_model)

    test_model = ScriptedProvider(turn.tool_call("research", topic="owls"), "nested", "outer")
    with runtime.override(test_model):
        assert runtime.exec("go", tools=[research]) == "outer"
    assert len(test_model.requests) == 3 and app_model.requests == ()
    assert test_model.requests[1].messages[0].content == "owls"


def test_override_model_replaces_the_callers_model_and_none_keeps_it() -> None:
    test_model = ScriptedProvider("a", "b")
    with runtime.override(test_model, model="scripted-model"):
        runtime.exec("q", tools=[], model="gpt-app")
    with runtime.override(test_model):
        runtime.exec("q", tools=[], model="gpt-app")
    assert [r.model for r in test_model.requests] == ["scripted-model", "gpt-app"]


def test_the_innermost_override_wins_and_a_non_provider_is_refused() -> None:
    outer, inner = ScriptedProvider(), ScriptedProvider("inner")
    with runtime.override(outer), runtime.override(inner):
        assert runtime.exec("q", tools=[]) == "inner"
    with pytest.raises(TypeError, match=r"runtime\.override needs a provider"):
        with runtime.override("gpt-4o"):  # type: ignore[arg-type]
            pass


# --------------------------------------------------------------------------------------------
# use_clock, exec_result and usage, and a sync exec's error chain
# --------------------------------------------------------------------------------------------


def test_use_clock_stamps_an_exec_that_passes_no_clock_and_an_explicit_clock_wins() -> None:
    with runtime.use(ScriptedProvider("a", "b")), runtime.use_clock(Clock(start=5000)):
        stamped = runtime.exec_result("q", tools=[]).messages
        own = runtime.exec_result("q", tools=[], clock=Clock(start=9000)).messages
    assert [m.timestamp for m in stamped] == [5001, 5002]
    assert [m.timestamp for m in own] == [9001, 9002]


def test_exec_result_sums_the_runs_usage_over_its_assistant_messages(reg: Registry) -> None:
    from openprogram.types import Usage

    add = make_tool("add")
    provider = ScriptedProvider(
        turn.tool_calls(turn.tool_call("add"), usage=Usage(input=10, output=2, cache_read=1, total_tokens=13)),
        turn.text("done", usage=Usage(input=20, output=3, cache_write=4, total_tokens=27)),
    )
    with runtime.use(provider):
        result = runtime.exec_result("q", tools=[add])
    assert result.text == "done" and result.reason == "stop"
    assert result.usage == Usage(input=30, output=5, cache_read=1, cache_write=4, total_tokens=40)


def test_a_failing_sync_exec_does_not_chain_the_no_running_loop_error() -> None:
    def chain(exc: BaseException) -> list[BaseException]:
        links = []
        while exc is not None and len(links) < 10:
            links.extend(e for e in (exc.__cause__, exc.__context__) if e is not None)
            exc = exc.__context__ or exc.__cause__  # type: ignore[assignment]
        return links

    with pytest.raises(ExecError) as failed, runtime.use(ScriptedProvider(turn.error("boom"))):
        runtime.exec("q", tools=[])
    with pytest.raises(RuntimeError, match="no model provider") as unbound:
        runtime.exec("q", tools=[])
    for raised in (failed.value, unbound.value):
        assert not any("no running event loop" in str(link) for link in chain(raised)), chain(raised)
        assert raised.__cause__ is None and raised.__context__ is None


def test_runtime_imports_no_private_module() -> None:
    """runtime is the entry point a reader starts from: what it needs from the providers is public."""
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(runtime))
    imported = [node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    private = [name for name in imported if name != "__future__" and any(p.startswith("_") for p in name.split("."))]
    assert private == []
