"""No accidental real requests: the scripted fixture beats a backend the app names itself, and a
real backend in a test that did not opt in refuses before it connects.

Every public host a test looks up is noted (and refused) by a ``getaddrinfo`` stand-in, which
tells "no connection was attempted" apart from "the connection failed": a backend must resolve
its host before it can connect. The suite's offline guard (root ``conftest.py``) stays beneath.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest
from openai import AsyncOpenAI

from openprogram import providers, runtime
from openprogram.providers._shared import is_loopback_url, model_request_refusal
from openprogram.providers.openai import OpenAIChatProvider
from tests.harness.support import ATTEMPTS_FIXTURE

pytest_plugins = ["pytester"]

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o-mini",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "from the loopback server"}}
    ],
    "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7},
}

# A loopback server the user's test starts: answers any POST with one chat completion and
# remembers the paths it was asked for.
SERVER = f"""
import http.server, json, threading

COMPLETION = {COMPLETION!r}


class Server:
    def __init__(self, port=0):
        self.hits = []
        hits = self.hits

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length") or 0))
                hits.append(self.path)
                body = json.dumps(COMPLETION).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{{self.httpd.server_address[1]}}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
"""

APP = '''
from openai import AsyncOpenAI
from openprogram import agentic_function, runtime
from openprogram.providers.openai import OpenAIChatProvider


def real(base_url):
    """The backend the app picks for itself (a test key: nothing here may need a real one)."""
    client = AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    return OpenAIChatProvider(client=client, model="gpt-4o-mini", stream=False)


def ask_explicitly(base_url, question):
    return runtime.exec(question, tools=[], provider=real(base_url))


def ask_inside_use(base_url, question):
    with runtime.use(real(base_url)):
        return runtime.exec(question, tools=[])


def result_of(base_url, question):
    return runtime.exec_result(question, tools=[], provider=real(base_url))
'''

CONFTEST = (
    ATTEMPTS_FIXTURE
    + """
from server import Server


@pytest.fixture
def server():
    running = Server()
    yield running
    running.close()
