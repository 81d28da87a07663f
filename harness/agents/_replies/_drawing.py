"""Drawing replies of the vocabulary (``_vocabulary``) with Hypothesis: one strategy per menu, wire
and request features, built once; call ids placeholders numbered per conversation afterwards.
The draws keep their order (a seed keeps its conversations), and the simplest kind comes first,
so shrinking walks every reply towards "the model just answers".
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from harness.agents._replies._vocabulary import (
    ANSWERS,
    ERROR_STATUSES,
    FAILURE_KINDS,
    IN_BAND_ERRORS,
    MODEL_KINDS,
    NON_RETRYABLE_STATUSES,
    NOT_JSON,
    QUOTA_CODE,
    REASONING_KINDS,
    REDACTED_DATA,
    RETRY_AFTER,
    SENDS_RETRY_AFTER,
    SLOW_FIRST_BYTE,
    SPLIT_ANSWER,
    STALL_EVENTS,
    STRICT_KINDS,
    THOUGHTS,
    UNKNOWN_TOOL,
    UNUSED_STATUSES,
    Tool,
    kinds_for,
)
from harness.scenarios import Call, ModelTurn
from harness.strategies import arguments, invalid_arguments


def replies(
    tools: Sequence[Tool],
    next_id: Callable[[], str],
    provider: str = "openai",
    hostile: bool = False,
    features: frozenset[str] = frozenset(),
) -> st.SearchStrategy[ModelTurn]:
    """One reply to a request of an agent whose menu is ``tools``, on ``provider``'s wire (its own
    statuses); ``hostile`` adds the ``invalid`` tier; ``features``: what the request enables
    (:func:`request_features`). ``next_id`` numbers the calls (each call of a conversation gets a
    fresh id, so a result names the one call it answers)."""
    return _reply(_Menu.of(tuple(tools), hostile), next_id, _Wire.of(provider, hostile, features), None)


def unnumbered(
    tools: tuple[Tool, ...],
    provider: str = "openai",
    hostile: bool = False,
    kind: str | None = None,
    features: frozenset[str] = frozenset(),
) -> st.SearchStrategy[ModelTurn]:
    """:func:`replies` before its calls are numbered (:func:`numbered`): one strategy per menu and
    wire, built once, since a strategy made afresh for every reply is validated afresh too, which
    cost more than drawing the reply (a campaign draws one for every request of every conversation).
    ``kind``: a reply of that kind only (a campaign's first phase serves each kind once);
    ``features``: what the request enables (:func:`request_features`)."""
    key = (*(id(tool) for tool in tools), provider, hostile, kind, features)
    found = _BUILT.get(key)
    if found is None or found[0] != tools:
        if len(_BUILT) > 64:
            _BUILT.clear()
        # a reply of a given kind sends arguments that fail a schema to a tool that is not strict:
        # to a strict one they are a kind of their own
        menu = _Menu.of(tools, hostile and kind is None)
        found = _BUILT[key] = (tools, _reply(menu, None, _Wire.of(provider, hostile, features), kind))
    return found[1]


@dataclass(frozen=True)
class _Wire:
    """What a wire's replies are drawn from: its kinds (by the campaign's tiers) and its statuses."""

    model: st.SearchStrategy[str]
    failing: st.SearchStrategy[str]
    statuses: st.SearchStrategy[int]
    unused: st.SearchStrategy[int]
    in_band: st.SearchStrategy[int]
    retry_after: bool
    non_retryable: st.SearchStrategy[int]

    @staticmethod
    @functools.cache
    def of(provider: str, hostile: bool, features: frozenset[str] = frozenset()) -> _Wire:
        drawn = kinds_for(hostile, features)
        known = provider if provider in ERROR_STATUSES else "openai"
        return _Wire(
            model=st.sampled_from([k for k in MODEL_KINDS if k in drawn]),
            failing=st.sampled_from([k for k in (*FAILURE_KINDS, "unused status") if k in drawn]),
            statuses=st.sampled_from(ERROR_STATUSES[known]),
            unused=st.sampled_from(UNUSED_STATUSES[known]),
            in_band=st.sampled_from(IN_BAND_ERRORS[known]),
            retry_after=known in SENDS_RETRY_AFTER,
            non_retryable=st.sampled_from(NON_RETRYABLE_STATUSES[known]),
        )


@dataclass(frozen=True)
class _Menu:
    """The tools a reply's calls are drawn from: any (``every``); the ones that may be sent
    arguments that fail their schema (``loose``: not strict, unless hostile); the strict ones."""

    tools: tuple[Tool, ...]
    every: st.SearchStrategy[Tool]
    loose: st.SearchStrategy[Tool] | None
    strict: st.SearchStrategy[Tool]

    @staticmethod
    def of(tools: tuple[Tool, ...], hostile: bool) -> _Menu:
        every = _menu(tools)
        loose = tuple(t for t in tools if hostile or not t.strict)
        # the same strategy when every tool may be sent them: the draws of a menu without strict
        # tools are the ones they always were
        chosen = None if not loose else every if loose == tools else _menu(loose)
        return _Menu(tools, every, chosen, _menu(tuple(t for t in tools if t.strict)))


def _menu(tools: tuple[Tool, ...]) -> st.SearchStrategy[Tool]:
    return st.sampled_from(tools) if tools else st.nothing()


def numbered(reply: ModelTurn, next_id: Callable[[], str]) -> ModelTurn:
    """The reply with its calls' placeholder ids replaced by the conversation's next ones, in order
    (a duplicate keeps sharing its id)."""
    if not reply.calls:
        return reply
    ids: dict[str | None, str] = {}
    calls = tuple(
        dataclasses.replace(call, id=ids[call.id] if call.id in ids else ids.setdefault(call.id, next_id()))
        for call in reply.calls
    )
    return dataclasses.replace(reply, calls=calls)


# Built once (a strategy is validated when first drawn): same strategies, same choices, so what a
# seed generates does not change.
_BUILT: dict[tuple[Any, ...], tuple[tuple[Tool, ...], st.SearchStrategy[ModelTurn]]] = {}
_FAILING = st.integers(0, 3)
_ANSWERS = st.sampled_from(ANSWERS)
_RETRY_AFTER = st.sampled_from(RETRY_AFTER)
_DAMAGE = st.sampled_from(("malformed_chunk", "bad_checksum"))
_NOT_JSON = st.sampled_from(NOT_JSON)
_REDACTED = st.sampled_from(REDACTED_DATA)
_THOUGHTS = st.sampled_from(THOUGHTS)
_FIRST, _SECOND = "#1", "#2"
"""Placeholder ids, numbered after the draw by :func:`numbered`."""


@st.composite
def _reply(
    draw: st.DrawFn, menu: _Menu, next_id: Callable[[], str] | None, wire: _Wire, forced: str | None
) -> ModelTurn:
    """One reply (of the ``forced`` kind if given); its call ids from ``next_id``, or placeholders
    for :func:`numbered` when ``None``."""
    placeholders = iter((_FIRST, _SECOND))
    new_id: Callable[[], str] = next_id if next_id is not None else lambda: next(placeholders)

    if forced is None:
        failing = draw(_FAILING, label="failure") == 3
        kind = draw(wire.failing if failing else wire.model, label="kind")
    else:
        kind = forced
    answer = draw(_ANSWERS, label="text")
    if kind == "final answer":
        return ModelTurn(text=answer)
    if kind == "length cut-off":
        return ModelTurn(text="The answer is", stop="length")
    if kind in ("error status", "unused status"):
        status = draw(wire.statuses if kind == "error status" else wire.unused, label="status")
        if not wire.retry_after:
            return ModelTurn(kind="error", message=f"emulated {status}", wire=(("status", status),))
        wait = draw(_RETRY_AFTER, label="retry_after")
        return ModelTurn(kind="error", message=f"emulated {status}", wire=(("status", status), ("retry_after", wait)))
    if kind == "cut stream":
        return ModelTurn(kind="hang_up", text=answer)
    if kind == "dropped connection":
        return ModelTurn(kind="raise", text=answer, message="connection dropped")
    if kind == "in-band error":
        status = draw(wire.in_band, label="status")
        return ModelTurn(text=answer, wire=(("error_event", status),))
    if kind == "malformed chunk":
        damage = draw(_DAMAGE, label="damage")
        return ModelTurn(text=answer, wire=((damage, True),))
    if kind == "cut inside an event":
        return ModelTurn(text=answer, wire=(("cut_mid_event", True),))
    if kind in _DELIVERIES:
        return _delivered(draw, kind, answer)
    if kind in _SHAPES:
        return _shaped(draw, kind, menu, new_id, answer)
    if kind in _REFUSED:
        return _refused(draw, kind, wire)
    if kind in REASONING_KINDS:
        return _reasoning(draw, kind, menu, new_id)
    return _calling(draw, kind, menu, new_id)


_DELIVERIES = ("split bytes", "slow first byte", "stalled stream")
_PIECES = st.lists(st.integers(1, 256), min_size=1, max_size=3)
"""Piece sizes a ``split bytes`` reply is cut into in turn: shrinks to ``[1]``, every byte a piece."""
_STALL = st.sampled_from(STALL_EVENTS)


def _delivered(draw: st.DrawFn, kind: str, answer: str) -> ModelTurn:
    """An answer delivered as the network does it: its bytes re-cut at drawn sizes, its status
    late, or its stream stalled (open and silent) after a few events."""
    if kind == "split bytes":
        return ModelTurn(text=SPLIT_ANSWER, wire=(("split", tuple(draw(_PIECES, label="pieces"))),))
    if kind == "slow first byte":
        return ModelTurn(text=answer, wire=(("slow_first_byte", SLOW_FIRST_BYTE),))
    return ModelTurn(text=answer, wire=(("stall", draw(_STALL, label="events")),))


_SHAPES = ("unknown events and fields", "several calls, interleaved")
"""Kinds whose content is an ordinary reply's and whose shape on the wire is the point (W8)."""
_ANSWER_OR_CALL = st.booleans()


