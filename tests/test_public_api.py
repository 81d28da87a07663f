"""Each public module's ``__all__`` is its real public surface, nothing missing and nothing that is not there.

``__all__`` means "for users". In ``openprogram`` every module is public, so a name another file
imports from it belongs in its ``__all__``. The harness is a set of facades over private modules
(DESIGN section 2): what the README and the docs show a user import must come from a facade and be
in its ``__all__``; the harness's own modules and its tests may reach into ``_private`` modules.
A name missing from ``__all__`` is invisible to ``from m import *``, to documentation tools and to
type checkers' re-export rules; a name in ``__all__`` that does not exist breaks ``import *``; a
click command in ``__all__`` is an implementation detail of the command line posing as API.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pkgutil
import re
import typing
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("openprogram", "harness")


def _public_modules() -> list[str]:
    names: list[str] = []
    for package in PACKAGES:
        names.append(package)
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(module.__path__, prefix=f"{package}."):
            if any(part.startswith("_") for part in info.name.split(".")):
                continue
            names.append(info.name)
    return names


@functools.cache
def _python_sources() -> list[tuple[Path, str]]:
    sources = []
    for folder in ("openprogram", "harness", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            sources.append((path, path.read_text()))
    sources.append((ROOT / "conftest.py", (ROOT / "conftest.py").read_text()))
    fence = re.compile(r"```python\n(.*?)```", re.S)
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in fence.findall(path.read_text()):
            sources.append((path, block))
    return sources


def _uses() -> dict[str, dict[str, set[str]]]:
    """module -> imported name -> the files that import it from there."""
    uses: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path, text in _python_sources():
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.split(".")[0] in PACKAGES:
                    for alias in node.names:
                        uses[node.module][alias.name].add(str(path.relative_to(ROOT)))
    return uses


# read when a test first asks, not at import: every xdist worker collects this module, and only one
# runs these tests
_modules = functools.cache(_public_modules)
_used = functools.cache(_uses)


def _offenders(rule: str, found: list[str]) -> str:
    """The failure message of a rule: every offender on a line of its own, so one run names them all."""
    return f"{rule}:\n  " + "\n  ".join(found)


def _all_problems(name: str) -> list[str]:
    """What is wrong with one module's ``__all__``: absent, repeating, naming what is not there or
    private, or offering click commands outside ``harness.cli``."""
    import click

    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        return [f"{name} has no __all__: say what it offers"]
    problems = []
    if len(exported) != len(set(exported)):
        problems.append(f"{name}.__all__ repeats a name")
    if missing := [n for n in exported if not hasattr(module, n)]:
        problems.append(f"{name}.__all__ names what it does not define: {missing}")
    if private := [n for n in exported if n.startswith("_")]:
        problems.append(f"{name}.__all__ exports private names: {private}")
    commands = [n for n in exported if isinstance(getattr(module, n, None), click.Command)]
    if commands and name != "harness.cli":  # the command line's commands are what harness.cli is for
        problems.append(f"{name}.__all__ exports click commands (they belong to harness.cli): {commands}")
    return problems


def test_all_lists_what_exists_and_no_command() -> None:
    problems = [problem for name in _modules() for problem in _all_problems(name)]
    assert not problems, _offenders("public modules whose __all__ is not their real surface", problems)


def test_names_used_elsewhere_are_in_all() -> None:
    problems = []
    for name in [m for m in _modules() if m.split(".")[0] == "openprogram"]:
        module = importlib.import_module(name)
        exported = set(getattr(module, "__all__", ()))
        own = str(Path(*name.split(".")))
        unlisted = {}
        for imported, files in _used().get(name, {}).items():
            others = {f for f in files if not f.startswith(own)}
            if imported == "*" or imported.startswith("_") or not others or imported in exported:
                continue
            if importlib.util.find_spec(f"{name}.{imported}") if hasattr(module, "__path__") else False:
                continue  # a submodule, not a name
            unlisted[imported] = sorted(others)
        if unlisted:
            problems.append(f"{name}: {unlisted}")
    assert not problems, _offenders("names imported by other files but missing from their module's __all__", problems)


@functools.cache
def _documented_imports() -> list[tuple[str, str, str]]:
    """(file, module, name) for every ``from harness... import name`` in the README and the docs."""
    found = []
    for path, text in _python_sources():
        if path.suffix != ".md":
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "harness":
                found.extend((str(path.relative_to(ROOT)), node.module, alias.name) for alias in node.names)
    return found


def test_the_docs_import_the_harness_only_through_its_facades() -> None:
    private = [f"{f}: from {m} import {n}" for f, m, n in _documented_imports() if "._" in f".{m}" or n.startswith("_")]
    assert not private, f"the docs show users private modules or names: {private}"
    missing = [
        f"{f}: from {m} import {n}"
        for f, m, n in _documented_imports()
        if n not in getattr(importlib.import_module(m), "__all__", ()) and importlib.util.find_spec(f"{m}.{n}") is None
    ]
    assert not missing, f"the docs import names their facade does not offer: {missing}"


def test_the_harness_facade_offers_what_a_user_writes_first() -> None:
    import harness

    first = {"ScriptedProvider", "turn", "Trace", "Scenario", "run", "arun", "check", "Emulator"}
    assert first <= set(harness.__all__)
    for name in harness.__all__:
        assert getattr(harness, name) is not None


def test_every_name_a_facade_offers_says_what_it_is_for() -> None:
    """A name offered to users is documented where they meet it: help(), an editor's hover."""
    undocumented = []
    for module_name in [m for m in _modules() if m.split(".")[0] == "harness"]:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, str | int | float | tuple | frozenset | dict | list) or typing.get_origin(value):
                continue  # constants are documented by the attribute docstring in their module's source
            if not (getattr(value, "__doc__", None) or "").strip():
                undocumented.append(f"{module_name}.{name}")
    assert not undocumented, _offenders("names a facade offers without a docstring", undocumented)
