"""The shape DESIGN section 2 promises the next maintainer, checked so it cannot erode quietly.

The layers themselves are import-linter's job (``lint-imports`` in CI, configured in
pyproject.toml); these are the rules it cannot express: a layout a newcomer can read (few modules
at the top, a handful per package, every package a facade over private modules), modules of
one concept, no cycle anywhere, and no reach into openprogram's internals.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "harness"
MODULES = sorted(HARNESS.rglob("*.py"))
MAX_LINES = 700
MAX_TOP_LEVEL = 8
MAX_PER_PACKAGE = 13  # a module or a subpackage (one entry), its __init__ counted; recording/ is at the limit
MAX_LAYERS = 10
PACKAGES = sorted(p for p in HARNESS.iterdir() if (p / "__init__.py").exists())
ALL_PACKAGES = sorted(p.parent for p in HARNESS.rglob("__init__.py") if p.parent != HARNESS)
"""Every package and subpackage (``recording/_vcr/``...): a subpackage is one entry of its parent
and holds its own handful, so grouping modules in one cannot hide a crowded package."""


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every rule that reads it."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _layers() -> list[str]:
    import tomllib

    config = tomllib.loads((HARNESS.parent / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    return next(c["layers"] for c in contracts if c["type"] == "layers")


def test_the_top_of_the_harness_holds_few_modules() -> None:
    """The scripting modules a user starts from, and nothing that would hide them."""
    top = sorted(p.name for p in HARNESS.glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL, f"harness/ holds {len(top)} modules ({top}): group them in a package"


def _offenders(rule: str, found: list[str]) -> str:
    """The failure message of a rule: every offender on a line of its own, so one run names them all."""
    return f"{rule}:\n  " + "\n  ".join(found)


def _entries(package: Path) -> list[str]:
    """A package's modules and subpackages (``_vcr/``), what a reader scans when opening it."""
    subpackages = [f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").exists()]
    return sorted([p.name for p in package.glob("*.py")] + subpackages)


def test_each_package_holds_a_handful_of_modules() -> None:
    crowded = [
        f"{package.relative_to(HARNESS)}/ holds {len(modules)} modules: {modules}"
        for package in ALL_PACKAGES
        if len(modules := _entries(package)) > MAX_PER_PACKAGE
    ]
    assert not crowded, _offenders(f"packages over {MAX_PER_PACKAGE} modules (split them by concept)", crowded)


def test_each_package_keeps_its_modules_private_behind_its_facade() -> None:
    public = [
        f"{package.relative_to(HARNESS)}/: {names}"
        for package in ALL_PACKAGES
        if (names := [name for name in _entries(package) if not name.startswith("_")])
    ]
    assert not public, _offenders("public modules in a package (name them _private behind __init__)", public)


def test_each_package_facade_says_what_the_package_is_for() -> None:
    silent = [
        f"{package.relative_to(HARNESS)}/__init__.py"
        for package in ALL_PACKAGES
        if not ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    ]
    assert not silent, _offenders("package facades without a docstring saying what the package is for", silent)


def test_there_are_few_layers() -> None:
    assert len(_layers()) <= MAX_LAYERS


def test_no_import_cycle_even_through_function_level_imports() -> None:
    """import-linter checks layers between packages; a cycle inside one is found here."""
    grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (the dev extra)")
    graph = grimp.build_graph("harness", "openprogram", exclude_type_checking_imports=True)
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    assert not cycles, f"modules that import each other (directly or around a cycle): {cycles}"


def test_no_harness_module_is_over_700_lines() -> None:
    long = [
        f"{path.relative_to(HARNESS)} has {lines} lines"
        for path in MODULES
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert not long, _offenders(f"modules over {MAX_LINES} lines (give each second job a module of its own)", long)


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


def test_the_harness_uses_no_private_name_of_openprogram() -> None:
    reaching = [f"{path.relative_to(HARNESS)}: {uses}" for path in MODULES if (uses := _private_uses(_tree(path)))]
    assert not reaching, _offenders("modules reaching into openprogram's internals (ask for a public entry)", reaching)


def test_every_harness_module_has_its_place_in_the_layers() -> None:
    """A module missing from import-linter's layers is checked by nothing: name it there."""
    layers = _layers()
    placed = {name.strip().strip("()") for layer in layers for name in layer.split("|")}
    modules = {
        "harness." + ".".join(p.relative_to(HARNESS).with_suffix("").parts)
        for p in MODULES
        if p.name != "__init__.py" and p.parent == HARNESS and p.stem != "__main__"
    }
    packages = {"harness." + p.name for p in HARNESS.iterdir() if (p / "__init__.py").exists()}
    missing = sorted((modules | packages) - placed)
    assert not missing, f"modules in no layer of pyproject's [tool.importlinter]: {missing}"


def test_each_public_module_has_its_tests_where_a_newcomer_looks() -> None:
    """``harness/<package>/`` is tested in ``tests/harness/<package>/``, ``harness/<module>.py`` in
    ``tests/harness/test_<module>.py``."""
    tests = HARNESS.parent / "tests" / "harness"
    missing = [f"tests/harness/{p.name}/" for p in PACKAGES if not list((tests / p.name).glob("test_*.py"))]
    missing += [
        f"tests/harness/test_{p.stem}.py"
        for p in HARNESS.glob("*.py")
        if not p.stem.startswith("_") and not (tests / f"test_{p.stem}.py").exists()
    ]
    assert not missing, f"public modules without a test module of their name: {missing}"


def test_no_harness_module_name_is_used_twice() -> None:
    """A traceback or a search hit names a module by its file name: one name, one room
    (``__init__`` and ``__main__`` aside)."""
    rooms: dict[str, list[str]] = {}
    for path in MODULES:
        if path.stem not in ("__init__", "__main__"):
            rooms.setdefault(path.stem, []).append(str(path.relative_to(HARNESS)))
    reused = [f"{name}: {', '.join(paths)}" for name, paths in sorted(rooms.items()) if len(paths) > 1]
    assert not reused, _offenders("module names used by more than one module (name each for its room)", reused)


MAX_FUNCTION_LINES = 50
# Functions allowed past MAX_FUNCTION_LINES, each because one concept needs the length (the
# reason says which); a new long function fails the rule below instead of joining this list quietly.
_LONG_FUNCTIONS: dict[str, str] = {
    "strategies/_scenarios.py:scenarios": (
        "a public strategy: its thirteen parameters and their docstring take 30 lines, and its body is the "
        "one draw order every seed (the default campaign's first) pins; each part it draws is a named step"
    ),
}


def test_no_harness_function_is_over_50_lines() -> None:
    """A function a reader cannot take in at once is split into named steps, unless one concept
    needs the length (``_LONG_FUNCTIONS`` says which and why)."""
    long = [
        f"{key} has {lines} lines"
        for path in MODULES
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (lines := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_FUNCTION_LINES
        and (key := f"{path.relative_to(HARNESS).as_posix()}:{node.name}") not in _LONG_FUNCTIONS
    ]
    assert not long, _offenders(f"functions over {MAX_FUNCTION_LINES} lines (split them into named steps)", long)
