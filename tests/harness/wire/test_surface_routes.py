"""The surfaces of the route table (issue 36) read back from the URLs their SDKs send: each to its
codec's provider and endpoint, with what the URL fixes (deployment, Vertex project and location,
Bedrock region, Azure's api-version) and the surface, which decides where the proxy may forward."""

from __future__ import annotations

import pytest

import harness.wire as wire

SIGV4 = [("authorization", "AWS4-HMAC-SHA256 Credential=AKID/20260601/eu-west-1/bedrock/aws4_request, Signature=x")]


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (
            "https://res.openai.azure.com/openai/deployments/gpt%204o/chat/completions?api-version=2024-10-21",
            ("openai", "chat.completions", "azure", "gpt 4o", "https://res.openai.azure.com", "2024-10-21"),
        ),
        (
            "https://res.openai.azure.com/openai/responses?api-version=2025-03-01-preview",
            ("openai", "responses", "azure", None, "https://res.openai.azure.com", "2025-03-01-preview"),
        ),
        (
            "https://res.services.ai.azure.com/openai/v1/chat/completions",
            ("openai", "chat.completions", "openai-v1", None, "https://res.services.ai.azure.com", None),
        ),
        (
            "https://api.groq.com/openai/v1/chat/completions",
            ("openai", "chat.completions", "openai-v1", None, "https://api.groq.com", None),
        ),
        (
            "https://openrouter.ai/api/v1/responses",
            ("openai", "responses", "openrouter", None, "https://openrouter.ai", None),
        ),
        ("https://api.anthropic.com/messages", ("anthropic", "messages", "root", None, None, None)),
        ("http://127.0.0.1:8/messages", ("anthropic", "messages", "root", None, "http://127.0.0.1:8", None)),
        (
            "https://us-east5-aiplatform.googleapis.com/v1/projects/p-1/locations/us-east5/publishers/anthropic"
            "/models/claude-sonnet-4-5@20250929:streamRawPredict",
            ("anthropic", "messages", "vertex", "claude-sonnet-4-5@20250929", None, "v1"),
        ),
        (
            "https://bedrock-runtime.eu-west-1.amazonaws.com/model/anthropic.claude-3%3A0/invoke-with-response-stream",
            ("bedrock", "invoke-with-response-stream", "", "anthropic.claude-3:0", None, None),
        ),
        ("http://127.0.0.1:11434/api/chat", ("ollama", "chat", "", None, "http://127.0.0.1:11434", None)),
    ],
)
def test_each_surface_reads_back_from_the_url_its_sdk_sends(uri: str, expected: tuple[object, ...]) -> None:
    found = wire.route("POST", uri)
    assert (found.provider, found.endpoint, found.surface, found.model, found.base_url, found.api_version) == expected


def test_claude_on_vertex_keeps_its_project_and_location_and_bedrock_invoke_its_region_and_streaming() -> None:
    vertex = wire.route_by_path("/v1/projects/p-1/locations/europe-west1/publishers/anthropic/models/c@1:rawPredict")
    assert vertex is not None and (vertex.project, vertex.region, vertex.vertex) == ("p-1", "europe-west1", True)
    invoke = wire.route_by_path("/model/anthropic.claude/invoke-with-response-stream", SIGV4)
    assert invoke is not None and (invoke.region, invoke.streams) == ("eu-west-1", True)
    whole = wire.route_by_path("/model/anthropic.claude/invoke")
    assert whole is not None and whole.streams is False


def test_a_surface_is_read_as_a_whole_path_and_a_prefix_before_it_stays_the_base_urls() -> None:
    # a gateway's own path before OpenAI's: OpenAI's path below it, as an OpenAI client rebuilds it
    prefixed = wire.route_by_path("/gw/openai/v1/chat/completions")
    assert prefixed is not None and (prefixed.surface, prefixed.base_url) == ("", "/gw/openai")
    assert wire.route_by_path("/v1/threads/t-1/messages") is None  # Assistants' messages are no Anthropic call
    assert wire.route_by_path("/gw/messages") is None
    assert wire.route_by_path("/x/api/chat") == wire.Destination("ollama", "chat", base_url="/x")


def test_the_prefix_a_surface_puts_before_its_providers_paths() -> None:
    prefixes = {
        path: wire.surface_prefix(found)
        for path in ("/api/v1/chat/completions", "/openai/v1/responses", "/openai/responses", "/messages")
        if (found := wire.route_by_path(path)) is not None
    }
    assert prefixes == {
        "/api/v1/chat/completions": "/api",
        "/openai/v1/responses": "/openai",
        "/openai/responses": "",
        "/messages": "",
    }


def test_an_azure_endpoint_openprogram_has_no_backend_for_is_refused_and_the_new_wires_are_served() -> None:
    with pytest.raises(wire.RouteError, match=r"no backend for res\.openai\.azure\.com's endpoint"):
        wire.route("POST", "https://res.openai.azure.com/openai/deployments/d/embeddings?api-version=1")
    assert wire.WITHOUT_BACKEND <= wire.SERVED_ENDPOINTS
    assert not wire.WITHOUT_BACKEND & wire.ENDPOINTS
