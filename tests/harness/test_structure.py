"""The shape DESIGN section 2 promises the next maintainer, checked so it cannot erode quietly.

The layers themselves are import-linter's job (``lint-imports`` in CI, configured in
pyproject.toml); these are the two rules it cannot express.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"
MODULES = sorted(HARNESS.rglob("*.py"))
MAX_LINES = 700


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(HARNESS)))
def test_no_harness_module_is_over_700_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.name} has {lines} lines: give its second job a module of its own"


def _private_uses(tree: ast.AST) -> list[str]:
    """Private names of openprogram the harness reaches for: imported, or read off a module."""
    found: list[str] = []
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "openprogram":
            parts = node.module.split(".")
            if any(p.startswith("_") for p in parts):
                found.append(f"from {node.module} import ...")
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append(f"from {node.module} import {alias.name}")
                else:
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "openprogram":
                    if any(p.startswith("_") for p in alias.name.split(".")):
                        found.append(f"import {alias.name}")
                    aliases.add((alias.asname or alias.name).split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(HARNESS)))
def test_the_harness_uses_no_private_name_of_openprogram(path: Path) -> None:
    uses = _private_uses(ast.parse(path.read_text(encoding="utf-8")))
    assert not uses, f"{path.name} reaches into openprogram's internals: {uses}; ask for a public entry instead"


def test_every_harness_module_has_its_place_in_the_layers() -> None:
    """A module missing from import-linter's layers is checked by nothing: name it there."""
    import tomllib

    config = tomllib.loads((HARNESS.parent / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    placed = {name.strip().strip("()") for layer in layers for name in layer.split("|")}
    modules = {
        "harness." + ".".join(p.relative_to(HARNESS).with_suffix("").parts)
        for p in MODULES
        if p.name != "__init__.py" and p.parent == HARNESS and p.stem != "__main__"
    }
    packages = {"harness." + p.name for p in HARNESS.iterdir() if (p / "__init__.py").exists()}
    missing = sorted((modules | packages) - placed)
    assert not missing, f"modules in no layer of pyproject's [tool.importlinter]: {missing}"