def _shaped(draw: st.DrawFn, kind: str, menu: _Menu, new_id: Callable[[], str], answer: str) -> ModelTurn:
    """An ordinary reply in a shape the provider documents and naive loops break on: an answer or a
    valid call with unknown events and fields; several calls streamed apart."""
    if kind == "several calls, interleaved":
        return dataclasses.replace(_calling(draw, "several calls", menu, new_id), wire=(("interleaved", True),))
    unknown = (("unknown_event", True), ("unknown_fields", True))
    with_call: bool = draw(_ANSWER_OR_CALL, label="with a call") if menu.tools else False
    if with_call:
        return dataclasses.replace(_calling(draw, "valid call", menu, new_id), wire=unknown)
    return ModelTurn(text=answer, wire=unknown)


_REFUSED = ("non-retryable status", "quota exhausted", "refusal", "content filter")
REFUSAL_TEXT = "I can't help with that."
"""What a refusal says: OpenAI's ``refusal`` field, Responses' refusal part; on the wires whose
refusal carries no message of its own, the text the classifier or filter stopped."""
_FILTERED = "The answer is"


def _refused(draw: st.DrawFn, kind: str, wire: _Wire) -> ModelTurn:
    """A reply the provider refuses for good: an error no retry changes (W7), or a reply the model
    declined or the provider's filter withheld (what the refusal rule judges)."""
    if kind == "non-retryable status":
        status = draw(wire.non_retryable, label="status")
        return ModelTurn(kind="error", message=f"emulated {status}", wire=(("status", status),))
    if kind == "quota exhausted":
        message = "You exceeded your current quota, please check your plan and billing details."
        return ModelTurn(kind="error", message=message, wire=(("status", 429), ("code", QUOTA_CODE)))
    if kind == "refusal":
        return ModelTurn(text=REFUSAL_TEXT, wire=(("refusal", True),))
    return ModelTurn(text=_FILTERED, wire=(("content_filter", True),))


