"""One cassette opened for one test in a record mode: what the transports ask it, what teardown checks.

:func:`open_recording` opens a :class:`Recording` in vcrpy's ``none`` / ``once`` /
``new_episodes`` / ``all``, or ``rewrite``: record the whole cassette anew, the old file staying in
place until the new one replaces it. A request that matches no recorded one raises
:class:`CassetteMismatchError`: the cassette, the request number and a unified diff against the
closest recorded request.
"""

from __future__ import annotations

import copy
import difflib
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import harness._jsondiff as jsondiff
import harness.recording._vcr._vcr_compat as vcr_compat
from harness.recording._age import AgeLimit
from harness.recording._scrub import honest_encoding
from harness.recording._vcr import (
    VOLATILE_FIELDS,
    AtomicPersister,
    configure_vcr,
    cut_stream_error,
    first_difference,
    json_body,
    normalized_body,
    request_text,
    stream_cut,
)

RECORD_MODES: Final[tuple[str, ...]] = ("none", "once", "new_episodes", "all", "rewrite")
"""pytest-recording's modes: vcrpy's four and ``rewrite`` (see the module docstring)."""


HARNESS_KEYS: Final[frozenset[str]] = frozenset(
    {"allow_unused", "keep_failed_recording", "ignore_fields", "max_age", "max_age_action"}
)
"""``vcr_config`` / ``vcr`` marker keys the harness reads (vcrpy ignores them); every accepted key is
checked by ``harness.pytest_plugin._cassette_fixtures.known_options``."""


class RecordingError(Exception):
    """A recording that cannot go on as asked (bad mode, unknown provider)."""


