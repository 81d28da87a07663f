"""The one Jinja2 environment every report renders through, made on first use.

Jinja2 is the ``report`` extra, not a core dependency: the pytest plugin and every command that
writes no HTML must not pay for it, or fail without it. Autoescape is on for every template, so a
tool's output or a model's text that looks like markup is shown, never obeyed.
"""

from __future__ import annotations

import datetime as _dt
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).with_name("templates")


class MissingReportExtra(ImportError):
    """HTML reports were asked for, but Jinja2 (the ``report`` extra) is not installed."""

    def __init__(self, missing: str = "jinja2") -> None:
        super().__init__(
            f"HTML reports need the 'report' extra ({missing} is missing): "
            'install it with pip install -e ".[report]" from the checkout (the dev extra includes it)'
        )
        self.missing = missing


@lru_cache(maxsize=1)
def environment() -> Any:
    """The environment, its templates compiled once per process (a suite writes one per test)."""
    try:
        import jinja2
    except ImportError as exc:
        raise MissingReportExtra(exc.name or "jinja2") from None
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["pretty"] = pretty
    env.filters["clock"] = clock
    env.filters["clip"] = clip
    return env


def render(template: str, **context: Any) -> str:
    return str(environment().get_template(template).render(**context))


def pretty(value: Any) -> str:
    """JSON as a person reads it (indented, keys in order); text stays text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def clock(ms: int | None) -> str:
    """An epoch-millisecond stamp of the run's clock as a UTC time of day (the date is in the title)."""
    if ms is None:
        return ""
    try:
        moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return moment.strftime("%H:%M:%S.") + f"{ms % 1000:03d}"


def clip(value: Any, limit: int = 160) -> str:
    """One line, short enough for a summary; the full value is one click away."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
