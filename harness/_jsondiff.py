"""Two JSON values compared as JSON, and where they first part, said so that a person sees it.

Python's ``==`` is not JSON's: ``True == 1``, so a recorded ``"logprobs": 1`` would match a sent
``true``. :func:`same` compares by JSON type (a boolean is no number; ``1`` and ``1.0`` are one
number). And the text a mismatch prints must show what differs: ``sent "Café à Paris?", recorded
"Café à Paris?"`` is useless when one has a no-break space or a decomposed ``é``.
:func:`first_difference` escapes what cannot be seen (``\\u00a0``; combining marks too when the
two texts differ only in Unicode form), names the first differing characters
(``U+00A0 NO-BREAK SPACE``), names the normal forms (NFC, NFD) and the types that differ, and shows
a long text around its difference rather than from its start.

It sits at the bottom of the harness (DESIGN section 2): replay's matchers use it today, and any
package that explains a difference between two JSON values may.
"""

from __future__ import annotations

import functools
import json
import unicodedata
from typing import Any, Final

from harness.wire import clip

SHOWN: Final = 80
"""How many characters of a value a difference shows."""

_INVISIBLE: Final = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn", "Cs"})  # space itself stays
_MARKS: Final = frozenset({"Mn", "Mc", "Me"})
_CONTROL_NAMES: Final = {"\t": "TAB", "\n": "LINE FEED", "\r": "CARRIAGE RETURN"}


def same(a: Any, b: Any) -> bool:
    """Equal as JSON: ``==``, except that a boolean equals only a boolean."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    return bool(a == b)


def first_difference(sent: Any, recorded: Any, path: str = "") -> str:
    """``messages[1].content: sent "bye", recorded "hi"``: where two JSON values first part."""
    if isinstance(sent, dict) and isinstance(recorded, dict):
        for key in [*recorded, *(k for k in sent if k not in recorded)]:
            where = f"{path}.{key}" if path else str(key)
            if key not in sent:
                return f"{where}: missing from the sent body"
            if key not in recorded:
                return f"{where}: not in the recorded body"
            if not same(sent[key], recorded[key]):
                return first_difference(sent[key], recorded[key], where)
    if isinstance(sent, list) and isinstance(recorded, list):
        for index, (a, b) in enumerate(zip(sent, recorded, strict=False)):
            if not same(a, b):
                return first_difference(a, b, f"{path}[{index}]")
        return f"{path or 'the body'}: {len(sent)} items sent, {len(recorded)} recorded"
    where = path or "the body"
    if isinstance(sent, str) and isinstance(recorded, str):
        return f"{where}: {_texts(sent, recorded)}"
    shown = [_clip(json.dumps(value, ensure_ascii=False, default=str)) for value in (sent, recorded)]
    kinds = [_kind(value) for value in (sent, recorded)]
    note = f" ({kinds[0]} sent, {kinds[1]} recorded)" if kinds[0] != kinds[1] else ""
    return f"{where}: sent {shown[0]}, recorded {shown[1]}{note}"


def _texts(sent: str, recorded: str) -> str:
    """Two differing texts shown around where they part, with what a reader could not see named."""
    index = next((i for i, (a, b) in enumerate(zip(sent, recorded, strict=False)) if a != b), None)
    index = min(len(sent), len(recorded)) if index is None else index
    start = max(0, index - SHOWN // 2)
    forms = unicodedata.normalize("NFC", sent) == unicodedata.normalize("NFC", recorded)
    shown = [_visible(text[start:], marks=forms) for text in (sent, recorded)]
    shown = [_clip('"...' + text[1:] if start else text) for text in shown]
    if forms:
        note = f"the same text in two Unicode forms: sent {_form(sent)}, recorded {_form(recorded)}"
    else:
        a, b = sent[index : index + 1], recorded[index : index + 1]
        seen = all(c == "" or (c.isascii() and (c.isprintable() or c == " ")) for c in (a, b))
        note = "" if seen else f"character {index + 1}: sent {_named(a)}, recorded {_named(b)}"
    return f"sent {shown[0]}, recorded {shown[1]}" + (f" ({note})" if note else "")


def _visible(text: str, marks: bool) -> str:
    """``text`` as a JSON string, every character a reader cannot see written as its escape."""
    out = []
    for char in json.dumps(text, ensure_ascii=False):
        category = unicodedata.category(char)
        hidden = (category in _INVISIBLE and char != " ") or (marks and category in _MARKS)
        out.append((f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}") if hidden else char)
    return "".join(out)


def _named(char: str) -> str:
    if not char:
        return "nothing (the text ends)"
    name = _CONTROL_NAMES.get(char) or unicodedata.name(char, "a control character")
    return f"U+{ord(char):04X} {name}"


def _form(text: str) -> str:
    for form in ("NFC", "NFD"):
        if unicodedata.normalize(form, text) == text:
            return form
    return "neither NFC nor NFD"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


_clip = functools.partial(clip, limit=SHOWN)  # the width of a value shown in a mismatch
