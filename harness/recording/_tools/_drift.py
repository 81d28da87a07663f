"""``harness cassettes drift``: is the cassette still what the server sends?

Each recorded request is sent again (to a base URL that speaks the provider's wire, or ``--live``
to the provider with the environment's credentials) and the reply's structure is compared with
the recorded one: events and fields gone or retyped are breaking, new ones benign.
"""

from __future__ import annotations

import base64
import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import harness.recording._cassette as cassettes
import harness.recording._live as live_env
import harness.wire as wire
from harness.recording._tools._timeline import ConversionError
from openprogram.providers import ALLOW_MODEL_REQUESTS_ENV

_NOT_FORWARDED = frozenset(
    {"host", "content-length", "content-encoding", "accept-encoding", "connection", "transfer-encoding"}
)
"""Headers the client sets itself: the body goes out decoded (gzip undone), with its own length."""


@dataclass(frozen=True)
class Drift:
    """One structural difference between a recorded reply and the one the server sends now.

    ``breaking`` when code written against the recording may fail on the new reply (a field or an
    event gone, a type or the status changed, events reordered); ``benign`` when the server only
    adds (a new field, a new kind of event). Values are never compared: ids, texts and token
    counts change on every call.
    """

    interaction: int
    severity: str
    what: str

    def __str__(self) -> str:
        return f"interaction {self.interaction}: {self.severity}: {self.what}"


def drift(
    path: str | Path,
    base_url: str | None = None,
    *,
    live: bool = False,
    timeout: float = 60.0,
    environ: Mapping[str, str] | None = None,
) -> list[Drift]:
    """Re-send each recorded request of ``path`` and compare the replies' structure with the recorded ones.

    The request goes out as recorded (body, method, path below the recorded server's root, query,
    its non-credential headers) either to ``base_url`` with placeholder keys (any server that speaks
    the provider's wire: the loopback emulator, a proxy) or, ``live``, to the provider itself with
    the environment's credentials (see :func:`drift_targets`). Raises :class:`ConversionError`,
    before anything is sent, for an unreadable cassette or a missing credential.
    """
    return send_for_drift(drift_targets(path, base_url, live=live, environ=environ), timeout=timeout)


@dataclass(frozen=True)
class DriftTarget:
    """One recorded request and where :func:`drift` sends it again; ``live``: with real credentials."""

    path: Path
    interaction: cassettes.Interaction
    url: str
    live: bool
    region: str | None = None
    """The region a Bedrock request is signed for (SigV4)."""
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)


_DEFAULT_ROOTS: Final = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}


_ALLOW_OFF: Final = frozenset({"0", "false", "no", "off"})


def drift_targets(
    path: str | Path, base_url: str | None = None, *, live: bool = False, environ: Mapping[str, str] | None = None
) -> list[DriftTarget]:
    """Where each recorded request of ``path`` goes again; every problem is raised before one is sent.

    Exactly one of ``base_url`` and ``live``. Live, a request goes to the provider's base-URL
    variable when it is set (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``,
    ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``: the ones live runs and the recorder honour), else to the
    recorded host when it is the provider's, else to the provider's default URL; the credential
    must be in the environment (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY`` or
    ``GOOGLE_API_KEY``, AWS keys or ``AWS_PROFILE``; Vertex project paths: Google's default
    credentials), else :class:`ConversionError` names the variable.
    """
    if (base_url is None) == (not live):
        raise ConversionError("drift needs exactly one of a base URL and live")
    environ = os.environ if environ is None else environ
    if live:
        switch = environ.get(ALLOW_MODEL_REQUESTS_ENV)
        if switch is not None and switch.strip().lower() in _ALLOW_OFF:
            raise ConversionError(f"--live sends real requests, and {ALLOW_MODEL_REQUESTS_ENV}={switch} turns them off")
    targets = []
    for interaction in _loaded_for_drift(path):
        request, where = interaction.request, f"{path}: {interaction.where}"
        try:
            route = request.route
        except wire.RouteError as exc:
            raise ConversionError(f"{where}: {exc}") from None
        prefix = urlsplit(route.base_url).path if route.base_url else ""
        below = request.path.removeprefix(prefix) if request.path.startswith(prefix) else request.path
        query = urlsplit(wire.scrub_url(request.uri)).query  # a recorded key goes nowhere, live or not
        region = None
        if live:
            root, region = _live_root(where, request, route, environ)
            _check_credentials(where, route, environ)
        else:
            root = (base_url or "").rstrip("/")
        targets.append(
            DriftTarget(Path(path), interaction, root + below + (f"?{query}" if query else ""), live, region, environ)
        )
    return targets