"""
)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(providers.ALLOW_MODEL_REQUESTS_ENV, raising=False)
    pytester.makepyfile(app=APP, server=SERVER, conftest=CONFTEST)
    return pytester


def run(project: pytest.Pytester, source: str, passed: int) -> pytest.RunResult:
    project.makepyfile(test_user=source)
    result = project.runpytest("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=passed)
    return result


def test_scripted_wins_over_a_backend_the_app_names_and_the_server_hears_nothing(project: pytest.Pytester) -> None:
    run(
        project,
        """
        import pytest
        import app
        from openprogram import agentic_function, runtime


        @agentic_function
        def research(topic: str) -> str:
            '''Look a topic up (asks the app's own backend, nested).'''
            return runtime.exec(topic, tools=[], provider=app.real(research.base_url))


        def test_explicit_provider(scripted, server):
            scripted("the scripted answer")
            assert app.ask_explicitly(server.url, "hi") == "the scripted answer"
            assert server.hits == []


        def test_inner_use(scripted, server):
            scripted("scripted again")
            assert app.ask_inside_use(server.url, "hi") == "scripted again"
            assert server.hits == []


        def test_nested_run(scripted, server, turn):
            research.base_url = server.url
            scripted(turn.tool_call("research", {"topic": "owls"}), "nested answer", "outer answer")
            assert runtime.exec("tell me", tools=[research]) == "outer answer"
            assert server.hits == []
            assert len(scripted.requests) == 3


        @pytest.fixture
        def turn():
            from harness import turn
            return turn
        """,
        passed=3,
    )


def test_a_real_backend_without_opt_in_refuses_before_connecting(project: pytest.Pytester) -> None:
    run(
        project,
        """
        import app


        def test_refused(request, attempts):
            result = app.result_of("https://api.openai.com/v1", "hi")
            assert result.reason == "error"
            message = result.messages[-1].error_message
            assert message.startswith("real model request refused, nothing was sent to https://api.openai.com/v1")
            assert request.node.nodeid in message
            assert "@pytest.mark.allow_model_requests" in message and "harness_allow_model_requests" in message
            assert attempts == []  # no connection was even tried
        """,
        passed=1,
    )


def test_with_the_opt_in_a_real_backend_sends(project: pytest.Pytester) -> None:
    run(
        project,
        """
        import pytest
        import app


        def sent(attempts):
            result = app.result_of("https://api.openai.com/v1", "hi")
            assert result.reason == "error"  # the attempts fixture refused the lookup
            return attempts == ["api.openai.com"]


        @pytest.mark.allow_model_requests
        def test_marker(attempts):
            assert sent(attempts)


        def test_fixture(harness_allow_model_requests, attempts):
            assert sent(attempts)


        @pytest.mark.allow_model_requests
        def test_to_a_loopback_server(server):
            assert app.ask_explicitly(server.url, "hi") == "from the loopback server"
            assert server.hits == ["/v1/chat/completions"]


        def test_a_loopback_server_is_not_a_double_by_itself(server):
            # Ollama, vLLM and LM Studio listen on localhost too: loopback alone asks for the opt-in
            result = app.result_of(server.url, "hi")
            assert result.reason == "error" and server.hits == []
            message = result.messages[-1].error_message
            assert message.startswith("real model request refused") and "harness_fake_base_urls" in message


        def test_the_opt_in_ends_with_its_test(attempts):
            result = app.result_of("https://api.openai.com/v1", "hi")
            assert result.messages[-1].error_message.startswith("real model request refused")
            assert attempts == []
        """,
        passed=5,  # @pytest.mark.live lets a test through only with --live: tests/harness/recording/test_live.py
    )


def test_a_double_the_project_declares_needs_no_opt_in(project: pytest.Pytester) -> None:
    """The ini option names the project's own fake servers; the emulator declares itself."""
    project.makeini(
        """
        [pytest]
        harness_fake_base_urls =
            http://127.0.0.1:{port}/v1
        """.replace("{port}", str(_free_port()))
    )
    run(
        project,
        """
        import pytest
        import app
        from harness import Emulator, turn


        def test_the_emulator_declares_itself():
            with Emulator(turn.text("from the emulator")) as emulator:
                assert app.ask_explicitly(emulator.base_url + "/v1", "hi") == "from the emulator"


        def test_a_declared_fake(pytestconfig):
            from server import Server  # the project's fake, on the port the ini declares
            [declared] = pytestconfig.getini("harness_fake_base_urls")
            server = Server(port=int(declared.rsplit(":", 1)[1].split("/")[0]))
            try:
                assert app.ask_explicitly(server.url, "hi") == "from the loopback server"
                assert server.hits == ["/v1/chat/completions"]
            finally:
                server.close()


        def test_another_port_is_still_refused(server):
            assert app.result_of(server.url, "hi").reason == "error" and server.hits == []
        """,
        passed=3,
    )


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# The switch outside pytest's tests (here: in tests that opted in, so only the switch decides)
# ---------------------------------------------------------------------------------------------


def refused_text(provider: Any) -> str | None:
    """The error text of one request to ``provider``, None if it got past the guard."""
    return runtime.exec_result("hi", tools=[], provider=provider).messages[-1].error_message


def public_backend() -> OpenAIChatProvider:
    client = AsyncOpenAI(base_url="https://api.openai.com/v1", api_key="sk-test", max_retries=0)
    return OpenAIChatProvider(client=client, model="gpt-4o-mini", stream=False)


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv(providers.ALLOW_MODEL_REQUESTS_ENV, raising=False)
    monkeypatch.setattr(providers, "ALLOW_MODEL_REQUESTS", True)
    return monkeypatch


SENT = "the lookup of api.openai.com was tried"


