"""W2's reasoning rule (DESIGN 6): reasoning the provider asks back is part of the history, and
comes back unchanged, judged exactly as each provider requires it and no stricter.

- Anthropic (its own wire, Claude on Vertex and on Bedrock's InvokeModel), "Building with extended
  thinking", *Preserving thinking blocks*: during tool use the thinking (and ``redacted_thinking``)
  blocks of the last assistant turn, the one whose ``tool_use`` is being answered, must be passed
  back complete and unmodified, signature included, when the continuation enables thinking (the
  API answers otherwise with a 400: "Expected `thinking` or `redacted_thinking`, but found
  `tool_use`"); thinking blocks of earlier turns may be left out (the API strips them from the
  context anyway). So only the last turn's blocks are judged: a framework that drops older ones
  is right.
- OpenAI Responses, "Reasoning models" and the reasoning-items cookbook: when the history is sent
  by hand, the reasoning item that preceded a ``function_call`` is sent with it (otherwise a 400:
  "Item 'fc_...' of type 'function_call' was provided without its required 'reasoning' item");
  with ``store: false`` nothing is kept on the server, so it must carry its ``encrypted_content``
  (what ``include: ["reasoning.encrypted_content"]`` asked for). A request that continues with
  ``previous_response_id`` has it on the server and is not judged here; an ``item_reference``
  to the item is the item.
- Bedrock Converse (Claude's extended thinking, "Extended thinking with tool use"): the
  ``reasoningContent`` block of the last assistant message, its text and signature, comes back
  with the ``toolUse`` it preceded when the request enables thinking
  (``additionalModelRequestFields``), as on Anthropic's own API.
- Gemini, "Thought signatures": from Gemini 3 on, the ``thoughtSignature`` of the first
  ``functionCall`` part of each step of the current turn must come back on that part (a missing
  one is a 400); Gemini 2.5 does not check them, and signatures on other parts are recommended,
  not required. Judged: the last reply's signed call, on a model of Gemini 3 or later (a name with
  no version is taken as a current model, as the emulator takes it).

The reasoning served is known without the bytes: the emulator derives each signature, id and
encrypted content from the reasoning itself (``harness.emulator.opaque``), and this rule asks the
emulator's own functions for them (``thinking_signature``, ``reasoning_item``, ``call_signature``,
``reasoning_signature``). A recorded conversation (a cassette judged by W1 and W2) holds the
provider's own opaque reasoning, which nothing derives: its reasoning is not judged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.agents._conversation import Exchange, carried
from harness.agents._invariants._findings import ReplyKinds, Violation
from harness.agents._replies import request_features
from harness.emulator import WireRequest, call_signature, reasoning_item, reasoning_signature, thinking_signature
from harness.recording import Said, reasoning_entry
from harness.scenarios import ModelTurn


def reasoning_kept(
    exchanges: Sequence[Exchange], histories: Sequence[tuple[Said, ...]], kinds: ReplyKinds
) -> Iterable[Violation]:
    """The reasoning of each reply with calls, where its provider asks it back with the results,
    compared with what the next request's assistant message holding those calls carries."""
    for index in range(1, len(exchanges)):
        previous, exchange = exchanges[index - 1], exchanges[index]
        served = carried(previous)
        if served is None or not previous.delivered or not served.calls or not previous.rendered_here:
            continue  # a recorded reply's reasoning is the provider's opaque bytes: nothing derives it
        expected = _asked_back(served, previous.request, exchange.request)
        message = _holding(histories[index], served)
        if not expected or message is None:  # a call that did not come back is W1's and W2's to say
            continue
        store = _body(exchange.request).get("store") is not False
        for entry in expected:
            said = _compare(entry, message.reasoning, store)
            if said:
                yield Violation(
                    "W2",
                    exchange.number,
                    f"{_describe(entry)} {_calls(served)} (reply {previous.number}) {said}",
                    kinds(served),
                    cause=previous.number,
                )


def _body(request: WireRequest) -> Mapping[str, Any]:
    return request.body if isinstance(request.body, Mapping) else {}


def _anthropic_blocks(request: WireRequest) -> bool:
    route = request.route
    return route.provider == "anthropic" or (route.provider == "bedrock" and route.endpoint.startswith("invoke"))