def _live_root(
    where: str, request: cassettes.Request, route: wire.Destination, environ: Mapping[str, str]
) -> tuple[str, str | None]:
    """The server a live request goes to, and (Bedrock) the region it is signed for."""
    surfaced = _surface_root(where, request, route, environ)
    if surfaced is not None:
        return surfaced, None
    try:
        root = live_env.base_url_from_env(route.provider, environ)
    except live_env.LiveError as exc:
        raise ConversionError(f"{where}: {exc}") from None
    region = None
    if route.provider == "bedrock":
        region = route.region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        if region is None:
            raise ConversionError(f"{where}: --live needs AWS_REGION (the recording does not name the Bedrock region)")
    if root is not None:
        return root, region
    if route.base_url is None:  # the provider's own host, as recorded (never a recorded password)
        parts = urlsplit(wire.scrub_url(request.uri))
        return f"{parts.scheme}://{parts.netloc}", region
    if route.provider == "bedrock":
        return f"https://bedrock-runtime.{region}.amazonaws.com", region
    if route.provider == "gemini" and route.vertex:
        location = route.region or "global"
        return f"https://{'' if location == 'global' else location + '-'}aiplatform.googleapis.com", region
    return _DEFAULT_ROOTS[route.provider], region


_AZURE_ENDPOINT: Final = "AZURE_OPENAI_ENDPOINT"
_AZURE_KEY: Final = "AZURE_OPENAI_API_KEY"
_OLLAMA_HOST: Final = "OLLAMA_HOST"
_VERTEX_BASE_URL: Final = "ANTHROPIC_VERTEX_BASE_URL"
_AZURE_SUFFIXES: Final = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")


def _azure(route: wire.Destination, url: str, environ: Mapping[str, str]) -> bool:
    """Whether a live request goes to an Azure OpenAI resource (which takes its key as ``api-key``)."""
    host = urlsplit(url).hostname or ""
    return route.surface in ("azure", "openai-v1") and (
        host.endswith(_AZURE_SUFFIXES) or bool(environ.get(_AZURE_ENDPOINT))
    )


def _surface_root(
    where: str, request: cassettes.Request, route: wire.Destination, environ: Mapping[str, str]
) -> str | None:
    """The live server of a surface the provider's variables do not name: the user's Azure resource
    (``AZURE_OPENAI_ENDPOINT``, else the recorded one), the user's Ollama (``OLLAMA_HOST``, else
    the recorded host), Claude on Vertex AI (``ANTHROPIC_VERTEX_BASE_URL``, else the recorded
    host or the location's); ``None`` for the others. A cassette ``harness proxy`` recorded names a
    stand-in for an Azure resource (``*.invalid``), which only the variable can replace."""
    recorded = urlsplit(wire.scrub_url(request.uri))
    if route.provider == "ollama":
        host = (environ.get(_OLLAMA_HOST) or "").strip().rstrip("/")
        if host and "://" not in host:
            host = f"http://{host}"  # Ollama's own form: HOST[:PORT]
        return host or f"{recorded.scheme}://{recorded.netloc}"
    if route.provider == "anthropic" and route.vertex:  # Claude on Vertex AI: ANTHROPIC_BASE_URL is not its
        vertex = (environ.get(_VERTEX_BASE_URL) or "").strip().rstrip("/").removesuffix("/v1")
        if vertex:
            return vertex
        if route.base_url is None:
            return f"{recorded.scheme}://{recorded.netloc}"
        location = route.region or "global"
        return f"https://{'' if location == 'global' else location + '-'}aiplatform.googleapis.com"
    if route.surface not in ("azure", "openai-v1"):
        return None
    endpoint = (environ.get(_AZURE_ENDPOINT) or "").strip().rstrip("/")
    if endpoint:
        return endpoint
    if (recorded.hostname or "").endswith(".invalid"):
        raise ConversionError(
            f"{where}: --live needs {_AZURE_ENDPOINT} (your resource, https://RESOURCE.openai.azure.com):"
            f" the cassette names {recorded.hostname}, harness proxy's stand-in for it"
        )
    return f"{recorded.scheme}://{recorded.netloc}"


def _check_credentials(where: str, route: wire.Destination, environ: Mapping[str, str]) -> None:
    if route.provider == "ollama":
        return  # a local server: no key
    if route.provider == "anthropic" and route.vertex:
        _google_token(where)  # Claude on Vertex AI: Google's default credentials, as for Gemini there
        return
    if route.surface in ("azure", "openai-v1") and (
        environ.get(_AZURE_ENDPOINT) or (route.base_url or "").endswith(_AZURE_SUFFIXES)
    ):
        if not environ.get(_AZURE_KEY):
            raise ConversionError(f"{where}: --live needs {_AZURE_KEY} in the environment (the Azure OpenAI key)")
        return
    if route.provider == "gemini" and route.project:
        _google_token(where)  # Vertex with a project takes Google's default credentials, not a key
        return
    missing = live_env.missing_credentials(route.provider, environ)
    if missing is not None:
        raise ConversionError(f"{where}: --live needs {missing} in the environment (the {route.provider} credentials)")


