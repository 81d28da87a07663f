"""harness.recording._scrub: what is removed before recording, and the scan that stops a secret reaching disk."""

from __future__ import annotations

import gzip
import json
import zlib

import pytest
import yaml

from harness.recording._scrub import (
    PLACEHOLDER_ACCOUNT,
    CredentialFinding,
    CredentialLeakError,
    credential_variables,
    find_credentials,
    find_credentials_in,
    is_credential_variable,
    scrub_arns,
    scrub_uri,
)
from harness.wire import is_credential_header, scrub_headers

SECRET = "sk-sentinel-0123456789abcdef"


@pytest.mark.parametrize(
    "name",
    [
        "Authorization",
        "x-api-key",
        "api-key",
        "X-Goog-Api-Key",
        "x-amz-security-token",
        "Cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
    ],
)
def test_credential_and_identity_headers_are_removed(name: str) -> None:
    headers = {name: ["secret"], "content-type": ["application/json"], "x-request-id": ["req_1"]}
    assert scrub_headers(headers) == {"content-type": ["application/json"], "x-request-id": ["req_1"]}
    assert is_credential_header(name.upper())


@pytest.mark.parametrize("kept", ["x-amz-date", "x-amz-content-sha256", "x-request-id", "user-agent"])
def test_headers_without_identity_are_kept(kept: str) -> None:
    assert scrub_headers({kept: "v"}) == {kept: "v"}


def test_key_query_parameter_is_removed_and_the_rest_kept_in_order() -> None:
    uri = "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse&key=AIzaSECRET&x=1"
    assert (
        scrub_uri(uri) == "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse&x=1"
    )
    assert scrub_uri("https://api.openai.com/v1/chat/completions") == "https://api.openai.com/v1/chat/completions"


def test_bedrock_account_ids_in_arns_are_zeroed_plain_and_percent_encoded() -> None:
    path = (
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/"
        "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude/converse"
    )
    scrubbed = scrub_uri(path)
    assert "123456789012" not in scrubbed
    assert f"us-east-1%3A{PLACEHOLDER_ACCOUNT}%3Ainference-profile" in scrubbed
    text = '{"guardrail": "arn:aws:bedrock:eu-west-1:210987654321:guardrail/abc"}'
    assert scrub_arns(text) == '{"guardrail": "arn:aws:bedrock:eu-west-1:000000000000:guardrail/abc"}'
    assert scrub_arns("order 123456789012 shipped") == "order 123456789012 shipped"  # not an ARN: untouched


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        ("OPENAI_API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("AWS_SESSION_TOKEN", True),
        ("AWS_ACCESS_KEY_ID", True),
        ("MY_SERVICE_SECRET", True),
        ("HOME", False),
        ("AWS_REGION", False),
        ("PATH", False),
    ],
)
def test_credential_variables_by_name(name: str, credential: bool) -> None:
    assert is_credential_variable(name) is credential


def test_short_values_are_not_scanned_for() -> None:
    assert credential_variables({"A_TOKEN": "1", "B_API_KEY": SECRET, "HOME": "/home/someone"}) == {"B_API_KEY": SECRET}


def _cassette_text(header_value: str = "safe", body_field: str = "safe") -> tuple[dict, str]:
    data = {
        "interactions": [
            {
                "request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions", "headers": {}},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"x-echo": [header_value]},
                    "body": {"string": json.dumps({"choices": [{"message": {"content": body_field}}]})},
                },
            }
        ],
        "version": 1,
    }
    return data, yaml.safe_dump(data, sort_keys=False)


def test_a_value_in_a_header_is_named_by_its_header() -> None:
    data, text = _cassette_text(header_value=SECRET)
    environ = {"OPENAI_API_KEY": SECRET}
    found = find_credentials_in(data, environ)
    assert found == [CredentialFinding("OPENAI_API_KEY", "interactions[0].response.headers.x-echo[0]")]
    by_line = find_credentials(text, environ)
    assert by_line == [CredentialFinding("OPENAI_API_KEY", "line 12 (interactions.response.headers.x-echo)")]


