"""``harness.recording._cassette``: a vcrpy cassette read as data, and each request routed to its provider endpoint.

The recorded backend, cassette lint, the emulator and ``harness conformance`` all read cassettes
through this module, so what it promises is pinned here on small hand-written files: the route
of every provider endpoint, the errors a bad file gives (path and reason), and bodies read the
way they were sent (gzip undone, JSON parsed, streams kept whole).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.recording import _cassette as cassettes
from harness.recording._cassette import Body, CassetteError, Headers
from harness.recording._conformance import default_cassette_dir
from harness.wire import ENDPOINTS, RouteError, route
from harness.wire import Destination as Route


def _interaction(
    uri: str,
    body: Any = None,
    *,
    method: str = "POST",
    status: int = 200,
    reply: Any = "{}",
    headers: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "request": {"method": method, "uri": uri, "body": body, "headers": {}},
        "response": {"status": {"code": status, "message": "OK"}, "headers": headers or {}, "body": {"string": reply}},
    }


def _write(path: Path, *interactions: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"interactions": list(interactions), "version": 1}), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Routing
# ---------------------------------------------------------------------------------------------

GEMINI = "https://generativelanguage.googleapis.com"
VERTEX = "https://europe-west4-aiplatform.googleapis.com"


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        pytest.param(
            "https://api.openai.com/v1/chat/completions", Route("openai", "chat.completions"), id="openai-chat"
        ),
        pytest.param("https://api.openai.com/v1/responses", Route("openai", "responses"), id="openai-responses"),
        pytest.param(
            "https://api.anthropic.com/v1/messages?beta=true", Route("anthropic", "messages"), id="anthropic-messages"
        ),
        pytest.param(
            f"{GEMINI}/v1beta/models/gemini-2.0-flash:generateContent",
            Route("gemini", "generateContent", model="gemini-2.0-flash", api_version="v1beta"),
            id="gemini-developer",
        ),
        pytest.param(
            f"{GEMINI}/v1/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            Route("gemini", "streamGenerateContent", model="gemini-2.5-pro", api_version="v1"),
            id="gemini-developer-streamed",
        ),
        pytest.param(
            f"{VERTEX}/v1/projects/my-proj/locations/europe-west4/publishers/google/models/gemini-2.0-flash:generateContent",
            Route(
                "gemini",
                "generateContent",
                model="gemini-2.0-flash",
                region="europe-west4",
                vertex=True,
                project="my-proj",
                api_version="v1",
            ),
            id="gemini-vertex",
        ),
        pytest.param(
            f"{VERTEX}/v1beta1/projects/p/locations/europe-west4/publishers/google/models/gemini-x:streamGenerateContent?alt=sse",
            Route(
                "gemini",
                "streamGenerateContent",
                model="gemini-x",
                region="europe-west4",
                vertex=True,
                project="p",
                api_version="v1beta1",
            ),
            id="gemini-vertex-streamed",
        ),
        pytest.param(
            "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-x:generateContent",
            Route("gemini", "generateContent", model="gemini-x", region="global", vertex=True, api_version="v1"),
            id="gemini-vertex-express",
        ),
        pytest.param(
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/converse",
            Route("bedrock", "converse", model="us.amazon.nova-micro-v1:0", region="us-east-1"),
            id="bedrock-converse",
        ),
        pytest.param(
            "https://bedrock-runtime-fips.us-west-2.amazonaws.com/model/anthropic.claude-3/converse-stream",
            Route("bedrock", "converse-stream", model="anthropic.claude-3", region="us-west-2"),
            id="bedrock-converse-stream-fips",
        ),
    ],
)
def test_each_provider_endpoint_is_routed_from_method_host_and_path(uri: str, expected: Route) -> None:
    assert route("POST", uri) == expected
    assert (expected.provider, expected.endpoint) in ENDPOINTS


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("http://127.0.0.1:5/v1/chat/completions", Route("openai", "chat.completions", base_url="http://127.0.0.1:5")),
        ("http://127.0.0.1:5/v1/responses", Route("openai", "responses", base_url="http://127.0.0.1:5")),
        (
            "https://gw.example/anthropic/v1/messages",
            Route("anthropic", "messages", base_url="https://gw.example/anthropic"),
        ),
        (
            "http://localhost:8/v1beta/models/g-1:streamGenerateContent?alt=sse",
            Route("gemini", "streamGenerateContent", model="g-1", api_version="v1beta", base_url="http://localhost:8"),
        ),
        (
            "http://h:8/p/v1/projects/pr/locations/eu/publishers/google/models/g-1:generateContent",
            Route("gemini", "generateContent", "g-1", "eu", True, "pr", "v1", base_url="http://h:8/p"),
        ),
        (
            "http://h:8/v1/publishers/google/models/g-1:generateContent",
            Route("gemini", "generateContent", "g-1", "global", True, None, "v1", base_url="http://h:8"),
        ),
        (
            "http://127.0.0.1:5/model/anthropic.claude-3/converse-stream",
            Route("bedrock", "converse-stream", model="anthropic.claude-3", base_url="http://127.0.0.1:5"),
        ),
    ],
)
def test_a_request_to_another_host_is_routed_by_the_providers_path(uri: str, expected: Route) -> None:
    assert route("POST", uri) == expected


def test_the_bedrock_region_of_another_host_comes_from_the_signatures_scope() -> None:
    signed = [("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/eu-west-3/bedrock/aws4_request")]
    assert route("POST", "http://127.0.0.1:5/model/m/converse", signed).region == "eu-west-3"


@pytest.mark.parametrize(
    ("method", "uri", "reason"),
    [
        ("POST", "https://llm.example.com/v1/generate", "no backend for host 'llm.example.com'"),
        ("GET", "https://api.openai.com/v1/chat/completions", "no backend for GET requests"),
        ("POST", "https://api.openai.com/v1/embeddings", "no backend for the OpenAI endpoint /v1/embeddings"),
        ("POST", "https://api.anthropic.com/v1/complete", "no backend for the Anthropic endpoint /v1/complete"),
        ("POST", f"{GEMINI}/v1beta/models/gemini-x:countTokens", "no backend for the Gemini method countTokens"),
        (
            "POST",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/count-tokens",
            "no backend for the Bedrock operation count-tokens",
        ),
    ],
)
def test_a_request_no_backend_serves_is_refused_with_the_reason(method: str, uri: str, reason: str) -> None:
    with pytest.raises(RouteError) as caught:
        route(method, uri)
    assert str(caught.value).startswith(reason)


def test_routing_is_lazy_so_a_cassette_with_an_unknown_host_still_loads(tmp_path: Path) -> None:
    cassette = cassettes.load(
        _write(
            tmp_path / "c.yaml",
            _interaction("https://llm.example.com/x"),
            _interaction(f"{GEMINI}/v1beta/models/g:generateContent"),
        )
    )
    with pytest.raises(RouteError, match="no backend for host"):
        _ = cassette.interactions[0].request.route
    assert cassette.interactions[1].request.route.provider == "gemini"


@pytest.mark.parametrize(
    ("uri", "body", "model", "stream"),
    [
        ("https://api.openai.com/v1/chat/completions", {"model": "gpt-4o", "stream": True}, "gpt-4o", True),
        ("https://api.openai.com/v1/responses", {"model": "gpt-5"}, "gpt-5", False),
        ("https://api.anthropic.com/v1/messages", {"model": "claude-x", "stream": "yes"}, "claude-x", False),
        (f"{GEMINI}/v1beta/models/g-1:streamGenerateContent?alt=sse", {"model": "ignored"}, "g-1", True),
        ("https://bedrock-runtime.us-east-1.amazonaws.com/model/m%2F1/converse", {"stream": True}, "m/1", False),
        ("https://api.openai.com/v1/chat/completions", {"messages": []}, None, False),
    ],
)
def test_model_and_stream_come_from_the_url_where_it_fixes_them_else_from_the_body(
    tmp_path: Path, uri: str, body: dict[str, Any], model: str | None, stream: bool
) -> None:
    (interaction,) = cassettes.load(_write(tmp_path / "c.yaml", _interaction(uri, json.dumps(body))))
    assert (interaction.request.model, interaction.request.stream) == (model, stream)


def test_declared_tools_are_read_per_provider_into_json_schema_specs(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    bodies = {
        "https://api.openai.com/v1/chat/completions": {
            "tools": [{"type": "function", "function": {"name": "find", "description": "d", "parameters": schema}}]
        },
        "https://api.openai.com/v1/responses": {
            "tools": [
                {"type": "function", "name": "find", "description": "d", "parameters": schema},
                {"type": "web_search"},
            ]
        },
        "https://api.anthropic.com/v1/messages": {
            "tools": [
                {"name": "find", "description": "d", "input_schema": schema},
                {"type": "web_search_20250305", "name": "s"},
            ]
        },
        f"{GEMINI}/v1beta/models/g:generateContent": {
            "tools": [{"functionDeclarations": [{"name": "find", "description": "d", "parametersJsonSchema": schema}]}]
        },
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse": {
            "toolConfig": {
                "tools": [{"toolSpec": {"name": "find", "description": "d", "inputSchema": {"json": schema}}}]
            }
        },
    }
    cassette = cassettes.load(
        _write(tmp_path / "c.yaml", *(_interaction(uri, json.dumps(body)) for uri, body in bodies.items()))
    )
    for interaction in cassette:
        assert [(t.name, t.description, t.parameters) for t in interaction.request.tools] == [("find", "d", schema)]


# ---------------------------------------------------------------------------------------------
# Loading errors: the path and the reason
# ---------------------------------------------------------------------------------------------


def _load_error(path: Path) -> CassetteError:
    with pytest.raises(CassetteError) as caught:
        cassettes.load(path)
    assert caught.value.path == path
    assert str(caught.value) == f"{path}: {caught.value.reason}"
    return caught.value


def test_a_missing_file_names_the_path_and_why(tmp_path: Path) -> None:
    error = _load_error(tmp_path / "absent.yaml")
    assert error.reason == "cannot read the cassette: No such file or directory"


def test_a_file_that_is_not_yaml_names_the_parser_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("interactions: [\n  - {request: \n", encoding="utf-8")
    error = _load_error(path)
    assert error.reason.startswith("not a YAML cassette: ")
    assert "line" in error.reason  # the parser's position survives, so the user can find the spot


def test_a_python_object_tag_is_refused_not_executed(tmp_path: Path) -> None:
    # vcrpy's own safe loader reads the file: a cassette can never run code.
    path = tmp_path / "evil.yaml"
    path.write_text("interactions: !!python/object/apply:os.system ['echo pwned']\n", encoding="utf-8")
    assert _load_error(path).reason.startswith("not a YAML cassette: ")


@pytest.mark.parametrize("content", ["just: notes\n", "interactions: []\n", "- a list\n", ""])
def test_yaml_that_is_not_a_vcrpy_cassette_says_so(tmp_path: Path, content: str) -> None:
    path = tmp_path / "notes.yaml"
    path.write_text(content, encoding="utf-8")
    assert _load_error(path).reason == "not a vcrpy cassette (no interactions)"


def test_an_interaction_without_request_or_status_is_named_by_index_as_a_replay_names_it(tmp_path: Path) -> None:
    good = _interaction("https://api.openai.com/v1/chat/completions")
    no_uri = {**good, "request": {"method": "POST"}}
    assert _load_error(_write(tmp_path / "a.yaml", good, no_uri)).reason == "interactions[1].request has no uri"
    no_status = {**good, "response": {"body": {"string": ""}}}
    assert _load_error(_write(tmp_path / "b.yaml", no_status)).reason == (
        "interactions[0].response has no status code (status: {code: 200, message: OK})"
    )


# ---------------------------------------------------------------------------------------------
# Requests and replies as data
# ---------------------------------------------------------------------------------------------


def test_a_gzip_reply_is_decompressed_and_parsed_by_its_magic_bytes(tmp_path: Path) -> None:
    reply = {"choices": [{"message": {"content": "hi"}}]}
    packed = gzip.compress(json.dumps(reply).encode())
    # no content-encoding header: several recorders strip every header
    (interaction,) = cassettes.load(
        _write(tmp_path / "c.yaml", _interaction("https://api.openai.com/v1/chat/completions", reply=packed))
    )
    body = interaction.response.body
    assert (body.stored, body.compressed) == (packed, True)
    assert body.json == reply and body.object == reply
    assert body.text == json.dumps(reply)


def test_a_streamed_reply_stays_whole_as_text_and_bytes(tmp_path: Path) -> None:
    sse = 'data: {"a": 1}\r\n\r\ndata: {"a": 2}\r\n\r\n'
    frames = b"\x00\x00\x00\x10\x00\x00\x00\x00\xff\xfe binary"  # an AWS event stream is not UTF-8
    cassette = cassettes.load(
        _write(
            tmp_path / "c.yaml",
            _interaction(f"{GEMINI}/v1beta/models/g:streamGenerateContent?alt=sse", reply=sse),
            _interaction("https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream", reply=frames),
        )
    )
    gemini, bedrock = (interaction.response.body for interaction in cassette)
    assert gemini.text == sse and gemini.json is None and gemini.object == {}
    assert bedrock.data == frames and not bedrock.compressed and bedrock.json is None


@pytest.mark.parametrize(
    "recorded",
    [
        pytest.param('{"model": "m"}', id="text"),
        pytest.param(b'{"model": "m"}', id="binary"),
        pytest.param({"string": '{"model": "m"}'}, id="nested-like-a-response"),
    ],
)
def test_a_request_body_is_read_in_every_form_recorders_store_it(tmp_path: Path, recorded: Any) -> None:
    (interaction,) = cassettes.load(
        _write(tmp_path / "c.yaml", _interaction("https://api.openai.com/v1/chat/completions", recorded))
    )
    assert interaction.request.body.object == {"model": "m"}
    assert interaction.request.model == "m"


def test_an_empty_or_absent_body_reads_as_empty() -> None:
    for recorded in (None, "", {"string": None}):
        body = Body.of(recorded)
        assert (body.data, body.text, body.json, body.object) == (b"", "", None, {})


def test_headers_keep_order_and_repeats_and_ignore_case_on_lookup(tmp_path: Path) -> None:
    headers = {"Content-Type": ["text/event-stream"], "Set-Cookie": ["a=1", "b=2"], "X-Amz-Date": [b"20250101T000000Z"]}
    (interaction,) = cassettes.load(
        _write(tmp_path / "c.yaml", _interaction("https://api.openai.com/v1/responses", headers=headers, status=429))
    )
    response = interaction.response
    assert (response.status, response.reason, response.ok) == (429, "OK", False)
    assert response.headers.get("content-type") == "text/event-stream"
    assert response.headers.get_all("set-cookie") == ("a=1", "b=2")
    assert response.headers.get("x-amz-date") == "20250101T000000Z"  # botocore's !!binary values read as text
    assert response.headers.get("absent", "none") == "none"
    assert Headers.of({"A": "1"}).items == (("A", "1"),)


def test_the_values_are_frozen(tmp_path: Path) -> None:
    cassette = cassettes.load(_write(tmp_path / "c.yaml", _interaction("https://api.openai.com/v1/responses")))
    interaction = cassette.interactions[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        interaction.index = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        interaction.request.route.provider = "anthropic"  # type: ignore[misc]
    assert interaction.where == "interaction 0 (POST https://api.openai.com/v1/responses)"
    assert (len(cassette), list(cassette)) == (1, [interaction])


def test_the_shared_recordings_route_and_read_as_their_index_says() -> None:
    folder = default_cassette_dir()
    index = folder / "index.json"
    if not index.is_file():
        pytest.skip(f"provider cassettes not found: {folder} (set HARNESS_PROVIDER_CASSETTES to the folder)")
    for entry in json.loads(index.read_text(encoding="utf-8")):
        cassette = cassettes.load(folder / entry["file"])
        for interaction, expected in zip(cassette, entry["interactions"], strict=True):
            request, where = interaction.request, f"{entry['file']} #{interaction.index}"
            assert (request.route.provider, request.route.endpoint) == (entry["provider"], expected["endpoint"]), where
            assert (request.stream, request.path, request.model) == (
                expected["stream"],
                expected["path"],
                entry["model"],
            ), where
            assert interaction.response.status == expected["status"], where
            if expected["status"] == 200 and not expected["stream"]:  # every plain reply is JSON, gzip or not
                assert isinstance(interaction.response.body.json, dict), where
