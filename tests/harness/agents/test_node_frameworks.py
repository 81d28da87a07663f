"""The JavaScript frameworks through the wire: each agent of ``tests/node/agents`` fuzzed by a
default campaign (100 conversations, seed 21) through the installed ``harness fuzz --agent-cmd``,
its verdict the one ``docs/wire-findings.md`` documents ("The JavaScript frameworks"): held, or
the finding with its invariant and tier (and its saved scenario, which this suite's conftest
replays). And the TypeScript new user's path: the docs' agent file, in an empty project, fuzzed by
the docs' command.

The frameworks' campaigns run in the long-lived mode (``--agent-cmd-mode lines``): node and the
framework start once a campaign, not once a conversation, which makes a held campaign about 20 s
instead of four and a half minutes here; the conversations, and so the verdicts, are the same in
both modes (the docs' table was run per process, and again in lines mode). The new user's path
runs per process, the default a user meets. Even so these take minutes: they run only with
``HARNESS_NODE_CAMPAIGNS=1``, as ``.ci/run``'s node step sets it after ``npm ci`` in
``tests/node``, and skip otherwise, so the default suite stays inside its time budget. Each
finding's standalone reproduction (node and the framework alone, no harness) is in
``tests/node/findings``, run by ``run.mjs`` in the same step.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from tests.harness.support import console_script

ROOT = Path(__file__).resolve().parents[3]
NODE = ROOT / "tests" / "node"
AGENTS = NODE / "agents"
DOCS = ROOT / "docs" / "wire-any-language.md"
README = ROOT / "README.md"
T = TypeVar("T")

SKIPS = (
    pytest.mark.skipif(
        os.environ.get("HARNESS_NODE_CAMPAIGNS") != "1",
        reason="the JS frameworks' campaigns take minutes: set HARNESS_NODE_CAMPAIGNS=1 (.ci/run's node step does)",
    ),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (Node 20 runs tests/node)"),
    pytest.mark.skipif(
        not (NODE / "node_modules").is_dir(),
        reason="tests/node/node_modules is missing: run `npm ci --no-audit --no-fund` in tests/node",
    ),
)


def node_campaign(test: T) -> T:
    """Runs ``test`` only where a node campaign can run and was asked for (``HARNESS_NODE_CAMPAIGNS=1``)."""
    for skip in SKIPS:
        test = skip(test)
    return test


@dataclass(frozen=True)
class Verdict:
    """What a default campaign says of an agent: ``invariant`` None when every invariant held."""

    invariant: str | None = None
    tier: str | None = None


HELD = Verdict()

CAMPAIGNS = {
    "ai-sdk openai-chat generate": Verdict("W7", "provider"),
    "ai-sdk openai-chat generate checked": Verdict("W7", "provider"),
    "ai-sdk openai-chat stream": Verdict("W5", "network"),
    "ai-sdk openai-chat stream checked": Verdict("W7", "provider"),
    "ai-sdk openai-responses generate": Verdict("W7", "provider"),
    "ai-sdk openai-responses stream": Verdict("W5", "network"),
    "ai-sdk anthropic generate": Verdict("W2", "provider"),
    "ai-sdk anthropic stream": Verdict("W5", "network"),
    "ai-sdk anthropic stream checked": HELD,
    "openai-agents chat": Verdict("W7", "provider"),
    "openai-agents chat stream": Verdict("W5", "network"),
    "openai-agents responses": Verdict("W7", "provider"),
    "openai-agents responses stream": Verdict("W7", "provider"),
    "langchain openai": Verdict("W4", "provider"),
    "langchain openai stream": Verdict("W5", "network"),
    "langchain anthropic": HELD,
    "langchain anthropic stream": Verdict("W5", "network"),
}
"""Each agent (``tests/node/agents/<file>.mjs`` and its arguments) and its verdict at seed 21, as
the docs' table of the JavaScript campaigns has it."""


def harness(project: Path, *args: str, timeout: float = 1500) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run(
        [console_script(), *args], cwd=project, capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.mark.parametrize("agent", sorted(CAMPAIGNS))
@node_campaign
def test_each_js_framework_agent_gets_its_documented_verdict(agent: str, tmp_path: Path) -> None:
    file, *arguments = agent.split()
    command = " ".join(["node", str(AGENTS / f"{file}.mjs"), *arguments])
    saved = str(tmp_path / "saved")
    done = harness(
        tmp_path, "fuzz", "--agent-cmd", command, "--agent-cmd-mode", "lines", "--seed", "21", "--save-dir", saved
    )
    told = done.stdout + done.stderr
    expected = CAMPAIGNS[agent]
    if expected.invariant is None:
        assert done.returncode == 0, told
        assert "100 conversations" in done.stdout and "no violation" in done.stdout, told
        return
    assert done.returncode == 1, told
    assert f"VIOLATION {expected.invariant}" in done.stdout and f"[tier: {expected.tier}]" in done.stdout, told
    assert list((tmp_path / "saved").rglob(f"{expected.invariant}-*.yaml")), told


def docs_agent() -> str:
    """The agent file of the docs' TypeScript path (the block after its ``agent.mjs`` marker)."""
    found = re.search(r"<!-- ts-agent: agent\.mjs[^>]*-->\n```js\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    assert found is not None, "docs/wire-any-language.md's TypeScript path shows agent.mjs"
    return found.group(1)


def test_the_readme_and_the_docs_show_the_same_typescript_agent() -> None:
    assert docs_agent() in README.read_text(encoding="utf-8")


@node_campaign
def test_the_docs_typescript_agent_is_a_first_campaign_in_an_empty_project(tmp_path: Path) -> None:
    """The docs' agent.mjs in an empty project whose node_modules is the pinned one (a link, not a
    network install: the docs' `npm install openai@6.49.0` is the version tests/node pins), and the
    docs' command through the installed console script."""
    section = DOCS.read_text(encoding="utf-8").split("## A TypeScript or JavaScript agent", 1)[1]
    install = next(line for line in section.splitlines() if line.startswith("npm install "))
    pinned = re.findall(r"(\S+)@(\d\S*)", install)
    lock = (NODE / "package.json").read_text(encoding="utf-8")
    assert pinned and all(f'"{name}": "{version}"' in lock for name, version in pinned), install
    command = next(line for line in section.splitlines() if line.startswith("harness fuzz --agent-cmd"))
    argv = re.match(r'harness fuzz --agent-cmd "([^"]+)"', command)
    assert argv is not None and argv.group(1) == "node agent.mjs", command

    (tmp_path / "agent.mjs").write_text(docs_agent(), encoding="utf-8")
    (tmp_path / "node_modules").symlink_to(NODE / "node_modules", target_is_directory=True)
    done = harness(tmp_path, "fuzz", "--agent-cmd", argv.group(1), "-n", "10", timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 conversations" in done.stdout and "no violation" in done.stdout, done.stdout
