"""The loop on the real Gemini (Developer API and Vertex AI) and Bedrock (Converse and
ConverseStream) backends against the emulator over real HTTP: a multi-turn tool loop with
parallel calls, an error-feedback round, every HTTP status fault ending the run as DESIGN section 4
says, and the SDK's own retry recovering from a 429 / throttling when retries are enabled. (The
delivery faults are in ``test_faults_gemini_bedrock``, the tool_choice cells in ``test_end_to_end``.)"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.config import Config

from harness.emulator import Emulator, fault
from harness.recording._clients import backend, client_kwargs
from harness.script import turn
from openprogram import ExecError, runtime
from openprogram.providers.bedrock import BedrockProvider
from openprogram.providers.gemini import GeminiProvider
from tests.harness.emulator.wirecheck import CLAUDE, GEMINI, NOVA, PARALLEL_ANSWER, connection, parallel_tool_loop

# (provider, endpoint, model, API): the Gemini API is chosen by the connection.
BACKENDS = [
    ("gemini", "generateContent", GEMINI, "developer"),
    ("gemini", "streamGenerateContent", GEMINI, "developer"),
    ("gemini", "generateContent", GEMINI, "vertex"),
    ("gemini", "streamGenerateContent", GEMINI, "vertex"),
    ("bedrock", "converse", NOVA, "aws"),
    ("bedrock", "converse-stream", CLAUDE, "aws"),
]
IDS = [f"{p}-{api}-{e}" for p, e, _, api in BACKENDS]
VERTEX_PATH = "/v1/projects/proj-1/locations/europe-west4/publishers/google/models/"


def _exec(emu: Emulator, provider: str, endpoint: str, model: str, api: str, **kwargs: Any) -> str:
    chosen = backend(provider, endpoint, model=model, connection=connection(emu.base_url, api))
    return runtime.exec("go", provider=chosen, **kwargs)


def tool_results(provider: str, body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(call id, output, kind) of every tool result a request sent back; the kind is Gemini's
    response key (``result`` / ``error``) or Bedrock's status (``success`` / ``error``)."""
    results = []
    if provider == "gemini":
        for content in body["contents"]:
            for part in content["parts"]:
                if "functionResponse" in part:
                    ((kind, output),) = part["functionResponse"]["response"].items()
                    results.append((part["functionResponse"].get("id", ""), output, kind))
        return results
    for message in body["messages"]:
        for block in message["content"]:
            if "toolResult" in block:
                result = block["toolResult"]
                results.append((result["toolUseId"], result["content"][0]["text"], result["status"]))
    return results


@pytest.mark.parametrize(("provider", "endpoint", "model", "api"), BACKENDS, ids=IDS)
def test_a_multi_turn_tool_loop_with_parallel_calls_runs_over_http(
    reg: dict[str, Any], provider: str, endpoint: str, model: str, api: str
) -> None:
    script = parallel_tool_loop()
    with Emulator(script) as emu:
        text = _exec(emu, provider, endpoint, model, api, tools=[reg["weather"], reg["add"]])
    assert text == PARALLEL_ANSWER
    assert len(emu.requests) == 3
    if api == "vertex":
        assert all(r.path.startswith(VERTEX_PATH + model) for r in emu.requests)
    first = tool_results(provider, emu.requests[1].body)
    assert [output for _, output, _ in first] == ["sunny in Paris", "sunny in Oslo"]
    assert len({call_id for call_id, _, _ in first}) == 2
    assert [output for _, output, _ in tool_results(provider, emu.requests[2].body)][-1] == "5"
    assert all(not {"authorization", "x-goog-api-key", "x-amz-security-token"} & set(r.headers) for r in emu.requests)


