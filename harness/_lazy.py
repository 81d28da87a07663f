"""Facades that import their modules on first use (PEP 562).

pytest imports ``harness.pytest_plugin`` in every session of every project that has the package
installed, and that import passes through ``harness/__init__`` and the ``__init__`` of every
package on the way (``harness.campaigns`` for the Hypothesis profiles, ``harness.recording`` for
the record-replay options). Those facades must not pull the agent loop, pydantic, vcrpy and
jsonschema into a session that never asks for a fixture, so they name their exports here and
import each on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, table: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
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
