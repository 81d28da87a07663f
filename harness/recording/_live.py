"""Live backends from the environment: the real provider, a real key, behind the real-request guard.

A live run is the one place a test spends money and reaches the network, so everything it needs
comes from the environment the user chose to give it. Per provider, :data:`LIVE` names the
variables read (credentials: one set must be present; the rest optional):

- openai: ``OPENAI_API_KEY``; ``OPENAI_BASE_URL`` (the SDK's form, ending in ``/v1``);
  ``HARNESS_OPENAI_MODEL`` (default ``gpt-4o-mini``); ``HARNESS_OPENAI_ENDPOINT``
  (``chat.completions``, the default, or ``responses``).
- anthropic: ``ANTHROPIC_API_KEY``; ``ANTHROPIC_BASE_URL``; ``HARNESS_ANTHROPIC_MODEL``
  (default ``claude-3-5-haiku-latest``).
- gemini: ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``; ``GOOGLE_GEMINI_BASE_URL``;
  ``HARNESS_GEMINI_MODEL`` (default ``gemini-2.0-flash``); ``HARNESS_GEMINI_ENDPOINT``
  (``streamGenerateContent``, the default, or ``generateContent``).
- bedrock: ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY``, or ``AWS_PROFILE``;
  ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``; ``AWS_REGION`` (or ``AWS_DEFAULT_REGION``);
  ``HARNESS_BEDROCK_MODEL`` (default ``anthropic.claude-3-5-haiku-20241022-v1:0``);
  ``HARNESS_BEDROCK_ENDPOINT`` (``converse-stream``, the default, or ``converse``).

The base-URL variables are the SDKs' own (so a proxy the user already set up keeps working), and
they are also how a live test is pointed at the loopback emulator to check the wiring offline.
The keys are read by the SDKs themselves (``Connection.from_env()``): this module only checks that
they are there, so a missing key is a skip with a reason, not a 401 from the provider.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import harness.recording._clients as backends
from openprogram.providers import Provider


class LiveError(backends.BackendError):
    """A live backend cannot be built from this environment; the message names the variable."""


@dataclass(frozen=True)
class LiveProvider:
    """One row of :data:`LIVE`: the environment variables a live ``provider`` reads, and its defaults."""

    provider: str
    credentials: tuple[tuple[str, ...], ...]
    """Sets of variables; the environment must hold every variable of at least one set."""
    base_url_var: str
    model_var: str
    default_model: str
    default_endpoint: str
    endpoint_var: str | None = None

    def missing(self, environ: Mapping[str, str]) -> str | None:
        """What is missing, as a user would set it (``OPENAI_API_KEY``), or None when a set is complete."""
        if any(all(environ.get(name) for name in names) for names in self.credentials):
            return None
        return ", or ".join(" and ".join(names) for names in self.credentials)


LIVE: Final[Mapping[str, LiveProvider]] = {
    "openai": LiveProvider(
        "openai",
        (("OPENAI_API_KEY",),),
        "OPENAI_BASE_URL",
        "HARNESS_OPENAI_MODEL",
        "gpt-4o-mini",
        "chat.completions",
        "HARNESS_OPENAI_ENDPOINT",
    ),
    "anthropic": LiveProvider(
        "anthropic",
        (("ANTHROPIC_API_KEY",),),
        "ANTHROPIC_BASE_URL",
        "HARNESS_ANTHROPIC_MODEL",
        "claude-3-5-haiku-latest",
        "messages",
    ),
    "gemini": LiveProvider(
        "gemini",
        (("GEMINI_API_KEY",), ("GOOGLE_API_KEY",)),
        "GOOGLE_GEMINI_BASE_URL",
        "HARNESS_GEMINI_MODEL",
        "gemini-2.0-flash",
        "streamGenerateContent",
        "HARNESS_GEMINI_ENDPOINT",
    ),
    "bedrock": LiveProvider(
        "bedrock",
        (("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), ("AWS_PROFILE",)),
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "HARNESS_BEDROCK_MODEL",
        "anthropic.claude-3-5-haiku-20241022-v1:0",
        "converse-stream",
        "HARNESS_BEDROCK_ENDPOINT",
    ),
}
"""Provider -> the variables a live run of it reads (see the module docstring's table)."""


@dataclass(frozen=True)
class LiveSettings:
    """A live backend as the environment describes it: which endpoint and model, sent where."""

    provider: str
    endpoint: str
    model: str
    base_url: str | None
    region: str | None

    @property
    def connection(self) -> backends.Connection:
        """The environment's credentials, sent to ``base_url`` when one is set, else to the provider."""
        if self.base_url:
            return backends.Connection.at(self.base_url, keys="env", region=self.region)
        return backends.Connection.from_env(region=self.region)


def _row(provider: str) -> LiveProvider:
    row = LIVE.get(provider)
    if row is None:
        raise LiveError(f"no live backend for the provider {provider!r} (known: {', '.join(sorted(LIVE))})")
    return row


def missing_credentials(provider: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The credential variables a live ``provider`` still needs (``OPENAI_API_KEY``), or None."""
    return _row(provider).missing(os.environ if environ is None else environ)


def settings(
    provider: str,
    endpoint: str | None = None,
    *,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> LiveSettings:
    """What a live ``provider`` backend would be: arguments first, then the variables, then the defaults.

    Raises :class:`LiveError` for an unknown provider or endpoint, missing credentials, or an
    ``OPENAI_BASE_URL`` not in the SDK's ``.../v1`` form (the backends add ``/v1`` themselves).
    """
    environ = os.environ if environ is None else environ
    row = _row(provider)
    missing = row.missing(environ)
    if missing is not None:
        raise LiveError(f"a live {provider} backend needs {missing} in the environment")
    chosen = endpoint or (environ.get(row.endpoint_var) if row.endpoint_var else None) or row.default_endpoint
    known = backends.PROVIDERS[provider].backends
    if chosen not in known:
        where = "" if endpoint else f" (from {row.endpoint_var})"
        raise LiveError(f"no {provider} endpoint {chosen!r}{where}; known: {', '.join(sorted(known))}")
    base_url = base_url_from_env(provider, environ)
    region = (environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")) if provider == "bedrock" else None
    return LiveSettings(provider, chosen, model or environ.get(row.model_var) or row.default_model, base_url, region)


def live_backend(
    provider: str = "openai",
    endpoint: str | None = None,
    *,
    model: str | None = None,
    stream: bool | None = None,
) -> Provider:
    """The real ``provider`` backend, configured from the environment (see :func:`settings`).

    The backend builds its SDK clients itself, one per event loop, so it also serves a nested
    ``runtime.exec``. Inside a pytest test it sends only when the test is a live test run with
    ``--live`` (the real-request guard); a loopback base URL is always let through.
    """
    chosen = settings(provider, endpoint, model=model)
    return backends.backend(
        chosen.provider, chosen.endpoint, model=chosen.model, stream=stream, connection=chosen.connection
    )


def base_url_from_env(provider: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Where the environment sends ``provider``'s requests instead of its host (``OPENAI_BASE_URL``...),
    as the server's root (the OpenAI SDK's ``/v1`` taken off), or None; the recorder honours it too."""
    environ = os.environ if environ is None else environ
    row = LIVE.get(provider)
    base_url = (environ.get(row.base_url_var) or "").strip().rstrip("/") or None if row else None
    if base_url is not None and provider == "openai":
        if not base_url.endswith("/v1"):
            raise LiveError(f"OPENAI_BASE_URL={base_url!r}: expected the OpenAI SDK's form, ending in /v1")
        base_url = base_url.removesuffix("/v1")
    return base_url
