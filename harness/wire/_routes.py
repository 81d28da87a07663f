"""The routes of every provider's wire, in one table, and reading a request's URL back into one.

One :class:`Route` per ``(provider, endpoint, path)``: the emulator serves exactly these paths,
recording routes a recorded request to one of them (by the provider's own host, else by the
path, so a request sent to the emulator, a proxy or a gateway reads too), and the SDK client
table covers exactly their ``(provider, endpoint)`` pairs. ``stream`` says whether the path alone
decides streaming (Gemini's ``:streamGenerateContent``, Bedrock's ``converse-stream``) or the
body's ``"stream": true`` does (``None``). ``surface`` names another service that serves a wire
under its own paths (Azure OpenAI, OpenRouter, Groq, Anthropic at the root, Claude on Vertex AI):
the same codec, read only as the whole path.

A recorded URL read back is a :class:`Destination`: the route's provider and endpoint plus what
the URL fixes about the call (model, region, Vertex project, API version, a base URL that is not
the provider's own).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit


@dataclass(frozen=True)
class Route:
    """A path one provider endpoint answers, in starlette's syntax (``/{version}/models/{model}:...``)."""

    provider: str
    endpoint: str
    method: str
    path: str
    stream: bool | None = None
    """True or False where the path decides streaming, ``None`` where the request body does."""
    surface: str = ""
    """Another service's path for the same wire, empty for the provider's own: ``azure`` (Azure
    OpenAI's deployments), ``openai-v1`` (Azure's v1 API and Groq), ``openrouter``, ``root``
    (Anthropic's Messages at the server's root), ``vertex`` (Claude on Vertex AI). It decides
    where the proxy may forward (:data:`SURFACE_HOSTS`) and what each SDK is told to set."""
    provider_path: str = ""
    """The path the provider's own host answers this route at, where it is not the route's own:
    Anthropic's Messages at the root (``/messages``, what the AI SDK sends to a base URL without
    ``/v1``) is ``/v1/messages`` at api.anthropic.com. Empty: the path as sent."""


_GEMINI_METHODS: Final = ("generateContent", "streamGenerateContent")
_GEMINI_PREFIXES: Final = (  # Developer API, Vertex AI with a project, Vertex express mode
    "/{version}/models/{model}",
    "/{version}/projects/{project}/locations/{location}/publishers/google/models/{model}",
    "/{version}/publishers/google/models/{model}",
)

_CLAUDE_ON_VERTEX: Final = "/{version}/projects/{project}/locations/{location}/publishers/anthropic/models/{model}"

ROUTES: Final[tuple[Route, ...]] = (
    Route("openai", "chat.completions", "POST", "/v1/chat/completions"),
    Route("openai", "responses", "POST", "/v1/responses"),
    Route("anthropic", "messages", "POST", "/v1/messages"),
    *(
        Route("gemini", method, "POST", f"{prefix}:{method}", method == "streamGenerateContent")
        for prefix in _GEMINI_PREFIXES
        for method in _GEMINI_METHODS
    ),
    Route("bedrock", "converse", "POST", "/model/{modelId:path}/converse", False),
    Route("bedrock", "converse-stream", "POST", "/model/{modelId:path}/converse-stream", True),
    # the same wires under other services' paths (issue 36): OpenAI's on Azure, Groq and OpenRouter,
    # Anthropic's at the root, on Vertex AI and through Bedrock's InvokeModel; and Ollama's own
    Route("openai", "chat.completions", "POST", "/openai/deployments/{model}/chat/completions", surface="azure"),
    Route("openai", "responses", "POST", "/openai/responses", surface="azure"),
    Route("openai", "chat.completions", "POST", "/openai/v1/chat/completions", surface="openai-v1"),
    Route("openai", "responses", "POST", "/openai/v1/responses", surface="openai-v1"),
    Route("openai", "chat.completions", "POST", "/api/v1/chat/completions", surface="openrouter"),
    Route("openai", "responses", "POST", "/api/v1/responses", surface="openrouter"),
    Route("anthropic", "messages", "POST", "/messages", surface="root", provider_path="/v1/messages"),
    *(
        Route("anthropic", "messages", "POST", f"{_CLAUDE_ON_VERTEX}:{method}", surface="vertex")
        for method in ("rawPredict", "streamRawPredict")
    ),
    Route("bedrock", "invoke", "POST", "/model/{modelId:path}/invoke", False),
    Route("bedrock", "invoke-with-response-stream", "POST", "/model/{modelId:path}/invoke-with-response-stream", True),
    Route("ollama", "chat", "POST", "/api/chat"),
)
"""Every provider path the harness speaks: each wire openprogram has a backend for, under its
provider's path and under the other services' paths users point their SDKs at (``surface``), and
the wires users' agents speak that openprogram's loop does not (:data:`WITHOUT_BACKEND`)."""

