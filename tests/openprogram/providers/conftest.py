"""The backend tests drive the real SDKs against in-process fakes (httpx ``MockTransport``s,
botocore stubs) at made-up provider URLs: nothing leaves the process, but the real-request guard
cannot tell a fake transport from the network, so these tests opt in, as a user's would."""

import pytest


@pytest.fixture(autouse=True)
def _fakes_answer_these_requests(harness_allow_model_requests: None) -> None:
    return None
