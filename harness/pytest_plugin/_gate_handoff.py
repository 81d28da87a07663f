"""Handing the plugin's request gate to openprogram without importing openprogram for it.

openprogram's guard asks the gates registered with ``openprogram.providers.register_request_gate``;
the plugin registers its own when pytest configures it. But the plugin is loaded in every pytest
session, also of projects that never use the loop, and importing ``openprogram.providers`` (pydantic
and the whole loop) only to register would make every such session pay for it. So the gate is
registered at once if ``openprogram.providers`` is already loaded, and otherwise as soon as it
is: noticed at the first import after the package has run, which comes before any backend can
send (the backends and their shared module are modules of their own, imported after the package).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

PROVIDERS = "openprogram.providers"
"""The package whose ``register_request_gate`` the gate is handed to."""


class _WhenLoaded:
    """A ``sys.meta_path`` finder that finds nothing: it only notices imports, and calls ``then``
    with the providers package at the first import that finds the package ready to register."""

    def __init__(self, then: Callable[[ModuleType], None]) -> None:
        self._then = then
        self._lock = threading.Lock()
        self._done = False

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> None:
        providers = sys.modules.get(PROVIDERS)
        if providers is None or not hasattr(providers, "register_request_gate"):
            return None
        with self._lock:
            if self._done:
                return None
            self._done = True
        self.remove()
        self._then(providers)
        return None

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def cancel(self) -> None:
        """Stop waiting: ``then`` is not called after this returns."""
        with self._lock:
            self._done = True
        self.remove()


def register_gate(gate: Callable[[], str | None], fake_base_urls: Sequence[str] = ()) -> Callable[[], None]:
    """Register ``gate`` (and the base URLs of the project's own doubles, from the
    ``harness_fake_base_urls`` ini option) with openprogram now or once it is loaded; returns what
    undoes it (it also stops waiting for openprogram, if it was still waiting)."""
    undo: list[Callable[[], None]] = []

    def register(providers: Any) -> None:
        undo.append(providers.register_request_gate(gate))
        undo.extend(providers.register_fake_base_url(url) for url in fake_base_urls)

    providers = sys.modules.get(PROVIDERS)
    watcher = None
    if providers is not None and hasattr(providers, "register_request_gate"):
        register(providers)
    else:
        watcher = _WhenLoaded(register)
        sys.meta_path.insert(0, watcher)

    def unregister() -> None:
        if watcher is not None:
            watcher.cancel()
        while undo:
            undo.pop()()

    return unregister
