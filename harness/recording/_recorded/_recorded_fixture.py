"""What the ``recorded`` fixture gives a test: backends over the test's cassette, and its teardown.

The plugin (``harness.pytest_plugin``) opens the recording and finishes the fixture; here is what
a call builds and what finishing checks (unused interactions, a recording withheld on failure).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2

import harness.recording._clients as backends
from harness.recording._live import base_url_from_env
from harness.recording._recorded._cassette_recording import Recording
from harness.recording._recorded._cassette_transport import CassetteTransport
from harness.recording._recorded._recorded_backends import recorded_backend
from openprogram.providers import Provider


class RecordedFixture:
    """``recorded(provider, endpoint=None, *, model=None, stream=None, upstream=None, keys=None)`` -> a backend.

    Every backend of one test shares the test's cassette (``recorded.path``), in the session's
    record mode (``recorded.mode``). ``recorded.records`` says whether a request the cassette
    lacks would be sent: a test recording against the emulator starts it only then, so a
    replay needs no server. ``keys="env"`` records with the environment's credentials even
    against ``upstream`` (the default there is the harness's test key); a replay (record mode
    ``none``, or ``once`` with the cassette there) uses the test key whatever ``keys`` says.
    """

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.clients: list[backends.SDKClient] = []
        self.discarded: str | None = None

    @property
    def path(self) -> Path:
        return self.recording.path

    @property
    def mode(self) -> str:
        return self.recording.mode

    @property
    def records(self) -> bool:
        return self.recording.records

    def __call__(
        self,
        provider: str,
        endpoint: str | None = None,
        *,
        model: str | None = None,
        stream: bool | None = None,
        upstream: str | None = None,
        keys: backends.Keys | None = None,
        connection: backends.Connection | None = None,
    ) -> Provider:
        keep_in_step = None
        if upstream is None and connection is None and self.recording.records:
            # the provider's base-URL variable (OPENAI_BASE_URL...) says where a live request goes,
            # as live_backend reads it; the cassette still names the provider's host
            upstream = base_url_from_env(provider)
            keys = "env" if upstream is not None and keys is None else keys
            keep_in_step = False  # a gateway to the provider: never sent a request twice
        if connection is None and keys is not None:
            # a replay sends nothing, so it needs no key: CI replays with none in its environment
            live_keys = keys == "env" and self.recording.records
            connection = backends.Connection.from_env() if live_keys else backends.Connection.test()
        backend, client = recorded_backend(
            provider,
            self.recording,
            endpoint,
            model=model,
            stream=stream,
            upstream=upstream,
            connection=connection,
            keep_in_step=keep_in_step,
        )
        self.clients.append(client)
        return backend

    def http_client(self, *, upstream: str | None = None) -> httpx2.AsyncClient:
        """An ``httpx2.AsyncClient`` whose every request goes through the test's cassette, for an
        async SDK client no backend of this fixture builds (``AsyncAzureOpenAI``,
        ``AsyncAnthropicVertex``, ``AsyncAnthropicBedrock``: their ``http_client=``). Aim the client
        at its real host, as the cassette names it; a request the cassette lacks is recorded from
        ``upstream`` (the emulator's root: the request's path appended) or else from that host.
        The fixture closes it."""
        http = httpx2.AsyncClient(
            transport=CassetteTransport(self.recording, upstream, None), timeout=backends.TIMEOUT_SECONDS
        )
        self.clients.append(backends.SDKClient("http", http, http.aclose))
        return http

    def finish(self, *, failed: bool, keep_failed: bool = False) -> list[str]:
        """Close the clients, save or withhold the recording, check use; the problems that fail the test."""
        self._close_clients()
        recording = self.recording
        problems = [str(error) for error in recording.failures]
        if recording.dirty:
            if failed and not keep_failed:
                self.discarded = (
                    f"{recording.path}: the new recording was not saved because the test failed "
                    "(keep it with --harness-keep-failed-recordings or vcr_config keep_failed_recording=True)"
                )
            else:
                from harness.recording._scrub import CredentialLeakError

                try:
                    recording.save()
                except CredentialLeakError as exc:
                    problems.append(str(exc))
        checks_use = recording.mode in ("none", "once", "new_episodes") and not recording.allow_unused
        unused = recording.unused() if checks_use and not failed and not recording.failures else []
        if unused:
            listed = "\n".join(f"  - {entry}" for entry in unused)
            problems.append(
                f"{recording.path}: {len(unused)} of {recording.loaded} recorded interaction(s) were never "
                f"requested:\n{listed}\n(the code under test asked less than when it was recorded; re-record with "
                "--record-mode=rewrite, or allow it with vcr_config allow_unused=True or "
                "@pytest.mark.recorded(allow_unused=True))"
            )
        return problems

    def _close_clients(self) -> None:
        clients, self.clients = self.clients, []
        if not clients:
            return

        async def close_all() -> None:
            for client in clients:
                try:
                    await client.aclose()
                except Exception:  # a client bound to a loop that is gone has nothing left to release
                    pass

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(close_all())
        else:  # finishing inside a running loop (an async fixture's teardown): leave them to the GC
            return
