"""``(provider, endpoint)`` -> an official SDK client and the openprogram backend over it.

Replaying cassettes, recording them, running live and talking to a loopback emulator all need
the same thing: the real backend class for an endpoint, over a real SDK client that was built
the harness's way. Built the harness's way means one HTTP request per call (no SDK retries: a
retry would find no recording, make a live recording hold two exchanges for one call, and hide
an emulated fault) and a fixed timeout. What differs between the uses is only where the
credentials come from and which URL the SDK talks to, and that is a :class:`Connection`:

- ``Connection.test()``: fake credentials, for replay and the emulator (nothing real is spent);
- ``Connection.from_env()``: the SDKs' own environment (``OPENAI_API_KEY``...), for live use;
- ``Connection.at(base_url)``: test credentials, sent to ``base_url`` instead of the provider.

What each provider needs is in one table, :data:`PROVIDERS`. The Gemini and Bedrock SDKs are
optional extras; asking for one that is not installed raises :class:`MissingExtraError` naming
the extra to install.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypedDict, Unpack

import harness.wire as wire
from openprogram.providers import Provider

TEST_KEY: Final = "harness-test-key"
"""The API key (and AWS key pair, and Vertex token) of test connections: accepted by every SDK, valid nowhere."""

TIMEOUT_SECONDS: Final = 30.0
"""The timeout of every client: fixed, so a hung emulator or provider fails a test instead of stalling it."""

GEMINI_URL: Final = "https://generativelanguage.googleapis.com/"
"""The Gemini Developer API's host, named to the SDK so no environment variable redirects a recorded client."""

Keys = Literal["test", "env"]


class BackendError(Exception):
    """No backend can be built for what was asked (unknown endpoint, missing key, bad connection)."""


class MissingExtraError(BackendError, ImportError):
    """The provider's SDK is an optional extra that is not installed; the message names the extra."""


class Where(TypedDict, total=False):
    """Which deployment of a provider a :class:`Connection` names (its fields, keyword-only)."""

    region: str | None
    vertex: bool
    project: str | None
    api_version: str | None


@dataclass(frozen=True)
class Connection:
    """Where an SDK client sends its requests, with which credentials.

    ``base_url`` is the server's root: the SDK sends the same path it sends to the provider's own
    host (``/v1/chat/completions``, ``/v1/messages``, ``/v1beta/models/M:generateContent``,
    ``/model/M/converse``), so one server can stand in for every provider. ``region`` is the
    Bedrock region or the Vertex location; ``vertex``, ``project`` and ``api_version`` choose the
    Gemini API (Developer API ``v1beta`` unless told otherwise).
    """

    keys: Keys = "test"
    base_url: str | None = None
    region: str | None = None
    vertex: bool = False
    project: str | None = None
    api_version: str | None = None

    @classmethod
    def test(cls, **where: Unpack[Where]) -> Connection:
        """Fake credentials and the provider's real URL: what a vcrpy replay answers."""
        return cls("test", None, **where)

    @classmethod
    def from_env(cls, **where: Unpack[Where]) -> Connection:
        """Real credentials from the environment, as each SDK reads them: for live runs only."""
        return cls("env", None, **where)

    @classmethod
    def at(cls, base_url: str, *, keys: Keys = "test", **where: Unpack[Where]) -> Connection:
        """Fake credentials (unless ``keys="env"``), sent to ``base_url`` (a loopback emulator), not the provider."""
        return cls(keys, base_url.rstrip("/"), **where)


@dataclass(frozen=True)
class SDKClient:
    """An SDK client the caller owns, with the coroutine that releases it (await ``aclose()``)."""

    provider: str
    client: Any
    close: Callable[[], Awaitable[None]] = field(repr=False, compare=False)

    async def aclose(self) -> None:
        await self.close()


