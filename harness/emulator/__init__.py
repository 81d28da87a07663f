"""A loopback server that speaks each provider's wire format from a script (see wire.py).

``Emulator(script)`` (server.py) serves scripted turns and faults (faults.py) through the
provider renderers (``openai``, ``anthropic``, ``gemini``, ``bedrock``), in process or on a port.
"""

from harness.emulator.faults import Fault, fault
from harness.emulator.server import PROVIDER_MODULES, Emulator, EmulatorTransport, serve

__all__ = ["PROVIDER_MODULES", "Emulator", "EmulatorTransport", "Fault", "fault", "serve"]
