"""Every private name of vcrpy the harness touches, in one place, each checked against the installed vcrpy.

vcrpy offers no public way to do five things record-replay needs: know how many interactions a
cassette held when it was opened (to report the unused ones), save a cassette the harness drives
itself (outside ``use_cassette``), add a patch to a ``VCR`` that pytest-recording already built
(its ``custom_patches`` are a constructor argument only), and reach the httpx stub's response
builder (to hand a recorded stream over event by event, vcrpy#597), and find a request's recorded
answer in one pass that skips the interactions already played (vcrpy matches every stored request,
played or not, three times per request, formatting each failed match's message as it goes). A
vcrpy release may rename any of them; when it does, the failure must name the name and the version, here and in
``tests/harness/recording/test_vcr_compat.py``, not surface as an ``AttributeError`` deep in a
replay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Final


class VcrCompatError(RuntimeError):
    """The installed vcrpy lacks a private name the harness relies on; the message names both."""


@dataclass(frozen=True)
class ReachIn:
    """One private vcrpy name: where it lives, and why the harness needs it."""

    owner: str
    name: str
    why: str
    since: str
    """The first vcrpy release that has it: pyproject's ``vcrpy>=`` floor is at least the latest of these."""

    def __str__(self) -> str:
        return f"{self.owner}.{self.name}"


REACH_INS: Final[tuple[ReachIn, ...]] = (
    ReachIn("vcr.cassette.Cassette", "_loaded_count", "which recorded interactions were never replayed", "9.0.0"),
    ReachIn("vcr.cassette.Cassette", "_save", "saving a cassette the recorded backend drives itself", "6.0.0"),
    ReachIn("vcr.config.VCR", "_custom_patches", "event-by-event streams under pytest-recording's vcr marker", "6.0.0"),
    ReachIn("vcr.stubs.httpx_stubs", "_deserialize_response", "the httpx stub's recorded response, to split", "9.0.0"),
    ReachIn(
        "vcr.cassette.Cassette", "_before_record_request", "replaying in one pass over unplayed interactions", "6.0.0"
    ),
    ReachIn("vcr.cassette.Cassette", "_match_on", "replaying in one pass over unplayed interactions", "6.0.0"),
    ReachIn("vcr.cassette.Cassette", "_played_interactions", "marking an interaction played (present by 9.0)", "9.0.0"),
)
"""What :func:`missing` checks; a new reach-in is added here and used through a function below."""


def vcrpy_version() -> str:
    try:
        return metadata.version("vcrpy")
    except metadata.PackageNotFoundError:  # vcrpy imported from a source tree
        return "unknown"


def _error(reach_in: ReachIn) -> VcrCompatError:
    return VcrCompatError(
        f"vcrpy {vcrpy_version()} has no {reach_in} (the harness uses it for {reach_in.why}); "
        "install a vcrpy the harness supports or update harness/recording/_vcr/_vcr_compat.py"
    )


def _probe_cassette() -> Any:
    from vcr.cassette import Cassette

    return Cassette("never-written.yaml", record_mode="none")


def _owner(reach_in: ReachIn) -> Any:
    if reach_in.owner == "vcr.cassette.Cassette":
        return _probe_cassette()  # _loaded_count is an instance attribute
    if reach_in.owner == "vcr.config.VCR":
        from vcr import VCR

        return VCR()
    from vcr.stubs import httpx_stubs

    return httpx_stubs


def missing() -> list[str]:
    """The reach-ins the installed vcrpy does not have, each as the message it would fail with."""
    return [str(_error(reach_in)) for reach_in in REACH_INS if not hasattr(_owner(reach_in), reach_in.name)]


def _get(owner: Any, index: int) -> Any:
    try:
        return getattr(owner, REACH_INS[index].name)
    except AttributeError:
        raise _error(REACH_INS[index]) from None


def loaded_count(cassette: Any) -> int:
    """How many interactions ``cassette`` held when it was loaded (the ones a replay should use)."""
    return int(_get(cassette, 0))


def save(cassette: Any) -> None:
    """Write ``cassette`` through its persister now (it writes only when something was recorded)."""
    _get(cassette, 1)()


def add_custom_patch(vcr: Any, target: Any, attribute: str, replacement: Any) -> None:
    """Have every cassette of ``vcr`` patch ``target.attribute`` with ``replacement`` (once)."""
    patches = tuple(_get(vcr, 2))
    entry = (target, attribute, replacement)
    if entry not in patches:
        vcr._custom_patches = (*patches, entry)


def httpx_response_builder() -> tuple[Any, Callable[..., Any]]:
    """vcrpy's httpx stub module and the function in it that builds a replayed response."""
    from vcr.stubs import httpx_stubs

    return httpx_stubs, _get(httpx_stubs, 3)


def play(cassette: Any, request: Any) -> Any | None:
    """vcrpy's ``can_play_response_for`` then ``play_response`` in one pass: the first interaction not yet
    played (any, with ``allow_playback_repeats``) whose request matches, marked played as vcrpy marks it;
    ``None`` when none does. Matchers stop at the first that fails and no failure message is formatted."""
    from vcr.record_mode import RecordMode

    if cassette.record_mode == RecordMode.ALL or not (cassette.rewound or cassette.allow_playback_repeats):
        return None
    filtered = _get(cassette, 4)(request)
    if not filtered:
        return None
    matchers, counts, repeats = _get(cassette, 5), cassette.play_counts, cassette.allow_playback_repeats
    for index, (stored, response) in enumerate(cassette.data):
        if (repeats or counts[index] == 0) and all(_matches(matcher, filtered, stored) for matcher in matchers):
            if counts[index] == 0 and index < loaded_count(cassette):
                _get(cassette, 6).append((stored, response))
            counts[index] += 1
            return response
    return None


def _matches(matcher: Callable[[Any, Any], Any], sent: Any, stored: Any) -> bool:
    try:
        result = matcher(sent, stored)
    except AssertionError:
        return False
    return result is None or bool(result)
