"""Gemini says how long to wait in its error body, not only in a header: the
``google.rpc.RetryInfo`` detail's ``retryDelay`` follows the scripted ``retry_after``. google-genai
does not act on it (its retries back off exponentially) but hands the whole body to the caller as
``APIError.details``, where a framework or an app reads it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.emulator import Emulator, fault

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def _details(error: Exception) -> list[dict[str, str]]:
    return error.details["error"].get("details", [])  # type: ignore[attr-defined]


@pytest.fixture
def client_of() -> Iterator[object]:
    from google import genai
    from google.genai.types import HttpOptions

    started: list[Emulator] = []

    def make(*script: object) -> genai.Client:
        emulator = Emulator(*script)
        emulator.start()
        started.append(emulator)
        return genai.Client(api_key="fake-key", http_options=HttpOptions(base_url=emulator.base_url))

    yield make
    for emulator in started:
        emulator.stop()


@pytest.mark.parametrize(
    ("status", "retry_after", "delay"),
    [(429, 2.5, "2.500s"), (429, 7, "7s"), (429, 0.25, "0.250s"), (503, 3, "3s"), (429, None, "1s")],
)
def test_google_genai_reads_the_retry_delay_of_the_scripted_retry_after(
    client_of: object, status: int, retry_after: float | None, delay: str
) -> None:
    from google.genai import errors

    client = client_of(fault.status(status, "slow down", retry_after=retry_after))  # type: ignore[operator]
    with pytest.raises(errors.APIError) as raised:
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert raised.value.code == status
    assert _details(raised.value) == [{"@type": RETRY_INFO, "retryDelay": delay}]
    if retry_after is not None:
        assert raised.value.response.headers["retry-after"] == f"{retry_after:g}"


def test_an_error_without_retry_after_other_than_429_says_no_delay(client_of: object) -> None:
    from google.genai import errors

    client = client_of(fault.status(500, "boom"))  # type: ignore[operator]
    with pytest.raises(errors.ServerError) as raised:
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert _details(raised.value) == []


def test_a_scenario_files_retry_after_reaches_a_streamed_request(client_of: object, tmp_path: Path) -> None:
    from google import genai
    from google.genai import errors
    from google.genai.types import HttpOptions

    script = tmp_path / "rate.yaml"
    script.write_text("turns:\n  - {status: 429, retry_after: 1.5, message: quota}\n")
    with Emulator.from_file(script) as emulator:
        client = genai.Client(api_key="fake-key", http_options=HttpOptions(base_url=emulator.base_url))
        with pytest.raises(errors.ClientError) as raised:
            list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
    assert (raised.value.code, raised.value.status, raised.value.message) == (429, "RESOURCE_EXHAUSTED", "quota")
    assert _details(raised.value) == [{"@type": RETRY_INFO, "retryDelay": "1.500s"}]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (1, "1s"), (2.5, "2.500s"), (0.05, "0.050s"), (0.00025, "0.000250s"), (1e-9, "0.000000001s")],
)
def test_a_delay_is_written_as_a_protobuf_duration(seconds: float, text: str) -> None:
    from harness.emulator._gemini import duration

    assert duration(seconds) == text