@pytest.mark.parametrize(("provider", "endpoint", "model", "api"), BACKENDS, ids=IDS)
def test_an_invalid_call_is_fed_back_and_the_model_recovers(
    reg: dict[str, Any], provider: str, endpoint: str, model: str, api: str
) -> None:
    script = [turn.tool_call("add", a="two", b=3), turn.tool_call("add", a=2, b=3), turn.text("5")]
    with Emulator(script) as emu:
        assert _exec(emu, provider, endpoint, model, api, tools=[reg["add"]]) == "5"
    ((_, feedback, flag),) = tool_results(provider, emu.requests[1].body)
    assert 'Validation failed for tool "add"' in feedback and "two" in feedback
    assert flag == "error"  # Gemini: the response's key; Bedrock: the result's status
    ((_, output, flag),) = tool_results(provider, emu.requests[2].body)[-1:]
    assert (output, flag) == ("5", "result" if provider == "gemini" else "success")


STATUS_FAULTS = [
    (400, "Request contains an invalid argument."),
    (401, "API key not valid. Please pass a valid API key."),
    (403, "Permission denied on resource project proj-1."),
    (404, "models/nope is not found for API version v1beta."),
    (429, "Resource has been exhausted (e.g. check quota)."),
    (500, "An internal error has occurred."),
    (503, "The model is overloaded. Please try again later."),
]
ERROR_NAMES = {
    "gemini": {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
               429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"},
    "bedrock": {400: "ValidationException", 401: "UnrecognizedClientException", 403: "AccessDeniedException",
                404: "ResourceNotFoundException", 429: "ThrottlingException", 500: "InternalServerException",
                503: "ServiceUnavailableException"},
}  # fmt: skip


@pytest.mark.parametrize(("status", "message"), STATUS_FAULTS, ids=[str(s) for s, _ in STATUS_FAULTS])
@pytest.mark.parametrize(("provider", "endpoint", "model", "api"), BACKENDS, ids=IDS)
def test_an_http_error_ends_the_run_naming_the_status_and_the_providers_message(
    reg: dict[str, Any], provider: str, endpoint: str, model: str, api: str, status: int, message: str
) -> None:
    with Emulator(fault.status(status, message, retry_after=3 if status == 429 else None)) as emu:
        with pytest.raises(ExecError) as raised:
            _exec(emu, provider, endpoint, model, api, tools=[reg["add"]])
    assert raised.value.reason == "error"
    assert raised.value.message.startswith(f"HTTP {status} {ERROR_NAMES[provider][status]}: {message}")
    assert len(emu.requests) == 1  # the harness's clients do not retry


def test_the_retry_after_of_a_429_is_in_the_error_message() -> None:
    for provider, endpoint, model, api in (BACKENDS[0], BACKENDS[4]):
        with Emulator(fault.status(429, "slow down", retry_after=7)) as emu:
            with pytest.raises(ExecError) as raised:
                _exec(emu, provider, endpoint, model, api)
        assert "7" in raised.value.message.removeprefix("HTTP 429"), raised.value.message


@pytest.mark.parametrize(("provider", "endpoint", "model", "api"), BACKENDS, ids=IDS)
def test_the_sdks_own_retry_recovers_from_a_429_when_retries_are_enabled(
    provider: str, endpoint: str, model: str, api: str
) -> None:
    with Emulator(fault.status(429, "slow down", retry_after=0), turn.text("recovered")) as emu:
        kwargs = client_kwargs(provider, connection(emu.base_url, api))
        stream = endpoint in ("streamGenerateContent", "converse-stream")
        if provider == "gemini":
            retry = {"attempts": 2, "initial_delay": 0.01, "max_delay": 0.05, "jitter": 0}
            kwargs["http_options"] = {**kwargs["http_options"], "retry_options": retry}
            chosen: Any = GeminiProvider(model=model, stream=stream, **kwargs)
        else:
            kwargs["config"] = kwargs["config"].merge(Config(retries={"total_max_attempts": 2, "mode": "standard"}))
            chosen = BedrockProvider(model=model, stream=stream, **kwargs)
        assert runtime.exec("go", provider=chosen) == "recovered"
    assert len(emu.requests) == 2
    assert emu.requests[0].body == emu.requests[1].body  # the SDK sent the same request again
    if provider == "bedrock":
        assert "attempt=2; max=2" in emu.requests[1].headers["amz-sdk-request"]