@pytest.fixture(autouse=True)
def _note_lookups(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request that got past the guard fails with SENT instead of reaching the network."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if (host.decode() if isinstance(host, bytes) else host) == "api.openai.com":
            raise OSError(SENT)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.allow_model_requests
def test_the_module_switch_refuses_and_says_how_to_turn_it_back_on(switch: pytest.MonkeyPatch) -> None:
    switch.setattr(providers, "ALLOW_MODEL_REQUESTS", False)
    text = refused_text(public_backend()) or ""
    assert text.startswith("real model request refused, nothing was sent to https://api.openai.com/v1")
    assert "ALLOW_MODEL_REQUESTS is False" in text


@pytest.mark.allow_model_requests
@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_the_environment_variable_refuses(switch: pytest.MonkeyPatch, value: str) -> None:
    switch.setenv(providers.ALLOW_MODEL_REQUESTS_ENV, value)
    assert f"OPENPROGRAM_ALLOW_MODEL_REQUESTS={value} turns them off" in (refused_text(public_backend()) or "")


@pytest.mark.allow_model_requests
def test_the_context_manager_decides_for_the_code_inside(switch: pytest.MonkeyPatch) -> None:
    switch.setattr(providers, "ALLOW_MODEL_REQUESTS", False)
    with providers.allow_model_requests():
        assert SENT in (refused_text(public_backend()) or "")  # sent: the network stopped it
    switch.setattr(providers, "ALLOW_MODEL_REQUESTS", True)
    with providers.allow_model_requests(False):
        assert "allow_model_requests(False)" in (refused_text(public_backend()) or "")
    assert SENT in (refused_text(public_backend()) or "")


def test_without_opt_in_the_context_manager_still_allows() -> None:
    with providers.allow_model_requests():
        assert SENT in (refused_text(public_backend()) or "")
    assert (refused_text(public_backend()) or "").startswith("real model request refused")


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).hits.append(self.path)
        body = json.dumps(COMPLETION).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def loopback() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_loopback_is_refused_with_the_switch_off_unless_declared_a_double(
    switch: pytest.MonkeyPatch, loopback: str
) -> None:
    switch.setattr(providers, "ALLOW_MODEL_REQUESTS", False)
    client = AsyncOpenAI(base_url=loopback, api_key="sk-test", max_retries=0)
    provider = OpenAIChatProvider(client=client, model="gpt-4o-mini", stream=False)
    text = refused_text(provider)
    assert text is not None and text.startswith(f"real model request refused, nothing was sent to {loopback}")
    assert "register_fake_base_url" in text and "OPENPROGRAM_FAKE_BASE_URLS" in text
    undeclare = providers.register_fake_base_url(loopback)
    try:
        assert runtime.exec("hi", tools=[], provider=provider) == "from the loopback server"
    finally:
        undeclare()
    assert refused_text(provider) is not None
    switch.setenv(providers.FAKE_BASE_URLS_ENV, f"http://localhost:1, {loopback.rsplit('/', 1)[0]}")
    assert runtime.exec("hi", tools=[], provider=provider) == "from the loopback server"


@pytest.mark.parametrize(
    ("declared", "target", "through"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1/", True),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/chat/completions", True),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v10/", False),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8001/v1/", False),
        ("http://127.0.0.1:8000", "https://127.0.0.1:8000/v1/", False),
        ("http://LOCALHOST:80/", "http://localhost/v1", True),
        ("https://fake.example", "https://fake.example:443/x", True),
    ],
)
def test_a_declared_double_covers_its_base_url_and_below(declared: str, target: str, through: bool) -> None:
    undeclare = providers.register_fake_base_url(declared)
    try:
        with providers.allow_model_requests(False):
            assert (model_request_refusal(lambda: target) is None) is through
    finally:
        undeclare()


@pytest.mark.parametrize("bad", ["", "127.0.0.1:8000", "not a url", 42])
def test_a_double_must_be_declared_by_a_whole_url(bad: Any) -> None:
    with pytest.raises(ValueError, match="takes a URL with a scheme and a host"):
        providers.register_fake_base_url(bad)


def test_a_backend_without_a_client_is_guarded_by_where_it_would_send(switch: pytest.MonkeyPatch) -> None:
    provider = OpenAIChatProvider(model="gpt-4o-mini", api_key="sk-test", base_url="https://example.com/v1")
    text = asyncio.run(_error_of(provider))
    assert text.startswith("real model request refused, nothing was sent to https://example.com/v1")


