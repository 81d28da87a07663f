"""The README's new-user path, as a new user takes it: an empty project, the README's pydantic-ai
``agent.py``, the README's ``harness fuzz --agent`` line through the installed console script; then
a defect of that agent, found, saved, and served by hand with ``harness emulate --script``.

Needs pydantic-ai (the ``agents`` extra, CI's agents venv); skipped without it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.support import console_script, emulate_process

pytest.importorskip("pydantic_ai", reason="the README's agent is a pydantic-ai agent: pip install -e '.[agents]'")

README = Path(__file__).resolve().parents[3] / "README.md"


def readme_agent() -> str:
    found = re.search(
        r"<!-- readme-agent: agent\.py[^>]*-->\n```py\n(.*?)```", README.read_text(encoding="utf-8"), re.S
    )
    assert found is not None, "the README's 'Any agent, through the wire' shows agent.py"
    return found.group(1)


def readme_command() -> list[str]:
    section = README.read_text(encoding="utf-8").split("### Any agent, through the wire", 1)[1]
    line = next(x for x in section.splitlines() if x.startswith("harness fuzz --agent"))
    return line.split("#", 1)[0].split()


def harness(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([console_script(), *args], cwd=project, capture_output=True, text=True, env=env, timeout=600)


def test_the_readmes_pydantic_ai_agent_is_a_first_campaign_in_an_empty_project(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(readme_agent())
    command = readme_command()
    assert command == ["harness", "fuzz", "--agent", "agent:run"]
    done = harness(tmp_path, *command[1:], "-n", "10")  # the README's default is 100; 10 keep CI short
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 conversations" in done.stdout and "in process" in done.stdout and "no violation" in done.stdout


BROKEN = '''

async def broken(prompt: str, *, base_url: str, api_key: str, http_client) -> str:
    """The README's agent, answering "5" whatever the model said: W4 at the first answer."""
    await run(prompt, base_url=base_url, api_key=api_key, http_client=http_client)
    return "5"
'''


def test_a_violation_of_the_readmes_agent_is_saved_and_served_by_hand(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(readme_agent() + BROKEN)
    done = harness(tmp_path, "fuzz", "--agent", "agent:broken", "-n", "20")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "VIOLATION W4" in done.stdout, done.stdout
    (saved,) = (tmp_path / "cassettes" / "scenarios" / "wire").glob("W4-*.yaml")
    assert f"harness emulate --script {saved.relative_to(tmp_path)}" in " ".join(done.stdout.split()) or (
        f"harness emulate --script {saved}" in " ".join(done.stdout.split())
    )
    # served by hand: the agent, pointed at the printed base URL, breaks W4 again
    probe = (
        "import asyncio, sys, httpx2\n"
        "from agent import broken\n"
        "base = sys.argv[1]\n"
        "async def main():\n"
        "    async with httpx2.AsyncClient() as client:\n"
        "        print('RETURNED', await broken('hi', base_url=base, api_key='k', http_client=client))\n"
        "asyncio.run(main())\n"
    )
    with emulate_process(saved) as base:
        ran = subprocess.run(
            [sys.executable, "-c", probe, base],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert ran.returncode == 0, ran.stderr
    assert "RETURNED 5" in ran.stdout
