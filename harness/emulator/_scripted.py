"""What the Gemini and Bedrock renderers read off a scripted turn the same way.

A renderer must not depend on the clock or on randomness (the same script gives the same bytes),
so text is cut at word boundaries into pieces of a fixed size, and a turn without scripted usage
gets token counts estimated from the request and the reply, four characters a token.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from harness.script import ScriptedCall, Turn
from openprogram.types import Usage

WORDS = re.compile(r"\s*\S+|\s+")


def opaque(kind: str, covered: str, size: int = 32) -> str:
    """A stand-in for a value a provider signs or encrypts (a thinking block's signature, a
    reasoning item's id or encrypted content), derived from what it covers: the same reasoning
    gets the same value whichever emulator serves it and in whichever order, so a wire invariant
    can tell reasoning an agent sent back unchanged from reasoning it changed or left out."""
    return hashlib.sha256(f"{kind}\0{covered}".encode()).hexdigest()[:size]


def check_renderable(turn: Turn) -> None:
    """A ``respond`` turn needs the decoded request; the server resolves it before rendering."""
    if turn.respond is not None:
        raise TypeError("a turn.respond(...) turn must be resolved to a turn before it is rendered")


def pieces(text: str, size: int) -> list[str]:
    """``text`` in pieces of about ``size`` characters, cut before a space as model streams are."""
    if not text:
        return [""]
    out: list[str] = []
    current = ""
    for word in WORDS.findall(text):
        if current and len(current) + len(word) > size:
            out.append(current)
            current = ""
        current += word
    out.append(current)
    return out


def fragments(text: str, size: int) -> list[str]:
    """``text`` cut every ``size`` characters, ignoring words: how argument JSON is streamed."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def arguments_of(call: ScriptedCall) -> tuple[Any, str]:
    """The call's arguments as a JSON value (``None`` when the raw text is not JSON) and as text."""
    text = call.arguments_text()
    if call.raw is None:
        return dict(call.args or {}), text
    try:
        return json.loads(text), text
    except ValueError:
        return None, text


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


def estimated_usage(turn: Turn, request_body: Any) -> Usage:
    """The turn's scripted usage, or counts estimated from the request body and the reply."""
    if turn.usage is not None:
        return turn.usage
    prompt = max(1, _tokens(json.dumps(request_body, ensure_ascii=False, default=str)))
    output = 0
    for block in turn.blocks:
        output += _tokens(block.arguments_text() if isinstance(block, ScriptedCall) else block[1])
    return Usage(input=prompt, output=output, total_tokens=prompt + output)


def thinking_tokens(turn: Turn) -> int:
    """The estimated share of the output spent on thinking (Gemini reports it apart)."""
    texts = [block[1] for block in turn.blocks if not isinstance(block, ScriptedCall) and block[0] == "thinking"]
    return sum(_tokens(text) for text in texts)
