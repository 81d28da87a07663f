"""The emulator tests drive the real SDKs through the emulator's in-process transport (and
google-genai / boto3 through their own test seams) at provider-looking URLs: nothing leaves the
process, but the real-request guard cannot tell an in-process transport from the network, so
these tests opt in, as a user's would (over a real port the emulator is loopback and needs none)."""

import pytest


@pytest.fixture(autouse=True)
def _the_emulator_answers_these_requests(harness_allow_model_requests: None) -> None:
    return None
