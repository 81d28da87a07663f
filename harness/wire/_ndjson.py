"""Newline-delimited JSON (``application/x-ndjson``): Ollama's stream, one codec for the emulator and recording.

Each event is one JSON object on one line, ended by ``\\n``. A body that ends inside a line is
cut: a line reader waits for the rest or drops it, so a replay would show a shorter reply.
"""

from __future__ import annotations

from typing import Final

NDJSON: Final = "application/x-ndjson"


def ndjson_lines(body: bytes) -> list[bytes]:
    """``body`` split after each line break; joined, the pieces are the body (a cut last line kept as it came)."""
    return body.splitlines(keepends=True)


def ndjson_whole(line: bytes) -> bool:
    """Whether a line ends with its line break (or holds nothing): what a reader does not drop."""
    return line.endswith(b"\n") or not line.strip()
