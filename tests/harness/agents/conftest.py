"""Every wire scenario a test of this suite saves is replayed once the test is done, and must break
the invariant it says it broke: a saved scenario that does not reproduce its violation is a wrong
verdict written to disk (issue 26: one from a later conversation's late request did not)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.agents import _campaign, replay_agent
from harness.agents._conversation import agent_name
from harness.scenarios._parts import import_user_object
from harness.scenarios._scenario import Scenario


@pytest.fixture(autouse=True)
def saved_scenarios_reproduce(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # asked for now, so the directory outlives this fixture's check (torn down after it)
    root: Path | None = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    shrunk: dict[str, Callable[..., Any]] = {}  # the agents of this test's campaigns, by the name they save
    shrink = _campaign.fewer_replies

    def recorded(agent: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        shrunk[agent_name(agent, kwargs.get("name"))] = agent
        return shrink(agent, *args, **kwargs)

    monkeypatch.setattr(_campaign, "fewer_replies", recorded)
    yield
    if root is None:
        return
    for path in sorted(root.rglob("wire/*.yaml")):
        saved = Scenario.from_yaml(path)
        said = saved.meta["violation"]["invariant"]
        # a command is run where the campaign ran it: the project the scenario was saved under
        project = next((f for f in path.parents if (f / "cassettes").is_dir()), Path.cwd())
        agent = _agent(saved.meta["agent"], shrunk, root, path)
        # W6 is a wait measured by a clock: a process started cold on a loaded machine may take
        # longer than the Retry-After asked (0.05 s) to retry at once, so a command's W6 gets three tries
        tries = 3 if said == "W6" and ":" not in saved.meta["agent"] else 1
        here = Path.cwd()
        os.chdir(project)
        try:
            for _ in range(tries):
                run, judgement = replay_agent(agent, saved, deviations=())
                found = [v.invariant for v in judgement.violations]
                if said in found:
                    break
        finally:
            os.chdir(here)
        assert said in found, f"{path.name} says {said}; replayed, the agent broke {found or 'nothing'} ({run.ended})"


def _agent(name: str, shrunk: dict[str, Callable[..., Any]], root: Path, saved: Path) -> Callable[..., Any]:
    """The agent a saved scenario names: one of the test's own campaigns, or one importable by name
    from a project of the test's (``harness fuzz --agent agents:NAME`` run in a directory above
    the saved file), or a command (``harness fuzz --agent-cmd``), run as a process."""
    if name in shrunk:
        return shrunk[name]
    if ":" not in name:  # a MODULE:CALLABLE has one; a command's name is the command
        from harness.agents import ProcessAgent

        return ProcessAgent(name)
    module = name.split(":", 1)[0]
    projects = [str(folder) for folder in saved.parents if folder.is_relative_to(root)]
    sys.path[:0] = projects
    try:
        found: Callable[..., Any] = import_user_object(name)
    finally:
        del sys.path[: len(projects)]
        if Path(getattr(sys.modules.get(module), "__file__", None) or "/").is_relative_to(root):
            del sys.modules[module]
    return found
