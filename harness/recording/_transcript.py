"""What a recorded request said: its conversation as provider-neutral messages.

Every provider sends the whole history again with each request, each in its own shape (OpenAI chat
``messages``, Responses ``input`` items, Anthropic content blocks, Gemini ``contents`` and parts,
Bedrock ``messages``, Ollama's Chat-Completions-like ``messages``). Showing a cassette as a timeline
and turning it into a scenario both need the same reading of those shapes: who said what, which tool
calls the assistant made and which results came back. This module is that reading, and nothing else:
it looks only at the request bodies (the replies are the backends' to decode, see
:mod:`harness.recording._conformance`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from harness.recording._cassette import Request

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class Call:
    """A tool call the assistant made: id, tool name, arguments (``raw`` when they were not a JSON object)."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw: str | None = None


@dataclass(frozen=True)
class Said:
    """One message of a recorded conversation.

    ``user`` and ``assistant`` messages carry ``text`` (an assistant's also its ``calls``); a
    ``tool`` message is one tool result: ``text`` is the result, ``call_id`` the call it answers.
    """

    role: Role
    text: str = ""
    calls: tuple[Call, ...] = ()
    call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False
    reasoning: tuple[str, ...] = ()
    """The reasoning an assistant message carries back, opaque to the agent and signed or
    encrypted by the provider (:func:`reasoning_entry`): compared as sent, never shown as text."""


@dataclass(frozen=True)
class Conversation:
    """A request's system prompt and messages, in the order the provider received them."""

    system: str
    messages: tuple[Said, ...]


def conversation(request: Request) -> Conversation:
    """The conversation a recorded request sent; raises ``RouteError`` for a request with no provider."""
    reader = _READERS[request.route.provider]
    system, messages = reader(request.body.object, request.route.endpoint)
    return Conversation(system, tuple(_merge(messages)))


