"""Which cassette a request goes to, and the cassettes of one proxy run: opened once, finished once.

One proxy serves a whole CI job, and a team wants one cassette per test, as the ``recorded``
fixture keeps them. A request names its cassette in one of two ways, whichever its client can
set (docs/record-replay.md, "Record and replay any process"):

- the header ``X-Harness-Cassette: NAME`` (a client that takes default headers);
- a path prefix: the base URL ``http://127.0.0.1:PORT/cassette/NAME`` (any client that takes a
  base URL, which is every SDK); a ``/`` inside ``NAME`` is written ``%2F`` there.

``NAME`` is a relative path of plain segments (letters, digits, ``_``, ``.``, ``-``; none
starting with ``.``), ``.yaml`` added unless it ends in ``.yaml`` or ``.yml``. It is found beside
``--cassette FILE``, or inside ``--cassette DIR``. A request naming none goes to ``FILE``; with a
directory it is refused, naming the two ways.

Each cassette is opened with ``harness.recording.open_recording`` on its first request (the
``recorded`` fixture's: same modes, persister, matchers, ``max_age``), and at the end each one
that changed is saved on its own (scrubbed, scanned, atomically; one that fails is named and the
others still written) and each is checked for interactions no request used. A name resolves
inside ``DIR`` after symbolic links are followed, and two names of one file are one cassette.
"""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote

CASSETTE_HEADER: Final = "x-harness-cassette"
"""The request header naming the cassette (any case): ``X-Harness-Cassette: test_weather``."""

CASSETTE_PREFIX: Final = "/cassette/"
"""The path prefix naming the cassette: ``/cassette/test_weather/v1/chat/completions``."""

_SEGMENT: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_CASSETTE_SUFFIXES: Final = (".yaml", ".yml")


class CassetteChoiceError(ValueError):
    """A request that names no usable cassette; the text says what was wrong and how to name one."""


def is_library(target: Path) -> bool:
    """Whether ``--cassette`` names a directory of cassettes rather than one file."""
    return target.is_dir() or target.suffix.lower() not in _CASSETTE_SUFFIXES


def split_selection(raw_path: str, headers: Iterable[tuple[str, str]]) -> tuple[str | None, str]:
    """The cassette name a request gives (``None``: none) and its path without the prefix.

    ``raw_path`` is the path as sent (still percent-encoded: a Bedrock model id keeps its
    ``%3A``, as the recorded fixture stores it). The header wins over the prefix when both are
    given and agree; when they disagree the request is refused rather than recorded in one of them.
    """
    named = [value.strip() for name, value in headers if name.lower() == CASSETTE_HEADER]
    header = named[0] if named else None
    prefixed = None
    if raw_path.startswith(CASSETTE_PREFIX):
        segment, slash, rest = raw_path[len(CASSETTE_PREFIX) :].partition("/")
        prefixed, raw_path = unquote(segment), slash + rest
        if not raw_path:
            raw_path = "/"
    if header is not None and prefixed is not None and header != prefixed:
        raise CassetteChoiceError(
            f"the header X-Harness-Cassette: {header} and the path prefix /cassette/{prefixed} name two cassettes"
        )
    return header if header is not None else prefixed, raw_path


def cassette_file(name: str, directory: Path) -> Path:
    """The file ``name`` selects in ``directory``; a name that could leave it, or is no plain name, is refused."""
    segments = name.split("/")
    if not name or len(name) > 200 or not all(_SEGMENT.fullmatch(segment) for segment in segments):
        raise CassetteChoiceError(
            f"cassette name {name!r} is not a relative path of plain names (letters, digits, '_', '.', '-', "
            "none starting with '.'), such as test_weather or test_agent/test_weather"
        )
    if not name.lower().endswith(_CASSETTE_SUFFIXES):
        segments[-1] += ".yaml"
    return directory.joinpath(*segments)


