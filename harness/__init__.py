"""harness: deterministic simulation and record-replay testing for the openprogram loop.

The package's names (``from harness import ScriptedProvider, turn``) are loaded on first use
(PEP 562): pytest imports ``harness.pytest_plugin`` in every session of every project that has
the package installed, and importing this package must not pull the agent loop, pydantic and
jsonschema into a session that never asks for a fixture.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.script import ScriptedCall, ScriptedProvider, ScriptViolation, Turn, turn

__all__ = ["ScriptViolation", "ScriptedCall", "ScriptedProvider", "Turn", "turn"]

_LAZY = {name: "harness.script" for name in __all__}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # not cached in this module's globals: the answer follows sys.modules, so a test runner that
    # unloads and reimports harness.script (pytester does, between in-process runs) gets one class
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
