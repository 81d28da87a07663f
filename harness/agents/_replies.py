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

Each kind has a realism tier (:data:`TIERS`, DESIGN 6): what the provider or its model sends,
what a proxy, gateway or broken connection does to it, and what no conforming provider sends
(two calls sharing an id, a status the wire never uses), drawn only by a hostile campaign. The
statuses are the wire's own (:data:`ERROR_STATUSES`, :data:`IN_BAND_ERRORS`), so a shrunk
scenario never holds a 529 on OpenAI's wire unless the campaign asked for hostile input.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from harness.scenarios import Call, ModelTurn
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
STRICT_KINDS: tuple[str, ...] = ("invalid arguments to a strict tool", "non-JSON arguments to a strict tool")
"""Arguments a tool declared ``strict: true`` rules out (OpenAI's structured outputs, Anthropic's
strict tool use: the provider decodes only schema-valid JSON for it): ``invalid`` for that tool."""
KINDS: tuple[str, ...] = MODEL_KINDS + FAILURE_KINDS + ("unused status", *STRICT_KINDS)
"""Every kind of reply, simplest first (Hypothesis shrinks towards the first); ``unused status``, an
error status the wire never sends, and arguments a strict tool rules out are drawn only by a
hostile campaign."""

TIERS: tuple[str, ...] = ("provider", "network", "invalid")
"""Who could send a reply (DESIGN 6, realism): the provider or its model; a proxy, gateway or broken
connection; nobody conforming. A default campaign draws the first two, a hostile one all three:
a finding on ``invalid`` input is literally right and of little value beside a realistic one."""
_TIER_OF_KIND: Mapping[str, str] = {
    **{kind: "provider" for kind in MODEL_KINDS},
    "duplicate ids": "invalid",  # no provider sends two calls sharing an id (Bedrock rejects them as input)
    "error status": "provider",
    "in-band error": "provider",
    "cut stream": "network",  # a proxy or gateway ends the body cleanly after an event
    "dropped connection": "network",  # the connection is reset mid-chunk
    "malformed chunk": "network",
    "cut inside an event": "network",
    "unused status": "invalid",
    **{kind: "invalid" for kind in STRICT_KINDS},
}

ERROR_STATUSES: Mapping[str, tuple[int, ...]] = {
    "openai": (429, 503, 500),
    "anthropic": (429, 529, 500),
    "gemini": (429, 503, 500),
    "bedrock": (429, 503, 500),
}
"""The error statuses each wire's provider sends (and a client retries): OpenAI's and Gemini's rate
limit, unavailable and server error; Anthropic's rate limit, ``overloaded_error`` (529) and
``api_error``; Bedrock's ``ThrottlingException``, ``ServiceUnavailableException`` and
``InternalServerException`` (its ``ModelNotReadyException`` is a 429 too). Drawn in this order,
so a shrunk scenario shows the wire's rate limit first."""
UNUSED_STATUSES: Mapping[str, tuple[int, ...]] = {
    "openai": (529,),
    "anthropic": (503,),
    "gemini": (529,),
    "bedrock": (529,),
}
"""A status each wire never sends (the ``invalid`` tier): Anthropic's 529 elsewhere, a 503 on Anthropic."""
IN_BAND_ERRORS: Mapping[str, tuple[int, ...]] = {
    "openai": (500,),
    "anthropic": (529, 500),
    "gemini": (500, 503),
    "bedrock": (500, 429, 503),
}
"""The HTTP statuses whose error type each wire's in-band error event carries: OpenAI's
``server_error`` (chat's ``data: {"error"}``, Responses' ``response.failed``); Anthropic's
``overloaded_error`` and ``api_error`` events; Gemini's ``INTERNAL`` and ``UNAVAILABLE`` error
objects; Bedrock's ``internalServerException``, ``throttlingException`` and
``serviceUnavailableException`` frames. No ``Retry-After`` travels with them: a stream that
already answered 200 has no header left to carry one."""
SENDS_RETRY_AFTER: frozenset[str] = frozenset({"openai", "anthropic", "gemini"})
"""The wires whose error statuses say how long to wait (``Retry-After``; Gemini's ``retryDelay``
too). AWS sends none: a Bedrock error carries none, and W6 has nothing to judge there."""


NEEDS: Mapping[str, str] = {}
"""Kinds a reply can be only when the agent's request makes it possible -> the feature
(:func:`request_features`) it needs: a provider sends reasoning only to a request that enabled it,
a usage-only chunk only to one that asked for usage. Drawn where the request allows them, as
the menu decides which tools a call may name."""


def request_features(provider: str, body: object) -> frozenset[str]:
    """What the agent's first request enables on ``provider``'s wire, as the features of
    :data:`NEEDS` (the kinds that need them are drawn only then)."""
    return frozenset()


def tier_of(kind: str) -> str:
    """The realism tier of a reply kind (the same on every wire: what differs per wire, the
    statuses, is drawn from that wire's own)."""
    return _TIER_OF_KIND[kind]


