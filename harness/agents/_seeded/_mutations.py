"""What a seeded example changes in the recording, drawn with Hypothesis's public strategies, and
the replies it serves.

An example's mutations are one list of ``(recorded step, change)``, drawn with ``st.data()``:
Hypothesis shrinks a list toward fewer items and each change toward its first kind, so a failure
shrinks toward the unmodified recording and a finding keeps only the mutations it needs. A change
is a reply replaced by a drawn kind of the campaign's tiers, a fault before the recorded reply (the
wire's own statuses, a cut stream; the retry gets the recorded reply) or the arguments of the
reply's first call drawn inside or outside its tool's schema.

The replies then follow the recording while the agent's requests still match it
(:class:`~harness.agents._seeded._seed.Shape`), and are drawn fresh once it diverges.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from harness.agents._conversation import as_recorded
from harness.agents._replies import (
    ERROR_STATUSES,
    FINAL,
    RETRY_AFTER,
    SENDS_RETRY_AFTER,
    as_arguments,
    is_final,
    kind_of,
    numbered,
    unnumbered,
)
from harness.agents._seeded._seed import Seed, Shape, results
from harness.emulator import WireRequest
from harness.recording import conversation
from harness.report import Spine, SpineRow
from harness.scenarios import ModelTurn
from harness.strategies import arguments, invalid_arguments

CHANGES = ("fault before", "replaced", "arguments")
"""The kinds of change, simplest first (a fault keeps the recorded reply, served on the retry)."""


@dataclass(frozen=True)
class Mutation:
    """One change to recorded reply ``step`` (from 0): ``served`` is what the agent gets instead
    of it (``replaced``, ``arguments``) or before it (``fault before``)."""

    step: int
    change: str
    served: ModelTurn
    detail: str = ""

    def name(self, seed: Seed) -> str:
        """``recorded reply 3 of 7 (add#call_2) replaced by a cut stream``: the step as a person
        finds it in ``harness cassettes show``."""
        where = f"recorded reply {self.step + 1} of {len(seed.replies)} ({seed.label(self.step)})"
        return f"{where} {self.detail}"


def mutations(seed: Seed, hostile: bool) -> st.SearchStrategy[list[Mutation]]:
    """At least one change, at most three, each on its own recorded step."""
    one = st.integers(0, len(seed.replies) - 1).flatmap(lambda step: _mutation(seed, step, hostile))
    return st.lists(one, min_size=1, max_size=min(3, len(seed.replies)), unique_by=lambda m: m.step)


@st.composite
def _mutation(draw: st.DrawFn, seed: Seed, step: int, hostile: bool) -> Mutation:
    recorded = seed.replies[step]
    change = draw(st.sampled_from(CHANGES if recorded.calls else CHANGES[:2]), label="change")
    if change == "fault before":
        return _fault(draw, seed, step)
    if change == "replaced":
        drawn_reply = draw(unnumbered(seed.menu, seed.provider, hostile, features=seed.features), label="reply")
        ids = iter(range(1, 3))  # ids in the wire's style that no recorded call has
        reply = numbered(drawn_reply, lambda: f"{_prefix(seed.provider)}mutated{step + 1}_{next(ids)}")
        return Mutation(step, change, reply, f"replaced by {_kind(reply, seed.provider)}")
    first = recorded.calls[0]
    schema = next((tool.schema for tool in seed.menu if tool.name == first.name), {})
    inside = draw(st.booleans(), label="inside the schema")
    drawn = draw(arguments(schema) if inside else invalid_arguments(schema), label="arguments")
    changed = dataclasses.replace(first, args=as_arguments(drawn), raw=None)
    where = "inside" if inside else "outside"
    served = dataclasses.replace(recorded, calls=(changed, *recorded.calls[1:]))
    return Mutation(step, change, served, f"with {first.name}'s arguments {where} its schema: {changed.args}")


def _fault(draw: st.DrawFn, seed: Seed, step: int) -> Mutation:
    """A fault of the wire's own before the recorded reply: an error status (``Retry-After`` where
    the wire sends one; Bedrock's throttling has none) or a stream cut after its first event."""
    statuses = ERROR_STATUSES.get(seed.provider, ERROR_STATUSES["openai"])
    choices: list[int | str] = [*statuses, "cut"]
    fault = draw(st.sampled_from(choices), label="fault")
    if not isinstance(fault, int):
        cut = ModelTurn(kind="hang_up", text="The answer")
        return Mutation(step, "fault before", cut, "preceded by a cut stream after its first event")
    status = fault
    wire: tuple[tuple[str, Any], ...] = (("status", status),)
    said = f"preceded by a {status}"
    if seed.provider in SENDS_RETRY_AFTER:
        wait = draw(st.sampled_from(RETRY_AFTER), label="retry_after")
        wire += (("retry_after", wait),)
        said += f" with Retry-After: {wait:g} s"
    return Mutation(step, "fault before", ModelTurn(kind="error", message=f"emulated {status}", wire=wire), said)


def _prefix(provider: str) -> str:
    return {"anthropic": "toolu_", "bedrock": "tooluse_"}.get(provider, "call_")


def _kind(reply: ModelTurn, provider: str) -> str:
    kind = kind_of(reply, provider)
    if kind == "error status":
        return f"a {dict(reply.wire).get('status')}"
    return {"cut stream": "a cut stream", "dropped connection": "a dropped connection"}.get(kind, f"a {kind}")


@dataclass(frozen=True)
class Served:
    """What answered request ``number``: recorded step ``step`` (from 0; ``None``: a reply drawn
    once the agent left the recording), changed by ``mutation`` (``fault``: the fault served
    before the step, whose retry gets it)."""

    number: int
    step: int | None
    mutation: Mutation | None
    fault: bool = False
    reply: ModelTurn | None = None
    """The reply drawn (``step`` ``None``)."""


@dataclass
class SeededReplies:
    """The replies of one seeded example: the recording with ``planned`` applied, followed while
    the agent's requests match it, then drawn fresh (``data``; none: the final answer)."""

    seed: Seed
    planned: Mapping[int, Mutation]
    data: Any = None
    hostile: bool = False
    max_replies: int = 6
    step: int = 0
    faulted: set[int] = field(default_factory=set)
    diverged_at: int | None = None
    names: dict[str, str] = field(default_factory=dict)
    fresh: int = 0
    ids: int = 0
    drawn: list[ModelTurn] = field(default_factory=list)
    final: ModelTurn | None = None
    trail: list[Served] = field(default_factory=list)
    """What answered each request, in order: the page's spine."""

    def __call__(self, number: int, request: WireRequest) -> ModelTurn | None:
        if self.final is not None:
            self.trail.append(Served(number, None, None, reply=self.final))
            return self.final
        if self.diverged_at is None and not self._matches(request):
            self.diverged_at = number
        step, mutation = self.step, self.planned.get(self.step)
        reply = self._recorded() if self.diverged_at is None else self._fresh()
        if self.diverged_at is None:
            faulted = mutation is not None and mutation.change == "fault before" and self.step == step
            kept = mutation is None or (mutation.change == "fault before" and not faulted)
            self.trail.append(Served(number, step, None if kept else mutation, faulted))
        else:
            self.trail.append(Served(number, None, None, reply=reply))
        for call in reply.calls:
            self.names[call.id or ""] = call.name
        if is_final(reply):
            self.final = reply
        return reply

    def _matches(self, request: WireRequest) -> bool:
        if self.step >= len(self.seed.replies):
            return False
        recorded = as_recorded(request)
        shape = Shape(results(conversation(recorded).messages, self.names), tuple(s.name for s in recorded.tools))
        return shape == self.seed.shapes[self.step]

    def _recorded(self) -> ModelTurn:
        step = self.step
        mutation = self.planned.get(step)
        if mutation is not None and mutation.change == "fault before" and step not in self.faulted:
            self.faulted.add(step)  # the retry is answered with the recorded reply of this step
            return mutation.served
        self.step += 1
        if mutation is not None and mutation.change != "fault before":
            return mutation.served
        return self.seed.replies[step]

    def _fresh(self) -> ModelTurn:
        """A reply drawn once the agent left the recording; without ``data`` (a replay), the ones a
        run drew before (``drawn``), in order."""
        if self.fresh >= (self.max_replies if self.data is not None else len(self.drawn)):
            self.final = FINAL
            return FINAL
        self.fresh += 1
        if self.data is None:
            return self.drawn[self.fresh - 1]
        drawn = self.data.draw(
            unnumbered(self.seed.menu, self.seed.provider, self.hostile, features=self.seed.features),
            label="fresh reply",
        )
        reply = numbered(drawn, self._next_id)
        self.drawn.append(reply)
        return reply

    def _next_id(self) -> str:
        """A fresh call id in the wire's style that no recorded call has."""
        self.ids += 1
        return f"{_prefix(self.seed.provider)}fresh{self.ids}"


def spine_of(seed: Seed, trail: Sequence[Served], headline: str) -> Spine:
    """Each recorded step a row, with the requests it answered and its mutation; the replies
    drawn once the agent left the recording a branch after the last step it reached."""
    rows = [SpineRow("unreached", step + 1, len(seed.replies), seed.label(step)) for step in range(len(seed.replies))]
    left: list[SpineRow] = []
    for served in trail:
        if served.step is None:
            said = kind_of(served.reply, seed.provider) if served.reply is not None else "a reply"
            calls = ", ".join(call.name for call in served.reply.calls) if served.reply is not None else ""
            left.append(SpineRow("drawn", None, len(seed.replies), calls or said, [served.number], [said]))
            continue
        row = rows[served.step]
        row.requests.append(served.number)
        row.kind = "recorded" if row.kind == "unreached" else row.kind
        if served.mutation is not None:
            row.kind = "fault" if served.fault else "mutated"
            row.marks.append(served.mutation.detail)
            row.faulted += [served.number] if served.fault else []
    reached = max((s.step for s in trail if s.step is not None), default=-1)
    return Spine(headline, rows[: reached + 1] + left + rows[reached + 1 :], len(left))
