"""Live runs: the ``--live`` option, the ``live`` marker and the ``live_backend`` fixture.

A live test is one marked ``@pytest.mark.live(*providers)`` (no argument: openai) or using
``live_backend``. It runs only when ``--live`` is given and every provider it names has its
credentials in the environment (``harness.recording._live``); otherwise it is skipped with a reason
naming what is missing. The real-request guard lets a live test through when it runs, and no
other test, --live or not.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

_LIVE_MARK = "live"
_LIVE_FIXTURE = "live_backend"
_LIVE_DEFAULT_PROVIDER = "openai"
MARKERS = (
    "live(*providers): the test talks to live model providers (default openai); it runs only with --live "
    "and their credentials in the environment, and then the real-request guard lets it through",
)
"""The marker these runs read, as ``pytest_configure`` registers it."""


def add_options(group: Any) -> None:
    group.addoption(
        "--live",
        dest="harness_live",
        action="store_true",
        default=False,
        help=(
            "run live tests (@pytest.mark.live, the live_backend fixture) against real providers, with the "
            "credentials in the environment (OPENAI_API_KEY...); without it they are skipped"
        ),
    )


def _live_providers(item: pytest.Item) -> tuple[str, ...] | None:
    """The providers a live test talks to, in order, or None for a test that is not live."""
    marker = item.get_closest_marker(_LIVE_MARK)
    if marker is None:
        return (_LIVE_DEFAULT_PROVIDER,) if _LIVE_FIXTURE in getattr(item, "fixturenames", ()) else None
    named = list(marker.args) + ([marker.kwargs["provider"]] if "provider" in marker.kwargs else [])
    return tuple(str(name) for name in named) or (_LIVE_DEFAULT_PROVIDER,)


def _live_skip_reason(item: pytest.Item) -> str | None:
    """Why a live test may not run (``needs --live and OPENAI_API_KEY``), or None when it may.

    Raises ``LookupError`` for a provider name ``harness.recording._live`` does not know."""
    providers = _live_providers(item)
    if providers is None:
        return None
    from harness.recording._live import LIVE

    missing = [] if item.config.getoption("harness_live", False) else ["--live"]
    for name in providers:
        if name not in LIVE:
            raise LookupError(f"@pytest.mark.live({name!r}): no such provider (known: {', '.join(sorted(LIVE))})")
        needs = LIVE[name].missing(os.environ)
        if needs is not None:
            missing.append(needs)
    return "live test: needs " + " and ".join(missing) if missing else None


def live_allowed_by(item: pytest.Item) -> str | None:
    """What lets a live test through the guard (``--live``), or None (not live, or it may not run)."""
    try:
        if _live_providers(item) is None or _live_skip_reason(item) is not None:
            return None
    except LookupError:
        return None
    return "@pytest.mark.live with --live"


class LiveRuns:
    """The live runs' hooks, as a plugin object of their own (registered by the plugin's
    ``pytest_configure``), so they add to hooks of the same name on the entry point module instead of
    replacing them."""

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Mark a live test skipped unless --live and its credentials are there (a skip marker, so
        the report points at the test, not at this plugin)."""
        for item in items:
            try:
                reason = _live_skip_reason(item)
            except LookupError:
                continue  # failed, naming the provider, when the test sets up
            if reason is not None:
                item.add_marker(pytest.mark.skip(reason=reason))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Fail a live test naming a provider harness.recording._live does not know, before its fixtures run."""
        try:
            _live_skip_reason(item)
        except LookupError as exc:
            pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def live_backend(request: pytest.FixtureRequest) -> Any:
    """The real backend of the test's first live provider (default openai), built from the
    environment by ``harness.recording._live.live_backend``: keys, ``*_BASE_URL``, ``HARNESS_*_MODEL``."""
    from harness.recording import LiveError
    from harness.recording import live_backend as build

    providers = _live_providers(request.node) or (_LIVE_DEFAULT_PROVIDER,)
    try:
        return build(providers[0])
    except LiveError as exc:
        pytest.fail(f"live_backend: {exc}", pytrace=False)