SERVED_ENDPOINTS: Final[frozenset[tuple[str, str]]] = frozenset((route.provider, route.endpoint) for route in ROUTES)
"""Every ``(provider, endpoint)`` of :data:`ROUTES`: served, recorded, replayed and read back."""

WITHOUT_BACKEND: Final[frozenset[tuple[str, str]]] = frozenset(
    {("bedrock", "invoke"), ("bedrock", "invoke-with-response-stream"), ("ollama", "chat")}
)
"""Wires users point their SDKs at that openprogram's loop has no backend for: the emulator and
the proxy serve them and cassettes hold them, but no cassette of theirs replays through a backend."""

ENDPOINTS: Final[frozenset[tuple[str, str]]] = SERVED_ENDPOINTS - WITHOUT_BACKEND
"""Every ``(provider, endpoint)`` of :data:`ROUTES` openprogram has a backend for (the SDK client table's rows)."""

STREAMING_ENDPOINTS: Final[frozenset[str]] = frozenset(route.endpoint for route in ROUTES if route.stream)
"""Endpoints that stream by their path alone."""

_FIXED_PATHS: Final = tuple((r.path, r.provider, r.endpoint) for r in ROUTES if "{" not in r.path and not r.surface)
"""The provider's own fixed paths, which any base URL's path may come before (``/gw/v1/messages``);
another service's path (``surface``) is read only as the whole path (:func:`_surface_route`), so
``/gw/openai/v1/chat/completions`` stays OpenAI's path below ``/gw/openai``, as a client rebuilds it."""


def path_pattern(path: str) -> re.Pattern[str]:
    """A route's path (``/model/{modelId:path}/converse``, ``{model}``) as an anchored regex."""
    out, position = [], 0
    for match in re.finditer(r"\{(\w+)(?::(\w+))?\}", path):
        out.append(re.escape(path[position : match.start()]))
        out.append(f"(?P<{match.group(1)}>{'.+?' if match.group(2) == 'path' else '[^/]+?'})")
        position = match.end()
    out.append(re.escape(path[position:]))
    return re.compile("^" + "".join(out) + "$")


_SURFACES: Final = tuple((r, path_pattern(r.path)) for r in ROUTES if r.surface)


def routes_of(provider: str) -> tuple[Route, ...]:
    """The routes of one provider, in table order."""
    return tuple(route for route in ROUTES if route.provider == provider)


class RouteError(ValueError):
    """A request that goes to no provider endpoint openprogram has a backend for; the text says why."""


@dataclass(frozen=True)
class Destination:
    """Where a recorded request went: the provider endpoint and what its URL fixes about the call.

    ``model`` is set where the URL names the model (Gemini, Bedrock) and ``None`` where the body
    does (OpenAI, Anthropic). ``region`` is the Bedrock region or the Vertex location,
    ``project`` the Vertex project, ``api_version`` the Gemini path's version (``v1beta``...):
    a client rebuilt from these sends its request to the same URL.
    """

    provider: str
    endpoint: str
    model: str | None = None
    region: str | None = None
    vertex: bool = False
    project: str | None = None
    api_version: str | None = None
    base_url: str | None = None
    """The server's root when the request went to a host that is not the provider's own (the
    emulator on ``127.0.0.1:PORT``, a proxy): a client aimed there sends the recorded URL."""
    surface: str = ""
    """The route's :attr:`Route.surface`: the service whose path the request took, empty for the provider's own."""

    @property
    def streams(self) -> bool | None:
        """True or False where the endpoint decides streaming, ``None`` where the request body does."""
        if self.provider in ("gemini", "bedrock"):
            return self.endpoint in STREAMING_ENDPOINTS
        return None


