"""harness: deterministic simulation and record-replay testing for the openprogram loop.

The names a user writes first, whatever the workflow (``docs/architecture.md`` maps the rest):

- scripting a model: ``ScriptedProvider``, ``turn`` (``harness.script``); a run written down:
  ``Trace`` (``harness.trace``); the deterministic clock: ``DeterministicClock``;
- a scenario and its judgement: ``Scenario`` (``harness.scenarios``), ``run`` / ``arun`` and
  ``check`` (``harness.checking``);
- the wire: ``Emulator`` and ``fault`` (``harness.emulator``);
- record-replay: ``open_recording``, ``recorded_backend``, ``live_backend`` (``harness.recording``).

They are loaded on first use: pytest imports ``harness.pytest_plugin`` in every session of every
project that has the package installed, and importing this package must not pull the agent loop,
pydantic and jsonschema into a session that never asks for a fixture.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.checking import arun, assert_scenario, check, run
    from harness.clock import DeterministicClock
    from harness.emulator import Emulator, fault
    from harness.recording import live_backend, open_recording, recorded_backend
    from harness.scenarios import Scenario
    from harness.script import ScriptedCall, ScriptedProvider, ScriptViolation, Turn, turn
    from harness.trace import Trace

_EXPORTS = {
    "ScriptViolation": "harness.script",
    "ScriptedCall": "harness.script",
    "ScriptedProvider": "harness.script",
    "Turn": "harness.script",
    "turn": "harness.script",
    "Trace": "harness.trace",
    "DeterministicClock": "harness.clock",
    "Scenario": "harness.scenarios",
    "run": "harness.checking",
    "arun": "harness.checking",
    "check": "harness.checking",
    "assert_scenario": "harness.checking",
    "Emulator": "harness.emulator",
    "fault": "harness.emulator",
    "open_recording": "harness.recording",
    "recorded_backend": "harness.recording",
    "live_backend": "harness.recording",
}
__all__ = [
    "DeterministicClock",
    "Emulator",
    "Scenario",
    "ScriptViolation",
    "ScriptedCall",
    "ScriptedProvider",
    "Trace",
    "Turn",
    "arun",
    "assert_scenario",
    "check",
    "fault",
    "live_backend",
    "open_recording",
    "recorded_backend",
    "run",
    "turn",
]


# The one lazy mechanism of every facade (``harness.campaigns`` and ``harness.recording`` use it
# too): defined here, in the module every import of the harness loads anyway, so the facades the
# pytest plugin passes through cost one small module each and no helper module of their own.
def _lazy_exports(package: str, table: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: name -> the module (relative or absolute) defining it.

    The answer is not cached in the package's globals: it follows ``sys.modules``, so a test runner
    that unloads and reimports a module (pytester does, between in-process runs) gets one class.
    """

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    def __dir__() -> list[str]:
        return sorted(table)

    return __getattr__, __dir__


__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
