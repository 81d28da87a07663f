"""The emulator tests drive the real SDKs through the emulator's in-process transport (and
google-genai / boto3 through their own test seams) at provider-looking URLs: nothing leaves the
process, but the real-request guard cannot tell an in-process transport from the network, so
these tests opt in, as a user's would (over a real port the emulator is loopback and needs none)."""

from collections.abc import Iterator
from typing import Any

import pytest

from openprogram import function, registry


@pytest.fixture(autouse=True)
def _the_emulator_answers_these_requests(harness_allow_model_requests: None) -> None:
    return None


@pytest.fixture
def reg() -> Iterator[dict[str, Any]]:
    """Two tools in a registry of their own, the menu ``runtime.exec`` offers the emulated model."""
    with registry.isolated():

        @function
        def weather(city: str) -> str:
            """The weather in a city."""
            return f"sunny in {city}"

        @function
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        yield {"weather": weather, "add": add}
