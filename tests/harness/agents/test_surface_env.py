"""A process agent (``--agent-cmd``) is handed what the other surfaces' official clients read
(issue 36): ``AzureOpenAI()``, ``ollama.Client()``, ``AnthropicVertex()`` and ``AnthropicBedrock()``
built with no arguments but a Vertex access token reach the emulator on their own paths, and the
user's own credentials for them are never inherited."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from harness.agents._process_agent import ProcessAgent
from harness.emulator import Emulator

pytest.importorskip("uvicorn", reason="a process reaches the emulator on loopback (the emulator extra)")

AGENT = """
import os, anthropic, ollama, openai
said = [{"role": "user", "content": os.environ["HARNESS_PROMPT"]}]
answers = [
    openai.AzureOpenAI(max_retries=0).chat.completions.create(model="dep-1", messages=said).choices[0].message.content,
    ollama.Client().chat(model="llama3.2", messages=said, stream=False).message.content,
    anthropic.AnthropicVertex(access_token="ya29.placeholder", max_retries=0)
    .messages.create(model="claude-v", max_tokens=9, messages=said).content[0].text,
    anthropic.AnthropicBedrock(max_retries=0)
    .messages.create(model="claude-b", max_tokens=9, messages=said).content[0].text,
]
users = ("AZURE_OPENAI_AD_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "OLLAMA_API_KEY")
leaked = [name for name in users if name in os.environ]
print(" | ".join(answers + leaked))
"""


def test_a_process_agent_reaches_every_new_surface_from_its_environment_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "surfaces.py"
    script.write_text(textwrap.dedent(AGENT), encoding="utf-8")
    for name in ("AZURE_OPENAI_AD_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "OLLAMA_API_KEY", "OLLAMA_HOST"):
        monkeypatch.setenv(name, "the user's own")  # never handed on: the agent would send it to the emulator
    with Emulator("azure", "ollama", "vertex", "bedrock") as emu:
        answer = ProcessAgent([sys.executable, str(script)])("Hi?", base_url=emu.base_url, api_key="unused")
        requests = list(emu.requests)
    assert answer == "azure | ollama | vertex | bedrock"
    assert [(r.route.provider, r.route.surface) for r in requests] == [
        ("openai", "azure"),
        ("ollama", ""),
        ("anthropic", "vertex"),
        ("bedrock", ""),
    ]
    assert requests[0].path == "/openai/deployments/dep-1/chat/completions"
    assert requests[0].query == {"api-version": "2024-10-21"}
    assert requests[2].path.startswith("/v1/projects/emulated/locations/us-east5/publishers/anthropic/models/claude-v:")
    assert requests[3].path == "/model/claude-b/invoke"
