"""Streamed fields joined as a client joins them: per choice, per call, per content block.

A streamed reply sends each text and each tool call's arguments in pieces, one per event. A
reply with several choices (``n=2``) or parallel calls interleaves them: event 1 is choice 0,
event 2 choice 1, and each event's ``choices`` list holds one entry at position 0. Joining by list
position would glue two choices into one text that neither sent, and a key split across one
choice's deltas would be found in neither. Every wire names what a piece belongs to, so fields
are keyed by it:

- a list item's own ``index`` (OpenAI's ``choices[].index`` and ``tool_calls[].index``, Gemini's
  ``candidates[].index``) replaces its position;
- an event's ``index`` (Anthropic's content blocks), ``output_index`` and ``content_index``
  (OpenAI Responses), ``contentBlockIndex`` (Bedrock) prefix the event's paths.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

EVENT_INDEXES: Final = ("index", "output_index", "content_index", "contentBlockIndex")
"""Keys by which an event names the block, item or choice its pieces belong to."""


def string_fields(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string inside ``value`` with its path; list items named by their own ``index``."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from string_fields(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            own = item.get("index") if isinstance(item, Mapping) else None
            number = own if isinstance(own, int) and not isinstance(own, bool) else position
            yield from string_fields(item, f"{path}[{number}]")
    elif isinstance(value, str):
        yield path, value


def _event_key(event: Any) -> str:
    if not isinstance(event, Mapping):
        return ""
    named = [
        f"{key}={event[key]}"
        for key in EVENT_INDEXES
        if isinstance(event.get(key), int | str) and not isinstance(event.get(key), bool)
    ]
    return f"({', '.join(named)}) " if named else ""


def joined_fields(events: Iterable[Any]) -> dict[str, list[tuple[int, str]]]:
    """Each streamed field's pieces in event order, as ``(event number, text)``, keyed by where it belongs.

    The key is the field's path inside its event, with the list items and the event's own
    indexes (:data:`EVENT_INDEXES`) naming the choice, call or block: ``choices[1].delta.content``,
    ``(index=2) delta.partial_json``.
    """
    fields: dict[str, list[tuple[int, str]]] = {}
    for number, event in enumerate(events):
        prefix = _event_key(event)
        for path, text in string_fields(event):
            fields.setdefault(prefix + path, []).append((number, text))
    return fields
