"""Reading a YAML file nobody vetted (a cassette, a scenario) with memory bounded and every refusal one line.

Cassettes and scenarios arrive in pull requests, from other tools, from editors that save
Latin-1. PyYAML builds what an alias names once and shares it, so a two-kilobyte file of nested
aliases (a "billion laughs") loads at once and then fills the memory of whatever walks it next: a
credential scan, a diff, a JSON dump. And PyYAML places a bad byte or character as an offset into
``"<byte string>"``. So every reader of such a file loads it through :func:`load`: the bytes
decoded with a bad one placed as ``line L, column C``, the data refused when its aliases would
expand it past a bound proportional to the file (:func:`expansion_problem`), and every refusal a
:class:`YamlFileError` whose text is one line that the caller prefixes with the file's path.
:func:`reason` says any YAML error in that one-line form.

It sits at the bottom of the harness (DESIGN section 2) because the recording, the scenarios and
the emulator all read such files, and none of them may import another for it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any, Final

import yaml

ALIAS_ALLOWANCE: Final = 1_000_000
"""What aliases may add, in characters and values, beyond twice what the file holds itself."""

# an anchor (the only thing an alias can name): & first, so the search runs at memchr speed on a large file
_ANCHOR = re.compile(r"&(?<![^\s\[{,]&)[^\s\[\]{},]")


class YamlFileError(yaml.YAMLError):
    """A YAML file refused before or after parsing; ``str()`` is the reason in one line, without the path."""


def decoded(data: bytes) -> str:
    """``data`` as UTF-8 text, or :class:`YamlFileError` placing the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        column = len(data[start : exc.start].decode("utf-8", "replace")) + 1
        raise YamlFileError(
            f"line {line}, column {column}: byte 0x{data[exc.start]:02X} is not UTF-8 "
            "(a Latin-1 or Windows-1252 file?); save the file as UTF-8"
        ) from None


def load(source: str | bytes, parse: Callable[[str], Any] = yaml.safe_load) -> Any:
    """``parse(text)`` of a file's contents, decoded and bounded; raises :class:`yaml.YAMLError`.

    ``parse`` is the loader the file's format needs (vcrpy's cassette loader for a cassette);
    what it raises for a bad document passes through, except the errors PyYAML places by offset.
    """
    text = decoded(source) if isinstance(source, bytes) else source
    try:
        data = parse(text)
    except yaml.reader.ReaderError as exc:
        offset = exc.position  # into the text for PyYAML's reader, into its UTF-8 bytes for libyaml's
        if exc.encoding != "unicode":
            offset = len(text.encode("utf-8")[:offset].decode("utf-8", "ignore"))
        line, column = text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        name = unicodedata.name(chr(code), "a control character")
        raise YamlFileError(
            f"line {line}, column {column}: U+{code:04X} ({name}) may not appear in YAML; "
            f'remove it, or write it escaped in a double-quoted string ("\\u{code:04x}")'
        ) from None
    except RecursionError:
        raise YamlFileError("nested too deeply to read (keep it under a few hundred levels)") from None
    if _ANCHOR.search(text):
        problem = expansion_problem(data, 2 * len(text) + ALIAS_ALLOWANCE)
        if problem is not None:
            raise YamlFileError(problem)
    return data


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [item for pair in value.items() for item in pair]
    return list(value)


def _scalar_size(value: Any) -> int:
    return len(value) + 1 if isinstance(value, str | bytes) else 1


def expansion_problem(data: Any, limit: int) -> str | None:
    """Why ``data`` is refused, or ``None``: a value inside itself, or a size past ``limit``.

    The size counts every value once for each place it appears (an alias's target at every
    alias), strings by their length: what a walk over the data, or its JSON, would meet. Each
    distinct value is visited once, so checking costs what the file holds, not what it expands to.
    """
    sizes: dict[int, int] = {}
    open_: set[int] = set()  # the values whose contents are being sized: the current path
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        value, finished = stack.pop()
        if not isinstance(value, dict | list | tuple) or (not finished and id(value) in sizes):
            continue
        if finished:
            open_.discard(id(value))
            total = 1
            for child in _children(value):
                total += sizes[id(child)] if isinstance(child, dict | list | tuple) else _scalar_size(child)
            if total > limit:
                return (
                    f"its aliases (*name) expand it past {limit:,} characters and values: an alias bomb? "
                    "Refused so that memory stays bounded; write repeated values out"
                )
            sizes[id(value)] = total
            continue
        if id(value) in open_:
            return "an alias (*name) refers to a value it is inside: a recursive structure no such file holds"
        open_.add(id(value))
        stack.append((value, True))
        stack.extend((child, False) for child in _children(value))
    return None


def reason(exc: BaseException) -> str:
    """A YAML error in one line, positions as ``line L, column C`` of the file the caller names.

    PyYAML names the stream it parsed (``in "<unicode string>"``) and spreads one error over four
    lines; the caller's message already starts with the path, so the positions are what is left.
    """
    if isinstance(exc, YamlFileError):
        return str(exc)
    if not isinstance(exc, yaml.MarkedYAMLError):
        text = " ".join(str(exc).split())
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

    def at(mark: Any) -> str:
        return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""

    where = at(exc.problem_mark)
    problem = (f"{where}: {exc.problem}" if where else str(exc.problem)) if exc.problem else where
    if exc.context:
        context = at(exc.context_mark)
        problem += f" ({exc.context}{' at ' + context if context else ''})"
    return problem
