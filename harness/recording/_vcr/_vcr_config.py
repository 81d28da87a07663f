"""A ``vcr.VCR`` given the harness's parts: the serializer, matchers, persister, filters and stream stub.

:func:`configure_vcr` serves two callers alike: the recorded backend
(``harness.recording._recorded``, which drives a :class:`vcr.cassette.Cassette` through its own
SDK transports) and a project's plain ``@pytest.mark.vcr`` tests (pytest-recording's
``pytest_recording_configure`` hook calls it). vcrpy's httpx stub builds a response with the
whole body in one chunk; :func:`stream_replaying_httpx_response` stands in for it, so a stream
replays event by event there too: that much (:func:`replay_streams_by_event`) is all a project's
plain ``vcr`` marker gets unless it opts in, since it changes how a stream arrives, never what it
holds. :func:`record_refusals` tells the pytest plugin of every request a strict cassette refused.
vcrpy's private names are reached only through ``harness.recording._vcr._vcr_compat``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import harness.recording._vcr._vcr_compat as vcr_compat
from harness.recording._scrub import scrub_request, scrub_response
from harness.recording._vcr._vcr_matchers import MATCH_ON, json_body, safe_query
from harness.recording._vcr._vcr_persister import AtomicPersister
from harness.recording._vcr._vcr_streams import EventChunks, reply_parts
from harness.recording._vcr._vcr_yaml import READABLE_YAML


def stream_replaying_httpx_response(vcr_response: dict[str, Any], httpx: Any) -> Any:
    """A stand-in for vcrpy's httpx stub response builder: the body streamed event by event."""
    response = _ORIGINAL["deserialize"](vcr_response, httpx)
    _, chunks = reply_parts(vcr_response)
    if len(chunks) > 1:
        response.stream = EventChunks.for_httpx(httpx, chunks)
    return response


_ORIGINAL: dict[str, Callable[..., Any]] = {}


def replay_streams_by_event(vcr: Any) -> None:
    """Have every cassette of ``vcr`` hand httpx (or httpx2) a recorded stream event by event (vcrpy#597).

    vcrpy's httpx stub imports the HTTP library on first use, so this costs a project without it nothing.
    """
    stubs, builder = vcr_compat.httpx_response_builder()
    if builder is not stream_replaying_httpx_response:
        _ORIGINAL["deserialize"] = builder
    vcr_compat.add_custom_patch(vcr, stubs, "_deserialize_response", stream_replaying_httpx_response)


def record_refusals(vcr: Any, refused: Callable[[Exception], None]) -> None:
    """Tell ``refused`` of every ``CannotOverwriteExistingCassetteException`` a cassette of ``vcr`` raises.

    Each of vcrpy's stubs builds the exception itself, right before raising it, so its constructor
    is the one place that sees them all, as the instance raised: the caller can later tell from its
    traceback who caught it (the code under test, or the test). Patched only while a cassette of
    ``vcr`` is in use, through vcrpy's own ``custom_patches``.
    """
    from vcr.errors import CannotOverwriteExistingCassetteException as Refusal

    original = Refusal.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        refused(self)

    vcr_compat.add_custom_patch(vcr, Refusal, "__init__", init)


def configure_vcr(vcr: Any, *, persister: AtomicPersister | None = None) -> AtomicPersister:
    """Give a ``vcr.VCR`` the harness's additions; returns the persister now in front of its old one.

    What the project already configured wins where vcrpy lets it (its own ``match_on``,
    ``before_record_*`` filters); the persister's scrubbing and credential scan always run.
    """
    vcr.register_serializer("yaml", READABLE_YAML)
    vcr.register_matcher("harness_body", json_body)
    vcr.register_matcher("harness_query", safe_query)
    if tuple(vcr.match_on) == ("method", "scheme", "host", "port", "path", "query"):  # vcrpy's default
        vcr.match_on = MATCH_ON
    if vcr.before_record_request is None:
        vcr.before_record_request = scrub_request
    if vcr.before_record_response is None:
        vcr.before_record_response = scrub_response
    vcr.decode_compressed_response = True
    persister = persister or AtomicPersister()
    if persister.inner is None and not isinstance(vcr.persister, AtomicPersister):
        persister.inner = vcr.persister
    vcr.register_persister(persister)
    replay_streams_by_event(vcr)
    return persister
