"""Recorded backends: any real openprogram backend over a vcrpy cassette, recorded once, replayed forever.

A test talks to a provider once (a live one, or the loopback emulator), the exchange is saved as
a scrubbed vcrpy cassette, and every later run replays it offline, event by event. How:

- :func:`open_recording` opens one cassette (:class:`Recording`) in a record mode: vcrpy's
  ``none`` / ``once`` / ``new_episodes`` / ``all``, and ``rewrite``: record the whole cassette
  anew, the old file staying in place until the new one replaces it (atomically, and by
  default only when the test passes).
- :func:`recorded_backend` builds the real backend for ``(provider, endpoint)`` over an SDK
  client whose HTTP layer is the recording itself: an ``httpx2`` transport for OpenAI,
  Anthropic and Gemini, a botocore ``before-send`` handler for Bedrock. No global patching, so
  it works next to anything else a test does. The SDK always addresses the provider's real
  host; when recording, ``upstream`` (the emulator's base URL, say) is where requests are
  really sent. So the cassette names ``api.openai.com`` whether it was recorded against
  OpenAI or against ``127.0.0.1:53117``, and replays anywhere: the recorded URI is normalised
  at the source rather than matched loosely later.
- Replies reach the SDK split at their event boundaries (SSE events, AWS event-stream
  messages), while recording as on every replay: a streaming consumer sees the same events in
  the same order each time (vcrpy's own httpx stub joins a stream into one chunk, vcrpy#597).
- A request that matches no recorded one raises :class:`CassetteMismatchError`: the cassette,
  the request number and a unified diff against the closest recorded request.

One module per part: the recording and its mode (``_cassette_recording``), the SDKs' HTTP layer
over it (``_cassette_transport``), the backends built on those clients (``_recorded_backends``),
and the ``recorded`` fixture's calls and teardown (``_recorded_fixture``). The pytest workflow
(pytest-recording's ``--record-mode``) lives in ``harness.pytest_plugin``;
``docs/record-replay.md`` is the guide. Private to ``harness.recording``, whose facade re-exports
what users call.
"""

from harness.recording._recorded._cassette_recording import (
    HARNESS_KEYS,
    RECORD_MODES,
    CassetteMismatchError,
    Recording,
    RecordingError,
    open_recording,
)
from harness.recording._recorded._cassette_transport import CassetteTransport, attach_botocore
from harness.recording._recorded._recorded_backends import DEFAULT_ENDPOINTS, recorded_backend, recorded_client
from harness.recording._recorded._recorded_fixture import RecordedFixture

__all__ = [
    "DEFAULT_ENDPOINTS",
    "HARNESS_KEYS",
    "RECORD_MODES",
    "CassetteMismatchError",
    "CassetteTransport",
    "RecordedFixture",
    "Recording",
    "RecordingError",
    "attach_botocore",
    "open_recording",
    "recorded_backend",
    "recorded_client",
]
