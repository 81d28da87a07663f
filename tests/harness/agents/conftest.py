"""Every wire scenario a test of this suite saves is replayed once the test is done, and must break
the invariant it says it broke: a saved scenario that does not reproduce its violation is a wrong
verdict written to disk (issue 26: one from a later conversation's late request did not)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.agents import replay_agent
from harness.scenarios._parts import import_user_object
from harness.scenarios._scenario import Scenario


@pytest.fixture(autouse=True)
def saved_scenarios_reproduce(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "tmp_path" not in request.fixturenames:
        return
    root: Path = request.getfixturevalue("tmp_path")
    for path in sorted(root.rglob("wire/*.yaml")):
        saved = Scenario.from_yaml(path)
        said = saved.meta["violation"]["invariant"]
        module = saved.meta["agent"].split(":", 1)[0]
        sys.path.insert(0, str(root))  # an agent of the test's own project (harness fuzz --agent agents:NAME)
        try:
            agent = import_user_object(saved.meta["agent"])
            run, judgement = replay_agent(agent, saved, deviations=())
        finally:
            sys.path.remove(str(root))
            if Path(getattr(sys.modules.get(module), "__file__", None) or "/").is_relative_to(root):
                del sys.modules[module]
        found = [v.invariant for v in judgement.violations]
        assert said in found, f"{path.name} says {said}; replayed, the agent broke {found or 'nothing'} ({run.ended})"