def _asked_back(served: ModelTurn, asked: WireRequest, following: WireRequest) -> tuple[dict[str, Any], ...]:
    """The reasoning entries ``served`` (the reply to ``asked``) carried that ``following`` must
    send back with its calls, as :attr:`Said.reasoning` reads them (``()``: none asked back)."""
    if _anthropic_blocks(asked):
        if "reasoning" not in request_features(following.route.provider, following.body):
            return ()  # a continuation without thinking may leave thinking blocks out
        blocks: list[dict[str, Any]] = []
        if served.thinking is not None:
            signature = thinking_signature(served.thinking)
            blocks.append({"type": "thinking", "thinking": served.thinking, "signature": signature})
        data = dict(served.wire).get("redacted_thinking")
        if isinstance(data, str):
            blocks.append({"type": "redacted_thinking", "data": data})
        return tuple(blocks)
    if asked.route.provider == "openai" and asked.route.endpoint == "responses" and served.thinking is not None:
        if isinstance(_body(following).get("previous_response_id"), str):
            return ()  # the server keeps the reasoning with the response
        item = reasoning_item(served.thinking, asked)
        return ({k: v for k, v in item.items() if k in ("type", "id", "encrypted_content") and v is not None},)
    if asked.route.provider == "bedrock" and served.thinking is not None:
        if "reasoning" not in request_features("bedrock", following.body):
            return ()  # as Anthropic's: a continuation without thinking may leave it out
        signature = reasoning_signature(served.thinking)
        return ({"type": "reasoningText", "text": served.thinking, "signature": signature},)
    if asked.route.provider == "gemini" and _checks_signatures(following):
        first = served.calls[0]
        arguments = json.loads(first.raw) if first.raw is not None else dict(first.args)
        return ({"thoughtSignature": call_signature(first.name, arguments)},)
    return ()


_GEMINI_VERSION = re.compile(r"gemini-(\d+(?:\.\d+)?)")


def _checks_signatures(request: WireRequest) -> bool:
    """Whether the model a Gemini request names checks thought signatures (Gemini 3 and later)."""
    model = request.path_params.get("model") or request.path.rpartition("/models/")[2].partition(":")[0]
    found = _GEMINI_VERSION.search(model)
    return found is None or float(found.group(1)) >= 3


def _holding(history: tuple[Said, ...], served: ModelTurn) -> Said | None:
    """The assistant message of ``history`` that holds the first of the reply's calls (by name
    alone where the call came back without its id, as Gemini's may)."""
    first = served.calls[0]
    return next(
        (
            m
            for m in history
            if m.role == "assistant" and any(c.name == first.name and c.id in (first.id, "") for c in m.calls)
        ),
        None,
    )


_KEY = {
    "reasoningText": "signature",
    "thinking": "signature",
    "redacted_thinking": "data",
    "reasoning": "id",
    "thoughtSignature": "thoughtSignature",
}
"""What identifies each kind of reasoning: a thinking block's signature, a redacted block's data,
a reasoning item's id (what a changed copy of it still shows)."""


def _compare(entry: dict[str, Any], sent: tuple[str, ...], store: bool) -> str:
    """How the reasoning ``entry`` came back among ``sent`` (``""``: unchanged)."""
    found = [json.loads(s) for s in sent]
    if reasoning_entry(**entry) in sent:
        return ""
    kind = entry.get("type", "thoughtSignature")
    key = _KEY[kind]
    same = [f for f in found if f.get("type", "thoughtSignature") == kind and f.get(key) == entry[key]]
    if kind == "reasoning" and same:
        copy = same[0]
        if "encrypted_content" not in copy and store:
            return ""  # stored: the id alone names it
        if "encrypted_content" not in copy:
            return (
                "was sent back without its encrypted_content, with store: false (nothing on the server to read it from)"
            )
    if same or any(f.get("type", "thoughtSignature") == kind for f in found):
        changed = [name for name in entry if name != "type" and (same[0] if same else {}).get(name) != entry[name]]
        return f"was changed ({', '.join(changed) or 'its ' + key}): it must come back as it was sent"
    return "was not sent back with it"


def _describe(entry: dict[str, Any]) -> str:
    """The reasoning named by what identifies it, and how it stands to the calls it goes with."""
    kind = entry.get("type", "thoughtSignature")
    key = _KEY[kind]
    value = str(entry[key])
    shown = value if len(value) <= 16 else value[:12] + "..."
    if kind == "thoughtSignature":
        return f"the thoughtSignature ({shown}) of"
    name = {
        "reasoningText": "reasoningContent block",
        "thinking": "thinking block",
        "redacted_thinking": "redacted_thinking block",
        "reasoning": "reasoning item",
    }
    return f"the {name[kind]} ({key} {shown}) before"


def _calls(served: ModelTurn) -> str:
    shown = ", ".join(f"{c.name}#{c.id}" for c in served.calls)
    return f"call {shown}" if len(served.calls) == 1 else f"calls {shown}"
