"""Where shrunk regression scenarios go: ``--harness-scenario-dir`` and the ``harness_scenario_dir`` fixture.

The directory is exported as ``HARNESS_SCENARIO_DIR`` for the session, so the property helpers
(``harness.checking``) that save a failing scenario find it without being handed the config, and
the variable is put back as it was when pytest unconfigures the plugin.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

_ENV_VAR = "HARNESS_SCENARIO_DIR"
_STATE = pytest.StashKey[dict[str, Any]]()


def add_options(group: Any, parser: pytest.Parser) -> None:
    group.addoption(
        "--harness-scenario-dir",
        dest="harness_scenario_dir",
        default=None,
        metavar="DIR",
        help="directory for shrunk regression scenarios (default: cassettes/scenarios); sets HARNESS_SCENARIO_DIR",
    )
    parser.addini(
        "harness_scenario_dir", "directory for regression scenarios (like --harness-scenario-dir)", default=None
    )


def configure(config: pytest.Config) -> None:
    """Export the chosen directory (the option, relative to where pytest ran; else the ini option,
    relative to the root directory), if there is one."""
    state: dict[str, Any] = {"previous_env": None}
    config.stash[_STATE] = state
    directory = config.getoption("harness_scenario_dir", None)
    base = Path(config.invocation_params.dir)
    if not directory and config.getini("harness_scenario_dir"):
        directory, base = config.getini("harness_scenario_dir"), Path(config.rootpath)
    if directory:
        path = (base / directory).resolve()
        state["scenario_dir"] = str(path)
        state["previous_env"] = os.environ.get(_ENV_VAR)
        state["env_set"] = True
        os.environ[_ENV_VAR] = str(path)


def restore(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not state.get("env_set"):
        return
    if state.get("previous_env") is None:
        os.environ.pop(_ENV_VAR, None)
    else:
        os.environ[_ENV_VAR] = state["previous_env"]


def header(config: pytest.Config) -> list[str]:
    state = config.stash.get(_STATE, {})
    return [f"scenario dir {state['scenario_dir']}"] if state.get("scenario_dir") else []


@pytest.fixture(scope="session")
def harness_scenario_dir(pytestconfig: pytest.Config) -> Path:
    """Where shrunk regression scenarios are saved (``--harness-scenario-dir``)."""
    return scenario_dir(pytestconfig)


def scenario_dir(config: pytest.Config) -> Path:
    state = config.stash.get(_STATE, {})
    if state.get("scenario_dir") is not None:
        return Path(state["scenario_dir"])
    if os.environ.get(_ENV_VAR):
        return Path(os.environ[_ENV_VAR])
    return Path(config.rootpath) / "cassettes" / "scenarios"