def _google_token(where: str) -> str:
    """A bearer token from Google's default credentials (fetched once per process, then reused)."""
    import google.auth.exceptions

    try:
        return _default_google_token()
    except google.auth.exceptions.GoogleAuthError as exc:
        raise ConversionError(
            f"{where}: --live needs Google's default credentials for a Vertex project"
            f" (GOOGLE_APPLICATION_CREDENTIALS, or gcloud auth application-default login): {exc}"
        ) from None


@functools.cache
def _default_google_token() -> str:
    import google.auth
    import google.auth.transport.requests

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    credentials.refresh(google.auth.transport.requests.Request())  # type: ignore[no-untyped-call]  # google-auth is unannotated
    return str(credentials.token)


def _live_headers(target: DriftTarget, headers: dict[str, str]) -> dict[str, str]:
    """``headers`` with the environment's credential added, as the provider's SDK adds it."""
    request, environ = target.interaction.request, target.environ
    route = request.route
    if route.provider == "ollama":
        return headers
    if _azure(route, target.url, environ):
        headers.update([wire.key_header("azure", environ[_AZURE_KEY])])
    elif route.provider == "anthropic" and route.vertex:
        headers.update([wire.key_header("vertex", _google_token(f"{target.path}: {target.interaction.where}"))])
    elif route.provider == "openai":
        headers.update([wire.key_header("openai", environ["OPENAI_API_KEY"])])
    elif route.provider == "anthropic":
        headers.update([wire.key_header("anthropic", environ["ANTHROPIC_API_KEY"])])
        headers.setdefault("anthropic-version", "2023-06-01")  # required; recorders often drop it
    elif route.provider == "gemini" and route.project:
        headers.update([wire.key_header("vertex", _google_token(f"{target.path}: {target.interaction.where}"))])
    elif route.provider == "gemini":
        headers.update([wire.key_header("gemini", environ.get("GEMINI_API_KEY") or environ["GOOGLE_API_KEY"])])
    else:
        headers = _sigv4(target, headers)
    return headers


def _sigv4(target: DriftTarget, headers: dict[str, str]) -> dict[str, str]:
    """The headers of a Bedrock request signed as botocore signs it (SigV4, service ``bedrock``)."""
    import botocore.session
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    environ = target.environ
    if environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"):
        credentials = Credentials(
            environ["AWS_ACCESS_KEY_ID"], environ["AWS_SECRET_ACCESS_KEY"], environ.get("AWS_SESSION_TOKEN")
        )
    else:
        found = botocore.session.Session(profile=environ.get("AWS_PROFILE")).get_credentials()
        if found is None:  # checked before any request was sent; said here too rather than by botocore
            raise ConversionError("--live needs AWS credentials for Bedrock (AWS_ACCESS_KEY_ID, or a profile)")
        credentials = found
    assert target.region is not None  # a live Bedrock target always has its region (_live_root)
    signed = AWSRequest(
        target.interaction.request.method, target.url, data=target.interaction.request.body.data, headers=headers
    )
    SigV4Auth(credentials, "bedrock", target.region).add_auth(signed)
    return {name.lower(): value for name, value in signed.headers.items()}


def send_for_drift(targets: list[DriftTarget], *, timeout: float = 60.0) -> list[Drift]:
    """Send each target's request and compare each reply's structure with the recorded one."""
    import httpx2

    found: list[Drift] = []
    with httpx2.Client(timeout=timeout) as client:
        for target in targets:
            interaction = target.interaction
            request = interaction.request
            headers = {
                name.lower(): value
                for name, value in request.headers
                if name.lower() not in _NOT_FORWARDED and not wire.is_credential_header(name)
            }
            if target.live:
                headers = _live_headers(target, headers)
            else:
                headers.update(wire.PLACEHOLDER_HEADERS)
            try:
                reply = client.request(request.method, target.url, content=request.body.data, headers=headers)
            except httpx2.HTTPError as exc:
                raise ConversionError(
                    f"{target.path}: interaction {interaction.index}: cannot reach {target.url}: {exc}"
                ) from None
            recorded = interaction.response
            found.extend(
                Drift(interaction.index, severity, what)
                for severity, what in compare_replies(
                    (recorded.status, recorded.body.data, recorded.headers.get("content-type")),
                    (reply.status_code, reply.content, reply.headers.get("content-type")),
                )
            )
    return found