async def _error_of(provider: Any) -> str:
    from openprogram.providers import ModelRequest
    from openprogram.types import UserMessage

    events = [e async for e in provider.stream(ModelRequest(messages=(UserMessage(content="hi"),)))]
    assert [e.type for e in events] == ["start", "error"]
    return events[-1].error.error_message or ""


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost/v1", True),
        ("http://[::1]:9/", True),
        ("http://127.9.9.9", True),
        ("http://emulator.localhost:80", True),
        ("https://api.openai.com/v1", False),
        ("https://bedrock-runtime.us-east-1.amazonaws.com", False),
        ("http://10.0.0.1", False),
        ("", False),
    ],
)
def test_what_counts_as_loopback(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback


def test_the_clock_fixture_stamps_an_exec_that_passes_no_clock(project: pytest.Pytester) -> None:
    run(
        project,
        """
        import pytest
        from harness.clock import DEFAULT_EPOCH_MS
        from openprogram import runtime


        def test_default_clock(scripted, clock):
            scripted("one")
            messages = runtime.exec_result("hi", tools=[]).messages
            assert [m.timestamp for m in messages] == [DEFAULT_EPOCH_MS, DEFAULT_EPOCH_MS + 1]


        @pytest.mark.harness_clock(start=5000, step=10)
        def test_marked_clock(scripted, clock):
            scripted("one")
            assert [m.timestamp for m in runtime.exec_result("hi", tools=[]).messages] == [5000, 5010]
        """,
        passed=2,
    )


def _public_clients() -> list[Any]:
    import anthropic
    import boto3
    from google import genai

    from openprogram.providers.anthropic import AnthropicProvider
    from openprogram.providers.bedrock import BedrockProvider
    from openprogram.providers.gemini import GeminiProvider
    from openprogram.providers.openai import OpenAIResponsesProvider

    bedrock = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    return [
        (OpenAIResponsesProvider(client=AsyncOpenAI(api_key="sk-test"), model="m"), "https://api.openai.com/v1"),
        (AnthropicProvider(client=anthropic.AsyncAnthropic(api_key="test"), model="m"), "https://api.anthropic.com"),
        (GeminiProvider(client=genai.Client(api_key="test"), model="m"), "https://generativelanguage.googleapis.com"),
        (BedrockProvider(client=bedrock, model="m"), "https://bedrock-runtime.us-east-1.amazonaws.com"),
    ]


def test_every_sdk_backend_is_guarded_at_its_providers_url() -> None:
    for provider, url in _public_clients():
        text = asyncio.run(_error_of(provider))
        assert text.startswith(f"real model request refused, nothing was sent to {url}"), (type(provider), text)


def test_a_client_on_the_emulators_in_process_transport_needs_no_opt_in(switch: pytest.MonkeyPatch) -> None:
    """The emulator answers in process at the provider's own URL: nothing can reach OpenAI, so the
    guard lets it send with every switch off, and the scripted reply comes back."""
    from harness import turn
    from harness.emulator import Emulator

    async def main() -> tuple[list[str], str]:
        emulator = Emulator(turn.text("served in process"))
        client = AsyncOpenAI(api_key="sk-test", http_client=emulator.http_client())
        provider = OpenAIChatProvider(client, model="gpt-4o-mini")
        from openprogram.providers import ModelRequest
        from openprogram.types import UserMessage

        events = [e async for e in provider.stream(ModelRequest(messages=(UserMessage(content="hi"),)))]
        await client.close()
        return [e.type for e in events], events[-1].message.content[0].text

    kinds, text = asyncio.run(main())
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert text == "served in process"


def test_an_unmarked_custom_transport_is_still_refused(switch: pytest.MonkeyPatch) -> None:
    """Only a transport that says it answers in process (or httpx2's own mock) passes: a custom
    transport may well forward to the network, so it gets the refusal like any client."""
    import httpx2

    class Forwarding(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            raise AssertionError("the guard let a request through to an unmarked transport")

    client = AsyncOpenAI(api_key="sk-test", http_client=httpx2.AsyncClient(transport=Forwarding()))
    text = asyncio.run(_error_of(OpenAIChatProvider(client, model="gpt-4o-mini")))
    assert text.startswith("real model request refused, nothing was sent to https://api.openai.com/v1")
