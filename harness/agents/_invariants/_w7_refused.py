"""W7 and the refusal rule (DESIGN 6): what an agent may do after the provider refused it.

W7: a request the provider refused as non-retryable (400, 401, 403, 404, OpenAI's 429
``insufficient_quota``) is not sent again unchanged. The same bytes get the same answer: a wrong
key stays wrong, a malformed body stays malformed, an account out of credit stays so until someone
pays; a loop that sends it again burns its retries (and, in production, the provider's patience:
retry storms on auth and quota errors are a common outage), and tells its user late. A request
changed in any way (another model, a fixed body, a new key) is a new request, not a retry.

The refusal rule: a refusal (the model declined: Anthropic's ``stop_reason: refusal``, OpenAI's
``refusal``, Gemini's ``SAFETY``, Bedrock's ``content_filtered``) or a content filter (the provider
withheld the output) is a whole reply, and the agent may end the run on it, by returning or raising,
or go on. Anthropic documents that the context must be reset after a refusal (the refused turn
removed or rephrased, or the history cleared): so the request after one need not repeat the
history (W2 allows it); a return after one must not be empty, which would hide it (W4); and the
partial text a filter left is not a complete answer (W5).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.agents._conversation import Exchange, Run
from harness.agents._invariants._findings import ReplyKinds, Violation, rendered_again
from harness.agents._replies import refusal_of, refused_kind, status_of
from harness.emulator import WireRequest
from harness.wire import clip


def w7(exchanges: Sequence[Exchange], kinds: ReplyKinds) -> Iterable[Violation]:
    """Each refused request sent again unchanged right after its refusal, said once with how many times."""
    index = 0
    while index < len(exchanges) - 1:
        exchange, reply = exchanges[index], exchanges[index].reply
        if reply is None or not refused_kind(reply):
            index += 1
            continue
        repeats = 0
        while index + 1 + repeats < len(exchanges) and _same(exchanges[index + 1 + repeats].request, exchange.request):
            repeats += 1
        if repeats:
            again = exchanges[index + 1]
            named = _error_name(exchange)
            times = "" if repeats == 1 else f"; it was sent {repeats + 1} times in all"
            yield Violation(
                "W7",
                again.number,
                f"request {again.number} repeated request {exchange.number} unchanged after its HTTP "
                f"{status_of(reply)}{f' ({named})' if named else ''}, which is not retryable{times}",
                kinds(reply),
                cause=exchange.number,
            )
        index += 1 + repeats


def _same(a: WireRequest, b: WireRequest) -> bool:
    """The same request again: method, path, query and body (headers change on a retry: the SDK's
    retry count, a fresh signature)."""
    return (a.method, a.path, dict(a.query), a.body) == (b.method, b.path, dict(b.query), b.body)


def _error_name(exchange: Exchange) -> str:
    """The error as the wire named it (``invalid_api_key``, ``authentication_error``,
    ``UNAUTHENTICATED``, ``AccessDeniedException``, ``insufficient_quota``), rendered again from the
    reply for the request that got it: what a maintainer searches their client for."""
    delivery = rendered_again(exchange)
    if delivery is None:
        return ""
    reply = delivery.reply
    headers = {k.lower(): v for k, v in reply.headers.items()}
    if "x-amzn-errortype" in headers:
        return str(headers["x-amzn-errortype"]).partition(":")[0]
    try:
        error = json.loads(reply.body or b"{}").get("error")
    except (ValueError, AttributeError):
        return ""
    return _named(error) if isinstance(error, Mapping) else ""


def _named(error: Mapping[str, Any]) -> str:
    for key in ("status", "code", "type"):  # Gemini's status name, OpenAI's code, Anthropic's type
        if isinstance(error.get(key), str):
            return str(error[key])
    return ""


# -- the refusal rule ----------------------------------------------------------------------------------


def may_reset(previous: Exchange) -> bool:
    """Whether the request after ``previous`` may leave its history behind: its reply was a refusal
    or a content filter, and Anthropic documents resetting the context after one."""
    return previous.reply is not None and previous.delivered and bool(refusal_of(previous.reply))


FILTER_SPEAKS: frozenset[str] = frozenset({"bedrock"})
"""Wires whose content filter replaces the output with a message meant for the user (a Bedrock
guardrail's configured ``blockedOutputsMessaging``): returning that text is what the filter intends,
so W5 does not judge it there. Elsewhere (OpenAI, Gemini) the filter leaves text cut short."""


def refused_return(run: Run, last: Exchange, kinds: ReplyKinds) -> Iterable[Violation]:
    """What a normal return after a refusal or a content filter (the run's last reply) may not be:
    empty (W4: the refusal hidden), or the partial text a filter left, as a complete answer (W5).
    Any other text may be returned: the refusal's own message, or the agent's words about it."""
    assert last.reply is not None and run.returned is not None
    kind = refusal_of(last.reply)
    said = last.reply.text or ""
    what = "a refusal" if kind == "refusal" else "a content filter"
    if not run.returned.strip():
        yield Violation(
            "W4",
            last.number,
            f"the run returned {run.returned!r} after reply {last.number}, {what} ({clip(said, 60)!r}): an empty "
            "answer hides it; return the refusal's message or say it was refused, or raise",
            kinds(last.reply),
            cause=last.number,
        )
    elif kind == "content filter" and last.request.route.provider in FILTER_SPEAKS:
        return
    elif kind == "content filter" and said.strip() and run.returned.strip() == said.strip():
        yield Violation(
            "W5",
            last.number,
            f"reply {last.number} was withheld by the provider's content filter, and the run returned the "
            f"text it left, {clip(said, 60)!r}, as a complete answer",
            kinds(last.reply),
            cause=last.number,
        )
