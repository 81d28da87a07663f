"""vcrpy's persister, strict and scanned: a corrupt cassette refused, a credential never written.

:class:`AtomicPersister`: reading a cassette that does not parse fails with
:class:`CassetteCorruptError` (path and reason, places as ``line L, column C``, an alias bomb
refused by ``harness._yaml``) instead of vcrpy's "treat it as empty and overwrite it"; writing
scrubs (``harness.recording._scrub``, whose filters vcrpy runs too), scans for credentials from
the environment (nothing is written when one is found) and replaces the file atomically
(``harness.wire.write_atomic``: through a symbolic link to its target), so a killed recording
leaves the old cassette whole. It also keeps a cassette's ``recorded_at`` date and refuses one
older than a test's ``max_age`` (``harness.recording._age``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import harness._yaml as bounded_yaml
from harness.recording._age import RECORDED_AT, AgeLimit, date_text, recorded_at
from harness.recording._cassette import CassetteError, shape_problem
from harness.recording._scrub import (
    CredentialLeakError,
    find_credentials,
    find_credentials_in,
    find_hidden_credentials,
    honest_encoding,
    scrub_request,
    scrub_response,
)
from harness.recording._vcr._vcr_matchers import body_bytes
from harness.wire import write_atomic


class CassetteCorruptError(CassetteError):
    """A cassette file that exists but cannot be read; it is left exactly as it is."""


class AtomicPersister:
    """vcrpy's persister protocol: strict loading, scanned atomic saving.

    ``inner`` is the persister it stands in front of (pytest-recording's, which also loads the
    extra cassettes a ``vcr`` marker names); ``hold`` is consulted before each write: when it
    returns a reason, the cassette is not written and the reason is kept in ``withheld``.
    ``environ`` and ``extra`` feed the credential scan (:func:`harness.recording._scrub.find_credentials`).
    """

    def __init__(
        self,
        inner: Any = None,
        *,
        environ: Mapping[str, str] | None = None,
        extra: Iterable[str] = (),
        hold: Callable[[str], str | None] | None = None,
    ) -> None:
        self.inner = inner
        self.environ = environ
        self.extra = tuple(extra)
        self.hold = hold
        self.withheld: list[tuple[str, str]] = []
        self.written: list[str] = []
        self.age: AgeLimit | None = None
        """How old a loaded cassette may be (``max_age``); set per cassette by whoever opens it."""
        self._loaded: dict[str, tuple[datetime | None, list[Any]]] = {}  # path -> its date, its interactions

    def load_cassette(self, cassette_path: str | os.PathLike[str], serializer: Any) -> Any:
        from vcr.persisters.filesystem import CassetteNotFoundError

        path = Path(cassette_path)
        if path.is_dir():  # found now, not by the atomic write after a whole recording
            raise CassetteCorruptError(path, "a directory, not a cassette file; move it away")
        if path.is_file():
            try:
                text = bounded_yaml.decoded(path.read_bytes())
            except OSError as exc:
                raise CassetteCorruptError(path, f"cannot read the cassette: {exc}") from exc
            except bounded_yaml.YamlFileError as exc:
                raise CassetteCorruptError(path, f"the cassette does not parse: {exc}") from None
            if text.strip():
                loaded, data = _check_parses(path, text, serializer)
                if self.age is not None and self.age.rerecords(path, data):
                    raise CassetteNotFoundError()  # recorded anew; the old file stays until the new one replaces it
                self._loaded[str(path)] = (recorded_at(data), [_same(item) for item in data["interactions"]])
                if not getattr(self.inner, "extra_paths", None):  # parsed once: checked and converted from one parse
                    return _honest(loaded)
            elif not getattr(self.inner, "extra_paths", None):  # pytest-recording's loader fails on it
                raise CassetteNotFoundError()  # an empty file is no recording yet, as for the recorded fixture
        elif self.inner is None:
            raise CassetteNotFoundError()
        if self.inner is not None and hasattr(self.inner, "load_cassette"):
            return _honest(self.inner.load_cassette(str(cassette_path), serializer))
        if not path.is_file() or not path.read_text(encoding="utf-8").strip():
            raise CassetteNotFoundError()
        from vcr.serialize import deserialize

        return _honest(deserialize(path.read_text(encoding="utf-8"), serializer))

    def save_cassette(
        self, cassette_path: str | os.PathLike[str], cassette_dict: dict[str, Any], serializer: Any
    ) -> None:
        from vcr.serialize import serialize

        path = Path(cassette_path)
        for request in cassette_dict["requests"]:  # again: a project's own filters replace ours in vcrpy
            scrub_request(request)
        for response in cassette_dict["responses"]:
            scrub_response(response)
        text = serialize(cassette_dict, serializer)
        loaded = _loaded(text, serializer)
        dated = self._date(str(path), loaded)
        if dated is not None:
            text = serialize(cassette_dict, _Dated(serializer, dated))
        findings = find_credentials(text, self.environ, extra=self.extra)
        hidden = find_hidden_credentials(loaded, self.environ, extra=self.extra)  # binary, or split in a stream
        if findings or hidden:
            structured = find_credentials_in(loaded, self.environ, extra=self.extra) if findings else []
            raise CredentialLeakError(str(path), dict.fromkeys([*(structured or findings), *hidden]))
        reason = self.hold(str(path)) if self.hold is not None else None
        if reason is not None:
            self.withheld.append((str(path), reason))
            return
        write_atomic(path, text)
        self.written.append(str(path))

    def forget(self, path: str) -> None:
        """Write ``path`` as recorded anew: nothing loaded from it is kept (``rewrite``)."""
        self._loaded.pop(str(Path(path)), None)

    def _date(self, path: str, saved: Any) -> str | None:
        """The ``recorded_at`` to write: the loaded cassette's when an interaction of it is kept as it
        was (``new_episodes``, ``all`` keeping what was not asked again), else now; ``None`` (no date)
        when the kept interactions come from a cassette that had none, whose age nobody knows."""
        date, interactions = self._loaded.get(path, (None, []))
        kept = isinstance(saved, dict) and any(_same(item) in interactions for item in saved.get("interactions", []))
        if not kept:
            return date_text(datetime.now(UTC))
        return date_text(date) if date is not None else None


def _same(interaction: Any) -> tuple[str, bytes]:
    """What two interactions share when one is the other kept (the body as bytes: vcrpy converts it)."""
    body = (interaction.get("response") or {}).get("body") or {}
    return json.dumps(interaction.get("request"), sort_keys=True, default=str), body_bytes(body.get("string"))


class _Dated:
    """A serializer writing ``recorded_at`` beside vcrpy's ``version`` (which it reads, as vcrpy ignores it)."""

    def __init__(self, inner: Any, date: str) -> None:
        self.inner, self.date = inner, date

    def serialize(self, data: dict[str, Any]) -> str:
        version = {"version": data["version"]} if "version" in data else {}
        text: str = self.inner.serialize({**version, RECORDED_AT: self.date, **data})
        return text

    def deserialize(self, text: str) -> Any:
        return self.inner.deserialize(text)


