"""A loopback server that speaks each provider's wire format from a script (see ``_exchange``).

``Emulator(script)`` (``_server``) serves scripted turns and faults (``_faults``) through the
provider renderers (``_openai``, ``_anthropic``, ``_gemini``, ``_bedrock``), in process or on a port;
``Emulator.from_file(path)`` serves a scenario file's turns (``_scenario_file``), and every request
received is journaled (``_journal``); ``_loopback`` is how it listens and whom it answers (shared
with ``harness.proxy``).
docs/emulator.md is the user's page.
"""

from harness.emulator._anthropic import signature_of as thinking_signature
from harness.emulator._bedrock import reasoning_signature
from harness.emulator._exchange import IdSource, WireReply, WireRequest
from harness.emulator._faults import Fault, ending, fault
from harness.emulator._gemini import call_signature
from harness.emulator._loopback import FrontDoor, LoopbackServer, is_loopback, remote_warning
from harness.emulator._openai import reasoning_item
from harness.emulator._scenario_file import script_of
from harness.emulator._scripted import opaque
from harness.emulator._server import PROVIDER_MODULES, Emulator, EmulatorTransport, serve

__all__ = [
    "PROVIDER_MODULES",
    "Emulator",
    "EmulatorTransport",
    "Fault",
    "FrontDoor",
    "IdSource",
    "LoopbackServer",
    "WireReply",
    "WireRequest",
    "ending",
    "fault",
    "is_loopback",
    "opaque",
    "reasoning_item",
    "reasoning_signature",
    "remote_warning",
    "script_of",
    "serve",
    "thinking_signature",
    "call_signature",
]
