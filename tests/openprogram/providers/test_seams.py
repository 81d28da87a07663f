"""The seams code outside openprogram plugs into the real-request guard: request gates and
in-process transports, each registered and taken back, and nothing found by looking it up.

This directory's tests opt in to real requests (its ``conftest.py``), so the harness plugin's own
gate lets everything through here and the gates these tests register decide alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from typing import Any

import httpx2
import pytest
from openai import AsyncOpenAI

from openprogram import providers
from openprogram.providers import register_in_process_transport, register_request_gate
from openprogram.providers._shared import answers_in_process, model_request_refusal

PROVIDER_URL = "https://api.example.com/v1"


@pytest.fixture(autouse=True)
def _switch_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(providers.ALLOW_MODEL_REQUESTS_ENV, raising=False)
    monkeypatch.setattr(providers, "ALLOW_MODEL_REQUESTS", True)


def refusal() -> str | None:
    return model_request_refusal(lambda: PROVIDER_URL)


class Refusing:
    """A gate that refuses with its own reason and counts how often it was asked."""

    def __init__(self, why: str | None = "the test says no") -> None:
        self.why = why
        self.asked = 0

    def __call__(self) -> str | None:
        self.asked += 1
        return self.why


# -- request gates ------------------------------------------------------------------------------


def test_a_registered_gate_refuses_until_it_is_unregistered() -> None:
    gate = Refusing()
    assert refusal() is None
    unregister = register_request_gate(gate)
    try:
        assert refusal() == f"real model request refused, nothing was sent to {PROVIDER_URL}: the test says no"
    finally:
        unregister()
    assert refusal() is None
    unregister()  # again is harmless
    assert refusal() is None


def test_a_gate_that_answers_none_lets_the_request_go_and_the_first_refusal_is_reported() -> None:
    allowing, first, second = Refusing(None), Refusing("first"), Refusing("second")
    undo = [register_request_gate(allowing), register_request_gate(first), register_request_gate(second)]
    try:
        assert (refusal() or "").endswith(": first")
        assert allowing.asked == 1 and second.asked == 0
    finally:
        for unregister in undo:
            unregister()


def test_one_gate_registered_twice_needs_both_registrations_taken_back() -> None:
    """A pytest session inside a test registers the plugin's gate a second time; its end must not
    take away the outer session's registration."""
    gate = Refusing()
    outer = register_request_gate(gate)
    inner = register_request_gate(gate)
    try:
        inner()
        assert refusal() is not None
    finally:
        outer()
    assert refusal() is None


def test_gates_are_asked_only_when_a_request_would_leave_the_machine() -> None:
    gate = Refusing()
    unregister = register_request_gate(gate)
    try:
        assert model_request_refusal(lambda: "http://127.0.0.1:9/v1") is not None  # loopback is no double
        with providers.allow_model_requests():
            assert refusal() is None
        assert gate.asked == 1  # asked for the loopback URL, but not under allow_model_requests()
    finally:
        unregister()


def test_the_switch_refuses_before_any_gate_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "ALLOW_MODEL_REQUESTS", False)
    gate = Refusing()
    unregister = register_request_gate(gate)
    try:
        assert "ALLOW_MODEL_REQUESTS is False" in (refusal() or "")
        assert gate.asked == 0
    finally:
        unregister()


def test_registering_something_that_cannot_be_called_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match="register_request_gate"):
        register_request_gate("no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="register_in_process_transport"):
        register_in_process_transport(None)  # type: ignore[arg-type]


# -- in-process transports ---------------------------------------------------------------------


class Answering(httpx2.AsyncBaseTransport):
    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, json={})


class AnsweringToo(Answering):
    pass


def client_on(transport: httpx2.AsyncBaseTransport) -> Any:
    return AsyncOpenAI(api_key="sk-test", http_client=httpx2.AsyncClient(transport=transport))


def test_a_transport_class_registers_its_instances_and_its_subclasses_until_taken_back() -> None:
    assert not answers_in_process(client_on(Answering()))
    unregister = register_in_process_transport(Answering)
    try:
        assert answers_in_process(client_on(Answering()))
        assert answers_in_process(client_on(AnsweringToo()))
    finally:
        unregister()
    assert not answers_in_process(client_on(Answering()))


def test_a_predicate_decides_transport_by_transport() -> None:
    chosen = Answering()
    unregister = register_in_process_transport(lambda transport: transport is chosen)
    try:
        assert answers_in_process(client_on(chosen))
        assert not answers_in_process(client_on(Answering()))
    finally:
        unregister()


def test_httpx2s_own_mock_transport_needs_no_registration() -> None:
    assert answers_in_process(client_on(httpx2.MockTransport(lambda request: httpx2.Response(200))))


# -- nothing is looked up by name --------------------------------------------------------------


def test_neither_a_module_named_like_a_test_plugin_nor_a_marked_transport_is_looked_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What used to be found by name (the harness plugin's module in ``sys.modules``, a transport's
    ``answers_in_process`` attribute) no longer counts: only what registered itself does."""
    impostor = types.ModuleType("harness.pytest_plugin")
    impostor.model_request_refusal = lambda: "found by name"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "harness.pytest_plugin", impostor)
    assert refusal() is None

    class Marked(Answering):
        answers_in_process = True

    assert not answers_in_process(client_on(Marked()))


def test_openprogram_loads_and_guards_without_the_harness() -> None:
    """In a process where the harness cannot even be imported, the guard works from what was
    registered: openprogram never reaches for it."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["harness"] = None  # importing it now fails
        from openprogram import providers
        from openprogram.providers._shared import model_request_refusal
        import openprogram.providers.openai, openprogram.runtime

        assert model_request_refusal(lambda: "https://api.example.com") is None
        undo = providers.register_request_gate(lambda: "registered")
        print(model_request_refusal(lambda: "https://api.example.com"))
        undo()
        print(model_request_refusal(lambda: "https://api.example.com"))
        """
    )
    env = {**os.environ, providers.ALLOW_MODEL_REQUESTS_ENV: "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "real model request refused, nothing was sent to https://api.example.com: registered",
        "None",
    ]
