"""A recorded conversation judged by the wire invariants a recording can show.

Those are the ones about what the client sent back: W1 (every tool call answered once, by its id,
in the next request) and W2 (history append-only). The others need what a recording does not keep
(the run's end, its time bound, the wait before a retry). ``harness cassettes show --html`` marks
the verdicts on the cassette's timeline; from Python, hand the result to
``harness.report.cassette_report(steps, judged=...)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.report import RecordingJudgement

RECORDED = ("W1", "W2")
"""The wire invariants a recording can show."""


@dataclass
class _Conversation:
    wire: tuple[str, str]
    steps: list[Any]


def judge_recording(steps: Sequence[Any]) -> RecordingJudgement | None:
    """W1 and W2 over each conversation of a cassette (``harness.recording``'s decoded steps) that
    has at least two requests: a ``RecordingJudgement`` for ``cassette_report(..., judged=)``, or
    ``None`` when the cassette holds no such conversation (a single request shows neither)."""
    from harness.agents._invariants import INVARIANTS, judge

    judgeable = [c for c in conversations(steps) if len(c.steps) >= 2]
    if not judgeable:
        return None
    judged = RecordingJudgement({name: INVARIANTS[name] for name in RECORDED})
    for conversation in judgeable:
        indexes = [step.interaction.index for step in conversation.steps]
        said = f"interactions #{indexes[0]}-#{indexes[-1]} ({' '.join(conversation.wire)}, {len(indexes)} requests)"
        judged.conversations.append(said)
        findings = judge(_run(conversation.steps)).violations
        # a recording lists each broken invariant where it broke, the ones one reply caused too
        for violation in (v for finding in findings for v in (finding, *finding.also)):
            if violation.invariant not in RECORDED:
                continue
            index = indexes[violation.request - 1]
            judged.problems.append(
                (
                    index,
                    violation.invariant,
                    f"{violation.invariant} at interaction #{index} (request {violation.request} of the conversation "
                    f"of {said}): {violation.message}",
                )
            )
    return judged


def conversations(steps: Sequence[Any]) -> list[_Conversation]:
    """A request continues the one before when it speaks the same wire and either names the
    previous response (Responses' ``previous_response_id``) or repeats the previous request's first
    message and carries more messages. Unlike a timeline's lanes, a history that was rewritten
    stays in its conversation: that is what W2 judges."""
    out: list[_Conversation] = []
    previous: Any = None
    for step in steps:
        wire = (step.call.provider, step.call.endpoint)
        current = out[-1] if out else None
        if current is None or current.wire != wire or not _continues(previous, step):
            current = _Conversation(wire, [])
            out.append(current)
        current.steps.append(step)
        previous = step
    return out


def _continues(previous: Any, step: Any) -> bool:
    if previous is None:
        return False
    named = _body(step).get("previous_response_id")
    if isinstance(named, str):
        return named == _response_id(previous)
    before, now = previous.conversation.messages, step.conversation.messages
    return bool(before) and len(now) > len(before) and now[0] == before[0]


def _body(step: Any) -> Mapping[str, Any]:
    body: Mapping[str, Any] = step.interaction.request.body.object
    return body


def _response_id(step: Any) -> str | None:
    from harness.wire import response_id

    return response_id(step.interaction.response.body.data)


def _run(steps: Sequence[Any]) -> Any:
    """The conversation as the agents layer's ``Run``: each request with the reply it got, its
    messages the ones the recording's reader already normalized."""
    # a recorded call's id on a wire without ids was made up by a client or by our reader: matched by
    # name there, as W1 does for a served one
    from harness.agents._conversation import WIRES_WITHOUT_IDS, Exchange, Run

    class Recorded(Exchange):
        """A recorded request: its conversation as read from the cassette, not re-read."""

        said: tuple[Any, ...] = ()
        rendered_here = False  # the reasoning in a recorded reply is the provider's: not derived, not judged

        def messages(self, items: Any = None) -> tuple[Any, ...]:
            return self.said

    anonymous = steps[0].call.provider in WIRES_WITHOUT_IDS
    exchanges: list[Exchange] = []
    for number, step in enumerate(steps, start=1):
        exchange = Recorded(
            number=number,
            request=_request(step),
            arrived=0.0,
            reply=recorded_turn(step, anonymous),
            answered=0.0,
            response_id=_response_id(step),
        )
        exchange.said = tuple(_without_ids(m) if anonymous else m for m in step.conversation.messages)
        exchanges.append(exchange)
    first = steps[0].conversation.messages
    prompt = next((m.text for m in first if m.role == "user"), "")
    return Run(prompt=prompt, exchanges=exchanges, request_bound=len(exchanges))


def _request(step: Any) -> Any:
    from harness.emulator import WireRequest
    from harness.wire import STREAMING_ENDPOINTS, Route

    recorded = step.interaction.request
    call = step.call
    streams = True if call.endpoint in STREAMING_ENDPOINTS else None
    route = Route(call.provider, call.endpoint, recorded.method, recorded.path, streams)
    return WireRequest(
        method=recorded.method,
        path=recorded.path,
        query=dict(recorded.query),
        headers={},
        body=dict(_body(step)),
        route=route,
    )


def _without_ids(said: Any) -> Any:
    return dataclasses.replace(
        said,
        call_id=None,
        calls=tuple(dataclasses.replace(call, id="") for call in said.calls),
    )


def recorded_turn(step: Any, anonymous: bool) -> Any:
    """The recorded reply as the turn the invariants compare the next request with."""
    from harness.scenarios import Call, ModelTurn

    reply = step.reply
    status = step.interaction.response.status
    if status >= 400 or reply.stop_reason == "error":
        return ModelTurn(kind="error", message=reply.error_message or f"HTTP {status}", wire=(("status", status),))
    if reply.stop_reason == "aborted":
        return ModelTurn(kind="aborted", message=reply.error_message or "aborted")
    calls = tuple(
        Call(c.name, dict(c.arguments or {}), c.raw_arguments, "" if anonymous else c.id) for c in reply.tool_calls
    )
    return ModelTurn(text=reply.text or None, calls=calls, stop="length" if reply.stop_reason == "length" else "stop")