def _loaded_for_drift(path: str | Path) -> cassettes.Cassette:
    try:
        return cassettes.load(path)
    except cassettes.CassetteError as exc:
        raise ConversionError(str(exc)) from None


Reply = tuple[int, bytes, "str | None"]


def compare_replies(recorded: Reply, live: Reply) -> list[tuple[str, str]]:
    """``(severity, what)`` for each structural difference of ``live`` from ``recorded``."""
    found: list[tuple[str, str]] = []
    if recorded[0] != live[0]:
        found.append(("breaking", f"status {recorded[0]} is now {live[0]}"))
    old_kinds, old_fields = reply_structure(recorded[1], recorded[2])
    new_kinds, new_fields = reply_structure(live[1], live[2])
    for kind in dict.fromkeys(old_kinds):
        if kind not in new_kinds:
            found.append(("breaking", f"event {kind!r} is no longer sent"))
    for kind in dict.fromkeys(new_kinds):
        if kind not in old_kinds:
            found.append(("benign", f"new event {kind!r}"))
    common = [kind for kind in old_kinds if kind in new_kinds]
    if common != [kind for kind in new_kinds if kind in old_kinds]:
        found.append(("breaking", f"events reordered: {' > '.join(old_kinds)} is now {' > '.join(new_kinds)}"))
    for field_path, kind in old_fields.items():
        if field_path not in new_fields:
            found.append(("breaking", f"field {field_path} is gone"))
        elif new_fields[field_path] != kind:
            found.append(("breaking", f"field {field_path} was {kind}, is now {new_fields[field_path]}"))
    found.extend(("benign", f"new field {p}") for p in new_fields if p not in old_fields)
    return found


def reply_structure(body: bytes, content_type: str | None) -> tuple[list[str], dict[str, str]]:
    """A reply as its event kinds in order (repeats collapsed: the number of deltas follows the text)
    and its fields, ``KIND:path -> JSON type`` (list items merged as ``[]``)."""
    from harness.recording._scrub import stream_events

    events = [
        (_event_kind(event), event) for event in _unwrapped(stream_events(body, content_type), body, content_type)
    ]
    if not events:
        try:
            events = [("body", json.loads(body))] if body.strip() else []
        except ValueError:
            return ["text"], {}
    kinds = [kind for i, (kind, _) in enumerate(events) if i == 0 or events[i - 1][0] != kind]
    fields: dict[str, str] = {}
    for kind, event in events:
        _shape(event, f"{kind}:", fields)
    return kinds, fields


def _unwrapped(events: list[Any], body: bytes, content_type: str | None) -> list[Any]:
    """The events whose structure is compared: Ollama's NDJSON lines, and the Anthropic events
    InvokeModel's ``chunk`` frames carry base64-encoded (``{"bytes": ...}``), read out of their envelope."""
    if not events and (content_type or "").split(";")[0].strip().lower() == wire.NDJSON:
        try:
            return [json.loads(line) for line in wire.ndjson_lines(body) if line.strip()]
        except ValueError:
            return []
    out = []
    for event in events:
        if isinstance(event, dict) and isinstance(event.get("bytes"), str) and set(event) <= {"bytes", "p"}:
            try:
                event = json.loads(base64.b64decode(event["bytes"], validate=True))
            except ValueError:
                pass  # not what InvokeModel sends: compared as it is
        out.append(event)
    return out


def _event_kind(event: Any) -> str:
    if isinstance(event, dict):
        for key in ("type", "object"):
            found = event.get(key)
            if isinstance(found, str):
                return found
        return "+".join(sorted(key for key in event if key != "p"))  # Bedrock: the payload's keys ("p" is padding)
    return type(event).__name__


def _shape(value: Any, path: str, into: dict[str, str]) -> None:
    if isinstance(value, dict):
        if not path.endswith(":"):  # an event itself is no field: its kind is compared
            into.setdefault(path, "object")
        for key, item in value.items():
            _shape(item, f"{path}.{key}" if not path.endswith(":") else f"{path}{key}", into)
    elif isinstance(value, list):
        into.setdefault(path, "array")
        for item in value:
            _shape(item, f"{path}[]", into)
    else:
        kind = {bool: "boolean", int: "number", float: "number", str: "string", type(None): "null"}.get(
            type(value), type(value).__name__
        )
        if into.get(path) not in (None, kind) and kind == "null":
            return  # a field that is sometimes null keeps its other type
        into[path] = kind if into.get(path) in (None, "null") else into[path]
