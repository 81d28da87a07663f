"""The ids the emulator sends are the ones docs/emulator.md documents: each wire's format, one
counter per emulator so the same requests get the same ids, and a scripted ``call_id`` sent as is."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx2

from harness.emulator import Emulator
from harness.script import turn

DOC = Path(__file__).resolve().parents[3] / "docs" / "emulator.md"
REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/responses", {"model": "m", "input": "hi"}),
    ("/v1/messages", {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1beta/models/gemini-2.5-flash:generateContent", {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
    ("/model/us.amazon.nova-micro-v1:0/converse", {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}),
]


def _replies(emulator: Emulator) -> list[httpx2.Response]:
    with emulator.sync_http_client() as client:
        return [client.post("http://emulator" + path, json=body) for path, body in REQUESTS]


def _calling() -> Emulator:
    return Emulator(turn.tool_calls(turn.tool_call("add", a=1, b=2), text="Adding."), after_last="repeat")


def _ids(replies: list[httpx2.Response]) -> dict[str, str]:
    chat, responses, anthropic, gemini, bedrock = (reply.json() for reply in replies)
    items = {item["type"]: item for item in responses["output"]}
    tool_use = next(block for block in anthropic["content"] if block["type"] == "tool_use")
    use = next(block["toolUse"] for block in bedrock["output"]["message"]["content"] if "toolUse" in block)
    call = next(part["functionCall"] for part in gemini["candidates"][0]["content"]["parts"] if "functionCall" in part)
    return {
        "chat id": chat["id"],
        "chat call id": chat["choices"][0]["message"]["tool_calls"][0]["id"],
        "chat x-request-id": replies[0].headers["x-request-id"],
        "response id": responses["id"],
        "response message id": items["message"]["id"],
        "response function_call id": items["function_call"]["id"],
        "response call_id": items["function_call"]["call_id"],
        "responses x-request-id": replies[1].headers["x-request-id"],
        "anthropic message id": anthropic["id"],
        "anthropic tool_use id": tool_use["id"],
        "anthropic request-id": replies[2].headers["request-id"],
        "gemini responseId": gemini["responseId"],
        "gemini functionCall id": call.get("id", "(none)"),
        "bedrock toolUseId": use["toolUseId"],
        "bedrock x-amzn-RequestId": replies[4].headers["x-amzn-requestid"],
    }


FORMATS = {
    "chat id": r"chatcmpl-\d{24}",
    "chat call id": r"call_\d{24}",
    "chat x-request-id": r"req_\d{32}",
    "response id": r"resp_\d{48}",
    "response message id": r"msg_\d{48}",
    "response function_call id": r"fc_\d{48}",
    "response call_id": r"call_\d{24}",
    "responses x-request-id": r"req_\d{32}",
    "anthropic message id": r"msg_01\d{24}",
    "anthropic tool_use id": r"toolu_01\d{24}",
    "anthropic request-id": r"req_011\d{21}",
    "gemini responseId": r"\d{23}",
    "gemini functionCall id": r"\(none\)",
    "bedrock toolUseId": r"tooluse_\d{22}",
    "bedrock x-amzn-RequestId": r"\d{8}-\d{4}-\d{4}-\d{4}-\d{12}",
}


def test_every_wire_sends_ids_in_the_documented_format() -> None:
    ids = _ids(_replies(_calling()))
    wrong = {name: value for name, value in ids.items() if not re.fullmatch(FORMATS[name], value)}
    assert not wrong, wrong


def test_the_documented_table_shows_each_format() -> None:
    doc = DOC.read_text(encoding="utf-8")
    section = doc.split("## The ids it sends", 1)[1].split("\n## ", 1)[0]
    for example in [
        "chatcmpl-000000000000000000000001",
        "call_000000000000000000000002",
        "req_00000000000000000000000000000003",
        "resp_" + "0" * 47 + "4",
        "msg_01" + "0" * 23 + "9",
        "toolu_01" + "0" * 22 + "10",
        "tooluse_" + "0" * 20 + "14",
        "00000000-0000-0000-0000-000000000013",
    ]:
        assert example in section, example
    assert _ids(_replies(_calling()))["chat id"] == "chatcmpl-000000000000000000000001"
    assert _ids(_replies(_calling()))["bedrock toolUseId"] == "tooluse_" + "0" * 20 + "14"


def test_the_same_requests_get_the_same_ids_from_a_new_emulator_and_after_a_reset() -> None:
    first = _calling()
    once = [reply.content for reply in _replies(first)]
    assert [reply.content for reply in _replies(_calling())] == once
    first.reset_script()
    assert [reply.content for reply in _replies(first)] == once


def test_a_scripted_call_id_is_sent_as_is_on_every_wire() -> None:
    scripted = turn.tool_calls(turn.tool_call("add", a=1, b=2, call_id="my-call-7"), text="Adding.")
    emulator = Emulator(scripted, after_last="repeat")
    ids = _ids(_replies(emulator))
    assert {ids[k] for k in ("chat call id", "response call_id", "anthropic tool_use id", "bedrock toolUseId")} == {
        "my-call-7"
    }
    assert ids["gemini functionCall id"] == "my-call-7"
