"""Wire fakes of the four providers, one module each, and the helpers their tests share.

Each fake queues what the provider's server would send (JSON bodies, SSE events or AWS
event-stream frames, error statuses with the provider's own error body), records the requests it
received, and hands out a real SDK client wired to it, so the backends are tested through the
SDK exactly as they run. Kept apart from the tests so they can be promoted to ``harness.emulator``.
"""
