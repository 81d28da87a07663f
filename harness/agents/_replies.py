"""The replies a wire campaign serves: what a model (and the service in front of it) can send back.

A reply is a scenario ``ModelTurn``, so a conversation's replies are already the ``turns:`` of a
scenario file that ``harness emulate --script`` serves. The vocabulary is the one ``harness fuzz``
uses for our own loop, drawn against the menu the agent sent: valid calls (arguments from each
tool's JSON Schema), arguments that fail it, unknown tools, argument text that is not JSON,
several calls in one reply, duplicate ids, text, length cut-offs, error statuses with
``Retry-After``, streams cut before their stop reason and connections dropped mid-reply.

The first kind is a plain final answer, so shrinking walks every reply towards "the model just
answers" and a minimal failure keeps only the replies the failure needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from harness.scenarios._parts import Call, ModelTurn
from harness.strategies import arguments, invalid_arguments

KINDS: tuple[str, ...] = (
    "final answer",
    "valid call",
    "several calls",
    "text and a call",
    "invalid arguments",
    "non-JSON arguments",
    "unknown tool",
    "duplicate ids",
    "length cut-off",
    "error status",
    "cut stream",
    "dropped connection",
)
"""Every kind of reply, simplest first (Hypothesis shrinks towards the first)."""

ANSWERS: tuple[str, ...] = ("Done.", "The answer is 5.", "I could not finish that.")
"""Final answers: short fixed sentences, so a shrunk scenario reads as a conversation."""

FINAL = ModelTurn(text="Done.")
"""The answer served once a conversation has had its budget of drawn replies."""

RETRY_STATUSES: tuple[int, ...] = (429, 503, 500)
RETRY_AFTER: tuple[float, ...] = (0.05, 0.1)
"""Seconds a ``Retry-After`` asks for: long enough to tell a wait from none, short enough to fuzz.
Every error status carries one: an SDK without it backs off for seconds, and W6 judges the wait."""

UNKNOWN_TOOL = "no_such_tool"
NOT_JSON = ('{"a": 1', "not json at all", "[1, 2")


@dataclass(frozen=True)
class Tool:
    """One entry of the agent's menu, as its first request declared it."""

    name: str
    schema: Mapping[str, Any]


def kind_of(reply: ModelTurn) -> str:
    """The vocabulary kind a reply belongs to (a served scenario's turns are counted the same way)."""
    if reply.kind == "error":
        return "error status"
    if reply.kind == "hang_up":
        return "cut stream"
    if reply.kind == "raise":
        return "dropped connection"
    if reply.stop == "length":
        return "length cut-off"
    calls = reply.calls
    if not calls:
        return "final answer"
    ids = [c.id for c in calls]
    if len(set(ids)) < len(ids):
        return "duplicate ids"
    if len(calls) > 1:
        return "several calls"
    if reply.text:
        return "text and a call"
    call = calls[0]
    if call.raw is not None:
        return "non-JSON arguments"
    if call.name == UNKNOWN_TOOL:
        return "unknown tool"
    return "valid call"


def is_final(reply: ModelTurn) -> bool:
    """A complete answer without calls: a conversation is over once it has been given one."""
    return reply.kind == "reply" and not reply.calls and reply.stop == "stop" and bool(reply.text)


def retry_after(reply: ModelTurn) -> float | None:
    """The ``Retry-After`` an error reply carries (``None`` for any other reply)."""
    value = dict(reply.wire).get("retry_after")
    return float(value) if value is not None else None


def status_of(reply: ModelTurn) -> int | None:
    value = dict(reply.wire).get("status")
    return int(value) if value is not None else None


def replies(tools: Sequence[Tool], next_id: Callable[[], str]) -> st.SearchStrategy[ModelTurn]:
    """One reply to a request of an agent whose menu is ``tools``; ``next_id`` numbers the calls
    (each call of a conversation gets a fresh id, so a result names the one call it answers)."""
    return _reply(tuple(tools), next_id)


@st.composite
def _reply(draw: st.DrawFn, tools: tuple[Tool, ...], next_id: Callable[[], str]) -> ModelTurn:
    kind = draw(st.sampled_from(KINDS), label="kind")
    answer = draw(st.sampled_from(ANSWERS), label="text")
    if kind == "final answer":
        return ModelTurn(text=answer)
    if kind == "length cut-off":
        return ModelTurn(text="The answer is", stop="length")
    if kind == "error status":
        status = draw(st.sampled_from(RETRY_STATUSES), label="status")
        wait = draw(st.sampled_from(RETRY_AFTER), label="retry_after")
        return ModelTurn(kind="error", message=f"emulated {status}", wire=(("status", status), ("retry_after", wait)))
    if kind == "cut stream":
        return ModelTurn(kind="hang_up", text=answer)
    if kind == "dropped connection":
        return ModelTurn(kind="raise", text=answer, message="connection dropped")
    if kind == "unknown tool" or not tools:
        return ModelTurn(calls=(Call(UNKNOWN_TOOL, {}, id=next_id()),))
    tool = draw(st.sampled_from(tools), label="tool")
    if kind == "invalid arguments":
        return ModelTurn(calls=(Call(tool.name, _args(draw(invalid_arguments(tool.schema))), id=next_id()),))
    if kind == "non-JSON arguments":
        return ModelTurn(calls=(Call(tool.name, raw=draw(st.sampled_from(NOT_JSON)), id=next_id()),))
    first = Call(tool.name, _args(draw(arguments(tool.schema), label="arguments")), id=next_id())
    if kind == "valid call":
        return ModelTurn(calls=(first,))
    if kind == "text and a call":
        return ModelTurn(text="Let me check.", calls=(first,))
    other = draw(st.sampled_from(tools), label="second tool")
    second_args = _args(draw(arguments(other.schema), label="second arguments"))
    shared = kind == "duplicate ids"
    second = Call(other.name, second_args, id=first.id if shared else next_id())
    return ModelTurn(calls=(first, second))


def _args(value: Any) -> dict[str, Any]:
    """Arguments as a JSON object a scenario file can hold (a schema may allow anything)."""
    if not isinstance(value, dict):
        return {"value": value}
    return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