@dataclass(frozen=True)
class ProviderNeeds:
    """One row of :data:`PROVIDERS`: what it takes to build this provider's client and backends."""

    module: str
    """The openprogram module holding the backend classes."""
    backends: Mapping[str, tuple[str, bool | None]]
    """Endpoint -> (backend class name in ``module``, whether the endpoint streams; ``None``: the caller says)."""
    sdk: str
    """The SDK module that must import (checked first, so a missing extra is named as such)."""
    extra: str | None
    """The optional extra that installs ``sdk``; ``None`` for SDKs openprogram always installs."""
    env_keys: tuple[str, ...]
    """Environment variables of which ``Connection.from_env()`` needs one (empty: the SDK's own chain)."""
    kwargs: Callable[[Connection], dict[str, Any]] = field(repr=False)
    """The SDK client's keyword arguments for a connection."""
    build: Callable[[dict[str, Any]], SDKClient] = field(repr=False)
    """A client from those arguments."""


# ---------------------------------------------------------------------------------------------
# Per provider: client arguments (test key | env | base_url) and how to build and close a client.
# ---------------------------------------------------------------------------------------------


def _openai_kwargs(connection: Connection) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"max_retries": 0, "timeout": TIMEOUT_SECONDS}
    if connection.keys == "test":
        kwargs["api_key"] = TEST_KEY
    kwargs["base_url"] = f"{connection.base_url or 'https://api.openai.com'}/v1"
    return kwargs


def _openai_client(kwargs: dict[str, Any]) -> SDKClient:
    import openai

    client = openai.AsyncOpenAI(**kwargs)
    return SDKClient("openai", client, client.close)


def _anthropic_kwargs(connection: Connection) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"max_retries": 0, "timeout": TIMEOUT_SECONDS}
    if connection.keys == "test":
        kwargs["api_key"] = TEST_KEY
    kwargs["base_url"] = connection.base_url or "https://api.anthropic.com"
    return kwargs


def _anthropic_client(kwargs: dict[str, Any]) -> SDKClient:
    import anthropic

    client = anthropic.AsyncAnthropic(**kwargs)
    return SDKClient("anthropic", client, client.close)


def _gemini_kwargs(connection: Connection) -> dict[str, Any]:
    http_options: dict[str, Any] = {
        "retry_options": {"attempts": 1},
        "timeout": int(TIMEOUT_SECONDS * 1000),  # google-genai counts milliseconds
        "api_version": connection.api_version or ("v1" if connection.vertex else "v1beta"),
    }
    if connection.base_url:
        http_options["base_url"] = connection.base_url + "/"
    elif not connection.vertex:  # else google-genai reads GOOGLE_GEMINI_BASE_URL itself, and a cassette
        http_options["base_url"] = GEMINI_URL  # recorded through a proxy would name the proxy, not the provider
    kwargs: dict[str, Any] = {"http_options": http_options}
    test = connection.keys == "test"
    if not connection.vertex:
        return {**kwargs, "api_key": TEST_KEY} if test else kwargs
    kwargs["vertexai"] = True
    if connection.project:  # a project's regional endpoint, with OAuth credentials
        kwargs["project"] = connection.project
        if connection.region or test:
            kwargs["location"] = connection.region or "us-central1"
        if test:
            from google.oauth2.credentials import Credentials

            # google-auth ships no annotations on Credentials.__init__
            kwargs["credentials"] = Credentials(token=TEST_KEY)  # type: ignore[no-untyped-call]  # a token with no expiry is never refreshed
    elif test:  # express mode: an API key and the global endpoint, no project in the path
        kwargs["api_key"] = TEST_KEY
    elif connection.region:
        kwargs["location"] = connection.region
    return kwargs


def _gemini_client(kwargs: dict[str, Any]) -> SDKClient:
    from google import genai

    client = genai.Client(**kwargs)
    return SDKClient("gemini", client, client.aio.aclose)


