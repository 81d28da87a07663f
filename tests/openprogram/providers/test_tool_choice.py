"""Every cell of the tool_choice table, spelled out by hand so a wrong cell in the module fails here."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from openprogram.providers import tool_choice
from openprogram.providers.tool_choice import OMIT_TOOLS

PICK = {"type": "function", "name": "get_weather"}

# (provider function, our tool_choice, parallel_tool_calls, expected wire dict)
CELLS: list[tuple[str, Any, bool | None, dict[str, Any]]] = [
    # -- OpenAI chat completions: kwargs of chat.completions.create
    ("openai_chat", None, None, {}),
    ("openai_chat", "auto", None, {"tool_choice": "auto"}),
    ("openai_chat", "required", None, {"tool_choice": "required"}),
    ("openai_chat", "none", None, {"tool_choice": "none"}),
    ("openai_chat", PICK, None, {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}}),
    ("openai_chat", None, True, {"parallel_tool_calls": True}),
    ("openai_chat", None, False, {"parallel_tool_calls": False}),
    ("openai_chat", "required", False, {"tool_choice": "required", "parallel_tool_calls": False}),
    (
        "openai_chat",
        PICK,
        True,
        {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}, "parallel_tool_calls": True},
    ),
    # -- OpenAI Responses: kwargs of responses.create
    ("openai_responses", None, None, {}),
    ("openai_responses", "auto", None, {"tool_choice": "auto"}),
    ("openai_responses", "required", None, {"tool_choice": "required"}),
    ("openai_responses", "none", None, {"tool_choice": "none"}),
    ("openai_responses", PICK, None, {"tool_choice": {"type": "function", "name": "get_weather"}}),
    ("openai_responses", None, True, {"parallel_tool_calls": True}),
    ("openai_responses", None, False, {"parallel_tool_calls": False}),
    ("openai_responses", "auto", False, {"tool_choice": "auto", "parallel_tool_calls": False}),
    # -- Anthropic: kwargs of messages.create
    ("anthropic", None, None, {}),
    ("anthropic", "auto", None, {"tool_choice": {"type": "auto"}}),
    ("anthropic", "required", None, {"tool_choice": {"type": "any"}}),
    ("anthropic", "none", None, {"tool_choice": {"type": "none"}}),
    ("anthropic", PICK, None, {"tool_choice": {"type": "tool", "name": "get_weather"}}),
    ("anthropic", None, True, {}),
    ("anthropic", "auto", True, {"tool_choice": {"type": "auto"}}),
    ("anthropic", None, False, {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}),
    ("anthropic", "auto", False, {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}),
    ("anthropic", "required", False, {"tool_choice": {"type": "any", "disable_parallel_tool_use": True}}),
    (
        "anthropic",
        PICK,
        False,
        {"tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}},
    ),
    ("anthropic", "none", False, {"tool_choice": {"type": "none"}}),
    # -- Gemini: the tool_config of GenerateContentConfig; no parallel knob
    ("gemini", None, None, {}),
    ("gemini", "auto", None, {"function_calling_config": {"mode": "AUTO"}}),
    ("gemini", "required", None, {"function_calling_config": {"mode": "ANY"}}),
    ("gemini", "none", None, {"function_calling_config": {"mode": "NONE"}}),
    (
        "gemini",
        PICK,
        None,
        {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["get_weather"]}},
    ),
    ("gemini", None, True, {}),
    ("gemini", None, False, {}),
    ("gemini", "required", False, {"function_calling_config": {"mode": "ANY"}}),
    # -- Bedrock Converse: entries of toolConfig; "none" is the omit-tools sentinel; no parallel knob
    ("bedrock", None, None, {}),
    ("bedrock", "auto", None, {"toolChoice": {"auto": {}}}),
    ("bedrock", "required", None, {"toolChoice": {"any": {}}}),
    ("bedrock", "none", None, {"__omit_tools__": True}),
    ("bedrock", PICK, None, {"toolChoice": {"tool": {"name": "get_weather"}}}),
    ("bedrock", None, True, {}),
    ("bedrock", None, False, {}),
    ("bedrock", PICK, False, {"toolChoice": {"tool": {"name": "get_weather"}}}),
]


def _cell_id(cell: tuple[str, Any, bool | None, dict[str, Any]]) -> str:
    provider, choice, parallel, _ = cell
    label = f"function:{choice['name']}" if isinstance(choice, dict) else str(choice)
    return f"{provider}-{label}-parallel={parallel}"


@pytest.mark.parametrize("cell", CELLS, ids=[_cell_id(cell) for cell in CELLS])
def test_cell(cell: tuple[str, Any, bool | None, dict[str, Any]]) -> None:
    provider, choice, parallel, expected = cell
    render: Callable[[Any, bool | None], dict[str, Any]] = getattr(tool_choice, provider)
    assert render(choice, parallel) == expected


def test_bedrock_none_sentinel_key_is_exported() -> None:
    assert tool_choice.bedrock("none", None) == {OMIT_TOOLS: True}


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses", "anthropic", "gemini", "bedrock"])
def test_result_is_a_fresh_copy(provider: str) -> None:
    """Backends merge the result into their request in place; that must never corrupt the next call."""
    render = getattr(tool_choice, provider)
    for choice in ("auto", PICK, None):
        pristine = copy.deepcopy(render(choice, False))
        _scribble(render(choice, False))
        assert render(choice, False) == pristine


def _scribble(value: Any) -> None:
    if isinstance(value, dict):
        for key in list(value):
            _scribble(value[key])
        value["scribbled"] = True
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.append("scribbled")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ({"type": "function", "name": "x"}, {"type": "function", "name": "x"}),
    ],
)
def test_normalize_accepts_the_documented_values(value: Any, expected: Any) -> None:
    assert tool_choice.normalize(value) == expected


BAD_CHOICES = [
    pytest.param("any", "unknown tool_choice 'any'", id="unknown-string"),
    pytest.param("AUTO", "unknown tool_choice 'AUTO'", id="wrong-case"),
    pytest.param({"type": "function"}, "not a function pick", id="dict-without-name"),
    pytest.param({"name": "x"}, "not a function pick", id="dict-without-type"),
    pytest.param({"type": "tool", "name": "x"}, "not a function pick", id="dict-wrong-type"),
    pytest.param({"type": "function", "function": {"name": "x"}}, "not a function pick", id="openai-shape"),
    pytest.param({"type": "function", "name": ""}, "non-empty tool name", id="empty-name"),
    pytest.param({"type": "function", "name": 3}, "non-empty tool name", id="name-not-str"),
    pytest.param(3, "must be a string or a dict, got int", id="int"),
]


@pytest.mark.parametrize(("value", "reason"), BAD_CHOICES)
def test_normalize_rejects_bad_values_and_lists_the_accepted_ones(value: Any, reason: str) -> None:
    with pytest.raises(ValueError) as excinfo:
        tool_choice.normalize(value)
    message = str(excinfo.value)
    assert reason in message
    assert '"auto", "required", "none", {"type": "function", "name": "<tool name>"}' in message


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses", "anthropic", "gemini", "bedrock"])
@pytest.mark.parametrize(("value", "reason"), BAD_CHOICES[:3])
def test_every_provider_rejects_bad_values(provider: str, value: Any, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        getattr(tool_choice, provider)(value, None)


@pytest.mark.parametrize("parallel", ["yes", 0, 1])
def test_parallel_must_be_a_bool_or_none(parallel: Any) -> None:
    with pytest.raises(ValueError, match="parallel_tool_calls must be True, False or None"):
        tool_choice.openai_chat("auto", parallel)
