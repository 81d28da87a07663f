"""harness: deterministic simulation and record-replay testing for the openprogram loop."""

from harness.script import ScriptedCall, ScriptedProvider, ScriptViolation, Turn, turn

__all__ = ["ScriptViolation", "ScriptedCall", "ScriptedProvider", "Turn", "turn"]