def route(method: str, uri: str, headers: Iterable[tuple[str, str]] = ()) -> Destination:
    """The provider endpoint of a request; raises :class:`RouteError` for one with no backend.

    A provider's own host decides; any other host (the emulator, a proxy, a gateway) is read by
    its path, as :func:`route_by_path` does, ``headers`` giving what the path cannot (the region).
    """
    parts = urlsplit(uri)
    host, path = (parts.hostname or "").lower(), parts.path
    if method.upper() != "POST":
        raise RouteError(f"no backend for {method.upper()} requests (every provider endpoint takes a POST)")
    if host in ("api.openai.com", "api.anthropic.com"):
        provider = "openai" if host == "api.openai.com" else "anthropic"
        surfaced = _surface_route(path)  # Anthropic's /messages at the root, as the AI SDK sends it
        if surfaced is not None and surfaced.provider == provider:
            return replace(surfaced, base_url=None)
        for fixed, owner, endpoint in _FIXED_PATHS:
            if owner == provider and path.endswith(fixed.removeprefix("/v1")):
                return Destination(provider, endpoint)
        raise RouteError(f"no backend for the {'OpenAI' if provider == 'openai' else 'Anthropic'} endpoint {path}")
    if host == "generativelanguage.googleapis.com":
        return _gemini_route(path, vertex=False)
    if host.endswith(_AZURE_HOSTS) or (
        "/publishers/anthropic/" in path
        and (host == "aiplatform.googleapis.com" or host.endswith("-aiplatform.googleapis.com"))
    ):
        surface = _surface_route(path)
        if surface is None or surface.surface not in ("azure", "openai-v1", "vertex"):
            raise RouteError(f"no backend for {host}'s endpoint {path}")
        azure = surface.surface != "vertex"  # the resource's own host: a client must be given it
        return replace(
            surface, base_url=f"{parts.scheme}://{host}" if azure else None, api_version=_azure_version(surface, uri)
        )
    if host == "aiplatform.googleapis.com" or host.endswith("-aiplatform.googleapis.com"):
        return _gemini_route(path, vertex=True)
    if host.startswith(("bedrock-runtime.", "bedrock-runtime-fips.")) and host.endswith(".amazonaws.com"):
        model, _, operation = path.rpartition("/model/")[2].partition("/")
        if ("bedrock", operation) not in SERVED_ENDPOINTS:
            raise RouteError(f"no backend for the Bedrock operation {operation or path}")
        return Destination("bedrock", operation, model=unquote(model) or None, region=host.split(".")[1])
    found = route_by_path(path, headers)
    if found is None:
        raise RouteError(
            f"no backend for host {host!r}: neither a provider's host nor a provider's path"
            " (/v1/chat/completions, /v1/responses, /v1/messages, /VERSION/models/M:generateContent,"
            f" /model/M/converse...): {path}"
        )
    netloc = parts.netloc.rpartition("@")[2]  # a password in the URL is never part of a base URL
    return replace(
        found, base_url=f"{parts.scheme}://{netloc}{found.base_url or ''}", api_version=_azure_version(found, uri)
    )


def _azure_version(found: Destination, uri: str) -> str | None:
    """The destination's ``api_version``: on Azure, its ``api-version`` query parameter (a client needs it)."""
    if found.surface != "azure":
        return found.api_version
    versions = [value for name, value in parse_qsl(urlsplit(uri).query) if name == "api-version"]
    return versions[0] if versions else None


def surface_prefix(destination: Destination) -> str:
    """The path a surface puts before its provider's own paths (``/api`` for OpenRouter's
    ``/api/v1/chat/completions``, ``/openai`` for ``/openai/v1/...``), empty where it puts none or
    has paths of its own (Azure's deployments, Claude on Vertex): a provider's client aimed at the
    server's root plus this prefix sends the surface's path."""
    for surfaced in ROUTES:
        if (surfaced.surface, surfaced.provider, surfaced.endpoint) != (
            destination.surface,
            destination.provider,
            destination.endpoint,
        ):
            continue
        for own in routes_of(destination.provider):
            if not own.surface and own.endpoint == destination.endpoint and surfaced.path.endswith(own.path):
                return surfaced.path.removesuffix(own.path)
    return ""


def provider_path(destination: Destination, path: str) -> str:
    """The path a request sent as ``path`` takes at its provider's own host: the route's
    :attr:`Route.provider_path` where it has one (a proxy forwards there), else ``path`` itself."""
    for surfaced in ROUTES:
        if surfaced.provider_path and (surfaced.surface, surfaced.provider, surfaced.endpoint) == (
            destination.surface,
            destination.provider,
            destination.endpoint,
        ):
            return surfaced.provider_path
    return path


_AZURE_HOSTS: Final = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")
"""The hosts of Azure OpenAI resources (the resource's name is the user's, so no one host)."""


def _surface_route(path: str) -> Destination | None:
    """The destination of a path that is another service's route for a wire, exactly (no prefix before it)."""
    for found, pattern in _SURFACES:
        match = pattern.fullmatch(path)
        if match is None:
            continue
        params = {name: unquote(value) for name, value in match.groupdict().items()}
        return Destination(
            found.provider,
            found.endpoint,
            model=params.get("model"),
            region=params.get("location"),
            vertex=found.surface == "vertex",
            project=params.get("project"),
            api_version=params.get("version"),
            base_url="",
            surface=found.surface,
        )
    return None


