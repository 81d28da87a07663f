"""The replies a wire campaign serves: what a model (and the service in front of it) can send back.

A reply is a scenario ``ModelTurn``, so a conversation's replies are already the ``turns:`` of a
scenario file that ``harness emulate --script`` serves. The vocabulary is the one ``harness fuzz``
uses for our own loop, drawn against the menu the agent sent: valid calls (arguments from each
tool's JSON Schema), arguments that fail it, unknown tools, argument text that is not JSON,
several calls in one reply, duplicate ids, text, length cut-offs, error statuses with
``Retry-After``, streams cut before their stop reason and connections dropped mid-reply; and, on the
wire itself, the provider's own in-band error event after the text, a chunk whose JSON is broken,
and a stream cut inside an event (``wire:`` faults of the scenario file: ``error_event``,
``malformed_chunk`` or ``bad_checksum`` (Bedrock's frames; the same as the first on SSE),
``cut_mid_event``; a reply that is not streamed gets the in-band error as
that HTTP error, and the other two whole).

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

MODEL_KINDS: tuple[str, ...] = (
    "final answer",
    "valid call",
    "several calls",
    "text and a call",
    "invalid arguments",
    "non-JSON arguments",
    "unknown tool",
    "duplicate ids",
    "length cut-off",
)
"""What a model sends: replies a correct agent goes on from."""
FAILURE_KINDS: tuple[str, ...] = (
    "error status",
    "cut stream",
    "dropped connection",
    "in-band error",
    "malformed chunk",
    "cut inside an event",
)
"""What the service in front of the model does to a reply: each ends a correct agent's run (or
costs it a retry), so they are drawn one time in four (as the model's kinds, simplest first)."""
KINDS: tuple[str, ...] = MODEL_KINDS + FAILURE_KINDS
"""Every kind of reply, simplest first (Hypothesis shrinks towards the first)."""

ANSWERS: tuple[str, ...] = ("Done.", "The answer is 5.", "I could not finish that.")
"""Final answers: short fixed sentences, so a shrunk scenario reads as a conversation."""

FINAL = ModelTurn(text="Done.")
"""The answer served once a conversation has had its budget of drawn replies."""

RETRY_STATUSES: tuple[int, ...] = (429, 503, 500)
IN_BAND_STATUSES: tuple[int, ...] = (500, 529, 429)
"""The HTTP statuses whose error type an in-band error event carries: a server error, Anthropic's
``overloaded_error`` (529), a rate limit (Bedrock's ``throttlingException``). No ``Retry-After``
travels with them: a stream that already answered 200 has no header left to carry one."""

WIRE_KINDS: Mapping[str, str] = {
    "error_event": "in-band error",
    "malformed_chunk": "malformed chunk",
    "bad_checksum": "malformed chunk",
    "cut_mid_event": "cut inside an event",
}
"""The ``wire:`` faults the vocabulary draws -> their kind (a reply on the wire that fails it)."""
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
    for name, _ in reply.wire:
        if name in WIRE_KINDS:
            return WIRE_KINDS[name]
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
    failing = draw(st.integers(0, 3), label="failure") == 3
    kind = draw(st.sampled_from(FAILURE_KINDS if failing else MODEL_KINDS), label="kind")
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
    if kind == "in-band error":
        status = draw(st.sampled_from(IN_BAND_STATUSES), label="status")
        return ModelTurn(text=answer, wire=(("error_event", status),))
    if kind == "malformed chunk":
        damage = draw(st.sampled_from(("malformed_chunk", "bad_checksum")), label="damage")
        return ModelTurn(text=answer, wire=((damage, True),))
    if kind == "cut inside an event":
        return ModelTurn(text=answer, wire=(("cut_mid_event", True),))
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
