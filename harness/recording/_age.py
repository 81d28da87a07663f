"""How old a cassette is, and how old a test lets it get (``max_age``, ``max_age_action``).

A cassette says what the API sent on the day it was recorded; APIs move. The recorder dates every
cassette it writes (the ``recorded_at`` key beside vcrpy's ``version``: the oldest interaction the
file keeps, so ``new_episodes`` keeps the old date and ``rewrite`` sets today's), and a test that
names a ``max_age`` gets a warning, a failure or a new recording when the cassette is older. The
date is the file's own, never its modification time, which a checkout resets.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from harness.recording._cassette import CassetteError

RECORDED_AT: Final = "recorded_at"
"""The top-level key (beside ``version`` and ``interactions``; vcrpy reads neither it nor any other)
holding when the oldest interaction a cassette keeps was recorded, as ISO 8601 UTC."""

EXPIRY_ACTIONS: Final[tuple[str, ...]] = ("warn", "fail", "rerecord")
"""What ``max_age_action`` may say a test does with a cassette older than ``max_age``."""

_UNITS: Final[Mapping[str, int]] = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class CassetteExpiredError(CassetteError):
    """A cassette older than the ``max_age`` its test allows, with ``max_age_action="fail"``."""


class CassetteAgeWarning(UserWarning):
    """A cassette older than its ``max_age`` (or of no known age): replayed, but maybe not what the API sends now."""


def parse_max_age(value: Any) -> timedelta:
    """``"30d"``, ``"12h"``, ``"1w2d"``, seconds (``3600``) or a ``timedelta``; else ``ValueError`` saying so."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str) and re.fullmatch(r"(\s*\d+(\.\d+)?\s*[smhdw])+\s*", value.lower()):
        parts = re.findall(r"(\d+(?:\.\d+)?)\s*([smhdw])", value.lower())
        seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    else:
        seconds = -1.0
    if seconds <= 0:
        raise ValueError(
            f"max_age {value!r} is not a positive age: give seconds (86400), a timedelta, or a text "
            "of numbers with the units s, m, h, d, w ('30d', '12h', '1w2d')"
        )
    return timedelta(seconds=seconds)


@dataclass(frozen=True)
class AgeLimit:
    """How old a test lets its cassette get, and what happens past that (``EXPIRY_ACTIONS``).
    ``may_record``: whether the mode records; ``rerecord`` where it does not (a replay) warns."""

    max_age: timedelta
    action: str = "warn"
    may_record: bool = False

    @classmethod
    def from_options(cls, options: Mapping[str, Any], *, may_record: bool) -> AgeLimit | None:
        """The limit ``max_age`` / ``max_age_action`` ask for, ``None`` without ``max_age``; ``ValueError`` if bad."""
        action = options.get("max_age_action", "warn")
        if action not in EXPIRY_ACTIONS:
            raise ValueError(f"max_age_action {action!r} is not one of {', '.join(map(repr, EXPIRY_ACTIONS))}")
        if options.get("max_age") is None:
            if "max_age_action" in options:
                raise ValueError("max_age_action needs a max_age (say max_age='30d')")
            return None
        return cls(parse_max_age(options["max_age"]), action, may_record)

    def rerecords(self, path: Path, data: Any, now: datetime | None = None) -> bool:
        """True when the cassette is to be recorded anew; warns or raises :class:`CassetteExpiredError` as asked."""
        recorded = recorded_at(data)
        now = now or datetime.now(UTC)
        rewrite = "re-record it: --record-mode=rewrite"
        if recorded is None:
            if self.action == "rerecord" and self.may_record:
                return True
            warnings.warn(
                CassetteAgeWarning(
                    f"{path}: the cassette has no {RECORDED_AT} date (recorded before the harness dated "
                    f"cassettes), so its max_age of {age_text(self.max_age)} cannot be checked; {rewrite} to date it"
                ),
                stacklevel=2,
            )
            return False
        age = now - recorded
        if age <= self.max_age:
            return False
        if self.action == "rerecord" and self.may_record:
            return True
        message = (
            f"{path}: recorded {age_text(age)} ago ({recorded:%Y-%m-%d %H:%M} UTC), older than its max_age of "
            f"{age_text(self.max_age)}; {rewrite}"
        )
        if self.action == "fail":
            raise CassetteExpiredError(path, message.split(": ", 1)[1])
        if self.action == "rerecord":
            message += " (max_age_action='rerecord' re-records it in a mode that records, not in replay)"
        warnings.warn(CassetteAgeWarning(message), stacklevel=2)
        return False


def recorded_at(data: Any) -> datetime | None:
    """When a parsed cassette says it was recorded, ``None`` when it does not say (or not readably)."""
    value = data.get(RECORDED_AT) if isinstance(data, dict) else None
    if isinstance(value, datetime):  # YAML reads an unquoted timestamp as one
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def date_text(moment: datetime) -> str:
    """``moment`` as the cassette stores it: ISO 8601, UTC, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def age_text(delta: timedelta) -> str:
    """``delta`` in its largest whole unit, as messages say it (``3 days``, ``1 hour``)."""
    seconds = int(delta.total_seconds())
    unit, size = next(
        (u, n) for u, n in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1)) if seconds >= n
    )
    return f"{seconds // size} {unit}{'s' if seconds // size != 1 else ''}"


def stale(data: Any, max_age: timedelta, now: datetime | None = None) -> str | None:
    """Why a parsed cassette is past ``max_age`` (or of no known age), ``None`` when it is not:
    ``harness cassettes lint --max-age``'s rule, the same dating a test's ``max_age`` reads."""
    recorded = recorded_at(data)
    if recorded is None:
        return (
            f"has no {RECORDED_AT} date (recorded before the harness dated cassettes, or by another tool), "
            f"so its age cannot be checked against {age_text(max_age)}; re-record it: --record-mode=rewrite"
        )
    age = (now or datetime.now(UTC)) - recorded
    if age <= max_age:
        return None
    return (
        f"recorded {age_text(age)} ago ({recorded:%Y-%m-%d} UTC), older than --max-age {age_text(max_age)}; "
        "re-record it: --record-mode=rewrite"
    )
