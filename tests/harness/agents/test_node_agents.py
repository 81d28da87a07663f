"""Node agents through the installed ``harness`` command (``--agent-cmd``): plain loops over the
official JS SDKs (``tests/harness/agents/node/``, the SDKs pinned in ``tests/node``), each planted
defect found with its invariant and shrunk to at most two replies, saved as a scenario that names
the command; the correct loops hold a campaign, per process and long-lived; ``agent_test(cmd=...)``
as a user's pytest suite.

The planted campaigns use the long-lived mode (node starts once a campaign). The correct loops'
default campaigns (100 conversations each, 7-17 s apiece here, with the load) run only with
``HARNESS_NODE_CAMPAIGNS=1`` (the CI step that installs tests/node sets it); the default suite
runs a short campaign of each mode instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

NODE_DIR = Path(__file__).with_name("node")
MODULES = Path(__file__).resolve().parents[2] / "node" / "node_modules"
HARNESS = Path(sys.executable).with_name("harness")

pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (Node 20 runs these agents)"),
    pytest.mark.skipif(
        not (MODULES / "openai").is_dir() or not (MODULES / "@anthropic-ai" / "sdk").is_dir(),
        reason="tests/node/node_modules is missing: run npm ci in tests/node",
    ),
]

pytest_plugins = ["pytester"]

FOUND_AS = {"unanswered": "W1", "rewrite_history": "W2", "endless": "W3", "cut_text": "W5", "retry_now": "W6"}


def _fuzz(tmp_path: Path, agent: str, *options: str) -> subprocess.CompletedProcess[str]:
    command = f"node {NODE_DIR / agent}"
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [str(HARNESS), "fuzz", "--agent-cmd", command, *options, "--save-dir", str(tmp_path / "saved")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("defect", sorted(FOUND_AS))
def test_each_planted_defect_of_a_node_loop_is_found_and_shrunk_to_two_replies(defect: str, tmp_path: Path) -> None:
    done = _fuzz(tmp_path, f"openai_loop.mjs {defect}", "--agent-cmd-mode", "lines")
    invariant = FOUND_AS[defect]
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"VIOLATION {invariant}" in done.stdout, done.stdout
    (saved,) = (tmp_path / "saved" / "wire").glob(f"{invariant}-*.yaml")
    scenario = yaml.safe_load(saved.read_text())
    assert 1 <= len(scenario["turns"]) <= 2, saved.read_text()
    assert scenario["meta"]["agent"] == f"node {NODE_DIR / 'openai_loop.mjs'} {defect}"
    assert "# Found by: harness fuzz --agent-cmd '" in saved.read_text()


def test_a_node_loop_holds_a_short_campaign_one_process_per_conversation(tmp_path: Path) -> None:
    done = _fuzz(tmp_path, "openai_loop.mjs", "-n", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 conversations" in done.stdout and "no violation" in done.stdout
    assert not (tmp_path / "saved").exists()


def test_a_node_loop_over_the_anthropic_sdk_holds_a_short_long_lived_campaign(tmp_path: Path) -> None:
    done = _fuzz(tmp_path, "anthropic_loop.mjs", "-n", "15", "--agent-cmd-mode", "lines")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "runs on anthropic messages (streamed)" in done.stdout and "no violation" in done.stdout


@pytest.mark.skipif(
    os.environ.get("HARNESS_NODE_CAMPAIGNS") != "1",
    reason="a default campaign per SDK (7-17 s each here): set HARNESS_NODE_CAMPAIGNS=1 to run them",
)
@pytest.mark.parametrize("agent", ["openai_loop.mjs", "anthropic_loop.mjs"])
def test_a_correct_node_loop_holds_the_default_campaign(agent: str, tmp_path: Path) -> None:
    done = _fuzz(tmp_path, agent, "--agent-cmd-mode", "lines")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "100 conversations" in done.stdout and "no violation" in done.stdout
    assert "not exercised" not in done.stdout  # every invariant had its chances


def test_agent_test_with_cmd_replays_saved_scenarios_and_runs_a_campaign(pytester: pytest.Pytester) -> None:
    """A user's suite: a clean node loop passes; a planted one fails on its saved scenario first."""
    clean = f"node {NODE_DIR / 'openai_loop.mjs'}"
    planted = f"{clean} cut_text"
    saved = pytester.path / "cassettes" / "scenarios" / "wire"
    saved.mkdir(parents=True)
    (saved / "W5-cut.yaml").write_text(
        yaml.safe_dump(
            {
                "name": "cut",
                "meta": {"agent": planted, "emulate": {"after_last": "repeat"}},
                "prompts": ["What is 2 + 3?"],
                "turns": [{"text": "Done.", "hang_up": True}],
            }
        )
    )
    pytester.makepyfile(
        test_agents=f"""
        from hypothesis import settings
        from harness.agents import agent_test

        settings.register_profile("few", max_examples=5, database=None)
        settings.load_profile("few")

        test_clean = agent_test(cmd={clean!r}, mode="lines")
        test_planted = agent_test(cmd={planted!r}, mode="lines")
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*W5 at request 1*returned 'Done.' as a complete answer*"])


def test_a_declared_deviation_covers_what_it_names_and_only_that(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from harness.agents import kinds_for
    from harness.cli import main

    monkeypatch.chdir(tmp_path)
    command = ["fuzz", "--agent-cmd", f"node {NODE_DIR / 'openai_loop.mjs'} cut_text", "--agent-cmd-mode", "lines"]
    why = "a partial answer beats none"
    budget = str(2 * len(kinds_for()))  # the first phase serves each kind once: both cuts among them
    covered = CliRunner().invoke(
        main, [*command, "-n", budget, "--deviation", f"W5:cut stream,cut inside an event={why}"]
    )
    assert covered.exit_code == 0, covered.output
    assert f"declared: W5 after cut stream, cut inside an event: {why} (covered" in " ".join(covered.output.split())
    elsewhere = CliRunner().invoke(main, [*command, "-n", budget, "--deviation", f"W5:error status={why}"])
    assert elsewhere.exit_code == 1 and "VIOLATION W5" in elsewhere.output
