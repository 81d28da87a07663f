"""Writing a file so that nobody ever sees half of it: the one atomic writer of the harness.

Cassettes, saved regressions (the loop's and the wire campaign's) and every other file the
harness replaces go through :func:`write_atomic`: a temporary file in the target's own
directory, flushed to disk, then ``os.replace``. A reader, a second xdist worker saving the same
file, or a process killed halfway sees the old file or the new one, never a part; a full disk
leaves the old file whole.

A path that is a symbolic link (a cassette shared between tests, a regression folder linked into
several projects) is written through: the link's final target is replaced and the link stays a
link, so every path that names the file sees the new content. Replacing the link itself would
turn it into a regular file and leave the shared target with the old content.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

_WRITE_LOCK = threading.Lock()


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        pass
    try:  # Linux shows the umask without changing it
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: read it by setting it, and put it back at once
    os.umask(mask)
    return 0o666 & ~mask


def target_of(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` must replace: ``path`` itself, or the end of its chain of links.

    A dangling link resolves to where it points, so the first write creates the shared file there.
    """
    given = Path(path)
    return Path(os.path.realpath(given)) if given.is_symlink() else given


def write_atomic(path: str | os.PathLike[str], content: str | bytes) -> Path:
    """Replace ``path`` (through a symbolic link, its target) with ``content``, atomically.

    Text is written as UTF-8. The file keeps the mode it had, else gets the one a plain ``open``
    would give it (``0666`` less the umask), not ``mkstemp``'s ``0600``: these are files of the
    project, shared like any other. Returns the path written (the link's target for a link).
    """
    target = target_of(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8") if isinstance(content, str) else content
    with _WRITE_LOCK:
        # the name cut short: a file's name may already be as long as the file system allows
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name[:40]}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
                file.flush()
                os.fchmod(file.fileno(), _mode_for(target))
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    return target
