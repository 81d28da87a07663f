"""Bedrock's signature made anew for AWS from the proxy's own credentials, and what is said without them."""

from __future__ import annotations

import sys

import pytest

from harness.proxy import SigningError
from harness.proxy._sigv4 import resign, signed_by_sigv4

pytest.importorskip("botocore", reason="botocore (the bedrock extra) signs Bedrock requests")

URL = "https://bedrock-runtime.eu-west-1.amazonaws.com/model/m/converse"
CLIENT = {
    "Authorization": "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/bedrock/aws4_request, "
    "SignedHeaders=host, Signature=00",
    "X-Amz-Date": "20260101T000000Z",
    "X-Amz-Security-Token": "client-token",
    "Content-Type": "application/json",
}


def test_the_clients_signature_is_replaced_by_one_from_the_environment_for_the_real_host() -> None:
    environ = {"AWS_ACCESS_KEY_ID": "AKIDPROXYEXAMPLE", "AWS_SECRET_ACCESS_KEY": "proxy-secret-value"}
    signed = resign("POST", URL, CLIENT, b"{}", "eu-west-1", environ)
    authorization = signed["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDPROXYEXAMPLE/")
    assert "/eu-west-1/bedrock/aws4_request" in authorization and "Signature=00" not in authorization
    assert "X-Amz-Security-Token" not in signed  # the client's token went with its signature
    assert signed["X-Amz-Date"] != CLIENT["X-Amz-Date"] and signed["Content-Type"] == "application/json"
    assert signed_by_sigv4(CLIENT) and not signed_by_sigv4({"Authorization": "Bearer bedrock-api-key"})


def test_without_credentials_or_botocore_the_error_says_what_to_install_or_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(SigningError, match="needs AWS credentials"):
        resign("POST", URL, CLIENT, b"{}", "eu-west-1", {})
    monkeypatch.setitem(sys.modules, "botocore.auth", None)
    with pytest.raises(SigningError, match="install the 'bedrock' extra"):
        resign("POST", URL, CLIENT, b"{}", "eu-west-1", {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"})
