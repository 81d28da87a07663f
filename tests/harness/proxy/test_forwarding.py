"""The host a cassette names for each provider, and where a request to be recorded is really sent."""

from __future__ import annotations

import pytest

from harness.proxy._forwarding import Forwarder, kept_headers, recorded_uri
from harness.wire import route_by_path

CASES = [
    ("/v1/chat/completions", "", "https://api.openai.com/v1/chat/completions"),
    ("/v1/messages", "", "https://api.anthropic.com/v1/messages"),
    (
        "/v1beta/models/gemini-2.0-flash:streamGenerateContent",
        "alt=sse",
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse",
    ),
    (
        "/v1/projects/p/locations/europe-west4/publishers/google/models/g:generateContent",
        "",
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/publishers/google/models/g:generateContent",
    ),
    ("/model/m%3A0/converse", "", "https://bedrock-runtime.eu-central-1.amazonaws.com/model/m%3A0/converse"),
]


@pytest.mark.parametrize(("path", "query", "uri"), CASES)
def test_the_cassette_names_the_providers_own_host_as_the_recorded_fixture_does(
    path: str, query: str, uri: str
) -> None:
    destination = route_by_path(path)
    assert destination is not None
    assert recorded_uri(destination, path, query, {"AWS_REGION": "eu-central-1"}) == uri


def test_bedrocks_region_comes_from_the_clients_signature_before_the_environment() -> None:
    signed = [("authorization", "AWS4-HMAC-SHA256 Credential=k/20260101/ap-south-1/bedrock/aws4_request, Signature=0")]
    destination = route_by_path("/model/m/converse-stream", signed)
    assert destination is not None
    assert recorded_uri(destination, "/model/m/converse-stream", "", {"AWS_REGION": "eu-central-1"}).startswith(
        "https://bedrock-runtime.ap-south-1.amazonaws.com/"
    )


def test_an_upstream_gets_the_path_appended_and_the_proxys_own_headers_never_leave() -> None:
    destination = route_by_path("/v1/messages")
    assert destination is not None
    forwarder = Forwarder("http://127.0.0.1:8765/", {})
    assert forwarder.target(destination, "/v1/messages", "") == "http://127.0.0.1:8765/v1/messages"
    headers = [("Host", "127.0.0.1:8766"), ("X-Harness-Cassette", "t"), ("x-api-key", "k"), ("Content-Length", "2")]
    assert kept_headers(headers) == {"x-api-key": "k"}
