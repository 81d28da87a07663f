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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.scenarios import ModelTurn

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
    "split bytes",
    "unknown events and fields",
    "several calls, interleaved",
    "thinking and a call",
    "redacted thinking and a call",
)
"""What a model sends: replies a correct agent goes on from. ``split bytes``: an answer whose bytes
TCP delivered cut at other boundaries, ``network`` tier but whole; ``unknown events and fields``: an
answer or a valid call streamed with an event of a type no client knows and a field no client knows
in every event (``wire: [unknown_event, unknown_fields]``), which every provider documents clients
must ignore; ``several calls, interleaved``: several calls streamed apart (``wire: interleaved``:
chat's call deltas alternating by ``index``, Gemini's one call a chunk, Ollama's one a line)."""
FAILURE_KINDS: tuple[str, ...] = (
    "error status",
    "cut stream",
    "dropped connection",
    "in-band error",
    "malformed chunk",
    "cut inside an event",
    "slow first byte",
    "stalled stream",
    "non-retryable status",
    "quota exhausted",
    "refusal",
    "content filter",
)
"""What the service in front of the model does to a reply: each ends a correct agent's run (or
costs it a retry, or time), so they are drawn one time in four (as the model's kinds, simplest first)."""
REASONING_KINDS: tuple[str, ...] = ("thinking and a call", "redacted thinking and a call")
"""Reasoning before a call, which the agent must send back unchanged with it (W2, DESIGN 6):
Anthropic's signed ``thinking`` and encrypted ``redacted_thinking`` blocks, a Responses
``reasoning`` item (its ``encrypted_content`` when the request includes it), Gemini's thought
signature, Converse's ``reasoningContent``. Drawn only where the request enabled reasoning
(:data:`NEEDS`); redacted thinking only on Anthropic's wire."""
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
    "split bytes": "network",  # TCP hands a reader any boundary: inside an event, a character, a frame
    "slow first byte": "network",  # the status comes late, below any sane read timeout
    "stalled stream": "network",  # an upstream gone silent with the connection open
    "unused status": "invalid",
    **{kind: "invalid" for kind in STRICT_KINDS},
    "non-retryable status": "provider",  # a bad request, a wrong key, a model that does not exist
    "quota exhausted": "provider",  # OpenAI's 429 ``insufficient_quota``: the account is out of credit
    "refusal": "provider",  # the model (or its streaming classifier) declines
    "content filter": "provider",  # the provider's filter withholds the output
    **{kind: "provider" for kind in REASONING_KINDS},
}

ERROR_STATUSES: Mapping[str, tuple[int, ...]] = {
    "openai": (429, 503, 500),
    "anthropic": (429, 529, 500),
    "gemini": (429, 503, 500),
    "bedrock": (429, 503, 500),
    # Ollama's documented errors (rate limit, server error, a cloud model unreachable): a body
    # {"error": message} and nothing more, no Retry-After (so not in SENDS_RETRY_AFTER)
    "ollama": (429, 500, 502),
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
    "ollama": (529,),
}
"""A status each wire never sends (the ``invalid`` tier): Anthropic's 529 elsewhere, a 503 on Anthropic."""
IN_BAND_ERRORS: Mapping[str, tuple[int, ...]] = {
    "openai": (500,),
    "anthropic": (529, 500),
    "gemini": (500, 503),
    "bedrock": (500, 429, 503),
    "ollama": (500,),  # a stream's {"error"} line: the model runner failed after the 200
}
"""The HTTP statuses whose error type each wire's in-band error event carries: OpenAI's
``server_error`` (chat's ``data: {"error"}``, Responses' ``response.failed``); Anthropic's
``overloaded_error`` and ``api_error`` events; Gemini's ``INTERNAL`` and ``UNAVAILABLE`` error
objects; Bedrock's ``internalServerException``, ``throttlingException`` and
``serviceUnavailableException`` frames. No ``Retry-After`` travels with them: a stream that
already answered 200 has no header left to carry one."""
NON_RETRYABLE_STATUSES: Mapping[str, tuple[int, ...]] = {
    "openai": (401, 400, 403, 404),
    "anthropic": (401, 400, 403, 404),
    "gemini": (401, 400, 403, 404),
    "bedrock": (403, 400, 404),
    "ollama": (404, 400),
}
"""The statuses each wire sends for a request that fails the same way every time it is sent (W7):
a malformed request, a wrong key, a permission missing, a model that does not exist (OpenAI's
``invalid_request_error`` / ``invalid_api_key`` / ``model_not_found``; Anthropic's
``invalid_request_error``, ``authentication_error``, ``permission_error``, ``not_found_error``;
Gemini's ``INVALID_ARGUMENT``, ``UNAUTHENTICATED``, ``PERMISSION_DENIED``, ``NOT_FOUND``;
Bedrock's ``ValidationException``, ``AccessDeniedException``, ``ResourceNotFoundException``, AWS
answering a key it does not know with a 403 too). A 401 first: what a shrunk scenario shows."""
QUOTA_CODE = "insufficient_quota"
"""OpenAI's 429 for an account out of credit: ``error.type`` and ``error.code`` both say it, and
no ``Retry-After`` comes with it (waiting does not help; paying does)."""
NON_RETRYABLE = frozenset({400, 401, 403, 404})
"""The statuses W7 judges on any wire (a scenario file may put any of them on any wire)."""
SENDS_RETRY_AFTER: frozenset[str] = frozenset({"openai", "anthropic", "gemini"})
"""The wires whose error statuses say how long to wait (``Retry-After``; Gemini's ``retryDelay``
too). AWS sends none: a Bedrock error carries none, and W6 has nothing to judge there."""