@dataclass
class Outcome:
    """What a finished run says: the problems (each fails the run) and what it wrote or noted."""

    problems: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Cassettes:
    """The cassettes one proxy run opened, by file, with what each request made of them.

    ``mode`` and ``config`` are ``open_recording``'s (``max_age``, ``max_age_action``,
    ``allow_unused``); ``environ`` feeds the pre-write credential scan.
    """

    target: Path
    mode: str
    config: Mapping[str, Any] = field(default_factory=dict)
    environ: Mapping[str, str] | None = None
    opened: dict[Path, Any] = field(default_factory=dict)
    """Path -> ``harness.recording`` Recording, in the order first asked for."""
    notes: list[str] = field(default_factory=list)
    """Warnings met while opening (a cassette past its ``max_age``), said once each."""
    refused: list[str] = field(default_factory=list)
    """Each request the proxy could not answer, as ``METHOD PATH (cassette): why`` (a first difference...)."""
    secrets: set[str] = field(default_factory=set)
    """Every credential value a request carried: redacted from every message and report line."""
    _locks: dict[Path, asyncio.Lock] = field(default_factory=dict)
    _canonical: dict[Path, Path] = field(default_factory=dict)
    """The file each cassette really is (symbolic links followed) -> the path first asked for it."""
    _named: dict[str | None, Path] = field(default_factory=dict)
    """Each name (``None``: the default) -> its cassette, resolved once per run."""

    @property
    def directory(self) -> Path:
        return self.target if is_library(self.target) else self.target.parent

    def path_for(self, name: str | None) -> Path:
        """The cassette file a request's name (or its absence) selects: one path per real file.

        A name must stay inside the directory once symbolic links are followed (a linked
        subdirectory could otherwise write anywhere); ``--cassette FILE`` itself may be a link,
        written through. Two names of one file are one cassette, so neither's interactions are lost.
        """
        known = self._named.get(name)
        if known is not None:
            return known
        if name is not None:
            chosen = cassette_file(name, self.directory)
            inside = self.directory.resolve()
            if not chosen.resolve().is_relative_to(inside):
                raise CassetteChoiceError(
                    f"cassette name {name!r} leads outside {self.directory} through a symbolic link "
                    f"(to {chosen.resolve()}); name a cassette inside it"
                )
        elif is_library(self.target):
            raise CassetteChoiceError(
                f"--cassette {self.target} is a directory: name the request's cassette with the header "
                "X-Harness-Cassette: NAME or the base URL prefix /cassette/NAME"
            )
        else:
            chosen = self.target
        found = self._named[name] = self._canonical.setdefault(chosen.resolve(), chosen)
        return found

    def lock(self, path: Path) -> asyncio.Lock:
        """One request at a time on ``path``: for an upstream kept in step with its script."""
        return self._locks.setdefault(path, asyncio.Lock())

    def recording(self, path: Path) -> Any:
        """The cassette's Recording, opened on its first request; a cassette that cannot be opened raises."""
        found = self.opened.get(path)
        if found is not None:
            return found
        from harness.recording import open_recording

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            recording = open_recording(path, self.mode, self.config, environ=self.environ)
        self.notes.extend(str(warning.message) for warning in caught)
        self.opened[path] = recording
        return recording

    def finish(self) -> Outcome:
        """Save every cassette that changed (a credential found writes nothing of that one) and check use."""
        from harness.recording import CredentialLeakError, redact

        outcome = Outcome(problems=list(self.refused), notes=list(self.notes))
        checks_use = self.mode in ("none", "once", "new_episodes") and not self.config.get("allow_unused")
        for path, recording in self.opened.items():
            if recording.dirty:
                recording.add_secrets(self.secrets)  # a key one client sent is refused in every cassette of the run
                problem = _saved(path, recording, CredentialLeakError)
                if problem is None:
                    outcome.written.append(f"{path} ({len(recording.cassette.data)} interaction(s))")
                else:
                    outcome.problems.append(problem)
            unused = recording.unused() if checks_use else []
            if unused:
                listed = "\n".join(f"  - {entry}" for entry in unused)
                outcome.problems.append(
                    f"{path}: {len(unused)} of {recording.loaded} recorded interaction(s) were never requested:\n"
                    f"{listed}\n(the process asked less than when it was recorded; re-record with "
                    "--record-mode rewrite, or allow it with --allow-unused)"
                )
        for said in (outcome.problems, outcome.notes):
            said[:] = [redact(line, self.secrets) for line in said]
        return outcome


def _saved(path: Path, recording: Any, leak: type[Exception]) -> str | None:
    """Save one cassette; the problem that kept it from disk (named, with the reason), else ``None``.

    Each cassette is saved on its own: one that cannot be written (a credential in it, a file where
    a folder must be, a full disk, a size limit) is said and the others are still written.
    """
    try:
        recording.save()
    except leak as exc:
        return str(exc)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        return (
            f"{path}: not written: {exc.strerror or type(exc).__name__}{where} (the file on disk, if any, is as it was)"
        )
    except Exception as exc:  # one cassette's failure must not cost the others theirs
        return f"{path}: not written: {type(exc).__name__}: {exc} (this is a bug in the harness)"
    return None
