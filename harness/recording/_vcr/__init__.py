"""vcrpy's extension points, one module each, as vcrpy keeps its own ``stubs``, ``persisters``, ``serializers``.

Each part plugs into vcrpy where vcrpy lets it, so the recorded backend and a project's plain
``@pytest.mark.vcr`` tests get the same behaviour: the readable YAML serializer (``_vcr_yaml``),
the strict, scanning, atomic persister (``_vcr_persister``), the honest matchers
(``_vcr_matchers``), a reply handed over as its events (``_vcr_streams``), and the configuration
that installs them all on a ``vcr.VCR`` (``_vcr_config``). Every private name of vcrpy is reached
from ``_vcr_compat`` alone, each pinned by a test. This package is private to ``harness.recording``;
its names are re-exported here for the modules of recording and the pytest plugin.
"""

from harness.recording._vcr._vcr_config import (
    configure_vcr,
    record_refusals,
    replay_streams_by_event,
    stream_replaying_httpx_response,
)
from harness.recording._vcr._vcr_matchers import (
    MATCH_ON,
    VOLATILE_FIELDS,
    first_difference,
    json_body,
    normalized_body,
    request_text,
    safe_query,
)
from harness.recording._vcr._vcr_persister import AtomicPersister, CassetteCorruptError
from harness.recording._vcr._vcr_streams import (
    CutStreamError,
    EventChunks,
    cut_stream_error,
    cut_tail,
    event_chunks,
    reply_parts,
    stream_cut,
)
from harness.recording._vcr._vcr_yaml import READABLE_YAML

__all__ = [
    "MATCH_ON",
    "READABLE_YAML",
    "VOLATILE_FIELDS",
    "AtomicPersister",
    "CassetteCorruptError",
    "CutStreamError",
    "EventChunks",
    "configure_vcr",
    "cut_stream_error",
    "cut_tail",
    "event_chunks",
    "first_difference",
    "json_body",
    "normalized_body",
    "record_refusals",
    "replay_streams_by_event",
    "reply_parts",
    "request_text",
    "safe_query",
    "stream_cut",
    "stream_replaying_httpx_response",
]
