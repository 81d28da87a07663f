"""The reference model on its own: its predictions, written out by hand from DESIGN.md.

These never run the loop. They pin what the model predicts for small scenarios, so that a
reference-model change that would silently agree with a loop bug is caught here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import harness.oracle._reference as reference
from harness._contract import SKIPPED_STEERING
from harness.checking._runner import run
from harness.oracle._reference import compare, predict
from harness.scenarios._scenario import Config, ModelTurn, NestedRun, Scenario, ToolDef
from harness.scenarios._scenario_parts import Behaviour, Call
from openprogram.types import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage

ECHO = ToolDef(name="echo", plan=(Behaviour("return", "hi"),))


def test_the_reference_never_imports_the_loop() -> None:
    tree = ast.parse(Path(reference.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert not any(name and name.startswith("openprogram.agent") for name in imported), imported
    assert not any(name and name.startswith("openprogram.runtime") for name in imported), imported


def test_a_text_reply() -> None:
    prediction = predict(Scenario(prompts=("hi",), turns=(ModelTurn(text="hello"),)))
    assert prediction.event_types == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_update",  # text_start
        "message_update",  # one 16-character chunk
        "message_update",  # text_end
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert prediction.reason == "stop"
    assert prediction.new_messages == [
        UserMessage(content="hi", timestamp=1000),
        AssistantMessage(content=(TextContent(text="hello"),), model="scripted", provider="scripted", timestamp=1001),
    ]
    assert [list(r["messages"]) for r in prediction.requests] == [[prediction.new_messages[0]]]


def test_a_tool_round_trip() -> None:
    prediction = predict(
        Scenario(prompts=("go",), tools=(ECHO,), turns=(ModelTurn(calls=(Call("echo"),)), ModelTurn(text="done")))
    )
    call = ToolCall(id="call_1", name="echo", arguments={})
    assert prediction.new_messages[1] == AssistantMessage(
        content=(call,), stop_reason="toolUse", model="scripted", provider="scripted", timestamp=1001
    )
    assert prediction.new_messages[2] == ToolResultMessage(
        tool_call_id="call_1", tool_name="echo", content="hi", timestamp=1002
    )
    assert [(e.tool_name, e.tool_call_id, e.text) for e in prediction.ledger] == [("echo", "call_1", "hi")]
    assert len(prediction.requests) == 2
    assert prediction.requests[1]["messages"] == tuple(prediction.new_messages[:3])


def test_steering_mid_batch_skips_the_rest_and_goes_first() -> None:
    scenario = Scenario(
        prompts=("go",),
        tools=(ECHO,),
        turns=(ModelTurn(calls=(Call("echo"), Call("echo"), Call("nope"))), ModelTurn(text="ok")),
        steering={2: ("stop",)},  # poll 1 before the first call, poll 2 after the first executed call
    )
    prediction = predict(scenario)
    results = [m for m in prediction.new_messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.text, r.is_error) for r in results] == [
        ("call_1", "hi", False),
        ("call_2", SKIPPED_STEERING, True),
        ("call_3", SKIPPED_STEERING, True),
    ]
    assert [e.tool_call_id for e in prediction.ledger] == ["call_1"]
    history = prediction.requests[1]["messages"]
    assert isinstance(history[-1], UserMessage) and history[-1].content == "stop"


def test_the_cap_keeps_dequeued_messages_and_ends_with_max_iterations() -> None:
    scenario = Scenario(
        tools=(ECHO,),
        turns=(ModelTurn(calls=(Call("echo"),)), ModelTurn(text="never")),
        steering={3: ("late",)},
        follow_ups={1: ("never polled",)},
        config=Config(max_iterations=0),
    )
    prediction = predict(scenario)
    assert prediction.reason == "max_iterations"
    assert len(prediction.requests) == 1
    assert prediction.new_messages[-1] == UserMessage(content="late", timestamp=1003)
    assert prediction.event_types[-3:] == ["message_start", "message_end", "agent_end"]


def test_errors_fed_back_to_the_model() -> None:
    add = ToolDef(
        name="add",
        parameters={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
        plan=(Behaviour("raise", ""),),
    )
    scenario = Scenario(
        tools=(add,),
        turns=(ModelTurn(calls=(Call("sub"), Call("add", raw="[1]"), Call("add", {"a": "x"}), Call("add", {"a": 1}))),),
    )
    texts = [m.text for m in predict(scenario).new_messages if isinstance(m, ToolResultMessage)]
    assert texts[0] == 'Tool "sub" not found. Available tools: add'
    assert (
        texts[1]
        == 'Invalid JSON arguments for tool "add": expected a JSON object, got list\n\nReceived arguments:\n[1]'
    )
    assert texts[2].startswith("Validation failed for tool \"add\":\n  - a: 'x' is not of type 'integer'")
    assert texts[3] == "RuntimeError"
    assert predict(scenario).reason == "error"  # the script ran out: request 2 is answered with an error


def test_a_nested_run_shares_the_clock_and_not_the_ledger() -> None:
    research = ToolDef(
        name="research",
        plan=(
            Behaviour(
                "exec",
                nested=NestedRun(tools=("echo",), turns=(ModelTurn(calls=(Call("echo"),)), ModelTurn(text="found"))),
            ),
        ),
    )
    prediction = predict(
        Scenario(tools=(research, ECHO), turns=(ModelTurn(calls=(Call("research"),)), ModelTurn(text="done")))
    )
    result = prediction.new_messages[2]
    assert isinstance(result, ToolResultMessage) and result.text == "found"
    # the nested run stamped 4 messages (prompt, call, result, answer) between the outer call and its result
    assert result.timestamp == 1006
    assert [e.tool_name for e in prediction.ledger] == ["research"]


def test_compare_names_the_first_divergence() -> None:
    scenario = Scenario(tools=(ECHO,), turns=(ModelTurn(calls=(Call("echo"),)), ModelTurn(text="done")))
    trace = run(scenario)
    assert compare(scenario, trace) == []
    other = Scenario(tools=(ECHO,), turns=(ModelTurn(calls=(Call("echo"),)), ModelTurn(text="other")))
    lines = compare(other, trace)
    assert lines[0] == "first event divergence at event #19:"  # the final message_end
    assert any("first new_messages divergence at #4" in line for line in lines)
