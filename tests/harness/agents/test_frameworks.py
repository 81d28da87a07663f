"""Agents of other frameworks (``frameworks.py``, the ``agents`` extra) through the wire.

Each one completes a tool round on its wire, judged by W1-W6; each finding of
``docs/wire-campaigns.md`` is a scenario file under ``findings/``, replayed here so that a
framework release that changes the behaviour is noticed (the finding then goes, or its judgement
changes). The campaigns themselves (100 conversations each) are run for the docs, not here.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from harness.agents import replay_agent
from harness.scenarios._scenario import Scenario
from harness.scenarios._scenario_parts import Call, ModelTurn, import_user_object
from tests.harness.support import console_script

# the module sets what keeps the frameworks offline (LiteLLM's price list) before importing them
frameworks = pytest.importorskip(
    "tests.harness.agents.frameworks", reason="the frameworks come with the agents extra: pip install -e '.[agents]'"
)

FINDINGS = sorted((Path(__file__).parent / "findings").rglob("*.yaml"))
"""The saved scenarios of the findings; those under ``findings/hostile/`` came from ``--hostile``
campaigns (their trigger is ``invalid`` input, which no conforming provider sends)."""

ONE_ROUND = Scenario(
    prompts=("Add 2 and 3.",),
    turns=(ModelTurn(calls=(Call("add", {"a": 2, "b": 3}, id="call_1"),)), ModelTurn(text="It is 5.")),
)


@pytest.mark.parametrize("name", sorted(frameworks.AGENTS))
def test_each_framework_agent_completes_a_tool_round_on_its_wire(name: str) -> None:
    agent = frameworks.AGENTS[name]
    run, judgement = replay_agent(agent, ONE_ROUND)
    assert judgement.ok, [str(v) for v in judgement.violations]
    assert run.returned == "It is 5." and len(run.exchanges) == 2
    results = [m for m in run.exchanges[1].messages() if m.role == "tool"]
    assert [r.call_id or r.tool_name for r in results] in (["call_1"], ["add"])
    assert "5" in results[0].text


@pytest.mark.parametrize("path", FINDINGS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_finding_still_reproduces_on_the_pinned_version(path: Path) -> None:
    scenario = Scenario.from_yaml(path)
    agent = import_user_object(scenario.meta["agent"])
    _, judgement = replay_agent(agent, scenario)
    # a declared deviation still shows: the declaration is still needed
    seen = [*judgement.violations, *(v for v, _ in judgement.declared)]
    seen = [v for finding in seen for v in (finding, *finding.also)]  # one finding per cause: each it broke
    found = [(v.invariant, v.tier) for v in seen]
    saved = scenario.meta["violation"]
    assert (saved["invariant"], saved["tier"]) in found, (path.name, [str(v) for v in judgement.violations])
    assert (saved["tier"] == "invalid") == (path.parent.name == "hostile")


def test_the_docs_pydantic_ai_agent_is_a_first_campaign_in_a_new_project(tmp_path: Path) -> None:
    """The new user's path: the agent of docs/wire-campaigns.md as a project's agent.py, fuzzed
    through the installed console script from that project's directory."""
    docs = (Path(__file__).parents[3] / "docs" / "wire-campaigns.md").read_text(encoding="utf-8")
    source = next(b for b in re.findall(r"```python\n(.*?)```", docs, re.S) if "async def run(" in b)
    (tmp_path / "agent.py").write_text(source.replace("# myproject/agent.py\n", ""))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPATH")}
    env["COLUMNS"] = "200"
    done = subprocess.run(
        [console_script(), "fuzz", "--agent", "agent:run", "-n", "10", "--seed", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 conversations" in done.stdout and "in process" in done.stdout and "no violation" in done.stdout
