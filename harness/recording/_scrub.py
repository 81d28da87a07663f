"""What must never reach a cassette on disk: credentials, identities, and the secrets of the environment.

A recorded exchange carries the caller's credentials in its headers (``Authorization``,
``x-api-key``, AWS signatures...), sometimes in its query (``?key=`` for Gemini), its account in
Bedrock ARNs, and, through the provider or a proxy echoing a request, possibly in a body. Real
API keys committed in cassettes are a known leak in the wild. Two lines of defence live here,
usable by the recorder (``harness.recording._recorded``) and by ``harness cassettes lint`` alike:

1. **Scrubbing** (:func:`scrub_headers`, :func:`scrub_uri`, :func:`scrub_arns`): remove what is
   known to carry a credential or an identity, before a request is matched or recorded.
2. **Scanning** (:func:`find_credentials`, :func:`find_credentials_in`): look for the *value* of
   every credential variable in the environment (``*_API_KEY``, ``*_TOKEN``, AWS secrets...) in
   what is about to be written. Scrubbing knows names; scanning catches the header nobody listed
   and the key a reply echoed. A finding names where it was (a header, a query parameter, a JSON
   field inside a body, or a line of the text) and never repeats the value.

Decisions (documented in ``docs/record-replay.md``): ``x-amz-date`` and ``x-amz-content-sha256``
are kept (a timestamp and a hash of the body: no identity; matching ignores them), request ids
(``x-request-id``, ``request-id``, ``x-amzn-requestid``) are kept (they identify one request, not
an account, and are what a provider's support asks for), AWS account ids in ARNs become
``000000000000``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import harness.wire as wire
from harness.wire import (  # bound once: the facade looks a name up anew on each access, per header
    header_values,
    is_credential_header,
    is_credential_query,
    outer_coding,
    scrub_url,
)

PLACEHOLDER_ACCOUNT: Final = "000000000000"
"""What an AWS account id in an ARN is replaced with: the shape of an account id, owned by nobody."""

MIN_SECRET_LENGTH: Final = 8
"""Environment values shorter than this are not scanned for: ``GITHUB_TOKEN=1`` would match everywhere."""

_CREDENTIAL_NAME = re.compile(
    r"(_API_KEY|_APIKEY|_TOKEN|_SECRET|_SECRET_KEY|_ACCESS_KEY|_PASSWORD)$|^AWS_(SECRET_ACCESS_KEY|SESSION_TOKEN|ACCESS_KEY_ID)$",
    re.IGNORECASE,
)
# arn:PARTITION:SERVICE:REGION:ACCOUNT:..., also percent-encoded as it appears in a Bedrock path
_COLON = r"(?::|%3[Aa])"
_ARN = re.compile(rf"(arn{_COLON}aws[\w-]*{_COLON}[\w-]+{_COLON}[\w-]*{_COLON})(\d{{12}})(?={_COLON}|/|%2[Ff])")
_ARN_BYTES = re.compile(_ARN.pattern.encode())


@dataclass(frozen=True)
class CredentialFinding:
    """The value of a credential variable found in text about to be written.

    ``variable`` names the environment variable (or ``"extra"`` for a value the caller listed);
    ``where`` says where it sat: ``interactions[0].response.headers.x-echo``, ``... body
    choices[0].message.content`` or ``line 12 (interactions[0].response.body.string)``.
    """

    variable: str
    where: str

    def __str__(self) -> str:
        return f"the value of {self.variable} in {self.where}"


class CredentialLeakError(Exception):
    """A cassette would have carried a credential to disk; nothing was written. The text says where."""

    def __init__(self, target: str, findings: Iterable[CredentialFinding]) -> None:
        self.target = target
        self.findings = tuple(findings)
        listed = "\n".join(f"  - {finding}" for finding in self.findings)
        super().__init__(
            f"{target}: not written, it would hold a credential from the environment:\n{listed}\n"
            "(scrub it with vcr_config's before_record_request/before_record_response, or filter_headers)"
        )


def scrub_arns(text: str) -> str:
    """``text`` with the account id of every AWS ARN (plain or percent-encoded) replaced by zeros."""
    return _ARN.sub(lambda match: match.group(1) + PLACEHOLDER_ACCOUNT, text)


def scrub_uri(uri: str) -> str:
    """``uri`` without userinfo or credential query parameters (``harness.wire``'s vocabulary) and
    with ARN account ids zeroed; the rest as it was."""
    return scrub_arns(scrub_url(uri))


def scrub_arns_in(body: Any, content_type: str | None = None) -> Any:
    """A body (text or bytes) with ARN account ids zeroed; an AWS event stream keeps valid message CRCs.

    Freshly recorded bodies are bytes and stored ones text, so both are scrubbed; the id and its
    zeros have one length, so a body's ``Content-Length`` stays true.
    """
    if isinstance(body, str):
        return scrub_arns(body)
    if not isinstance(body, bytes | bytearray) or not _ARN_BYTES.search(body):
        return body
    data = bytes(body)
    if (content_type or "").split(";")[0].strip().lower() != wire.EVENTSTREAM:
        return _scrub_arn_bytes(data)
    return b"".join(
        wire.with_eventstream_crc(scrubbed) if (scrubbed := _scrub_arn_bytes(message)) != message else message
        for message in wire.eventstream_messages(data)
    )


def _scrub_arn_bytes(data: bytes) -> bytes:
    return _ARN_BYTES.sub(lambda match: match.group(1) + PLACEHOLDER_ACCOUNT.encode(), data)


# ---------------------------------------------------------------------------------------------
# The same rules as vcrpy filters: before matching and recording, and again in the persister
# ---------------------------------------------------------------------------------------------


def scrub_request(request: Any) -> Any:
    """A vcrpy ``before_record_request``: credential headers, ``key=`` and ARN account ids removed.

    vcrpy runs it on each request it is asked to match as well as on each it records, so the ARN a
    body names (a Converse request's ``guardrailConfig``) is zeroed on both sides and still matches.
    Each part is read only if the request has it, and written only if scrubbing changed it: vcrpy
    hands the hook whatever a project or plugin built (pytest-recording's suite passes objects with
    headers alone), and a subclass may make ``uri`` read-only.
    """
    headers: Any = getattr(request, "headers", None) or {}
    for name in list(headers):
        if wire.is_credential_header(name):
            del headers[name]
    uri = getattr(request, "uri", None)
    if isinstance(uri, str) and (scrubbed_uri := scrub_uri(uri)) != uri:
        request.uri = scrubbed_uri
    body = getattr(request, "body", None)
    if isinstance(body, str | bytes | bytearray):
        scrubbed = scrub_arns_in(body)
        if scrubbed is not body and scrubbed != body:
            request.body = scrubbed
    return request


def scrub_response(response: dict[str, Any]) -> dict[str, Any]:
    """A vcrpy ``before_record_response``: identity headers (``set-cookie``, organisation ids) and ARN
    account ids in the body removed, so the SDK sees while recording what every replay will show it."""
    headers = response["headers"] = wire.scrub_headers(response.get("headers") or {})
    body = response.get("body")
    if isinstance(body, dict) and "string" in body:
        kind = next(iter(header_values(headers, "content-type")), None)
        body["string"] = scrub_arns_in(body["string"], kind)
    return honest_encoding(response)


def honest_encoding(response: dict[str, Any]) -> dict[str, Any]:
    """``response`` with a ``Content-Encoding`` its stored body is not in removed (and the length fixed).

    A body stored decoded under a header that still says ``gzip`` (a project's own filter that
    decoded it, a cassette of another tool: lmnr-python#326) makes every replay fail in the SDK's
    decompression. gzip is checked by its magic bytes, deflate by the body being text (compressed
    data is not UTF-8); other encodings vcrpy never decodes, so their header is left alone.
    """
    headers = response.get("headers")
    if not isinstance(headers, dict):
        return response
    names = [name for name in headers if str(name).lower() == "content-encoding"]
    value = outer_coding(headers)
    body = _stored_bytes((response.get("body") or {}).get("string"))
    if value in ("gzip", "x-gzip"):
        encoded = body.startswith(wire.GZIP_MAGIC)
    elif value == "deflate":  # zlib-wrapped or raw: either way binary, never UTF-8 text
        try:
            encoded = not body or not body.decode("utf-8").strip()
        except UnicodeDecodeError:
            encoded = True
    else:
        return response
    if encoded:
        return response
    for name in names:
        del headers[name]
    for name in [name for name in headers if str(name).lower() == "content-length"]:
        headers[name] = [str(len(body))]
    return response


def _stored_bytes(body: Any) -> bytes:
    if isinstance(body, str):
        return body.encode("utf-8")
    return bytes(body) if isinstance(body, bytes | bytearray) else b""


def is_credential_variable(name: str) -> bool:
    """True for an environment variable whose value is a credential by its name."""
    return bool(_CREDENTIAL_NAME.search(name))


def credential_variables(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The credential variables of ``environ`` (default ``os.environ``) worth scanning for: name -> value."""
    environ = os.environ if environ is None else environ
    return {
        name: value
        for name, value in environ.items()
        if is_credential_variable(name) and len(value.strip()) >= MIN_SECRET_LENGTH
    }


def _needles(environ: Mapping[str, str] | None, extra: Iterable[str]) -> dict[str, str]:
    needles = {value: name for name, value in credential_variables(environ).items()}
    for value in extra:
        if len(value) >= MIN_SECRET_LENGTH:
            needles.setdefault(value, "extra")
    return needles


def find_credentials(
    text: str, environ: Mapping[str, str] | None = None, *, extra: Iterable[str] = ()
) -> list[CredentialFinding]:
    """Every credential value of ``environ`` (and ``extra``) that occurs in ``text``, by line.

    ``where`` is ``line N (KEY.PATH)``, the path read from the YAML indentation above the line,
    so the error can name the header or field without repeating the secret.
    """
    findings: list[CredentialFinding] = []
    lines = text.splitlines()
    for value, variable in _needles(environ, extra).items():
        forms = wire.value_forms(value)
        for number, line in enumerate(lines, 1):
            if any(form in line for form in forms):
                findings.append(CredentialFinding(variable, f"line {number} ({_yaml_path(lines, number - 1)})"))
    return findings


def _yaml_path(lines: list[str], index: int) -> str:
    # PyYAML block style: a parent key is less indented than its content, except that list
    # items ("- ") sit at their parent key's indentation
    keys: list[str] = []
    level, dash = _place(lines[index])
    key = _key_of(lines[index])
    if key:
        keys.append(key)
    for line in reversed(lines[:index]):
        key = _key_of(line)
        if key is None:
            continue
        here, here_dash = _place(line)
        if here < level or (dash and here == level):
            keys.append(key)
            level, dash = (here - 2, True) if here_dash else (here, False)
        if level <= 0 and not dash:
            break
    return ".".join(reversed(keys)) or "top level"


def _place(line: str) -> tuple[int, bool]:
    stripped = line.lstrip(" ")
    indent = len(line) - len(stripped)
    if stripped.startswith("- "):
        return indent + 2, True
    return indent, False


def _key_of(line: str) -> str | None:
    stripped = line.strip().removeprefix("- ")
    match = re.match(r"""^("[^"]*"|'[^']*'|[^:#'"]+):(\s|$)""", stripped)
    return match.group(1).strip("'\"") if match else None


def find_credentials_in(
    data: Any, environ: Mapping[str, str] | None = None, *, extra: Iterable[str] = ()
) -> list[CredentialFinding]:
    """Every credential value in structured data (a cassette dict), each named by its path.

    Bytes are read as text (a binary body is what YAML writes as base64, so only here it shows); a string
    that parses as JSON is searched field by field, so a key echoed in a reply is reported as
    ``interactions[0].response.body.string: choices[0].message.content``.
    """
    needles = _needles(environ, extra)
    if not needles:
        return []
    findings: list[CredentialFinding] = []
    _walk(data, "", needles, findings)
    return findings


def _walk(value: Any, path: str, needles: dict[str, str], findings: list[CredentialFinding]) -> None:
    if isinstance(value, Mapping):
        for key, item in value.items():
            name = key.decode("latin-1") if isinstance(key, bytes) else str(key)
            _check(name, f"{path} (a key)" if path else "a key", needles, findings)
            _walk(item, f"{path}.{name}" if path else name, needles, findings)
    elif isinstance(value, list | tuple):
        for number, item in enumerate(value):
            _walk(item, f"{path}[{number}]", needles, findings)
    elif isinstance(value, bytes | bytearray):
        _string(bytes(value).decode("utf-8", "replace"), path, needles, findings)
    elif isinstance(value, str):
        _string(value, path, needles, findings)
    elif value is not None and not isinstance(value, bool | int | float):
        _check(str(value), path, needles, findings)


def _string(text: str, path: str, needles: dict[str, str], findings: list[CredentialFinding]) -> None:
    if not any(form in text for value in needles for form in wire.value_forms(value)):
        return
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
        if parsed is not None:
            inner: list[CredentialFinding] = []
            _walk(parsed, "", needles, inner)
            if inner:
                findings.extend(CredentialFinding(f.variable, f"{path}: {f.where}") for f in inner)
                return
    _check(text, path, needles, findings)


def _check(text: str, path: str, needles: dict[str, str], findings: list[CredentialFinding]) -> None:
    for value, variable in needles.items():
        if any(form in text for form in wire.value_forms(value)):
            findings.append(CredentialFinding(variable, path or "top level"))


# ---------------------------------------------------------------------------------------------
# What a scan of the file's text cannot see: binary bodies, and a value streamed in pieces
# ---------------------------------------------------------------------------------------------


def find_hidden_credentials(
    data: Any, environ: Mapping[str, str] | None = None, *, extra: Iterable[str] = ()
) -> list[CredentialFinding]:
    """Credentials in a cassette (``{"interactions": [...]}``) that its YAML text does not show.

    A binary body (an AWS event stream) is written base64-encoded, and a streamed reply can carry
    a key in pieces, one per delta (``"sk-t"``, ``"est-SENT"``, ...), so no line of the file holds
    it. Here binary bodies are searched as bytes (gzip undone) and, per streamed reply, the string fields of its
    events (SSE ``data:`` JSON, event-stream payloads) are joined field by field in event order.
    """
    needles = _needles(environ, extra)
    interactions = data.get("interactions") if isinstance(data, Mapping) else None
    if not needles or not isinstance(interactions, list):
        return []
    findings: list[CredentialFinding] = []
    for index, interaction in enumerate(interactions):
        if not isinstance(interaction, Mapping):
            continue
        for side in ("request", "response"):
            part = interaction.get(side)
            if not isinstance(part, Mapping):
                continue
            body = part.get("body")
            stored = body.get("string") if isinstance(body, Mapping) else body
            where = f"interactions[{index}].{side}.body" + (".string" if isinstance(body, Mapping) else "")
            if isinstance(stored, bytes | bytearray):  # gzip undone: a body kept compressed hides its text
                stored = wire.gunzipped(bytes(stored))
                _walk(stored, f"{where} (binary)", needles, findings)
            if side == "response" and isinstance(stored, str | bytes | bytearray):
                kind = next(iter(wire.header_values(part.get("headers"), "content-type")), None)
                text = bytes(stored) if isinstance(stored, bytearray) else stored
                findings.extend(_split_findings(text, kind, where, needles))
    return findings


def _split_findings(
    body: str | bytes, content_type: str | None, where: str, needles: dict[str, str]
) -> Iterator[CredentialFinding]:
    events = stream_events(body.encode("utf-8") if isinstance(body, str) else bytes(body), content_type)
    for path, pieces in wire.joined_fields(events).items():
        joined = "".join(text for _, text in pieces)
        for value, variable in needles.items():
            for form in wire.value_forms(value):  # plain, escaped, percent-encoded, inside base64
                start = joined.find(form)
                if start == -1 or any(form in text for _, text in pieces):
                    continue  # absent, or whole in one event (the text scan names that one)
                first, last = _events_spanning(pieces, start, start + len(form))
                yield CredentialFinding(variable, f"{where}: {path} (split across events {first} to {last})")
                break


def stream_events(body: bytes, content_type: str | None) -> list[Any]:
    """The JSON of each event of a streamed body (SSE ``data:``, event-stream payloads); ``[]`` for others."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == wire.EVENTSTREAM:
        payloads = [wire.eventstream_payload(message) for message in wire.eventstream_messages(body)]
    elif wire.is_sse(content_type, body):
        payloads = [wire.sse_data(event) for event in wire.sse_events(body)]
    else:
        return []
    events = []
    for payload in payloads:
        if not payload:
            continue
        try:
            events.append(json.loads(payload))
        except ValueError:
            continue  # [DONE], or a cut event
    return events


def _events_spanning(pieces: list[tuple[int, str]], start: int, end: int) -> tuple[int, int]:
    covered, offset = [], 0
    for number, text in pieces:
        if offset < end and offset + len(text) > start:
            covered.append(number)
        offset += len(text)
    return covered[0], covered[-1]


# ---------------------------------------------------------------------------------------------
# The credentials a request carries: secrets of its cassette, whatever the environment holds
# ---------------------------------------------------------------------------------------------

_KEY_SHAPE = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-ant-[\w-]{8,}|sk-[\w-]{8,}|AIza[\w-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}|ya29\.[\w.-]{8,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,}|xox[abpr]-[\w-]{10,})"
)
"""Values that are a key by their shape, wherever they sit: OpenAI's and Anthropic's ``sk-``, Google's
``AIza`` and ``ya29.``, AWS access key ids, GitHub, Hugging Face and Slack tokens."""

_SCHEMED = re.compile(r"^\s*(?:Bearer|Basic|Token|Key|AWS4-HMAC-SHA256)\s+(\S.*)$", re.IGNORECASE)
_KEYISH_NAME = re.compile(r"auth|api[-_]?key|token|secret|password|credential|signature|cookie", re.IGNORECASE)
"""A header whose name says it carries a credential though no provider's wire names it (gateways:
``cf-aig-authorization``, ``x-portkey-api-key``, ``Helicone-Auth``)."""


def key_shaped(text: str) -> list[str]:
    """The substrings of ``text`` that have a key's shape (``sk-...``, ``AIza...``, ``AKIA...``)."""
    return _KEY_SHAPE.findall(text)


def is_secret_header(name: str, value: str) -> bool:
    """Whether a header carries a credential: by the wire's names, a gateway's, a scheme or the value's shape."""
    return (
        is_credential_header(name)
        or bool(_KEYISH_NAME.search(name))
        or bool(_SCHEMED.match(value))
        or bool(_KEY_SHAPE.search(value))
    )


def request_secrets(headers: Iterable[tuple[str, str]], uri: str, body: bytes | str | None) -> list[str]:
    """Every credential value a request carries: its secret headers (whole, the token after a scheme,
    ``Basic``'s user:password decoded), its credential query parameters, its URL's userinfo, and the
    key-shaped values of its headers and body. Each is a secret of the interaction and of its cassette."""
    import base64
    from urllib.parse import parse_qsl, unquote, urlsplit

    found: list[str] = []
    for name, value in headers:
        if not is_secret_header(name, value):
            continue
        found.append(value.strip())
        schemed = _SCHEMED.match(value)
        if schemed:
            token = schemed.group(1).strip()
            found.append(token)
            try:
                decoded = base64.b64decode(token, validate=True).decode("utf-8")
            except ValueError:
                decoded = ""
            found.extend(decoded.partition(":")[::2] if ":" in decoded else ())
        found.extend(key_shaped(value))
    parts = urlsplit(uri)
    found.extend(value for name, value in parse_qsl(parts.query, keep_blank_values=True) if is_credential_query(name))
    if parts.username or parts.password:
        found.extend(unquote(part) for part in (parts.username, parts.password) if part)
    text = body.decode("utf-8", "replace") if isinstance(body, bytes | bytearray) else (body or "")
    found.extend(key_shaped(text))
    return [value for value in dict.fromkeys(found) if len(value) >= MIN_SECRET_LENGTH]


REDACTED: Final = "[redacted]"


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every form of every secret (plain, escaped, encoded) replaced by ``[redacted]``, and
    its URLs' userinfo and credential query values removed: what a log line or an error may print."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= MIN_SECRET_LENGTH:
            for form in wire.value_forms(secret):
                text = text.replace(form, REDACTED)
    return _URL.sub(lambda match: scrub_url(match.group(0)), text)


_URL = re.compile(r"https?://[^\s'\"<>()]+")
