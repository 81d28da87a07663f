"""The emulator's request journal: one JSON record per request received, the same record for
``GET /_emulator/requests``, :meth:`Emulator.journal` and the JSON-lines file of
``harness emulate --journal FILE``.

A test driving ``harness emulate`` from another process, or a person watching it with
``tail -f``, needs to see what the client sent and what it got, refused requests included: so
every request is recorded (an unknown path, a malformed body, a request beyond the script), with
credentials removed (``harness.wire``'s vocabulary, the recorder's: headers and query parameters),
and the file is flushed line by line so it is complete at every moment.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from harness.wire import Route, is_credential_query


def record(
    *,
    run: int,
    number: int,
    received: float,
    method: str,
    path: str,
    query: Mapping[str, str],
    headers: Mapping[str, str],
    body: Any,
    route: Route | None,
    streaming: bool | None,
    turn: int | None,
    entry: str | None,
    status: int,
) -> dict[str, Any]:
    """One request as the journal keeps it (keys in this order, the documented format)."""
    return {
        "run": run,
        "number": number,
        "time": datetime.fromtimestamp(received, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "method": method,
        "path": path,
        "query": {name: value for name, value in query.items() if not is_credential_query(name)},
        "headers": dict(headers),
        "provider": route.provider if route else None,
        "endpoint": route.endpoint if route else None,
        "streaming": streaming,
        "turn": turn,
        "entry": entry,
        "status": status,
        "body": body,
    }


class JournalFile:
    """The journal as JSON lines: truncated when opened, each record written and flushed whole
    as its request is answered, so ``tail -f`` follows it and a stopped server leaves it complete."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file: TextIO | None = self.path.open("w", encoding="utf-8")

    def write(self, entry: Mapping[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, default=str) + "\n"
        with self._lock:
            if self._file is not None:
                self._file.write(line)
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
