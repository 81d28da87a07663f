"""How a run that raised is shown: the agent's traceback, without the harness's frames, and only
the hints its exception supports.

A one-line ``TypeError: Cannot instantiate typing.Union`` under a hint about base URLs sent a user
the wrong way, and to writing their own driver to see where it was raised. The traceback says
where; a hint is added only where the exception is one the hint explains (a connection refused or
unresolved: the client is not built on ``base_url``; a 404 from the emulator: the path).
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from harness.agents._agent_output import shown

if TYPE_CHECKING:
    from harness.agents._campaign_result import AgentStats

_HARNESS = str(Path(__file__).resolve().parents[1])
_PLUMBING = ("threading.py", "concurrent/futures/", "asyncio/")
_CONNECTION_ERRORS = {
    "ConnectError",
    "ConnectionError",
    "APIConnectionError",
    "ConnectTimeout",
    "EndpointConnectionError",
}


def _ours(frame: traceback.FrameSummary) -> bool:
    name = frame.filename
    return name.startswith(_HARNESS) or any(part in name for part in _PLUMBING)


def _trim(shown: traceback.TracebackException, seen: set[int]) -> None:
    """Leave out the harness's frames, here and in every exception chained to this one."""
    if id(shown) in seen:
        return
    seen.add(id(shown))
    frames = list(shown.stack)
    shown.stack = traceback.StackSummary.from_list([f for f in frames if not _ours(f)] or frames[-1:])
    for chained in (shown.__cause__, shown.__context__):
        if chained is not None:
            _trim(chained, seen)


def agent_traceback(raised: BaseException) -> str:
    """The traceback of what the agent raised, its frames only (the harness's and the thread and
    event-loop plumbing around them left out), chained exceptions included. An agent run as a
    process has no Python frames: its exit and its stderr are shown instead (``wire_told``)."""
    told = getattr(raised, "wire_told", None)
    if isinstance(told, str):
        return told
    shown = traceback.TracebackException.from_exception(raised)
    _trim(shown, set())
    return "".join(shown.format()).rstrip()


def _chain(raised: BaseException) -> list[BaseException]:
    found: list[BaseException] = []
    current: BaseException | None = raised
    while current is not None and current not in found:
        found.append(current)
        current = current.__cause__ or current.__context__
    return found


def hints(raised: BaseException) -> list[str]:
    """What to check, where the exception says it (none where it does not: the traceback speaks)."""
    said: list[str] = []
    chain = _chain(raised)
    names = {cls.__name__ for exc in chain for cls in type(exc).__mro__}
    text = " ".join(str(exc) for exc in chain)
    if names & _CONNECTION_ERRORS or "emulator.invalid" in text:
        said.append(
            "the agent could not connect: does it build its client on the base_url it is given "
            "(OpenAI clients: base_url + '/v1'), not on a URL of its own?"
        )
    if "no provider serves" in text or "NotFoundError" in names:
        said.append(
            "the emulator found no provider at the path the agent asked for: OpenAI clients need "
            "base_url + '/v1', the others base_url itself"
        )
    return said


def nothing_tested(stats: AgentStats) -> str:
    """Why a campaign that reached nothing reached nothing: the first run's traceback (the agent's
    frames), the hints it supports, and what the agent printed."""
    run = stats.first_raised
    if run is None or run.raised is None:
        return "no run sent a request to the emulator, and none raised: does the agent call its model at all?"
    lines = [f"no run sent a request to the emulator; the first one raised {stats.first_error}"]
    lines += ["", agent_traceback(run.raised)]
    lines += ["", *hints(run.raised)] if hints(run.raised) else []
    if run.log:
        lines += ["", "the agent's output in that run:", shown(run.log)]
    return "\n".join(lines)
