"""Shortening a value for a one-line message: the one rule every summary and error uses."""

from __future__ import annotations


def clip(text: str, limit: int = 80, *, flat: bool = False) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis saying it was cut.

    ``flat`` writes line breaks as ``\\n`` first, so a multi-line value stays on its line.
    """
    if flat:
        text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"
