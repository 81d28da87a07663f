"""The wire campaign on the surfaces besides each provider's own (issue 36): an agent built on
``ollama.Client``, ``openai.AzureOpenAI``, ``anthropic.AnthropicVertex``, ``anthropic.AnthropicBedrock``
or boto3's ``invoke_model*`` is fuzzed like any other. The Ollama loop's planted defect is found by a
default campaign, shrunk and saved as a scenario that reproduces it, and its correct twin holds; a
correct loop on each other surface holds a small campaign that served it replies on its own path."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.agents import replay_agent, run_agent_campaign
from harness.scenarios._scenario import Scenario
from tests.harness.agents import planted_surfaces


def test_a_default_campaign_finds_the_ollama_loop_that_ignores_done_and_its_twin_holds(tmp_path: Path) -> None:
    found = run_agent_campaign(planted_surfaces.ollama_ignore_done, save_dir=tmp_path / "defect")
    assert found.failure is not None, "ignore_done was not found"
    assert found.failure.violation.invariant == "W5", str(found.failure.violation)
    assert "cut before its stop reason" in found.failure.violation.message
    assert len(found.failure.scenario.turns) == 1, found.failure.scenario.to_yaml()
    assert found.failure.path is not None
    saved = Scenario.from_yaml(found.failure.path)
    _, again = replay_agent(planted_surfaces.ollama_ignore_done, saved)
    assert [v.invariant for v in again.violations][:1] == ["W5"]
    _, twin = replay_agent(planted_surfaces.ollama_agent, saved)
    assert not twin.violations, twin.violations

    held = run_agent_campaign(planted_surfaces.ollama_agent, save_dir=tmp_path / "twin")
    assert held.ok, held.failure and str(held.failure.violation)
    stats = held.stats
    assert stats.conversations == 100
    assert set(stats.wires) == {"ollama chat (streamed)"}
    # calls without ids on the wire (the client drops them) were answered by name, run after run
    assert stats.kinds["several calls"] > 0 and stats.exercised["W1"] > 0 and stats.exercised["W2"] > 0
    assert {"error status", "in-band error", "cut stream", "malformed chunk"} <= set(stats.kinds)


SURFACES: dict[str, tuple[Callable[..., Any], str, bool]] = {
    "azure": (planted_surfaces.azure_agent, "openai chat.completions on azure (streamed)", True),
    "vertex": (planted_surfaces.vertex_agent, "anthropic messages on vertex (streamed)", True),
    "bedrock": (planted_surfaces.bedrock_agent, "bedrock invoke-with-response-stream (streamed)", True),
    "boto3": (planted_surfaces.boto3_invoke_agent, "bedrock invoke-with-response-stream (streamed)", False),
}


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_a_correct_loop_on_each_surface_holds_a_campaign_served_on_its_path(surface: str) -> None:
    agent, wire, in_process = SURFACES[surface]
    result = run_agent_campaign(agent, examples=12, save=False, time_bound=5)
    assert result.ok, result.failure and str(result.failure.violation)
    stats = result.stats
    assert dict(stats.wires) == {wire: 12}
    assert result.in_process is in_process
    assert stats.reached == 12 and stats.unnamed == 0
    assert stats.kinds["valid call"] + stats.kinds["several calls"] + stats.kinds["text and a call"] > 0
    assert stats.exercised["W1"] > 0 and stats.exercised["W4"] > 0
