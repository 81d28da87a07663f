"""A malformed request gets the provider's own 400, never a server error: each wire's error
envelope and status, read by each official SDK as its own bad-request error with our message,
and the request takes no turn of the script."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from harness.emulator import Emulator
from harness.wire import MAX_DEPTH

GEMINI = "/v1beta/models/gemini-2.5-flash:generateContent"
PATHS = {
    "openai chat": "/v1/chat/completions",
    "openai responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": GEMINI,
    "gemini stream": "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    "vertex": "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent",
    "bedrock": "/model/us.amazon.nova-micro-v1:0/converse",
    "bedrock stream": "/model/us.amazon.nova-micro-v1:0/converse-stream",
}
JSON = "application/json"
HEADERS = {"content-type": JSON}
BODIES: dict[str, tuple[bytes, str, str]] = {
    "not JSON": (b"{model: gpt}", JSON, "the body is not valid JSON: Expecting property name"),
    "an array": (b'[{"model": "m"}]', JSON, "the body must be a JSON object, got an array"),
    "a string": (b'"hello"', JSON, "the body must be a JSON object, got a string"),
    "null": (b"null", JSON, "the body must be a JSON object, got null"),
    "nested deeply": (b"[" * 100_000 + b"]" * 100_000, JSON, "the body's JSON nests deeper than 128 levels"),
    "an object nested deeply": (b'{"a":' * 20_000 + b"1" + b"}" * 20_000, JSON, "nests deeper than 128 levels"),
    "a huge number": (b'{"max_tokens": ' + b"9" * 10_000 + b"}", JSON, "Exceeds the limit (4300 digits)"),
    "a lone surrogate": (
        b'{"model": "m\\ud800"}',
        JSON,
        "the body's JSON holds a lone UTF-16 surrogate (\\ud800), not text",
    ),
    "invalid UTF-8": (b'{"model": "\xff\xfe"}', JSON, "the body is not UTF-8 text (byte 0xff at offset 11)"),
    "a wrong content type": (b'{"model": "m"}', "text/plain", "must be JSON sent as application/json, not text/plain"),
    "form data": (b"model=m", "application/x-www-form-urlencoded", "not application/x-www-form-urlencoded"),
    "empty": (b"", JSON, "the request has no body; send a JSON object"),
}
WRONG_FIELDS = json.dumps(
    {k: 7 for k in ("model", "messages", "input", "contents", "tools", "system", "stream_options", "toolConfig")}
).encode()
"""A JSON object whose every field a renderer might read has the wrong type."""


def envelope(provider: str, reply: httpx2.Response) -> str:
    """The message of a provider's 400 envelope, after checking the envelope is exactly that provider's."""
    body = reply.json()
    if provider.startswith("openai"):
        assert set(body["error"]) == {"message", "type", "param", "code"}
        assert body["error"]["type"] == "invalid_request_error"
        return body["error"]["message"]
    if provider == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
        return body["error"]["message"]
    if provider in ("gemini", "gemini stream", "vertex"):
        assert (body["error"]["code"], body["error"]["status"]) == (400, "INVALID_ARGUMENT")
        return body["error"]["message"]
    assert reply.headers["x-amzn-errortype"].split(":")[0] == "ValidationException"
    assert set(body) == {"message"}
    return body["message"]


@pytest.fixture(scope="module")
def served() -> Iterator[Emulator]:
    with Emulator("never used", after_last="repeat") as emulator:
        yield emulator


@pytest.mark.parametrize("body_kind", list(BODIES))
@pytest.mark.parametrize("provider", list(PATHS))
def test_a_malformed_body_gets_the_providers_400_envelope_over_a_real_socket(
    served: Emulator, provider: str, body_kind: str
) -> None:
    body, content_type, said = BODIES[body_kind]
    served.reset_script()
    reply = httpx2.post(served.base_url + PATHS[provider], content=body, headers={"content-type": content_type})
    assert reply.status_code == 400, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    message = envelope(provider, reply)
    assert message.startswith("emulator: ") and said in message, message
    assert served.requests == []  # refused before the script: no turn taken


def test_a_refused_request_takes_no_turn_and_the_next_good_one_gets_the_first() -> None:
    emulator = Emulator("first")
    with emulator.sync_http_client() as client:
        refused = client.post("http://emulator/v1/chat/completions", content=b"{", headers={"content-type": JSON})
        good = client.post("http://emulator/v1/chat/completions", json={"model": "m", "messages": []})
    assert refused.status_code == 400
    assert good.json()["choices"][0]["message"]["content"] == "first"
    emulator.assert_complete()


def test_a_bad_request_never_gets_a_server_error_in_process_either() -> None:
    emulator = Emulator("x", after_last="repeat")
    with emulator.sync_http_client() as client:
        for path in PATHS.values():
            for body, content_type in [*((b, t) for b, t, _ in BODIES.values()), (WRONG_FIELDS, JSON)]:
                reply = client.post("http://emulator" + path, content=body, headers={"content-type": content_type})
                assert reply.status_code < 500, (path, body[:40], reply.text)
    with emulator.sync_http_client() as client:
        chat = client.post(
            "http://emulator" + PATHS["openai chat"], content=WRONG_FIELDS, headers={"content-type": JSON}
        )
    assert chat.status_code == 400
    assert chat.json()["error"]["message"].startswith("emulator: cannot answer this chat.completions request: ")


@pytest.mark.parametrize("provider", list(PATHS))
def test_another_verb_on_a_providers_path_gets_405_in_its_envelope(served: Emulator, provider: str) -> None:
    served.reset_script()
    reply = httpx2.get(served.base_url + PATHS[provider])
    assert reply.status_code == 405, reply.text
    assert reply.headers["allow"] == "POST"
    body = reply.json()
    if provider.startswith("openai"):
        message = body["error"]["message"]
    elif provider == "anthropic":
        assert body["type"] == "error"
        message = body["error"]["message"]
    elif provider.startswith(("gemini", "vertex")):
        assert body["error"]["code"] == 405
        message = body["error"]["message"]
    else:
        assert "x-amzn-errortype" in reply.headers
        message = body["message"]
    assert message.startswith("emulator: GET ") and "takes POST only" in message, message
    assert served.requests == []


def test_a_proxy_credential_is_never_kept_in_a_captured_request() -> None:
    emulator = Emulator("ok")
    with emulator.sync_http_client() as client:
        client.post(
            "http://emulator/v1/chat/completions",
            json={"model": "m", "messages": []},
            headers={"proxy-authorization": "Basic dXNlcjpzZWNyZXQ=", "authorization": "Bearer sk-x"},
        )
    kept = emulator.requests[0].headers
    assert "proxy-authorization" not in kept and "authorization" not in kept


# -- each official SDK reads our 400 as its own bad-request error -------------------------------


class _Mangle(httpx2.BaseTransport):
    """A client transport that swaps every request's body for text that is not JSON: how a broken
    serializer, proxy or hand-made request looks to the emulator."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() != "content-length"}
        mangled = httpx2.Request(request.method, request.url, headers=headers, content=b"{not json")
        return self.inner.handle_request(mangled)