def _bedrock_kwargs(connection: Connection) -> dict[str, Any]:
    from botocore.config import Config

    kwargs: dict[str, Any] = {
        "config": Config(
            # total_max_attempts counts the first request; botocore's max_attempts would still allow a retry
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=TIMEOUT_SECONDS,
            read_timeout=TIMEOUT_SECONDS,
        )
    }
    region = connection.region or ("us-east-1" if connection.keys == "test" else None)
    if region:  # from the environment, boto3 finds the region itself (AWS_REGION, the config file)
        kwargs["region_name"] = region
    if connection.keys == "test":
        kwargs["aws_access_key_id"] = TEST_KEY
        kwargs["aws_secret_access_key"] = TEST_KEY
    if connection.base_url:
        kwargs["endpoint_url"] = connection.base_url
    return kwargs


def _bedrock_client(kwargs: dict[str, Any]) -> SDKClient:
    import boto3

    client = boto3.client("bedrock-runtime", **kwargs)

    async def close() -> None:
        client.close()

    return SDKClient("bedrock", client, close)


PROVIDERS: Final[Mapping[str, ProviderNeeds]] = {
    "openai": ProviderNeeds(
        module="openprogram.providers.openai",
        backends={"chat.completions": ("OpenAIChatProvider", None), "responses": ("OpenAIResponsesProvider", None)},
        sdk="openai",
        extra=None,
        env_keys=("OPENAI_API_KEY",),
        kwargs=_openai_kwargs,
        build=_openai_client,
    ),
    "anthropic": ProviderNeeds(
        module="openprogram.providers.anthropic",
        backends={"messages": ("AnthropicProvider", None)},
        sdk="anthropic",
        extra=None,
        env_keys=("ANTHROPIC_API_KEY",),
        kwargs=_anthropic_kwargs,
        build=_anthropic_client,
    ),
    "gemini": ProviderNeeds(
        module="openprogram.providers.gemini",
        backends={"generateContent": ("GeminiProvider", False), "streamGenerateContent": ("GeminiProvider", True)},
        sdk="google.genai",
        extra="gemini",
        env_keys=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        kwargs=_gemini_kwargs,
        build=_gemini_client,
    ),
    "bedrock": ProviderNeeds(
        module="openprogram.providers.bedrock",
        backends={"converse": ("BedrockProvider", False), "converse-stream": ("BedrockProvider", True)},
        sdk="boto3",
        extra="bedrock",
        env_keys=(),
        kwargs=_bedrock_kwargs,
        build=_bedrock_client,
    ),
}
"""Provider -> what it needs. Every ``(provider, endpoint)`` pair of ``harness.wire.ENDPOINTS`` is here."""


# ---------------------------------------------------------------------------------------------
# The public way in.
# ---------------------------------------------------------------------------------------------


def _needs(provider: str) -> ProviderNeeds:
    needs = PROVIDERS.get(provider)
    if needs is None:
        raise BackendError(f"no backend for the provider {provider!r} (known: {', '.join(sorted(PROVIDERS))})")
    try:
        importlib.import_module(needs.sdk)
    except ImportError as exc:
        if needs.extra is None:
            raise BackendError(f"the {provider} backend needs the {needs.sdk} SDK: {exc}") from exc
        raise MissingExtraError(
            f'the {provider} backend needs the optional extra "{needs.extra}" ({needs.sdk} is not installed):'
            f' pip install -e ".[{needs.extra}]" in the openprogram checkout'
        ) from exc
    return needs


def client_kwargs(provider: str, connection: Connection | None = None) -> dict[str, Any]:
    """The SDK client's keyword arguments for ``connection`` (default: ``Connection.test()``).

    Raises :class:`BackendError` when a live connection lacks the provider's key in the
    environment (naming the variables), and :class:`MissingExtraError` when the SDK is absent.
    """
    connection = connection or Connection.test()
    needs = _needs(provider)
    vertex = provider == "gemini" and connection.vertex  # Vertex takes Google's default credentials, not a key
    if connection.keys == "env" and needs.env_keys and not vertex:
        if not any(os.environ.get(name) for name in needs.env_keys):
            raise BackendError(f"a live {provider} connection needs {' or '.join(needs.env_keys)} in the environment")
    return needs.kwargs(connection)


