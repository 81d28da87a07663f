"""Record and replay any process: ``harness proxy``, the ``recorded`` fixture's cassettes over loopback HTTP.

The fixture records and replays inside a Python test's own process; an agent in TypeScript or
Go, a CLI run as a subprocess or a service in another process reaches a model over HTTP, so the
proxy meets it there: one loopback port serving every provider's wire (``_proxy_server``) to
requests addressed to it, each body bounded, decoded and known to be JSON first (``_intake``),
answering from vcrpy cassettes chosen per request (``_cassette_select``), and forwarding what a
cassette lacks to the provider or an upstream when the record mode allows (``_forwarding``,
Bedrock signed again by ``_sigv4``). Matching, scrubbing, the pre-write scan, streams replayed
event by event and the cut-stream check are ``harness.recording``'s, unchanged.
docs/record-replay.md ("Record and replay any process") is the user's page.

Lazy (``harness._lazy_exports``): ``harness proxy`` imports it only when it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness import _lazy_exports

if TYPE_CHECKING:
    from harness.proxy._cassette_select import CASSETTE_HEADER, CASSETTE_PREFIX, CassetteChoiceError, Outcome
    from harness.proxy._proxy_server import NO_MATCH, Proxy, ProxyError
    from harness.proxy._sigv4 import SigningError

_EXPORTS = {
    "CASSETTE_HEADER": "._cassette_select",
    "CASSETTE_PREFIX": "._cassette_select",
    "CassetteChoiceError": "._cassette_select",
    "Outcome": "._cassette_select",
    "NO_MATCH": "._proxy_server",
    "Proxy": "._proxy_server",
    "ProxyError": "._proxy_server",
    "SigningError": "._sigv4",
}
__all__ = [
    "CASSETTE_HEADER",
    "CASSETTE_PREFIX",
    "NO_MATCH",
    "CassetteChoiceError",
    "Outcome",
    "Proxy",
    "ProxyError",
    "SigningError",
]
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)