def kinds_for(hostile: bool = False, features: frozenset[str] | None = None) -> tuple[str, ...]:
    """The kinds a campaign draws: ``provider`` and ``network``; ``hostile`` adds ``invalid``;
    given the request's ``features``, only the kinds it makes possible (:data:`NEEDS`)."""
    return tuple(
        kind
        for kind in KINDS
        if (hostile or tier_of(kind) != "invalid") and (features is None or NEEDS.get(kind, "") in features | {""})
    )


ANSWERS: tuple[str, ...] = ("Done.", "The answer is 5.", "I could not finish that.")
"""Final answers: short fixed sentences, so a shrunk scenario reads as a conversation."""

FINAL = ModelTurn(text="Done.")
"""The answer served once a conversation has had its budget of drawn replies."""


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
    """One entry of the agent's menu, as its first request declared it; ``strict``: declared
    ``strict: true``, so the provider sends it only arguments its schema accepts."""

    name: str
    schema: Mapping[str, Any]
    strict: bool = False


def strict_tools(body: object) -> frozenset[str]:
    """The names of the tools a request body declares ``strict: true``: chat's
    ``tools[].function.strict``, Responses' and Anthropic's ``tools[].strict``."""
    tools = body.get("tools") if isinstance(body, Mapping) else None
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping):
            continue
        function = tool.get("function")
        declared = function if isinstance(function, Mapping) else tool
        if declared.get("strict") is True and isinstance(declared.get("name"), str):
            names.add(declared["name"])
    return frozenset(names)


def strictly(kind: str, tool: str, strict: frozenset[str]) -> str:
    """``kind`` as it is for a call of ``tool``: arguments a strict tool rules out are their own kind."""
    if tool in strict and kind in ("invalid arguments", "non-JSON arguments"):
        return f"{kind} to a strict tool"
    return kind


def kind_of(reply: ModelTurn, provider: str | None = None, strict: frozenset[str] = frozenset()) -> str:
    """The vocabulary kind a reply belongs to (a served scenario's turns are counted the same way);
    given the wire's ``provider``, a status that wire never sends is an ``unused status``; given the
    ``strict`` tools, argument text that is not JSON is ruled out for them."""
    if reply.kind == "error":
        if provider is not None and status_of(reply) not in ERROR_STATUSES.get(provider, (status_of(reply),)):
            return "unused status"
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
        return strictly("non-JSON arguments", call.name, strict)
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


def tier_of_reply(reply: ModelTurn, provider: str | None = None) -> str:
    """The realism tier of a served reply on ``provider``'s wire (:data:`TIERS`)."""
    return tier_of(kind_of(reply, provider))


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


def servable(tools: Sequence[Tool], hostile: bool = False, features: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The kinds a campaign's tiers allow that a reply to this menu and request can be: calls need a
    tool, arguments a strict tool rules out need a strict tool, arguments that break a schema a
    tool that is not strict and whose schema they can break, and a kind of :data:`NEEDS` the
    request's ``features``."""
    loose = [t for t in tools if not t.strict]
    possible = set(kinds_for(hostile, features))
    if not tools:
        possible -= {"valid call", "several calls", "text and a call", "duplicate ids", *STRICT_KINDS}
    if not loose:
        possible -= {"invalid arguments", "non-JSON arguments"}
    if not any(_breakable(t.schema) for t in loose):
        possible.discard("invalid arguments")
    if not any(t.strict for t in tools):
        possible -= set(STRICT_KINDS)
    elif not any(_breakable(t.schema) for t in tools if t.strict):
        possible.discard(STRICT_KINDS[0])
    return tuple(k for k in KINDS if k in possible)


def _breakable(schema: Mapping[str, Any]) -> bool:
    """Whether some arguments fail ``schema``: it types a property, requires one or closes the object."""
    return bool(schema.get("properties") or schema.get("required")) or schema.get("additionalProperties") is False


@dataclass(frozen=True)
class _Wire:
    """What a wire's replies are drawn from: its kinds (by the campaign's tiers) and its statuses."""

    model: st.SearchStrategy[str]
    failing: st.SearchStrategy[str]
    statuses: st.SearchStrategy[int]
    unused: st.SearchStrategy[int]
    in_band: st.SearchStrategy[int]
    retry_after: bool

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
    return _calling(draw, kind, menu, new_id)


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
        return ModelTurn(calls=(Call(tool.name, _args(draw(invalid_arguments(tool.schema))), id=new_id()),))
    if kind == "non-JSON arguments":
        return ModelTurn(calls=(Call(tool.name, raw=draw(_NOT_JSON), id=new_id()),))
    first = Call(tool.name, _args(draw(arguments(tool.schema), label="arguments")), id=new_id())
    if kind == "valid call":
        return ModelTurn(calls=(first,))
    if kind == "text and a call":
        return ModelTurn(text="Let me check.", calls=(first,))
    other = draw(menu.every, label="second tool")
    second_args = _args(draw(arguments(other.schema), label="second arguments"))
    second = Call(other.name, second_args, id=first.id if kind == "duplicate ids" else new_id())
    return ModelTurn(calls=(first, second))


def _args(value: Any) -> dict[str, Any]:
    """Arguments as a JSON object a scenario file can hold (a schema may allow anything)."""
    if not isinstance(value, dict):
        return {"value": value}
    copied: dict[str, Any] = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    return copied
