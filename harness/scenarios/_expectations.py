"""``meta.expect``: what a scenario file may pin about its run's outcome, checked as written.

``expectation_errors`` says what is wrong with a ``meta.expect`` when a file is loaded
(``harness.scenarios._scenario``); ``harness.checking._check`` judges a run against it. ``meta_schema`` is its part
of the scenario JSON Schema. This module sits below ``harness.scenarios._scenario`` and never imports it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

EXPECT_KEYS = ("reason", "requests", "executed", "final_text", "results", "new_messages")
"""What ``meta.expect`` can pin (see ``check_expectations``)."""
MATCHERS = ("contains", "prefix", "regex")
"""Partial matches a text expectation may use instead of the exact text: ``{contains: TEXT}``."""


def expectation_errors(expect: Any) -> list[str]:
    """What is wrong with a ``meta.expect`` as written (checked when a file is loaded), one line each."""
    if expect is None:
        return []
    if not isinstance(expect, Mapping):
        return [f"meta.expect: expected a mapping of {', '.join(EXPECT_KEYS)}, got {expect!r:.60}"]
    errors = []
    for key, wanted in expect.items():
        where = f"meta.expect.{key}"
        if key not in EXPECT_KEYS:
            errors.append(f"{where}: unknown expectation; known: {', '.join(EXPECT_KEYS)}")
        elif key in ("requests", "new_messages"):
            if isinstance(wanted, bool) or not isinstance(wanted, int):
                errors.append(f"{where}: expected a count (an integer), got {wanted!r:.60}")
        elif key in ("executed", "results"):
            if not isinstance(wanted, list):
                errors.append(f"{where}: expected a list of texts or matchers, got {wanted!r:.60}")
            else:
                errors += [e for i, item in enumerate(wanted) for e in _matcher_errors(item, f"{where}, item {i + 1}")]
        elif key == "final_text":
            errors += _matcher_errors(wanted, where)
        elif not isinstance(wanted, str) and wanted is not None:
            errors.append(f"{where}: expected a text, got {wanted!r:.60}")
    return errors


def _matcher_errors(wanted: Any, where: str) -> list[str]:
    if wanted is None or isinstance(wanted, str):
        return []
    shape = "a text, or one of {contains: TEXT}, {prefix: TEXT}, {regex: PATTERN}"
    if not isinstance(wanted, Mapping) or len(wanted) != 1:
        return [f"{where}: expected {shape}, got {wanted!r:.60}"]
    ((kind, pattern),) = wanted.items()
    if kind not in MATCHERS:
        return [f"{where}: unknown matcher {kind!r}; expected {shape}"]
    if not isinstance(pattern, str):
        return [f"{where}: {kind} takes a text, got {pattern!r:.60}"]
    if kind == "regex":
        try:
            re.compile(pattern)
        except re.error as exc:
            return [f"{where}: not a valid regular expression ({exc})"]
    return []


_TEXT_MATCH: dict[str, Any] = {
    "anyOf": [
        {"type": "string"},
        {"type": "null"},
        *(
            {"type": "object", "properties": {k: {"type": "string"}}, "required": [k], "additionalProperties": False}
            for k in MATCHERS
        ),
    ],
    "description": "The exact text, or {contains: TEXT}, {prefix: TEXT} or {regex: PATTERN} (re.search).",
}


def meta_schema(schema: dict[str, Any]) -> None:
    counts = {"type": "integer"}
    expect = {
        "type": "object",
        "additionalProperties": False,
        "description": "What must happen; checked by harness run and the regression tests.",
        "properties": {
            "reason": {"enum": ["stop", "error", "aborted", "max_iterations", None]},
            "requests": {**counts, "description": "Model requests of the top-level run."},
            "executed": {"type": "array", "items": _TEXT_MATCH, "description": "The ledger, as name#id."},
            "final_text": _TEXT_MATCH,
            "results": {"type": "array", "items": _TEXT_MATCH, "description": "Tool results, '!' before errors."},
            "new_messages": {**counts, "description": "How many messages the run added."},
        },
    }
    for alternative in schema.get("anyOf", [schema]):
        if alternative.get("type") == "object":
            alternative["properties"] = {"expect": expect, "violation": {"type": "string"}}