WELL_FORMED: frozenset[str] = frozenset(
    {
        "final answer",
        "valid call",
        "several calls",
        "text and a call",
        "split bytes",
        "slow first byte",
        "unknown events and fields",
        "several calls, interleaved",
        *REASONING_KINDS,
    }
)
"""Kinds whole and well-formed by the provider's documentation (W8, DESIGN 6): a run served only
these ends by returning, not raising. Not here: what a model gets wrong (arguments that fail the
schema, an unknown tool: a framework may raise on them by design), a length cut-off, and every
failure of the service in front of the model."""

NEEDS: Mapping[str, str] = {
    "quota exhausted": "insufficient_quota",
    "content filter": "content filter",
    "thinking and a call": "reasoning",
    "redacted thinking and a call": "redacted reasoning",
}
"""Kinds a reply can be only when the agent's request makes it possible -> the feature
(:func:`request_features`) it needs: a provider sends reasoning only to a request that enabled it,
a usage-only chunk only to one that asked for usage. Drawn where the request allows them, as
the menu decides which tools a call may name."""


def request_features(provider: str, body: object) -> frozenset[str]:
    """What the agent's first request enables on ``provider``'s wire, as the features of
    :data:`NEEDS` (the kinds that need them are drawn only then)."""
    features = _wire_features(provider) | _reasoning_features(provider, body)
    if provider == "bedrock" and isinstance(body, Mapping) and "anthropic_version" in body:
        # Claude on Bedrock's InvokeModel speaks Anthropic's Messages: its refusal is the model's
        # (stop_reason: refusal), and no content filter stands between (the emulator would serve one as that)
        features -= {"content filter"}
    return features


def _wire_features(provider: str) -> frozenset[str]:
    """What a wire itself makes possible, whatever the request: OpenAI's quota error (no other
    wire has a 429 that is not a rate limit), and a content filter where the wire has one
    (Anthropic has none: its refusal is the model's, ``stop_reason: refusal``)."""
    return frozenset(feature for feature, wires in _WIRE_FEATURES.items() if provider in wires)


_WIRE_FEATURES: Mapping[str, frozenset[str]] = {
    "insufficient_quota": frozenset({"openai"}),
    "content filter": frozenset({"openai", "gemini", "bedrock"}),
}


def _reasoning_features(provider: str, body: object) -> frozenset[str]:
    """Reasoning a request makes possible: Anthropic's ``thinking: {type: enabled | adaptive}``
    (on its own wire and Claude's on Bedrock's InvokeModel) gets thinking and redacted thinking;
    a Responses request with ``reasoning`` or ``include: ["reasoning.encrypted_content"]`` gets
    reasoning items; Gemini's ``generationConfig.thinkingConfig`` thoughts and their signatures;
    Converse's ``additionalModelRequestFields`` asking for thinking, ``reasoningContent``. Chat
    Completions has none to send back (a compatible server's ``reasoning_content`` is not asked back)."""
    if not isinstance(body, Mapping):
        return frozenset()
    thinking = body.get("thinking")
    if provider in ("anthropic", "bedrock") and isinstance(thinking, Mapping):
        if thinking.get("type") in ("enabled", "adaptive"):
            return frozenset({"reasoning", "redacted reasoning"})
    include = body.get("include")
    if provider == "openai" and "input" in body:
        if isinstance(body.get("reasoning"), Mapping) or (
            isinstance(include, list) and "reasoning.encrypted_content" in include
        ):
            return frozenset({"reasoning"})
    config = body.get("generationConfig") or body.get("generation_config")
    if provider == "gemini" and isinstance(config, Mapping):
        if isinstance(config.get("thinkingConfig") or config.get("thinking_config"), Mapping):
            return frozenset({"reasoning"})
    extra = body.get("additionalModelRequestFields")
    if provider == "bedrock" and isinstance(extra, Mapping):
        asked = extra.get("thinking") or extra.get("reasoning_config") or extra.get("reasoningConfig")
        if isinstance(asked, Mapping) and asked.get("type") in ("enabled", "adaptive"):
            return frozenset({"reasoning"})
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
    "split": "split bytes",
    "slow_first_byte": "slow first byte",
    "stall": "stalled stream",
    "unknown_event": "unknown events and fields",
    "unknown_fields": "unknown events and fields",
    "refusal": "refusal",
    "content_filter": "content filter",
}
"""The ``wire:`` faults the vocabulary draws -> their kind (a reply on the wire that fails it)."""
RETRY_AFTER: tuple[float, ...] = (0.05, 0.1)
"""Seconds a ``Retry-After`` asks for: long enough to tell a wait from none, short enough to fuzz.
Every error status carries one: an SDK without it backs off for seconds, and W6 judges the wait."""

