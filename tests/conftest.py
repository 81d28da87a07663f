"""What the suite's own pytester runs share.

Many tests run a user's project in this process (``pytester.runpytest``). After each such run
pytester removes every module the run imported, so that two runs never share a test module of the
same name, and the next run imports them again. For the project's files that is the point; for
the libraries a user's project imports (the provider SDKs above all: one ``anthropic`` reply
imports three thousand modules, a second of CPU, every run) it only repeats work and changes
nothing a test checks. Installed libraries and the standard library are therefore kept across
runs; the project's own modules (``harness``, ``openprogram``) and the user's files are still
dropped and imported anew by every run, as before.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable

import _pytest.pytester
import pytest

_LIBRARY_DIRS = tuple(
    sorted({os.path.join(sysconfig.get_paths()[key], "") for key in ("stdlib", "platstdlib", "purelib", "platlib")})
)


def _installed_library(name: str) -> bool:
    """A module imported from site-packages or the standard library, not from the checkout or a test project."""
    module = sys.modules.get(name)
    file = getattr(module, "__file__", None)
    if file is None:  # a namespace package (``google``) has only its folders
        file = next(iter(getattr(module, "__path__", None) or ()), None)
    return isinstance(file, str) and file.startswith(_LIBRARY_DIRS)


_Snapshot = getattr(_pytest.pytester, "SysModulesSnapshot", None)  # private to pytest: absent, runs are only slower

if _Snapshot is not None:

    class _KeepInstalledLibraries(_Snapshot):  # type: ignore[misc, valid-type]  # pytest's class, found at run time
        """pytester's snapshot of ``sys.modules``, restored without dropping installed libraries."""

        def __init__(self, preserve: Callable[[str], bool] | None = None) -> None:
            def keep(name: str) -> bool:
                return (preserve is not None and preserve(name)) or _installed_library(name)

            super().__init__(preserve=keep)

    # pytester looks the class up by this module-level name each time it takes a snapshot
    _pytest.pytester.SysModulesSnapshot = _KeepInstalledLibraries  # type: ignore[misc]


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, its runs under pytest-asyncio's loop scope set as this project's pyproject sets it:
    a user's project without an ini otherwise warns that ``asyncio_default_fixture_loop_scope`` is
    unset, once per run (pytester clears ``PYTEST_ADDOPTS`` when it starts, so it is set after)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-o asyncio_default_fixture_loop_scope=function")
    return pytester