def _reasoning(draw: st.DrawFn, kind: str, menu: _Menu, new_id: Callable[[], str]) -> ModelTurn:
    """A valid call after reasoning: signed thinking (each wire renders it as its own reasoning:
    Anthropic's ``thinking`` block, a Responses ``reasoning`` item, a Gemini thought), or
    Anthropic's ``redacted_thinking`` with its opaque data."""
    call = _calling(draw, "valid call", menu, new_id)
    if kind == "redacted thinking and a call":
        data = draw(_REDACTED, label="redacted data")
        return dataclasses.replace(call, wire=(("redacted_thinking", data),))
    return dataclasses.replace(call, thinking=draw(_THOUGHTS, label="thinking"))


def _calling(draw: st.DrawFn, kind: str, menu: _Menu, new_id: Callable[[], str]) -> ModelTurn:
    """A reply of calls (the draws in the order they always had: a seed keeps its conversations).
    Arguments that fail a schema go to a tool that may be sent them: a strict tool is sent them
    only as its own kind (the ``invalid`` tier); a menu with no such tool gets a valid call."""
    if kind == "unknown tool" or not menu.tools:
        return ModelTurn(calls=(Call(UNKNOWN_TOOL, {}, id=new_id()),))
    bad = kind in ("invalid arguments", "non-JSON arguments", *STRICT_KINDS)
    if kind in STRICT_KINDS:
        tool = draw(menu.strict, label="tool")
        kind = kind.removesuffix(" to a strict tool")
    elif bad and menu.loose is not None:
        tool = draw(menu.loose, label="tool")
    else:
        tool, kind = draw(menu.every, label="tool"), "valid call" if bad else kind
    if kind == "invalid arguments":
        return ModelTurn(calls=(Call(tool.name, as_arguments(draw(invalid_arguments(tool.schema))), id=new_id()),))
    if kind == "non-JSON arguments":
        return ModelTurn(calls=(Call(tool.name, raw=draw(_NOT_JSON), id=new_id()),))
    first = Call(tool.name, as_arguments(draw(arguments(tool.schema), label="arguments")), id=new_id())
    if kind == "valid call":
        return ModelTurn(calls=(first,))
    if kind == "text and a call":
        return ModelTurn(text="Let me check.", calls=(first,))
    other = draw(menu.every, label="second tool")
    second_args = as_arguments(draw(arguments(other.schema), label="second arguments"))
    second = Call(other.name, second_args, id=first.id if kind == "duplicate ids" else new_id())
    return ModelTurn(calls=(first, second))


def as_arguments(value: Any) -> dict[str, Any]:
    """Arguments as a JSON object a scenario file can hold (a schema may allow anything)."""
    if not isinstance(value, dict):
        return {"value": value}
    copied: dict[str, Any] = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    return copied
