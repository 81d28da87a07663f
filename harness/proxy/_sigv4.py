"""Bedrock's SigV4 signature, made anew for the host a recording really sends to.

A client pointed at the proxy signs its request for ``127.0.0.1:PORT`` (the host is part of
what SigV4 signs) with whatever keys it holds, placeholders in a test. AWS would refuse that
signature, so a Bedrock request forwarded to AWS itself is signed again, by botocore (the
``bedrock`` extra), for the real host and region, with the credentials botocore finds in the
proxy's environment (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``, a
profile...). A request the client authorised otherwise (a Bedrock API key as ``Bearer``) goes
as it came. botocore is needed only then: a proxy that replays, or records other providers,
never imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from harness.wire import is_credential_header

SIGV4_SCHEME: Final = "AWS4-HMAC-SHA256"
_SIGNATURE_PARTS: Final = frozenset({"x-amz-date", "x-amz-content-sha256"})
"""What a signature covers besides the credential headers (``harness.wire``'s), made anew with it."""


class SigningError(RuntimeError):
    """A Bedrock request that must be signed again and cannot be; the text says what is missing."""


def signed_by_sigv4(headers: Mapping[str, str]) -> bool:
    """Whether the client signed the request with SigV4 (rather than a bearer key)."""
    return any(is_credential_header(name) and value.startswith(SIGV4_SCHEME) for name, value in headers.items())


def resign(
    method: str, url: str, headers: Mapping[str, str], body: bytes, region: str, environ: Mapping[str, str]
) -> dict[str, str]:
    """``headers`` with the client's signature replaced by one for ``url``, from ``environ``'s AWS credentials."""
    try:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        from botocore.session import Session
    except ImportError:
        raise SigningError(
            "forwarding a Bedrock request to AWS needs botocore to sign it again: install the 'bedrock' extra "
            '(pip install -e ".[bedrock]" from the checkout), or record against --upstream'
        ) from None
    key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        credentials: Credentials | None = Credentials(key, secret, environ.get("AWS_SESSION_TOKEN") or None)
    else:
        credentials = Session().get_credentials()
    if credentials is None:
        raise SigningError(
            "forwarding a Bedrock request to AWS needs AWS credentials in the proxy's environment "
            "(AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile) to sign it again"
        )
    kept = {
        name: value
        for name, value in headers.items()
        if not is_credential_header(name) and name.lower() not in _SIGNATURE_PARTS
    }
    request = AWSRequest(method=method, url=url, data=body, headers=kept)
    SigV4Auth(credentials.get_frozen_credentials(), "bedrock", region).add_auth(request)
    return {str(name): str(value) for name, value in request.headers.items()}
