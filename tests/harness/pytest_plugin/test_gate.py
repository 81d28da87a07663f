"""The plugin hands its request gate to openprogram by registering it, and does so without
importing openprogram: at once when the loop is loaded, else as soon as it is."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import harness.pytest_plugin as plugin
from openprogram import providers


def test_this_session_registered_the_plugins_gate() -> None:
    assert any(gate is plugin.model_request_refusal for _, gate in providers._request_gates)


def run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_gate_waits_for_openprogram_and_is_registered_before_a_backend_can_send() -> None:
    lines = run(
        """
        import os, sys
        os.environ.pop("OPENPROGRAM_ALLOW_MODEL_REQUESTS", None)
        from harness.pytest_plugin._gate_handoff import register_gate

        unregister = register_gate(lambda: "the running test says no")
        print("openprogram" in sys.modules)
        from openprogram.providers.openai import OpenAIChatProvider
        from openprogram.providers._shared import model_request_refusal

        print(model_request_refusal(lambda: "https://api.example.com"))
        unregister()
        print(model_request_refusal(lambda: "https://api.example.com"))
        """
    )
    assert lines == [
        "False",
        "real model request refused, nothing was sent to https://api.example.com: the running test says no",
        "None",
    ]


def test_unregistering_before_openprogram_loads_stops_the_wait() -> None:
    lines = run(
        """
        import sys
        from harness.pytest_plugin._gate_handoff import register_gate

        before = list(sys.meta_path)
        register_gate(lambda: "no")()
        print(sys.meta_path == before)
        from openprogram import providers
        import openprogram.providers._shared
        print(providers._request_gates)
        """
    )
    assert lines == ["True", "[]"]


@pytest.mark.parametrize("loaded_first", [True, False])
def test_a_pytest_session_registers_its_gate_and_takes_it_back_at_its_end(loaded_first: bool, tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(
        "from openprogram import providers\n\n"
        "def test_the_gate_is_registered():\n"
        "    assert len(providers._request_gates) == 1\n"
    )
    lines = run(
        f"""
        import sys, pytest
        if {loaded_first}:
            from openprogram import providers
        code = pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir", {str(tmp_path)!r},
                            {str(tmp_path)!r}])
        from openprogram import providers
        import openprogram.providers._shared
        print(int(code), len(providers._request_gates))
        """
    )
    assert lines[-1] == "0 0"