def _honest(loaded: Any) -> Any:
    """vcrpy's loaded ``(requests, responses, ...)`` with every response's encoding made honest."""
    for response in loaded[1] if isinstance(loaded, tuple | list) and len(loaded) > 1 else ():
        if isinstance(response, dict):
            honest_encoding(response)
    return loaded


def _loaded(text: str, serializer: Any) -> Any:
    try:
        return serializer.deserialize(text)
    except Exception:
        return {}


class _Parsed:
    """A serializer that hands vcrpy data parsed already, so a cassette's YAML is parsed once."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def deserialize(self, cassette_string: str) -> Any:
        return self.data


def _check_parses(path: Path, text: str, serializer: Any) -> tuple[Any, dict[str, Any]]:
    """vcrpy's ``(requests, responses)`` for ``text`` and the parsed data, or :class:`CassetteCorruptError`.

    Every error is raised ``from None`` with its reason in its message: the cause is said once,
    not again in a chained traceback. The shape is checked here, where the path is known, since
    vcrpy would fail on it later with a bare ``KeyError`` or ``ValueError`` in the middle of a replay.
    """
    from vcr.serialize import deserialize

    try:
        data = serializer.deserialize(text)
    except Exception as exc:
        raise CassetteCorruptError(path, f"the cassette does not parse: {bounded_yaml.reason(exc)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteCorruptError(path, "not a vcrpy cassette (no interactions list)")
    problem = next(filter(None, (shape_problem(i, item) for i, item in enumerate(data["interactions"]))), None)
    if problem is not None:
        raise CassetteCorruptError(path, problem)
    try:
        return deserialize(text, _Parsed(data)), data
    except Exception as exc:
        raise CassetteCorruptError(path, f"vcrpy cannot read it: {bounded_yaml.reason(exc)}") from None
