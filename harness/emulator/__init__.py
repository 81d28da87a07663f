"""A loopback server that speaks each provider's wire format from a script (see ``_wire``).

``Emulator(script)`` (``_server``) serves scripted turns and faults (``_faults``) through the
provider renderers (``_openai``, ``_anthropic``, ``_gemini``, ``_bedrock``), in process or on a port.
"""

from harness.emulator._faults import Fault, fault
from harness.emulator._server import PROVIDER_MODULES, Emulator, EmulatorTransport, serve

__all__ = ["PROVIDER_MODULES", "Emulator", "EmulatorTransport", "Fault", "fault", "serve"]
