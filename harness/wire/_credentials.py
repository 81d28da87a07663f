"""The credential vocabulary of every provider's wire, written once: where a key travels and in what form.

A key or an identity rides in a header (``Authorization``, ``x-api-key``, AWS signatures,
organisation ids, cookies), in a query parameter (Gemini's ``?key=``, Azure's ``?api-key=``,
presigned AWS URLs), in the URL's userinfo (``http://user:KEY@gateway/v1``), and, echoed by a
provider or a proxy, in a body: whole, split across streamed events, inside ``Basic
base64(user:key)``, or percent-encoded. The recorder's scrubbing and scanning, ``harness cassettes
lint``, ``drift``'s forwarding and the emulator's journal all read these names from here, so a
name added once is removed, found and withheld everywhere.

Kept on purpose: ``x-amz-date`` and ``x-amz-content-sha256`` (a timestamp and a hash of the body:
no identity, and matching ignores them) and request ids (``x-request-id``, ``request-id``,
``x-amzn-requestid``: one request, not an account, what a provider's support asks for).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit, urlunsplit

CREDENTIAL_HEADERS: Final[frozenset[str]] = frozenset(
    {
        # credentials
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "x-amz-signature",
        "x-amz-credential",
        "cookie",
        "set-cookie",
        # identities: who is calling, under which account
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "x-goog-user-project",
        "x-amz-account-id",
    }
)
"""Header names (lower case) no recording, journal or forwarded request keeps."""

CREDENTIAL_QUERY_PARAMS: Final[frozenset[str]] = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "x-api-key",
        "x-goog-api-key",
        "access_token",
        "x-amz-security-token",
        "x-amz-signature",
        "x-amz-credential",
    }
)
"""Query parameter names (lower case) that carry a key: Gemini's ``?key=``, Azure OpenAI's
``?api-key=``, OAuth's ``access_token``, presigned AWS URLs."""

KEY_HEADERS: Final[Mapping[str, tuple[str, str]]] = {
    "openai": ("authorization", "Bearer {key}"),
    "anthropic": ("x-api-key", "{key}"),
    "gemini": ("x-goog-api-key", "{key}"),
    "vertex": ("authorization", "Bearer {key}"),
    "azure": ("api-key", "{key}"),
}
"""How each provider's SDK sends its credential: the header and the value's form (Vertex an OAuth
token, Azure OpenAI's ``AzureOpenAI`` its own header, Bedrock a SigV4 signature instead)."""


def key_header(provider: str, key: str) -> tuple[str, str]:
    """The header that carries ``key`` to ``provider``, as its SDK sends it."""
    name, form = KEY_HEADERS[provider]
    return name, form.format(key=key)


PLACEHOLDER_HEADERS: Final[Mapping[str, str]] = dict(key_header(provider, "test") for provider in KEY_HEADERS)
"""What stands in for a credential when a recorded request is sent somewhere without a real one:
each provider's SDK refuses to build a request with none, so a server expects one of these."""


def is_credential_header(name: str) -> bool:
    """True for a header that carries a credential or an identity (case-insensitive)."""
    return name.lower() in CREDENTIAL_HEADERS


def is_credential_query(name: str) -> bool:
    """True for a query parameter that carries a key (case-insensitive)."""
    return name.lower() in CREDENTIAL_QUERY_PARAMS


def scrub_headers(headers: Mapping[Any, Any]) -> dict[Any, Any]:
    """``headers`` without the credential and identity headers, order and value form kept."""
    return {name: value for name, value in headers.items() if not is_credential_header(_text(name))}


def _text(value: Any) -> str:
    return value.decode("latin-1") if isinstance(value, bytes | bytearray) else str(value)


def credential_query_names(uri: str) -> list[str]:
    """The credential parameters of ``uri``'s query, as spelled there, in order."""
    pairs = parse_qsl(urlsplit(uri).query, keep_blank_values=True)
    return [name for name, _ in pairs if is_credential_query(name)]


def has_userinfo(uri: str) -> bool:
    """Whether ``uri`` names a user or a password before its host (``http://user:KEY@host/``)."""
    return "@" in urlsplit(uri).netloc


def scrub_url(uri: str) -> str:
    """``uri`` without its userinfo and its credential query parameters; everything else as it was.

    The userinfo goes whole: the user part of ``KEY@host`` is a key as often as a name.
    """
    parts = urlsplit(uri)
    netloc = parts.netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        kept = [(name, value) for name, value in pairs if not is_credential_query(name)]
        if len(kept) != len(pairs):
            query = urlencode(kept, quote_via=quote)
    if netloc == parts.netloc and query == parts.query:
        return uri
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _base64_cores(value: bytes) -> list[str]:
    # the characters every base64 text holding ``value`` shares, whatever came before it (a user
    # name and a colon in ``Basic base64(user:key)``): base64 works in groups of three bytes, so
    # the value's encoding depends only on where it starts modulo 3
    cores: list[str] = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + value).decode("ascii")
        start, end = -(-offset // 3) * 4, (offset + len(value)) // 3 * 4
        if end - start >= 8:
            core = encoded[start:end]
            cores.extend((core, core.replace("+", "-").replace("/", "_")))
    return cores


def value_forms(value: str) -> tuple[str, ...]:
    """The forms a credential value takes in text: plain, JSON-escaped, percent-encoded, base64.

    Base64 covers ``Authorization: Basic base64(user:key)`` in any header, whatever the user
    name, and a key inside a base64 body; both the standard and the URL-safe alphabet.
    """
    escaped = json.dumps(value)[1:-1]
    return tuple(
        dict.fromkeys((value, escaped, quote(value, safe=""), quote_plus(value), *_base64_cores(value.encode("utf-8"))))
    )
