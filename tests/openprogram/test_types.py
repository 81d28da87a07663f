"""The contract types: frozen pydantic models with the names and defaults DESIGN.md section 3 gives."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from openprogram.types import (
    AssistantMessage,
    Message,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
    parse_tool_arguments,
)


def test_stop_reasons() -> None:
    assert get_args(StopReason) == ("stop", "length", "toolUse", "error", "aborted")


def test_defaults() -> None:
    assert ToolCall(id="i", name="n").arguments == {}
    assert ToolCall(id="i", name="n").raw_arguments is None
    message = AssistantMessage()
    assert (message.content, message.stop_reason, message.error_message, message.usage) == ((), "stop", None, Usage())
    assert (message.model, message.provider, message.timestamp) == ("", "", None)
    result = ToolResultMessage(tool_call_id="i", tool_name="n")
    assert (result.content, result.is_error, result.details, result.timestamp) == ((), False, None, None)
    assert ToolSpec(name="t").parameters == {"type": "object", "properties": {}}


def test_messages_are_frozen() -> None:
    message = UserMessage(content="hi")
    with pytest.raises(ValidationError):
        message.content = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        AssistantMessage().stop_reason = "error"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        UserMessage(content="hi", extra_field=1)  # type: ignore[call-arg]


def test_text_properties() -> None:
    assistant = AssistantMessage(
        content=(
            ThinkingContent(thinking="hidden"),
            TextContent(text="a"),
            ToolCall(id="1", name="f"),
            TextContent(text="b"),
        )
    )
    assert assistant.text == "ab"
    assert assistant.tool_calls == [ToolCall(id="1", name="f")]
    assert UserMessage(content=(TextContent(text="x"), TextContent(text="y"))).text == "xy"
    assert UserMessage(content="plain").text == "plain"
    assert ToolResultMessage(tool_call_id="1", tool_name="f", content="r").content == (TextContent(text="r"),)


def test_messages_round_trip_through_json_by_role() -> None:
    adapter = TypeAdapter(Message)
    for message in [
        UserMessage(content="hi", timestamp=1),
        AssistantMessage(
            content=(TextContent(text="a"), ToolCall(id="1", name="f", arguments={"x": [1]})), stop_reason="toolUse"
        ),
        ToolResultMessage(tool_call_id="1", tool_name="f", content="r", is_error=True, details={"k": 1}),
    ]:
        assert adapter.validate_json(adapter.dump_json(message)) == message


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ('{"a": 1}', ({"a": 1}, None)),
        ("", ({}, None)),
        ("   ", ({}, None)),
        ("{}", ({}, None)),
        ('{"a": ', ({}, '{"a": ')),
        ("[1]", ({}, "[1]")),
        ("null", ({}, "null")),
        ('"text"', ({}, '"text"')),
    ],
)
def test_parse_tool_arguments(text: str, parsed: tuple[dict[str, object], str | None]) -> None:
    assert parse_tool_arguments(text) == parsed


def test_histories_saved_before_the_named_provider_fields_still_load() -> None:
    """JSON from before ``redacted``/``item_id``/``encrypted_content``/``thought_signature``: the
    overloaded ``signature`` loads untouched into ``signature`` and the new fields take defaults
    (the backends still read the old forms when they send the history back)."""
    old = (
        '{"content": [{"type": "thinking", "thinking": "", "signature": "redacted_thinking:ZGF0YQ=="},'
        ' {"type": "thinking", "thinking": "", "signature": "{\\"kind\\": \\"openai.responses.reasoning\\"}"},'
        ' {"type": "toolCall", "id": "c1", "name": "f", "arguments": {}}], "stop_reason": "toolUse"}'
    )
    message = AssistantMessage.model_validate_json(old)
    redacted, reasoning, call = message.content
    assert isinstance(redacted, ThinkingContent) and redacted.signature == "redacted_thinking:ZGF0YQ=="
    assert (redacted.redacted, redacted.item_id, redacted.encrypted_content) == (False, None, None)
    assert isinstance(reasoning, ThinkingContent) and reasoning.signature == '{"kind": "openai.responses.reasoning"}'
    assert isinstance(call, ToolCall) and call.thought_signature is None


def test_named_provider_fields_survive_a_json_round_trip() -> None:
    message = AssistantMessage(
        content=(
            ThinkingContent(thinking="", signature="ZGF0YQ==", redacted=True),
            ThinkingContent(thinking="t", item_id="rs_1", encrypted_content="ENC"),
            ToolCall(id="c1", name="f", thought_signature="c2ln"),
        )
    )
    assert AssistantMessage.model_validate_json(message.model_dump_json()) == message


def _as_json_loads_would(text: str) -> tuple[dict[str, Any], str | None]:
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    return (value, None) if isinstance(value, dict) else ({}, text)


_json_texts = st.one_of(
    st.text(max_size=12),
    st.builds(
        lambda before, value, after: before + json.dumps(value) + after,
        st.text(" \t\n\r\x0b\x0c\u00a0x", max_size=3),
        st.recursive(
            st.none() | st.integers() | st.text(max_size=4),
            lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
            max_leaves=5,
        ),
        st.text(" \t\n\r\x0b\x0c\u00a0x{}", max_size=3),
    ),
)


@settings(max_examples=300, deadline=None)
@given(_json_texts)
def test_tool_argument_text_is_parsed_exactly_as_json_loads_reads_it(text: str) -> None:
    # parse_tool_arguments skips json.loads' wrapper for speed: it must accept and refuse the
    # same texts (JSON's own whitespace around the object, nothing else) and give the same value.
    assert parse_tool_arguments(text) == _as_json_loads_would(text)
