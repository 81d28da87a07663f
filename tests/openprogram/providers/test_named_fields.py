"""The named provider fields (redacted thinking, Gemini call signatures, OpenAI reasoning items)
go back to each provider in the wire shape it expects, and histories saved before the fields
existed (the signature carrying a prefix, a JSON blob or a carrier block) still go back the same."""

from __future__ import annotations

import base64
import json

from openprogram.providers import anthropic, bedrock, gemini, openai
from openprogram.types import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage

CALL = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
RESULT = ToolResultMessage(tool_call_id="call_1", tool_name="get_weather", content="18C")
SIGNATURE = b"\x01gemini-signature\xff"
SIGNATURE_B64 = base64.b64encode(SIGNATURE).decode()


def history(*blocks: object, provider: str) -> tuple[object, ...]:
    """A turn as a saved history gives it back: the reply dumped to JSON and validated again."""
    reply = AssistantMessage(content=tuple(blocks), stop_reason="toolUse", provider=provider)
    return (UserMessage(content="Weather?"), AssistantMessage.model_validate_json(reply.model_dump_json()), RESULT)


# -- Anthropic --------------------------------------------------------------------------------------


def test_anthropic_redacted_thinking_goes_back_as_a_redacted_block() -> None:
    block = ThinkingContent(thinking="", signature="b3BhcXVl", redacted=True)
    (_, assistant, _) = anthropic.convert_messages(history(block, CALL, provider="anthropic"))
    assert assistant["content"][0] == {"type": "redacted_thinking", "data": "b3BhcXVl"}
    assert assistant["content"][1]["type"] == "tool_use"


def test_anthropic_old_prefixed_redacted_thinking_still_goes_back_as_a_redacted_block() -> None:
    old = json.dumps({"type": "thinking", "thinking": "", "signature": "redacted_thinking:b3BhcXVl"})
    block = ThinkingContent.model_validate_json(old)
    assert block.redacted is False  # loads as it was saved; only the wire conversion reads the prefix
    (_, assistant, _) = anthropic.convert_messages(history(block, CALL, provider="anthropic"))
    assert assistant["content"][0] == {"type": "redacted_thinking", "data": "b3BhcXVl"}


def test_anthropic_signed_thinking_is_not_mistaken_for_redacted() -> None:
    block = ThinkingContent(thinking="Let me look.", signature="c2lnbmVk")
    (_, assistant, _) = anthropic.convert_messages(history(block, CALL, provider="anthropic"))
    assert assistant["content"][0] == {"type": "thinking", "thinking": "Let me look.", "signature": "c2lnbmVk"}


# -- Gemini -----------------------------------------------------------------------------------------


def test_gemini_call_signature_goes_back_on_its_function_call() -> None:
    call = CALL.model_copy(update={"thought_signature": SIGNATURE_B64})
    (_, model_turn, _) = gemini.convert_messages(history(call, provider="gemini"))
    (part,) = model_turn.parts
    assert part.function_call.name == "get_weather" and part.thought_signature == SIGNATURE


def test_gemini_old_carrier_block_still_signs_the_call_after_it() -> None:
    carrier = ThinkingContent(thinking="", signature=SIGNATURE_B64)
    (_, model_turn, _) = gemini.convert_messages(history(carrier, CALL, provider="gemini"))
    (part,) = model_turn.parts
    assert part.function_call.name == "get_weather" and part.thought_signature == SIGNATURE


def test_gemini_drops_a_call_signature_another_provider_made() -> None:
    call = CALL.model_copy(update={"thought_signature": SIGNATURE_B64})
    (_, model_turn, _) = gemini.convert_messages(history(call, provider="anthropic"))
    assert model_turn.parts[0].thought_signature is None


# -- OpenAI Responses -------------------------------------------------------------------------------

REASONING_ITEM = {"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC", "summary": []}


def test_openai_reasoning_item_goes_back_in_front_of_its_call() -> None:
    block = ThinkingContent(thinking="", item_id="rs_1", encrypted_content="ENC")
    items = openai.convert_responses_input(history(block, CALL, provider="openai"))
    assert items[1] == REASONING_ITEM
    assert items[2]["type"] == "function_call" and items[2]["call_id"] == "call_1"


def test_openai_old_json_signature_still_goes_back_as_the_reasoning_item() -> None:
    legacy = json.dumps({"kind": "openai.responses.reasoning", "id": "rs_1", "encrypted_content": "ENC"})
    block = ThinkingContent(thinking="", signature=legacy)
    items = openai.convert_responses_input(history(block, CALL, provider="openai"))
    assert items[1] == REASONING_ITEM


def test_openai_reasoning_without_encrypted_content_is_not_sent() -> None:
    block = ThinkingContent(thinking="hmm", item_id="rs_1")
    items = openai.convert_responses_input(history(block, CALL, provider="openai"))
    assert [item.get("type") for item in items] == [None, "function_call", "function_call_output"]


# -- Bedrock ----------------------------------------------------------------------------------------


def test_bedrock_reasoning_signature_goes_back_and_other_providers_fields_are_ignored() -> None:
    own = ThinkingContent(thinking="Checking.", signature="c2ln")
    (_, assistant, _) = bedrock.convert_messages(history(own, CALL, provider="bedrock"))
    assert assistant["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "Checking.", "signature": "c2ln"}}
    }
    foreign = ThinkingContent(thinking="x", item_id="rs_1", encrypted_content="ENC")
    call = CALL.model_copy(update={"thought_signature": SIGNATURE_B64})
    (_, assistant, _) = bedrock.convert_messages(history(foreign, TextContent(text="ok"), call, provider="openai"))
    assert assistant["content"][0] == {"text": "ok"}
    assert assistant["content"][1] == {
        "toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris"}}
    }
