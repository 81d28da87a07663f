"""W8 (DESIGN 6): a run served only replies that are whole and well-formed by the provider's
documentation ends by returning, not raising.

W3 counts a raise as an ending, so before W8 an agent that indexes ``choices[0]`` on every chunk
crashed on each usage-only chunk OpenAI sends when ``stream_options.include_usage`` is set and the
campaign said "no violation". Nothing a provider documents as a normal reply (an answer, valid
calls, several calls however they are split, unknown events and fields it says clients ignore) is
a reason to raise: the agent is told "the model answered", and throwing that away is a bug, unless
a framework raises by design and declares it (``Deviation("W8", reason, kinds=...)``).

What W8 does not judge, because another invariant does or nothing can: a run that did not end (W3),
a request beyond the bound (W3), a reply that was not delivered whole or that the model got wrong
(invalid arguments, an unknown tool, a length cut-off: a framework may raise on them by design),
and a run that raised before any reply (nothing was served to judge it by).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from harness.agents._conversation import Run
from harness.agents._invariants._findings import ReplyKinds, Violation
from harness.agents._replies import WELL_FORMED


def judged_by_w8(run: Run, served: tuple[str, ...]) -> bool:
    """Whether W8 applies to the run whose replies were of the kinds ``served``: it ended, and every
    request of it was served a reply that arrived whole and is :data:`WELL_FORMED` (what the
    campaign counts as W8's chance, and what the judge judges)."""
    if run.timed_out or not served or any(e.reply is None or not e.delivered for e in run.exchanges):
        return False
    return all(kind in WELL_FORMED for kind in served)


def w8(run: Run, kinds: ReplyKinds) -> Iterable[Violation]:
    if run.raised is None or run.timed_out:
        return
    served = kinds(*run.replies)
    if not judged_by_w8(run, served):
        return
    yield Violation(
        "W8",
        0,
        f"the run raised {raised_line(run.raised)} after {_served(served)}{_usage_chunks(run)}",
        served,
    )


def raised_line(raised: BaseException) -> str:
    """An exception as one line, its type and the first line of its message (``IndexError: list
    index out of range``); an agent run as a command: how its process ended. The campaign summary
    names each distinct exception the same way, with its traceback."""
    summary = getattr(raised, "summary", None)
    if isinstance(summary, str):
        said = re.sub(r"^conversation \d+ answered with an error: ", "", summary)
        return re.sub(r" during conversation \d+$", "", said)
    lines = str(raised).strip().splitlines()
    return type(raised).__name__ + (f": {lines[0][:200]}" if lines else "")


def _served(kinds: tuple[str, ...]) -> str:
    """``1 reply (final answer), whole and well-formed``, or ``3 replies (valid call x2, final
    answer), all whole and well-formed``."""
    counted: dict[str, int] = {}
    for kind in kinds:
        counted[kind] = counted.get(kind, 0) + 1
    shown = ", ".join(kind + (f" x{n}" if n > 1 else "") for kind, n in counted.items())
    if len(kinds) == 1:
        return f"1 reply ({shown}), whole and well-formed"
    return f"{len(kinds)} replies ({shown}), all whole and well-formed"


def _usage_chunks(run: Run) -> str:
    """What every streamed chat reply ended with when the request asked for usage: the chunk
    naive loops index into (OpenAI documents ``choices`` as empty there)."""
    request = run.exchanges[0].request
    body = request.body if isinstance(request.body, Mapping) else {}
    options = body.get("stream_options")
    route = request.route
    asked = isinstance(options, Mapping) and options.get("include_usage") is True
    if route.provider == "openai" and route.endpoint != "responses" and request.streaming and asked:
        return (
            "; each streamed reply ended with a usage-only final chunk (choices: []), "
            "as stream_options.include_usage asks"
        )
    return ""