SPLIT_ANSWER = "The answer is 5 € 🙂"
"""The answer a ``split bytes`` reply carries: its multi-byte characters (3 and 4 bytes in UTF-8)
give the cuts a character to fall inside."""
SLOW_FIRST_BYTE = 0.3
"""Seconds a ``slow first byte`` reply's status waits: below any sane read timeout."""
STALL_EVENTS = (1, 0, 2)
"""Events a ``stalled stream`` sends before it falls silent (drawn in this order)."""

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
        refused = refused_kind(reply)
        if refused:
            return refused
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
        return "several calls, interleaved" if ("interleaved", True) in reply.wire else "several calls"
    reasoned = _reasoning_kind(reply)
    if reasoned:
        return reasoned
    if reply.text:
        return "text and a call"
    call = calls[0]
    if call.raw is not None:
        return strictly("non-JSON arguments", call.name, strict)
    if call.name == UNKNOWN_TOOL:
        return "unknown tool"
    return "valid call"


def refused_kind(reply: ModelTurn) -> str:
    """``non-retryable status`` or ``quota exhausted`` for an error reply the provider refused for
    good (W7 judges what follows it), ``""`` for any other reply."""
    if reply.kind != "error":
        return ""
    if error_code(reply) == QUOTA_CODE:
        return "quota exhausted"
    return "non-retryable status" if status_of(reply) in NON_RETRYABLE else ""


def error_code(reply: ModelTurn) -> str | None:
    """The error code an error reply carries beside its status (``insufficient_quota``), if any."""
    value = dict(reply.wire).get("code")
    return str(value) if value is not None else None


REFUSALS: Mapping[str, str] = {"refusal": "refusal", "content_filter": "content filter"}
"""The ``wire:`` names of a reply the model declined or the provider's filter withheld -> its kind."""


def refusal_of(reply: ModelTurn) -> str:
    """``refusal`` or ``content filter`` for a reply of those kinds, ``""`` for any other."""
    return next((REFUSALS[name] for name, _ in reply.wire if name in REFUSALS), "")


REDACTED_DATA: tuple[str, ...] = ("EqoBCkgIARABGAIiQK8redacted", "EmwKAhgBEgzredactedthinking")
"""Stand-ins for the opaque data of Anthropic's ``redacted_thinking`` (``wire: {redacted_thinking: DATA}``)."""
THOUGHTS: tuple[str, ...] = ("I should call a tool first.", "The tool will know; ask it.")
"""Thinking before a call: short fixed sentences, as :data:`ANSWERS`."""


def _reasoning_kind(reply: ModelTurn) -> str:
    """A reply of one well-formed call with reasoning before it: its kind (``""``: not one)."""
    call = reply.calls[0]
    if call.raw is not None or call.name == UNKNOWN_TOOL:
        return ""
    if "redacted_thinking" in dict(reply.wire):
        return "redacted thinking and a call"
    return "thinking and a call" if reply.thinking is not None else ""


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


def servable(tools: Sequence[Tool], hostile: bool = False, features: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """The kinds a campaign's tiers allow that a reply to this menu and request can be: calls need a
    tool, arguments a strict tool rules out need a strict tool, arguments that break a schema a
    tool that is not strict and whose schema they can break, and a kind of :data:`NEEDS` the
    request's ``features``."""
    loose = [t for t in tools if not t.strict]
    possible = set(kinds_for(hostile, features))
    if not tools:
        possible -= {"valid call", "several calls", "text and a call", "duplicate ids", "several calls, interleaved"}
        possible -= set(STRICT_KINDS)
        possible -= set(REASONING_KINDS)
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
