"""A loopback server that speaks each provider's wire format from a script (see wire.py)."""

__all__: list[str] = []