VALUE_PATTERNS: Final[dict[str, re.Pattern[str]]] = {
    # AWS: us-east-1, eu-central-2, us-gov-west-1, ap-southeast-5, cn-north-1, us-isob-east-1
    "aws region": re.compile(r"[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}"),
    # Google Cloud: global, the multi-regions us and eu, regions such as us-central1, europe-west4,
    # northamerica-northeast1
    "google location": re.compile(r"global|us|eu|[a-z]+(?:-[a-z]+)+[0-9]{1,2}"),
    # a project id or number, or an older domain-scoped id (example.com:id): it names no host, only
    # a path segment, so any such characters
    "google project": re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,99}"),
}
"""What a value taken from a request may be, by kind: each becomes part of the provider URL a
request is forwarded to (a region or location names the host), so a value of any other shape
(``127.0.0.1:8000#``) is refused rather than sent anywhere."""

_VALUE_KINDS: Final = {
    # (vertex, Destination field) -> kind; a route of another helper's plugs in here
    (True, "region"): "google location",
    (True, "project"): "google project",
    (False, "region"): "aws region",
}


def check_values(destination: Destination) -> None:
    """Raise :class:`RouteError` naming the first value the request gave (a region, a Vertex
    location or project) that is not of its kind (:data:`VALUE_PATTERNS`)."""
    for (vertex, field), kind in _VALUE_KINDS.items():
        value = getattr(destination, field)
        if vertex is destination.vertex and value is not None and not VALUE_PATTERNS[kind].fullmatch(value):
            raise RouteError(f"{value[:80]!r} is not a {kind} (say one such as {_EXAMPLES[kind]})")


_EXAMPLES: Final = {
    "aws region": "us-east-1",
    "google location": "us-central1 or global",
    "google project": "my-project",
}

_SIGV4_SCOPE = re.compile(r"Credential=[^/,\s]*/\d{8}/([a-z0-9-]+)/bedrock/aws4_request")


def route_by_path(path: str, headers: Iterable[tuple[str, str]] = ()) -> Destination | None:
    """The provider endpoint a path names wherever it was sent, or ``None``.

    The SDKs send the same path to any base URL, so a request to the emulator or a proxy still
    says what it is: ``/v1/chat/completions`` and ``/v1/responses`` are OpenAI's, ``/v1/messages``
    Anthropic's, ``/VERSION/models/M:generateContent`` (or ``:streamGenerateContent``) Gemini's
    (Vertex's with ``publishers/google`` in it), ``/model/M/converse`` (``-stream``) and
    ``/model/M/invoke`` (``-with-response-stream``) Bedrock's, ``/api/chat`` Ollama's. What comes
    before is the base URL's own path (``/proxy/v1/messages``), kept in the route's ``base_url``;
    another service's path (``/openai/deployments/D/chat/completions``) is read only whole, its
    ``surface`` set. The path does not name the Bedrock region: it comes from the SigV4 credential
    scope in the ``authorization`` header when the recording kept one.
    """
    surface = _surface_route(path)
    if surface is not None:
        return surface
    for suffix, provider, endpoint in _FIXED_PATHS:
        if path.endswith(suffix):
            return Destination(provider, endpoint, base_url=path.removesuffix(suffix))
    if "/models/" in path and path.rpartition(":")[2] in _GEMINI_METHODS:
        segments = path.split("/")
        anchor = "projects" if "projects" in segments else "publishers" if "publishers" in segments else "models"
        version = segments.index(anchor) - 1  # the version segment comes before the first of these
        if version < 1:
            return None
        found = _gemini_route("/".join(["", *segments[version:]]), vertex=anchor != "models")
        return replace(found, base_url="/".join(segments[:version]))
    base, _, rest = path.rpartition("/model/")
    model, _, operation = rest.partition("/")
    if "/model/" in path and ("bedrock", operation) in SERVED_ENDPOINTS:
        scopes = (_SIGV4_SCOPE.search(value) for name, value in headers if name.lower() == "authorization")
        region = next((scope.group(1) for scope in scopes if scope), None)
        return Destination("bedrock", operation, model=unquote(model) or None, region=region, base_url=base)
    return None


def _gemini_route(path: str, *, vertex: bool) -> Destination:
    """Developer API: ``/v1beta/models/M:method``.

    Vertex: ``/v1/projects/P/locations/L/publishers/google/models/M:method``, or in express mode
    (an API key, no project) ``/v1/publishers/google/models/M:method`` on the global host.
    """
    model, _, method = path.rpartition("/models/")[2].partition(":")
    if method not in _GEMINI_METHODS:
        raise RouteError(f"no backend for the Gemini method {method or path}")
    segments = path.strip("/").split("/")
    named = dict(zip(segments[1::2], segments[2::2], strict=False)) if vertex else {}
    project, location = named.get("projects"), named.get("locations")
    if vertex and location is None:  # express mode: no project in the path, the global endpoint
        location = "global"
    return Destination(
        "gemini",
        method,
        model=unquote(model) or None,
        region=location,
        vertex=vertex,
        project=project,
        api_version=segments[0] if segments and segments[0] else None,
    )