NOT_JSON = "emulator: the body is not valid JSON: Expecting property name enclosed in double quotes"


def test_openai_raises_its_bad_request_error_with_our_message(served: Emulator) -> None:
    client = openai.OpenAI(
        base_url=f"{served.base_url}/v1",
        api_key="sk-test",
        max_retries=0,
        http_client=httpx2.Client(transport=_Mangle()),
    )
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 400
    assert raised.value.type == "invalid_request_error"
    assert str(raised.value.message).startswith("Error code: 400") and NOT_JSON in raised.value.message


def test_openai_with_a_wrong_content_type_of_its_own(served: Emulator) -> None:
    client = openai.OpenAI(base_url=f"{served.base_url}/v1", api_key="sk-test", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="not text/plain"):
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}], extra_headers={"Content-Type": "text/plain"}
        )


def test_anthropic_raises_its_bad_request_error_with_our_message(served: Emulator) -> None:
    client = anthropic.Anthropic(
        base_url=served.base_url, api_key="sk-ant-test", max_retries=0, http_client=httpx2.Client(transport=_Mangle())
    )
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(model="c", max_tokens=9, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 400
    assert raised.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert NOT_JSON in raised.value.message


def test_google_genai_raises_its_client_error_with_our_message(served: Emulator) -> None:
    from google import genai
    from google.genai import errors
    from google.genai.types import HttpOptions

    client = genai.Client(
        api_key="fake-key",
        http_options=HttpOptions(base_url=served.base_url, httpx_client=httpx2.Client(transport=_Mangle())),
    )
    with pytest.raises(errors.ClientError) as raised:
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert (raised.value.code, raised.value.status) == (400, "INVALID_ARGUMENT")
    assert raised.value.message is not None and raised.value.message.startswith(NOT_JSON)


def test_boto3_raises_its_validation_exception_with_our_message(served: Emulator) -> None:
    import boto3

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=served.base_url,
        aws_access_key_id="fake",
        aws_secret_access_key="fake",
    )

    def mangle(request: Any, **_: Any) -> None:
        request.body = b"{not json"
        request.headers["Content-Length"] = str(len(request.body))

    client.meta.events.register("before-send.bedrock-runtime.Converse", mangle)
    with pytest.raises(client.exceptions.ValidationException) as raised:
        client.converse(modelId="us.amazon.nova-micro-v1:0", messages=[{"role": "user", "content": [{"text": "hi"}]}])
    error = raised.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert error["Message"].startswith(NOT_JSON)
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    json.dumps(raised.value.response, default=str)  # nothing odd in what botocore parsed


def _nested(levels: int) -> bytes:
    """A chat request whose ``x`` field makes the body ``levels`` arrays and objects deep."""
    return b'{"model": "m", "messages": [], "x": ' + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}"


def test_nesting_is_answered_up_to_the_wire_limit_and_refused_beyond_at_every_depth(tmp_path: Path) -> None:
    # Bodies just under the interpreter's own limit once parsed, then failed while rendered or
    # journaled, a few frames deeper: a 500 on the port, a RecursionError in process.
    emulator = Emulator("deep enough", after_last="repeat", journal=tmp_path / "journal.jsonl")
    with emulator.sync_http_client() as client:

        def post(levels: int) -> httpx2.Response:
            return client.post("http://emulator" + PATHS["openai chat"], content=_nested(levels), headers=HEADERS)

        assert post(MAX_DEPTH).status_code == 200
        refused = post(MAX_DEPTH + 1)
        assert refused.status_code == 400
        assert refused.json()["error"]["message"] == f"emulator: the body's JSON nests deeper than {MAX_DEPTH} levels"
        assert {post(levels).status_code for levels in range(900, 1001)} == {400}
    with emulator:
        served = httpx2.post(emulator.base_url + PATHS["openai chat"], content=_nested(970), headers=HEADERS)
        assert served.status_code == 400
        assert httpx2.get(emulator.base_url + "/_emulator/requests").status_code == 200
    assert len((tmp_path / "journal.jsonl").read_text().splitlines()) == 104