def text_of(value: Any) -> str:
    """Text from any of the shapes providers put it in: a string, text parts, JSON (as JSON text)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(text_of(part) for part in value)
    if isinstance(value, dict):
        for key in ("text", "output_text", "input_text"):
            found = value.get(key)
            if isinstance(found, str):
                return found
        if "json" in value:
            return json.dumps(value["json"], ensure_ascii=False)
        if value.get("type") in ("image", "image_url", "input_image", "document") or "image" in value:
            return "[image]"
        return ""
    return json.dumps(value, ensure_ascii=False)


def _call(call_id: Any, name: Any, arguments: Any) -> Call:
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            return Call(str(call_id or ""), str(name or ""), {}, arguments)
        arguments = parsed
    return Call(str(call_id or ""), str(name or ""), arguments if isinstance(arguments, dict) else {})


def reasoning_entry(**fields: Any) -> str:
    """One piece of reasoning as :attr:`Said.reasoning` holds it: its identifying fields (an
    Anthropic block's type, text, signature or data; a Responses item's id and encrypted content;
    a Gemini thought signature) as canonical JSON, equal only when what was sent back is the same."""
    return json.dumps({k: v for k, v in fields.items() if v is not None}, sort_keys=True, ensure_ascii=False)


def _merge(messages: Iterable[Said]) -> Iterable[Said]:
    """Adjacent assistant messages as one (some clients send the text and the calls apart), empty ones dropped."""
    merged: list[Said] = []
    for said in messages:
        if said.role != "tool" and not said.text and not said.calls and not said.reasoning:
            continue
        if merged and said.role == "assistant" and merged[-1].role == "assistant":
            last = merged.pop()
            said = Said(
                "assistant", last.text + said.text, last.calls + said.calls, reasoning=last.reasoning + said.reasoning
            )
        merged.append(said)
    return merged


# ---------------------------------------------------------------------------------------------
# One reader per provider: (body, endpoint) -> (system prompt, messages).
# ---------------------------------------------------------------------------------------------

Reader = Callable[[dict[str, Any], str], tuple[str, list[Said]]]


def _openai(body: dict[str, Any], endpoint: str) -> tuple[str, list[Said]]:
    if endpoint == "responses":
        return _openai_responses(body)
    system, out = [], []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role in ("system", "developer"):
            system.append(text_of(message.get("content")))
        elif role == "user":
            out.append(Said("user", text_of(message.get("content"))))
        elif role == "assistant":
            calls = tuple(
                _call(c.get("id"), (c.get("function") or {}).get("name"), (c.get("function") or {}).get("arguments"))
                for c in message.get("tool_calls") or []
                if isinstance(c, dict)
            )
            out.append(Said("assistant", text_of(message.get("content")), calls))
        elif role == "tool":
            out.append(Said("tool", text_of(message.get("content")), call_id=str(message.get("tool_call_id") or "")))
    return "\n".join(system), out


def _openai_responses(body: dict[str, Any]) -> tuple[str, list[Said]]:
    system = [body["instructions"]] if isinstance(body.get("instructions"), str) else []
    items = body.get("input")
    out: list[Said] = []
    for item in [{"role": "user", "content": items}] if isinstance(items, str) else items or []:
        if not isinstance(item, dict):
            continue
        kind, role = item.get("type", "message"), item.get("role")
        if kind == "message" and role in ("system", "developer"):
            system.append(text_of(item.get("content")))
        elif kind == "message" and role in ("user", "assistant"):
            out.append(Said("user" if role == "user" else "assistant", text_of(item.get("content"))))
        elif kind == "function_call":
            out.append(Said("assistant", calls=(_call(item.get("call_id"), item.get("name"), item.get("arguments")),)))
        elif kind == "reasoning":
            entry = reasoning_entry(
                type="reasoning", id=item.get("id"), encrypted_content=item.get("encrypted_content")
            )
            out.append(Said("assistant", reasoning=(entry,)))
        elif kind == "function_call_output":
            out.append(Said("tool", text_of(item.get("output")), call_id=str(item.get("call_id") or "")))
    return "\n".join(system), out


def _anthropic(body: dict[str, Any], endpoint: str) -> tuple[str, list[Said]]:
    out: list[Said] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role, content = message.get("role"), message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        text, calls, reasoning = [], [], []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "thinking":
                reasoning.append(
                    reasoning_entry(type="thinking", thinking=block.get("thinking"), signature=block.get("signature"))
                )
            elif block.get("type") == "redacted_thinking":
                reasoning.append(reasoning_entry(type="redacted_thinking", data=block.get("data")))
            elif block.get("type") == "tool_result":
                out.append(
                    Said(
                        "tool",
                        text_of(block.get("content")),
                        call_id=str(block.get("tool_use_id") or ""),
                        is_error=block.get("is_error") is True,
                    )
                )
            elif block.get("type") == "tool_use":
                calls.append(_call(block.get("id"), block.get("name"), block.get("input")))
            elif block.get("type") == "text":
                text.append(text_of(block))
        if role in ("user", "assistant"):
            out.append(Said(role, "".join(text), tuple(calls), reasoning=tuple(reasoning)))
    return text_of(body.get("system")), out


def _gemini(body: dict[str, Any], endpoint: str) -> tuple[str, list[Said]]:
    instruction = body.get("systemInstruction") or body.get("system_instruction") or {}
    system = text_of(instruction.get("parts") if isinstance(instruction, dict) else instruction)
    out: list[Said] = []
    for content in body.get("contents") or []:
        if not isinstance(content, dict):
            continue
        role: Role = "assistant" if content.get("role") == "model" else "user"
        text, calls, signatures = [], [], []
        for part in content.get("parts") or []:
            if not isinstance(part, dict):
                continue
            signature = part.get("thoughtSignature") or part.get("thought_signature")
            if isinstance(signature, str):
                signatures.append(reasoning_entry(thoughtSignature=signature))
            call = part.get("functionCall") or part.get("function_call")
            result = part.get("functionResponse") or part.get("function_response")
            if isinstance(call, dict):
                calls.append(_call(call.get("id") or "", call.get("name"), call.get("args") or {}))
            elif isinstance(result, dict):
                out.append(
                    Said(
                        "tool",
                        json.dumps(result.get("response"), ensure_ascii=False),
                        call_id=str(result.get("id") or ""),
                        tool_name=str(result.get("name") or ""),
                    )
                )
            elif isinstance(part.get("text"), str) and not part.get("thought"):
                text.append(part["text"])
        out.append(Said(role, "".join(text), tuple(calls), reasoning=tuple(signatures)))
    return system, out


def _bedrock(body: dict[str, Any], endpoint: str) -> tuple[str, list[Said]]:
    if endpoint.startswith("invoke"):  # Claude on InvokeModel: Anthropic's own body
        return _anthropic(body, endpoint)
    out: list[Said] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        text, calls, reasoning = [], [], []
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if isinstance(block.get("toolResult"), dict):
                result = block["toolResult"]
                out.append(
                    Said(
                        "tool",
                        text_of(result.get("content")),
                        call_id=str(result.get("toolUseId") or ""),
                        is_error=result.get("status") == "error",
                    )
                )
            elif isinstance(block.get("reasoningContent"), dict):
                reasoning.append(_bedrock_reasoning(block["reasoningContent"]))
            elif isinstance(block.get("toolUse"), dict):
                use = block["toolUse"]
                calls.append(_call(use.get("toolUseId"), use.get("name"), use.get("input")))
            elif isinstance(block.get("text"), str):
                text.append(block["text"])
        if message.get("role") in ("user", "assistant"):
            out.append(Said(message["role"], "".join(text), tuple(calls), reasoning=tuple(reasoning)))
    return text_of(body.get("system")), out


def _bedrock_reasoning(content: dict[str, Any]) -> str:
    """Converse's ``reasoningContent``: its ``reasoningText`` (text and signature) or its
    ``redactedContent`` (bytes, base64 in JSON)."""
    text = content.get("reasoningText")
    if isinstance(text, dict):
        return reasoning_entry(type="reasoningText", text=text.get("text"), signature=text.get("signature"))
    return reasoning_entry(type="redactedContent", data=content.get("redactedContent"))


def _ollama(body: dict[str, Any], endpoint: str) -> tuple[str, list[Said]]:
    """Chat Completions' shape, but a call's ``arguments`` is an object, and a tool result names its tool."""
    system, out = _openai(body, "chat.completions")
    named = [m.get("tool_name") for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool"]
    results = iter(named)
    return system, [
        Said(said.role, said.text, call_id=said.call_id, tool_name=str(next(results, None) or ""))
        if said.role == "tool"
        else said
        for said in out
    ]


_READERS: dict[str, Reader] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock": _bedrock,
    "ollama": _ollama,
}
