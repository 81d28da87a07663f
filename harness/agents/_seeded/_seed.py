"""A recorded conversation as the seed of a campaign: its wire, prompt, menu and replies.

A cassette the ``recorded`` fixture or ``harness proxy`` wrote is read with the recording tools
(every wire they read, each reply decoded by its backend) and cut into conversations the way
``harness cassettes show --html`` judges them (a Responses chain linked by
``previous_response_id`` is one). Each recorded request is kept as what a seeded campaign compares
the agent's own requests with: its position, the names of the calls whose results it carries (in
order) and its menu.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agents._replies import Tool, request_features
from harness.agents._seeded._recordings import conversations, recorded_turn
from harness.scenarios import ModelTurn


class SeedError(ValueError):
    """A file no campaign can be seeded from; the message is one line naming the file and the fix."""


@dataclass(frozen=True)
class Shape:
    """What a request must say to be the recorded one at its position: the names of the calls
    whose results it carries, in order, and the names on its menu. Arguments and ids are left out:
    a call whose mutated arguments came back as error text is still the recorded call."""

    results: tuple[str, ...]
    menu: tuple[str, ...]


@dataclass(frozen=True)
class Seed:
    """One recorded conversation, ready to serve."""

    source: str
    number: int
    """Which conversation of the cassette (from 1)."""
    provider: str
    endpoint: str
    prompt: str
    menu: tuple[Tool, ...]
    replies: tuple[ModelTurn, ...]
    shapes: tuple[Shape, ...]
    features: frozenset[str] = frozenset()
    """What the recording's first request enabled (``request_features``): a mutation draws the
    kinds it makes possible (reasoning only where thinking was on), as a campaign does."""

    def label(self, step: int) -> str:
        """How a finding names recorded reply ``step`` (from 0): its calls as ``name#id``, or its kind."""
        reply = self.replies[step]
        if reply.calls:
            return ", ".join(f"{call.name}#{call.id}" if call.id else call.name for call in reply.calls)
        if reply.kind == "error":
            return "an error"
        return "the answer" if reply.text else "an empty reply"


def read_seeds(path: str | Path) -> list[Seed]:
    """Every conversation of the cassette at ``path``; :class:`SeedError` (one line) for a
    missing, empty or non-cassette file."""
    from harness.recording import ConversionError, read_steps

    file = Path(path)
    fix = "give a cassette the recorded fixture or harness proxy wrote"
    if not file.is_file():
        raise SeedError(f"--from-cassette {path}: no such file; {fix}")
    if not file.read_text(encoding="utf-8", errors="replace").strip():
        raise SeedError(f"--from-cassette {path}: the file is empty; {fix}")
    try:
        steps = read_steps(file)
    except ConversionError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SeedError(f"--from-cassette {path}: not a cassette a campaign can replay ({reason}); {fix}") from None
    if not steps:
        raise SeedError(f"--from-cassette {path}: the cassette holds no interactions; {fix}")
    return [_seed(str(path), number, c.steps) for number, c in enumerate(conversations(steps), start=1)]


def chosen_seeds(path: str | Path, conversation: int | None) -> list[Seed]:
    """The conversations a campaign runs: ``conversation`` (from 1), or each in turn;
    :class:`SeedError` for a bad file or a conversation the cassette does not hold."""
    seeds = read_seeds(path)
    if conversation is None:
        return seeds
    if not 1 <= conversation <= len(seeds):
        plural = "s" if len(seeds) != 1 else ""
        raise SeedError(
            f"--conversation {conversation}: {path} holds {len(seeds)} conversation{plural}; "
            f"give a number from 1 to {len(seeds)}"
        )
    return [seeds[conversation - 1]]


def _seed(source: str, number: int, steps: Sequence[Any]) -> Seed:
    first = steps[0]
    users = [said.text for said in first.conversation.messages if said.role == "user"]
    menu = tuple(Tool(spec.name, dict(spec.parameters)) for spec in first.call.tools)
    names: dict[str, str] = {}
    shapes = []
    for step in steps:
        shapes.append(Shape(results(step.conversation.messages, names), tuple(s.name for s in step.call.tools)))
        for call in step.reply.tool_calls:
            names[call.id] = call.name
    return Seed(
        source=source,
        number=number,
        provider=first.call.provider,
        endpoint=first.call.endpoint,
        prompt=users[-1] if users else "",
        menu=menu,
        replies=tuple(recorded_turn(step, anonymous=False) for step in steps),
        shapes=tuple(shapes),
        features=request_features(first.call.provider, first.interaction.request.body.object),
    )


def results(messages: Sequence[Any], names: Mapping[str, str]) -> tuple[str, ...]:
    """The tools whose results close ``messages`` (the ones after its last assistant message), by
    the name each result gives or, failing that, the name of the call its id answers (``names``,
    the conversation's calls so far: a Responses request that names the previous response carries
    its results alone)."""
    known = dict(names)
    for said in messages:
        for call in getattr(said, "calls", ()) or ():
            known[call.id] = call.name
    tail: list[str] = []
    for said in reversed(messages):
        if said.role == "assistant":
            break
        if said.role == "tool":
            tail.append(said.tool_name or known.get(said.call_id or "", "?"))
    return tuple(reversed(tail))
