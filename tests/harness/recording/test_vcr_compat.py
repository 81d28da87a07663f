"""vcrpy's private names, pinned against the installed vcrpy: a release that drops one fails here, by name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.recording._vcr import _vcr_compat as vcr_compat

RECORDING = Path(vcr_compat.__file__).parents[1]


@pytest.mark.parametrize("reach_in", vcr_compat.REACH_INS, ids=str)
def test_the_installed_vcrpy_has_each_private_name_the_harness_uses(reach_in: vcr_compat.ReachIn) -> None:
    assert hasattr(vcr_compat._owner(reach_in), reach_in.name), (
        f"vcrpy {vcr_compat.vcrpy_version()} has no {reach_in}: {reach_in.why} breaks; update _vcr_compat"
    )
    assert vcr_compat.missing() == []


def test_a_private_name_gone_is_an_error_naming_it_and_the_vcrpy_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from vcr.stubs import httpx_stubs

    monkeypatch.delattr(httpx_stubs, "_deserialize_response")
    [problem] = vcr_compat.missing()
    version = vcr_compat.vcrpy_version()
    assert version != "unknown" and f"vcrpy {version} has no vcr.stubs.httpx_stubs._deserialize_response" in problem
    with pytest.raises(vcr_compat.VcrCompatError, match=rf"vcrpy {version} has no .*_deserialize_response"):
        vcr_compat.httpx_response_builder()


def test_a_cassette_attribute_gone_fails_at_use_with_the_version_not_an_attribute_error() -> None:
    class Renamed:  # a Cassette of a vcrpy that renamed _loaded_count
        pass

    with pytest.raises(vcr_compat.VcrCompatError, match=r"vcrpy \S+ has no vcr.cassette.Cassette._loaded_count"):
        vcr_compat.loaded_count(Renamed())


def test_no_other_module_reaches_into_vcrpy_privately() -> None:
    """Every ``x._name`` of vcrpy goes through _vcr_compat, so a vcrpy upgrade has one place to check."""
    private = {reach_in.name for reach_in in vcr_compat.REACH_INS}
    offenders = []
    for path in [*sorted(RECORDING.rglob("*.py")), RECORDING.parent / "pytest_plugin" / "_cassette_fixtures.py"]:
        if path.name == "_vcr_compat.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in private:
                offenders.append(f"{path.name}:{node.lineno} .{node.attr}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vcr"):
                offenders.extend(f"{path.name}:{node.lineno} {a.name}" for a in node.names if a.name.startswith("_"))
    assert offenders == []


def test_the_declared_vcrpy_floor_has_every_private_name() -> None:
    """pyproject's ``vcrpy>=N`` must be a vcrpy that has each reach-in (checked against the wheels
    of 6.0 to 9.0: ``_loaded_count`` and the httpx stub's ``_deserialize_response`` arrived in 9.0)."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.version import Version

    pyproject = tomllib.loads((RECORDING.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    [vcrpy] = [Requirement(r) for r in pyproject["project"]["dependencies"] if Requirement(r).name == "vcrpy"]
    floors = [Version(spec.version) for spec in vcrpy.specifier if spec.operator == ">="]
    assert floors, f"vcrpy is required without a floor: {vcrpy}"
    needed = max(vcr_compat.REACH_INS, key=lambda reach_in: Version(reach_in.since))
    assert floors[0] >= Version(needed.since), f"vcrpy>={floors[0]} lacks {needed} (since {needed.since})"