def test_a_value_in_a_json_body_is_named_by_its_field() -> None:
    data, text = _cassette_text(body_field=f"your key is {SECRET}")
    found = find_credentials_in(data, {"ANTHROPIC_API_KEY": SECRET})
    assert found == [
        CredentialFinding("ANTHROPIC_API_KEY", "interactions[0].response.body.string: choices[0].message.content")
    ]
    assert find_credentials(text, {"ANTHROPIC_API_KEY": SECRET})  # JSON-escaped inside YAML text: still found


def test_a_value_in_binary_body_is_found() -> None:
    data = {"body": {"string": b"\x00\x00\x01evt" + SECRET.encode() + b"\xff"}}
    assert find_credentials_in(data, {"AWS_SECRET_ACCESS_KEY": SECRET}) == [
        CredentialFinding("AWS_SECRET_ACCESS_KEY", "body.string")
    ]


def test_extra_values_are_scanned_for_without_an_environment() -> None:
    assert find_credentials("key: " + SECRET, {}, extra=[SECRET]) == [CredentialFinding("extra", "line 1 (key)")]


def test_clean_text_has_no_findings() -> None:
    data, text = _cassette_text()
    assert find_credentials(text, {"OPENAI_API_KEY": SECRET}) == []
    assert find_credentials_in(data, {"OPENAI_API_KEY": SECRET}) == []


def test_the_leak_error_names_the_place_and_never_the_value() -> None:
    error = CredentialLeakError("cassettes/t/test_a.yaml", [CredentialFinding("OPENAI_API_KEY", "x.headers.h")])
    assert "cassettes/t/test_a.yaml: not written" in str(error)
    assert "the value of OPENAI_API_KEY in x.headers.h" in str(error)
    assert SECRET not in str(error)


@pytest.mark.parametrize(
    ("encoding", "body", "kept"),
    [
        ("gzip", b'{"a": 1}', False),  # stored decoded: the header would make the SDK gunzip JSON
        # mtime=0: the bytes are in the test's id, which every xdist worker must collect alike
        ("gzip", gzip.compress(b'{"a": 1}', mtime=0), True),  # stored compressed: it says so
        ("deflate", b'{"a": 1}', False),
        ("deflate", zlib.compress(b'{"a": 1}'), True),
        ("br", b'{"a": 1}', True),  # never decoded by vcrpy: left as the server said
    ],
)
def test_a_content_encoding_is_kept_only_when_the_stored_body_is_in_it(encoding: str, body: bytes, kept: bool) -> None:
    from harness.recording._scrub import honest_encoding

    response = {"headers": {"Content-Encoding": [encoding], "Content-Length": ["3"]}, "body": {"string": body}}
    honest_encoding(response)
    assert ("Content-Encoding" in response["headers"]) == kept
    if not kept:
        assert response["headers"]["Content-Length"] == [str(len(body))]


@pytest.mark.parametrize("side", ["request", "response"])
def test_the_recorder_refuses_a_key_inside_a_gzip_body(tmp_path, side: str) -> None:
    """A body kept compressed (a client that gzips its requests, ``decode_compressed_response=False``)
    is written as gzip bytes: the key is in no line of the file, nor in the bytes as stored."""
    from vcr.request import Request

    from harness.recording._vcr._vcr_persister import AtomicPersister
    from harness.recording._vcr._vcr_yaml import _ReadableYaml

    packed = gzip.compress(json.dumps({"messages": [{"role": "user", "content": f"my key is {SECRET}"}]}).encode())
    plain = b'{"ok": true}'
    request = Request(
        "POST",
        "https://api.openai.com/v1/chat/completions",
        packed if side == "request" else plain,
        {"content-encoding": "gzip"} if side == "request" else {},
    )
    headers = {"content-type": ["application/json"], **({"content-encoding": ["gzip"]} if side == "response" else {})}
    response = {
        "status": {"code": 200, "message": "OK"},
        "headers": headers,
        "body": {"string": packed if side == "response" else plain},
    }
    persister = AtomicPersister(environ={"MY_SERVICE_TOKEN": SECRET})
    path = tmp_path / "test_gzip.yaml"
    with pytest.raises(CredentialLeakError) as refused:
        persister.save_cassette(str(path), {"requests": [request], "responses": [response]}, serializer=_ReadableYaml())
    assert f"the value of MY_SERVICE_TOKEN in interactions[0].{side}.body" in str(refused.value)
    assert not path.exists()
