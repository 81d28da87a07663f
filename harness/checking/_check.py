"""Checking a scenario: run it, then hold the run against everything that says what must happen.

``check(scenario)`` runs the scenario (``harness.checking._runner``) and collects the problems: where the
run departs from the reference model's prediction (``harness.oracle._reference``), the first invariant
it breaks (``harness.oracle._run_invariants``), and the file's own ``meta.expect``. ``regressions``, ``fuzz``
and ``harness run`` all judge a run this one way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.checking._runner import LoopUnderTest, ToolEscaped, run
from harness.oracle import InvariantViolation, check_all, compare
from harness.scenarios import Scenario
from harness.scenarios._expectations import MATCHERS
from harness.trace import Trace, diff


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a run: ``name`` is the invariant (or ``reference``, ``determinism``,
    ``expectation``)."""

    name: str
    message: str

    def __str__(self) -> str:
        return f"[{self.name}] {self.message}"


@dataclass
class CheckResult:
    scenario: Scenario
    trace: Trace
    problems: list[Problem]

    @property
    def ok(self) -> bool:
        return not self.problems


def check(scenario: Scenario, loop: LoopUnderTest | None = None, *, determinism: bool = False) -> CheckResult:
    """Run ``scenario`` (through ``loop``, default the real one) and collect every problem:
    the reference model's, the invariants', ``meta.expect``'s and, with ``determinism``, a second
    run that is not byte-identical."""
    trace = run(scenario, loop)
    problems = problems_of(scenario, trace)
    if determinism and not problems:
        again = run(scenario, loop)
        if again.to_json() != trace.to_json():
            problems.append(
                Problem("determinism", "the same scenario gave two different traces:\n" + diff(trace, again))
            )
    problems.extend(check_expectations(scenario, trace))
    return CheckResult(scenario, trace, problems)


def problems_of(scenario: Scenario, trace: Trace) -> list[Problem]:
    """What the reference model and the invariants object to (the first broken invariant first)."""
    escaped = f"{ToolEscaped.PREFIX}: "
    if trace.error is not None and trace.error.startswith(escaped):
        # The user's tool is at fault, not the loop: say that alone (the reference model, which
        # cannot know a real tool raises a BaseException, would only add noise).
        return [
            Problem(
                "tool raised BaseException",
                f"{trace.error[len(escaped) :]}: not an Exception, so the loop does not turn it into an error "
                "result; the run ends and the exception reaches the caller (for SystemExit and "
                "KeyboardInterrupt, usually ending the program). Raise an Exception subclass instead.",
            )
        ]
    problems: list[Problem] = []
    differences = compare(scenario, trace)
    if differences:
        problems.append(Problem("reference", "\n".join(differences)))
    try:
        check_all(trace, scenario=scenario)
    except InvariantViolation as exc:
        problems.insert(0, Problem(getattr(exc, "name", "invariant"), getattr(exc, "message", str(exc))))
    return problems


def check_expectations(scenario: Scenario, trace: Trace) -> list[Problem]:
    """A hand-written file's ``meta.expect``: what the rule it pins says must happen.

    Keys: ``reason``; ``requests`` (model requests of the top-level run); ``executed`` (the ledger
    as ``name#id`` strings, in order); ``final_text``; ``results`` (the tool results' texts, in
    order, ``"!"`` prefixed when ``is_error``); ``new_messages`` (count). A text (``final_text``,
    and each item of ``executed`` and ``results``) may be a matcher instead: ``{contains: TEXT}``,
    ``{prefix: TEXT}`` or ``{regex: PATTERN}`` (``re.search``: anchor it with ``^``/``$``), so a
    rule can pin what matters in a message without restating all of it.
    """
    expect = scenario.meta.get("expect") if isinstance(scenario.meta, Mapping) else None
    if not expect:
        return []
    seen: dict[str, Any] = {
        "reason": trace.reason,
        "requests": len(trace.requests),
        "executed": [f"{e.tool_name}#{e.tool_call_id}" for e in trace.ledger or ()],
        "final_text": trace.final_text,
        "results": [("!" if r.is_error else "") + r.text for r in trace.tool_results],
        "new_messages": len(trace.new_messages),
    }
    problems = []
    for key, wanted in expect.items():
        if key not in seen:
            problems.append(Problem("expectation", f"unknown expectation {key!r}; known: {', '.join(seen)}"))
        elif not _matches(wanted, seen[key]):
            problems.append(Problem("expectation", f"{key}: expected {_show(wanted)}, got {seen[key]!r}"))
    return problems


def _matches(wanted: Any, seen: Any) -> bool:
    if isinstance(wanted, Mapping) and len(wanted) == 1 and next(iter(wanted)) in MATCHERS:
        ((kind, pattern),) = wanted.items()
        if not isinstance(seen, str):
            return False
        if kind == "contains":
            return pattern in seen
        if kind == "prefix":
            return seen.startswith(pattern)
        return re.search(pattern, seen) is not None
    if isinstance(wanted, list) and isinstance(seen, list):
        return len(wanted) == len(seen) and all(_matches(w, s) for w, s in zip(wanted, seen, strict=True))
    return bool(seen == wanted)


_MATCHER_WORDS = {"contains": "containing", "prefix": "starting with", "regex": "matching"}


def _show(wanted: Any) -> str:
    if isinstance(wanted, Mapping) and len(wanted) == 1 and next(iter(wanted)) in MATCHERS:
        ((kind, pattern),) = wanted.items()
        return f"a text {_MATCHER_WORDS[kind]} {pattern!r}"
    return repr(wanted)
