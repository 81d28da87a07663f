"""Record once, replay forever: vcrpy cassettes through the real backends, and the tools around them.

Lazy (``harness._lazy_exports``): the pytest plugin's record-replay options load with every session.
The way a replayed request goes: the ``recorded`` fixture (``harness.pytest_plugin._cassette_fixtures``)
-> ``open_recording`` (``_recorded/``) -> the SDK client of ``_clients`` over the cassette's
transport -> vcrpy's parts, the persister, matchers and streams (``_vcr/``), scrubbing
(``_scrub``) -> the openprogram backend. Around it: cassettes as data (``_cassette/``), how old one
may get (``_age``), what a recorded request said (``_transcript``), ``harness cassettes show /
to-scenario / drift`` (``_tools/``) and ``lint`` (``_lint``), third-party recordings through our
backends (``_conformance``, ``_legacy_vertex``), live backends (``_live``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import _lazy_exports

if TYPE_CHECKING:
    from harness.recording._age import CassetteAgeWarning
    from harness.recording._cassette import Body, Cassette, CassetteError, Request, load
    from harness.recording._clients import BackendError, MissingExtraError, backend, sdk_client
    from harness.recording._conformance import replay_cassette
    from harness.recording._lint import lint
    from harness.recording._live import LiveError, live_backend
    from harness.recording._recorded import (
        CassetteMismatchError,
        RecordingError,
        open_recording,
        recorded_backend,
        recorded_client,
    )
    from harness.recording._scrub import (
        CredentialLeakError,
        find_credentials,
        is_secret_header,
        redact,
        request_secrets,
    )
    from harness.recording._tools import ConversionError, read_steps, render_timeline, to_scenario
    from harness.recording._transcript import Call, Said, conversation, reasoning_entry
    from harness.recording._vcr import CassetteCorruptError

_EXPORTS = {
    "CassetteAgeWarning": "._age",
    "Body": "._cassette",
    "Cassette": "._cassette",
    "Request": "._cassette",
    "CassetteError": "._cassette",
    "load": "._cassette",
    "BackendError": "._clients",
    "MissingExtraError": "._clients",
    "backend": "._clients",
    "sdk_client": "._clients",
    "replay_cassette": "._conformance",
    "lint": "._lint",
    "LiveError": "._live",
    "live_backend": "._live",
    "CassetteMismatchError": "._recorded",
    "RecordingError": "._recorded",
    "open_recording": "._recorded",
    "recorded_backend": "._recorded",
    "recorded_client": "._recorded",
    "CredentialLeakError": "._scrub",
    "find_credentials": "._scrub",
    "is_secret_header": "._scrub",
    "redact": "._scrub",
    "request_secrets": "._scrub",
    "render_timeline": "._tools",
    "read_steps": "._tools",
    "ConversionError": "._tools",
    "to_scenario": "._tools",
    "CassetteCorruptError": "._vcr",
    "Call": "._transcript",
    "Said": "._transcript",
    "conversation": "._transcript",
    "reasoning_entry": "._transcript",
}
__all__ = [
    "BackendError",
    "Body",
    "Call",
    "Cassette",
    "CassetteAgeWarning",
    "CassetteCorruptError",
    "CassetteError",
    "CassetteMismatchError",
    "CredentialLeakError",
    "LiveError",
    "MissingExtraError",
    "RecordingError",
    "ConversionError",
    "Request",
    "Said",
    "backend",
    "conversation",
    "find_credentials",
    "is_secret_header",
    "lint",
    "live_backend",
    "load",
    "open_recording",
    "recorded_backend",
    "read_steps",
    "reasoning_entry",
    "recorded_client",
    "redact",
    "render_timeline",
    "replay_cassette",
    "request_secrets",
    "sdk_client",
    "to_scenario",
]
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
