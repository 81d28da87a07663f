"""What a timeline shows, as plain values: lanes of entries, and what the oracle said about them.

A run (``Trace``) and a recorded conversation (a cassette's decoded steps) are read into the same
values, so one template draws both and a person reads both the same way. Nothing here knows HTML.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

EntryKind = Literal["user", "model", "tool", "turn", "end", "note"]


@dataclass
class Offered:
    """A tool on the menu of a request."""

    name: str
    description: str = ""
    parameters: Any = None


@dataclass
class CallShown:
    """A tool call of a reply: what the model asked for."""

    id: str
    name: str
    arguments: Any
    raw: str | None = None


@dataclass
class MessageShown:
    """One message of a request's conversation, as the wire invariants read it (normalized)."""

    role: str
    text: str = ""
    calls: list[CallShown] = field(default_factory=list)
    call_id: str | None = None
    is_error: bool = False


@dataclass
class Mark:
    """An entry is what a problem is about: its number on the page and its name."""

    number: int
    name: str


@dataclass
class Entry:
    """One thing that happened, in the order it happened. ``kind`` says which fields mean anything:

    ``user`` (``label``: prompt, steering, ...; ``text``), ``model`` (a request and its reply),
    ``tool`` (one execution, with the runs nested in it), ``turn`` (a divider), ``end``
    (``label``: the end reason; ``text``: what else is known), ``note`` (a remark of the reader).
    """

    kind: EntryKind
    anchor: str
    label: str = ""
    text: str = ""
    time: int | None = None
    # a model call: the request ...
    number: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    tools: list[Offered] = field(default_factory=list)
    tools_same_as: int | None = None
    system: str = ""
    history: int | None = None
    messages: list[MessageShown] = field(default_factory=list)
    """The whole conversation the request carried (a wire campaign's requests; empty elsewhere)."""
    # ... and its reply
    thinking: list[str] = field(default_factory=list)
    calls: list[CallShown] = field(default_factory=list)
    stop_reason: str | None = None
    error: str | None = None
    fault: str | None = None
    """What the service did instead of a clean reply (an error status, a cut stream), as served."""
    usage: dict[str, int] = field(default_factory=dict)
    # a tool execution
    call: CallShown | None = None
    updates: list[Any] = field(default_factory=list)
    status: str = ""
    why: str = ""
    details: Any = None
    nested: list[Lane] = field(default_factory=list)
    # what the oracle said about it
    marks: list[Mark] = field(default_factory=list)

    @property
    def marked(self) -> bool:
        return bool(self.marks)

    @property
    def open(self) -> bool:
        """Shown unfolded: what a problem is about, and a lane's calls that went wrong."""
        return self.marked or self.status in ("error", "not run")


@dataclass
class Lane:
    """One run (or one recorded conversation), its entries in order; nested runs hang off tools."""

    label: str
    entries: list[Entry] = field(default_factory=list)
    reason: str | None = None
    nested: bool = False

    def walk(self) -> list[Entry]:
        """Every entry of this lane and of the lanes nested in it, depth first."""
        out: list[Entry] = []
        for entry in self.entries:
            out.append(entry)
            for lane in entry.nested:
                out.extend(lane.walk())
        return out


@dataclass
class SideBySide:
    """Where the reference model's prediction and the run part ways: the first difference."""

    what: str
    expected: str
    actual: str


@dataclass
class ProblemShown:
    """What the oracle said, numbered on the page; ``located``: an entry of the timeline is marked."""

    number: int
    name: str
    message: str
    located: bool = False
    side_by_side: list[SideBySide] = field(default_factory=list)


@dataclass
class Timeline:
    """One timeline: its lanes (the first is the top-level run), the facts and the oracle's word.

    ``key`` prefixes every anchor, so several timelines can share a page.
    """

    key: str
    title: str
    lanes: list[Lane]
    facts: list[tuple[str, str]] = field(default_factory=list)
    problems: list[ProblemShown] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdict: Literal["ok", "fail", "unjudged"] = "unjudged"
    judged_by: str = ""
    """What judged it, when not the loop's invariants (a recording: the wire invariants W1, W2)."""

    @property
    def ok(self) -> bool:
        return self.verdict != "fail"


@dataclass
class RecordingJudgement:
    """What the wire invariants that apply to a recording said of a cassette's conversations.

    Judging is the ``harness.agents`` layer's, above this package: the caller judges and hands the
    verdicts over. ``conversations``: each one judged, said for a person (``interactions #0-#2,
    openai chat.completions``); ``problems``: ``(interaction index, invariant, message)``."""

    invariants: Mapping[str, str]
    conversations: list[str] = field(default_factory=list)
    problems: list[tuple[int, str, str]] = field(default_factory=list)
