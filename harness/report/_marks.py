"""Where in a timeline the oracle's objections point.

The invariants and the reference model speak in text made for a terminal; what an objection is
about is in that text, in a few fixed shapes: the event window an invariant prints (the event it
is about marked ``>>``), the reference model's ``first event divergence at event #N`` with its
``expected:`` / ``actual:`` lines, a ``NAME#ID`` tool call on the first line, an end reason. They
are read back here, so a person sees the objection on the event, not only in a list. What cannot
be placed is still listed with the timeline, just not pinned to an entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from harness.report._model import Entry, Lane, Mark, ProblemShown, SideBySide
from harness.trace import Trace, describe_event

_WINDOW = re.compile(r"^\s*>> #(\d+) (.*)$", re.M)
_DIVERGENCE = re.compile(r"first (event|request|ledger entry|new_messages|[\w ]+?) divergence at (?:event )?#(\d+)")
_CALL = re.compile(r"\b([A-Za-z0-9_-]{1,64})#([A-Za-z0-9_.:-]+)")
_PAIR = re.compile(r"^\s*expected:\s*(.*)\n\s*actual:\s*(.*)$", re.M)
_INLINE = re.compile(r"^([\w ]+?): expected (.+?), got (.+)$", re.M)
_END_WORDS = ("end reason", "agent_end", "ended", "max_iterations", "cap")


def place(
    problems: Iterable[tuple[str, str]], trace: Trace | None, root: Lane | None, at: dict[int, Entry]
) -> list[ProblemShown]:
    """Number the problems, mark the entries they are about, and pair the reference's differences."""
    shown: list[ProblemShown] = []
    entries = root.walk() if root is not None else []
    described: list[str] | None = None
    for number, (name, message) in enumerate(problems, start=1):
        problem = ProblemShown(number, name, message)
        problem.side_by_side = [SideBySide(_what(message), e, a) for e, a in _PAIR.findall(message)][:3]
        if not problem.side_by_side:
            problem.side_by_side = [SideBySide(w, e, a) for w, e, a in _INLINE.findall(message)][:3]
        targets: list[Entry] = []
        divergence = _DIVERGENCE.search(message)
        if divergence and divergence.group(1) == "event":
            entry = at.get(int(divergence.group(2)))
            if entry is not None:
                targets.append(entry)
        window = _WINDOW.search(message)
        if not targets and window and trace is not None:
            if described is None:
                described = [describe_event(e) for e in trace.events]
            targets.extend(_by_description(described, int(window.group(1)), window.group(2), at))
        if not targets:
            first_line = message.split("\n", 1)[0]
            ids = {(m.group(1), m.group(2)) for m in _CALL.finditer(first_line)}
            targets.extend(e for e in entries if e.kind == "tool" and e.call and (e.call.name, e.call.id) in ids)
            if not targets and ids:
                targets.extend(e for e in entries if e.kind == "model" and any((c.name, c.id) in ids for c in e.calls))
        if not targets and (name in ("end_reason_consistent", "terminates_within_cap") or _about_end(message)):
            targets.extend(e for e in (root.entries if root else []) if e.kind == "end")
        for entry in _unique(targets):
            entry.marks.append(Mark(number, name))
            problem.located = True
        shown.append(problem)
    return shown


def _by_description(described: Sequence[str], local: int, text: str, at: dict[int, Entry]) -> list[Entry]:
    """The event a window marks: the one described so, nearest its number (windows count within a run)."""
    text = text.strip()
    candidates = [i for i, d in enumerate(described) if d == text]
    if not candidates:
        candidates = [i for i, d in enumerate(described) if d.startswith(text[:40])]
    if not candidates:
        return []
    best = min(candidates, key=lambda i: (abs(i - local), i))
    entry = at.get(best)
    return [entry] if entry is not None else []


def _about_end(message: str) -> bool:
    first = message.split("\n", 1)[0].lower()
    return any(word in first for word in _END_WORDS)


def _what(message: str) -> str:
    found = _DIVERGENCE.search(message)
    return f"first {found.group(1)} difference" if found else "difference"


def _unique(entries: Iterable[Entry]) -> list[Entry]:
    seen: set[int] = set()
    out = []
    for entry in entries:
        if id(entry) not in seen:
            seen.add(id(entry))
            out.append(entry)
    return out


def as_pairs(problems: Iterable[Any]) -> list[tuple[str, str]]:
    """``(name, message)`` of anything that has them: a ``Problem``, an ``InvariantViolation``."""
    return [(str(getattr(p, "name", "problem")), str(getattr(p, "message", p))) for p in problems]