class CassetteMismatchError(AssertionError):
    """A request the cassette has no (whole) recording for, while the record mode forbids recording it."""

    def __init__(self, path: Path, number: int, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.number = number


@dataclass(eq=False)
class Recording:
    """One cassette opened for one test: what the transports ask, and what teardown checks.

    ``cassette`` is the :class:`vcr.cassette.Cassette` (vcrpy does the record-mode logic and
    the matching); ``persister`` scrubs, scans and writes it atomically.
    """

    path: Path
    mode: str
    cassette: Any
    persister: AtomicPersister
    allow_unused: bool = False
    ignore_fields: frozenset[str] = VOLATILE_FIELDS
    requests_seen: int = 0
    failures: list[Exception] = field(default_factory=list)
    """What the transports refused (a mismatch, a cut stream, a request that could not be sent for
    recording): each fails the test once, in its own words, whatever the code under test made of it."""

    @property
    def records(self) -> bool:
        """True when a request the cassette lacks would be sent and recorded (any mode but a replay)."""
        return not self.cassette.write_protected

    @property
    def loaded(self) -> int:
        """How many interactions the cassette held when it was opened."""
        return vcr_compat.loaded_count(self.cassette)

    def respond(self, vcr_request: Any, *, explain: bool = True) -> dict[str, Any] | None:
        """The recorded response for a request, ``None`` to send and record it, or a mismatch raised.

        ``explain=False`` raises the mismatch with one line only and its diff left to
        :meth:`explain`: a server calls that off its event loop, since a diff of a large request
        takes a while and every other client would wait for it.
        """
        self.requests_seen += 1
        cassette = self.cassette
        played = vcr_compat.play(cassette, vcr_request)
        if played is not None:
            return self._whole(vcr_request, played)
        if cassette.write_protected:
            number = self.requests_seen
            if explain:
                error = self.explain(vcr_request, number)
            else:
                where = f"{self.path}: request {number} ({vcr_request.method} {vcr_request.uri})"
                error = CassetteMismatchError(self.path, number, f"{where} matches no unused recorded interaction")
            self.failures.append(error)
            raise error
        return None

    def add_secrets(self, values: Iterable[str]) -> None:
        """Values the pre-write scan refuses in this cassette from now on (a request's own credentials)."""
        persister = self.persister
        persister.extra = tuple(dict.fromkeys((*persister.extra, *values)))

    def record(self, vcr_request: Any, response: dict[str, Any]) -> dict[str, Any]:
        """Append a live exchange; returns the response as stored (scrubbed, decoded), which the SDK then gets."""
        before = len(self.cassette.data)
        self.cassette.append(vcr_request, response)
        if len(self.cassette.data) > before:  # a project's own filter may have decoded the body, not the header
            return copy.deepcopy(honest_encoding(self.cassette.data[-1][1]))
        return response

    def record_whole(self, vcr_request: Any, response: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """:meth:`record`, keeping the exchange only if its stream ends whole: the stored response and how
        many bytes at its end end no event (0: whole, kept). A cut one is not kept, since every replay
        of it would be refused (:meth:`respond`)."""
        before, dirty = len(self.cassette.data), self.cassette.dirty
        stored = self.record(vcr_request, response)
        cut = stream_cut(stored)
        if cut and len(self.cassette.data) > before:
            del self.cassette.data[before]
            self.cassette.dirty = dirty or len(self.cassette.data) > before
        return stored, cut

    def unused(self) -> list[str]:
        """The recorded interactions no request used, as ``interaction N (METHOD URI)``."""
        counts = self.cassette.play_counts
        return [
            f"interaction {index} ({request.method} {request.uri})"
            for index, (request, _) in enumerate(self.cassette.data[: self.loaded])
            if counts[index] == 0
        ]

    @property
    def dirty(self) -> bool:
        return bool(self.cassette.dirty)

    def save(self) -> None:
        """Write what was recorded (nothing when nothing changed); raises on a credential found."""
        vcr_compat.save(self.cassette)

    def unsent(self, method: str, url: str, exc: BaseException) -> RecordingError:
        """The error for a request that could not be sent to be recorded, kept as one of :attr:`failures`.

        An HTTP stack reports a refused connection as ``ExceptionGroup: unhandled errors in a
        TaskGroup``; the innermost cause is what the user needs, and ``--block-network`` (which
        blocks recording for tests without a ``vcr`` marker) is named as the likely reason.
        """
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        cause = " ".join(f"{type(exc).__name__}: {exc}".split())
        hint = (
            "; --block-network blocks recording: record without it, replay with it"
            if "network is disabled" in cause.lower()
            else ""
        )
        error = RecordingError(
            f"{self.path}: request {self.requests_seen} ({method} {url}) could not be sent to be recorded: "
            f"{cause}{hint}"
        )
        self.failures.append(error)
        return error

    def _whole(self, request: Any, response: dict[str, Any]) -> dict[str, Any]:
        """``response`` if its stream ends whole; else the test fails rather than replay a shorter reply."""
        cut = stream_cut(response)
        if not cut:
            return response
        index = next((i for i, (_, r) in enumerate(self.cassette.data) if r is response), None)
        message = str(cut_stream_error(self.path, index, request, self.requests_seen, cut))
        error = CassetteMismatchError(self.path, self.requests_seen, message)
        self.failures.append(error)
        raise error

    def explain(self, request: Any, number: int) -> CassetteMismatchError:
        """The mismatch of request ``number``: the closest recorded request and a diff against it, bounded
        (:data:`DIFF_LIMIT` characters of each side, :data:`DIFF_LINES` lines shown)."""
        where = f"{self.path}: request {number} ({request.method} {request.uri})"
        hint = "record it with --record-mode=once (new cassette), new_episodes (add) or rewrite (replace)"
        if not self.path.exists():
            return CassetteMismatchError(
                self.path, number, f"{where}: there is no cassette and the record mode is {self.mode!r}; {hint}"
            )
        stored = [r for r, _ in self.cassette.data]
        if not stored:
            return CassetteMismatchError(self.path, number, f"{where}: the cassette has no interactions; {hint}")
        filtered = self.cassette.filter_request(copy.deepcopy(request)) or request
        sent = request_text(filtered, self.ignore_fields)[:DIFF_LIMIT]
        index = max(range(len(stored)), key=lambda i: _closeness(filtered, stored[i], sent, self.ignore_fields))
        lines = list(
            difflib.unified_diff(
                request_text(stored[index], self.ignore_fields)[:DIFF_LIMIT].splitlines(),
                sent.splitlines(),
                f"recorded interaction {index}",
                f"request {number}",
                lineterm="",
            )
        )
        shown = [line if len(line) <= 400 else line[:400] + " [...]" for line in lines[:DIFF_LINES]]
        if len(lines) > DIFF_LINES:
            shown.append(f"[... {len(lines) - DIFF_LINES} more diff lines]")
        diff = "\n".join(shown)
        if not diff:
            diff = f"(interaction {index} is this request, but it was already replayed: the code asked twice)"
        sent_body = normalized_body(filtered.body, self.ignore_fields)
        recorded_body = normalized_body(stored[index].body, self.ignore_fields)
        first = (
            f"first difference: {first_difference(sent_body, recorded_body)}\n"
            if not jsondiff.same(sent_body, recorded_body)
            else ""
        )
        return CassetteMismatchError(
            self.path,
            number,
            f"{where} matches no unused recorded interaction (record mode {self.mode!r}); "
            f"the closest is interaction {index}:\n{first}{diff}\n"
            f"If the change is intended, re-record: --record-mode=rewrite",
        )


DIFF_LIMIT: Final = 20_000
"""Characters of each request a mismatch compares: a 2 MB request took a minute to diff whole."""
DIFF_LINES: Final = 200
"""Diff lines a mismatch shows at most (each cut at 400 characters)."""


def _closeness(request: Any, stored: Any, sent: str, ignore: Iterable[str]) -> tuple[int, float]:
    same_place = request.method == stored.method and urlsplit(request.uri)[1:3] == urlsplit(stored.uri)[1:3]
    matcher = difflib.SequenceMatcher(None, request_text(stored, ignore)[:DIFF_LIMIT], sent, autojunk=True)
    return int(same_place), matcher.ratio() if len(sent) <= 4000 else matcher.quick_ratio()


def open_recording(
    path: str | Path,
    mode: str = "none",
    config: Mapping[str, Any] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    extra_secrets: Iterable[str] = (),
) -> Recording:
    """Open ``path`` in ``mode`` with a ``vcr_config``-style ``config``; a corrupt file raises, untouched.

    ``config`` takes vcrpy's ``use_cassette`` options (``match_on``, ``before_record_request``,
    ``filter_headers``, ``allow_playback_repeats``...) plus ``allow_unused``, ``ignore_fields``.
    ``environ`` (default ``os.environ``) and ``extra_secrets`` feed the credential scan.
    """
    if mode not in RECORD_MODES:
        raise RecordingError(f"record mode {mode!r} is not one of {', '.join(RECORD_MODES)}")
    config = dict(config or {})
    ignore = frozenset(VOLATILE_FIELDS | set(config.get("ignore_fields", ())))
    try:
        age = AgeLimit.from_options(config, may_record=mode != "none")
    except ValueError as exc:
        raise RecordingError(str(exc)) from None
    vcr, persister = _configured_vcr(mode, ignore, environ, extra_secrets)
    cassette = _open_cassette(path, mode, _cassette_options(vcr, config, path), persister, age)
    return Recording(
        Path(path), mode, cassette, persister, allow_unused=bool(config.get("allow_unused")), ignore_fields=ignore
    )


def _configured_vcr(
    mode: str, ignore: frozenset[str], environ: Mapping[str, str] | None, extra_secrets: Iterable[str]
) -> tuple[Any, AtomicPersister]:
    """A ``vcr.VCR`` in ``mode`` with the harness's parts, the body matcher ignoring ``ignore``."""
    from vcr import VCR

    vcr = VCR(record_mode="all" if mode == "rewrite" else mode)
    persister = configure_vcr(vcr, persister=AtomicPersister(environ=environ, extra=extra_secrets))
    if ignore != VOLATILE_FIELDS:
        vcr.register_matcher("harness_body", _named(functools.partial(json_body, ignore=ignore), "harness_body"))
    return vcr, persister


def _cassette_options(vcr: Any, config: Mapping[str, Any], path: str | Path) -> dict[str, Any]:
    """vcrpy's ``Cassette`` arguments: the VCR's merged with the test's, the harness's own keys left out."""
    options = {key: value for key, value in config.items() if key not in HARNESS_KEYS}
    options.pop("record_mode", None)
    options.pop("cassette_library_dir", None)
    merged = vcr.get_merged_config(**options)
    kwargs = {
        key: value
        for key, value in merged.items()
        if key not in ("path_transformer", "func_path_generator", "record_on_exception")
    }
    kwargs["path"] = str(path)
    return kwargs


def _open_cassette(
    path: str | Path, mode: str, kwargs: dict[str, Any], persister: AtomicPersister, age: AgeLimit | None
) -> Any:
    """The cassette loaded; under ``rewrite`` started empty, the old file still checked, never replayed."""
    from vcr.cassette import Cassette
    from vcr.persisters.filesystem import CassetteNotFoundError

    if mode == "rewrite":
        cassette = Cassette(**kwargs)
        try:  # nothing of the old file is replayed, but a corrupt one is still refused, not replaced
            persister.load_cassette(str(path), kwargs["serializer"])
            persister.forget(str(path))  # nor is its date kept: everything in the new file is recorded now
        except CassetteNotFoundError:
            pass
        return cassette
    persister.age = age if mode in ("none", "once", "new_episodes") else None  # all: recorded anew anyway
    return Cassette.load(**kwargs)


def _named(function: Any, name: str) -> Any:
    def matcher(r1: Any, r2: Any) -> Any:
        return function(r1, r2)

    matcher.__name__ = name
    return matcher