def sdk_client(provider: str, connection: Connection | None = None) -> SDKClient:
    """A new SDK client for ``connection``; the caller closes it (``await client.aclose()``).

    Build it inside the event loop that will use it: the async clients bind to their loop.
    """
    kwargs = client_kwargs(provider, connection)
    return PROVIDERS[provider].build(kwargs)


def backend(
    provider: str,
    endpoint: str,
    *,
    model: str | None = None,
    stream: bool | None = None,
    client: SDKClient | None = None,
    connection: Connection | None = None,
) -> Provider:
    """The openprogram backend for ``(provider, endpoint)``.

    ``stream`` defaults to what the endpoint does (``streamGenerateContent`` and ``converse-stream``
    stream, their siblings do not) and to streaming where the request decides (OpenAI, Anthropic).
    Over ``client`` when one is given (the caller owns it); otherwise the backend builds its own
    clients from ``connection`` (default: ``Connection.test()``), one per event loop, as
    openprogram's backends do for a nested ``runtime.exec``.
    """
    needs = _needs(provider)
    if endpoint not in needs.backends:
        known = ", ".join(sorted(needs.backends))
        raise BackendError(f"no {provider} backend for the endpoint {endpoint!r} (known: {known})")
    class_name, streams = needs.backends[endpoint]
    if streams is not None and stream is not None and stream != streams:
        raise BackendError(f"the {provider} endpoint {endpoint} {'always' if streams else 'never'} streams")
    if client is not None and client.provider != provider:
        raise BackendError(f"a client for {client.provider} cannot serve the {provider} backend")
    try:
        backend_class = getattr(importlib.import_module(needs.module), class_name)
    except (ImportError, AttributeError) as exc:
        raise BackendError(f"no {provider} backend ({needs.module}.{class_name}): {exc}") from exc
    stream = stream if stream is not None else streams if streams is not None else True
    made: Provider
    if client is not None:
        made = backend_class(client.client, model=model, stream=stream)
    else:
        made = backend_class(model=model, stream=stream, **client_kwargs(provider, connection))
    return made


def surface_client(destination: wire.Destination) -> SDKClient | None:
    """A test-key client for another service's paths of a wire where the provider's own client
    cannot send them (Azure OpenAI's deployments and ``/openai/responses``: ``AzureOpenAI``;
    Claude on Vertex AI: ``AnthropicVertex``; Anthropic's ``/messages`` at the root, which only
    the AI SDK sends: Anthropic's client with its path moved there), aimed at the recorded server; ``None`` elsewhere
    (a prefix such as OpenRouter's is the provider's client at :func:`harness.wire.surface_prefix`).
    openprogram's OpenAI and Anthropic backends take these clients as they are."""
    if destination.surface == "azure":
        import openai

        azure = openai.AsyncAzureOpenAI(
            api_key=TEST_KEY,
            azure_endpoint=destination.base_url or "",
            api_version=destination.api_version or "",
            max_retries=0,
            timeout=TIMEOUT_SECONDS,
        )
        return SDKClient("openai", azure, azure.close)
    if destination.surface == "vertex":
        import anthropic

        root = destination.base_url
        vertex = anthropic.AsyncAnthropicVertex(
            region=destination.region or "global",
            project_id=destination.project or "",
            access_token=TEST_KEY,
            base_url=f"{root}/{destination.api_version or 'v1'}" if root else None,
            max_retries=0,
            timeout=TIMEOUT_SECONDS,
        )
        return SDKClient("anthropic", vertex, vertex.close)
    if destination.surface == "root":  # the AI SDK's path; Anthropic's Python SDK always sends /v1/messages
        import anthropic
        import httpx2

        async def at_root(request: httpx2.Request) -> None:
            request.url = request.url.copy_with(path=request.url.path.removeprefix("/v1"))

        http = httpx2.AsyncClient(event_hooks={"request": [at_root]}, timeout=TIMEOUT_SECONDS)
        at_the_root = anthropic.AsyncAnthropic(
            api_key=TEST_KEY,
            base_url=destination.base_url or "https://api.anthropic.com",
            http_client=http,
            max_retries=0,
        )
        return SDKClient("anthropic", at_the_root, at_the_root.close)
    return None
