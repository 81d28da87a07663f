"""The real openprogram backend for ``(provider, endpoint)`` over an SDK client whose HTTP layer is a recording."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import httpx2

import harness.recording._clients as backends
from harness.recording._recorded._cassette_recording import Recording, RecordingError
from harness.recording._recorded._cassette_transport import CassetteTransport, attach_botocore
from openprogram.providers import Provider

DEFAULT_ENDPOINTS: Final[Mapping[str, str]] = {
    "openai": "chat.completions",
    "anthropic": "messages",
    "gemini": "generateContent",
    "bedrock": "converse",
}
"""The endpoint ``recorded(provider)`` means when none is named."""


def recorded_client(
    provider: str,
    recording: Recording,
    *,
    upstream: str | None = None,
    connection: backends.Connection | None = None,
    keep_in_step: bool | None = None,
) -> backends.SDKClient:
    """An SDK client for ``provider`` whose every request goes through ``recording``.

    ``connection`` chooses credentials and the provider's URL (default: test keys when replaying
    or recording against ``upstream``, the environment's keys when recording from the provider);
    its ``base_url`` must be unset, since the SDK must address the real host. ``keep_in_step``:
    in ``new_episodes``, send ``upstream`` the requests the cassette answered before the next new
    one, so a scripted upstream answers it with the turn that follows them (default: when
    ``upstream`` is on loopback).
    """
    if connection is None:
        live = recording.records and upstream is None
        connection = backends.Connection.from_env() if live else backends.Connection.test()
    if connection.base_url:
        raise RecordingError("a recorded backend addresses the provider itself; pass the emulator as upstream=")
    if provider == "bedrock":
        sdk = backends.sdk_client("bedrock", connection)
        attach_botocore(sdk.client, recording, upstream, keep_in_step)
        return sdk
    kwargs = backends.client_kwargs(provider, connection)
    transport = CassetteTransport(recording, upstream, keep_in_step)
    http = httpx2.AsyncClient(transport=transport, timeout=backends.TIMEOUT_SECONDS)
    if provider == "gemini":
        kwargs["http_options"] = {**kwargs["http_options"], "httpx_async_client": http}
    else:
        kwargs["http_client"] = http
    built = backends.PROVIDERS[provider].build(kwargs)

    async def close() -> None:
        await built.aclose()
        await http.aclose()

    return backends.SDKClient(provider, built.client, close)


def recorded_backend(
    provider: str,
    recording: Recording,
    endpoint: str | None = None,
    *,
    model: str | None = None,
    stream: bool | None = None,
    upstream: str | None = None,
    connection: backends.Connection | None = None,
    keep_in_step: bool | None = None,
) -> tuple[Provider, backends.SDKClient]:
    """The real backend for ``(provider, endpoint)`` over :func:`recorded_client`, and that client (to close)."""
    if provider not in backends.PROVIDERS:
        raise RecordingError(
            f"no backend for the provider {provider!r} (known: {', '.join(sorted(backends.PROVIDERS))})"
        )
    endpoint = endpoint or DEFAULT_ENDPOINTS[provider]
    if stream and provider == "gemini" and endpoint == "generateContent":
        endpoint = "streamGenerateContent"
    if stream and provider == "bedrock" and endpoint == "converse":
        endpoint = "converse-stream"
    client = recorded_client(provider, recording, upstream=upstream, connection=connection, keep_in_step=keep_in_step)
    return backends.backend(provider, endpoint, model=model, stream=stream, client=client), client
