"""docs/architecture.md held to the tree, so the map a newcomer finds rooms by cannot go stale.

The page went stale once already (four command modules and two plugin modules missing, a module
limit the structure test no longer enforced): nothing compared it with the code. Here the page is
parsed as a reader reads it (the package table, the numbered layers, the limits, the
``path/file.py:name`` steps of its walks) and compared with ``harness/``, pyproject's
import-linter layers contract and tests/harness/test_structure.py. Each test names every
offender, so one run says everything to fix. Reading files only: no subprocess, no import of the
harness.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "harness"
DOC = ROOT / "docs" / "architecture.md"

_TICKED = re.compile(r"`([^`]+)`")
_PRIVATE = re.compile(r"_[a-z][a-z0-9_]*")
_REFERENCE = re.compile(r"`((?:harness|openprogram)/[\w/]+\.py):([\w.]+)`")
_PATH = re.compile(r"`((?:harness|openprogram|tests|docs|benchmarks)/[\w/.]*)`")


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def _table_rows(text: str) -> dict[str, str]:
    """The package table: its package cell (``harness/trace/``, ``harness/script.py``) -> the row's last cell."""
    section = text.split("## The workflows and their packages", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not cells[2].startswith("`harness/"):
            continue
        rows[cells[2].strip("`")] = cells[-1]
    return rows


def _packages() -> dict[str, Path]:
    return {f"harness/{p.name}/": p for p in sorted(HARNESS.iterdir()) if (p / "__init__.py").exists()}


def _private_modules(package: Path) -> set[str]:
    """A package's private modules, its private subpackages (``_vcr``) and theirs: a row names them all."""
    modules = {p.stem for p in package.rglob("_*.py") if p.name != "__init__.py"}
    return modules | {p.parent.name for p in package.rglob("__init__.py") if p.parent != package}


def _doc_layers(text: str) -> list[set[str]]:
    """The numbered list of the "Layers" section, each item's names outside its parentheses."""
    section = text.split("### Layers", 1)[1].split("\n#", 1)[0]
    items: list[str] = []
    for line in section.splitlines():
        if re.match(r"\d+\.\s", line):
            items.append(line.split(".", 1)[1])
        elif items and line.startswith("   ") and line.strip():
            items[-1] += " " + line.strip()
    layers = []
    for item in items:
        while re.search(r"\([^()]*\)", item):  # remarks in parentheses name other modules
            item = re.sub(r"\([^()]*\)", "", item)
        layers.append(set(_TICKED.findall(item)))
    return layers


def _contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    return [{name.strip().removeprefix("harness.") for name in layer.split("|")} for layer in contract["layers"]]


def _defines(path: Path, dotted: str) -> bool:
    """True if ``path`` defines ``dotted`` (``name`` at module level, or ``Class.method``)."""
    body: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    for part in dotted.split("."):
        found: ast.stmt | None = None
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == part:
                found = node
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == part for t in targets):
                    found = node
        if found is None:
            return False
        body = found.body if isinstance(found, ast.ClassDef) else []
    return True


def _offenders(rule: str, found: list[str]) -> str:
    return f"docs/architecture.md: {rule}:\n  " + "\n  ".join(found)


def test_the_package_table_has_a_row_for_every_package_and_only_real_ones() -> None:
    rows = _table_rows(_doc())
    top = {f"harness/{p.name}" for p in HARNESS.glob("*.py") if not p.stem.startswith("_")}
    found = [f"{package} has no row in the package table" for package in _packages() if package not in rows]
    found += [f"the row for {cell} names no harness package" for cell in rows if cell not in {*_packages(), *top}]
    assert not found, _offenders("the package table and harness/ disagree", found)


def test_each_row_names_every_private_module_of_its_package_and_no_other() -> None:
    rows = _table_rows(_doc())
    found = []
    for name, package in _packages().items():
        if name not in rows:
            continue  # the test above names it
        ticked = (token.removesuffix("/") for token in _TICKED.findall(rows[name]))  # `_vcr/`: a subpackage
        named = {token for token in ticked if _PRIVATE.fullmatch(token)}
        modules = _private_modules(package)
        found += [f"{name}'s row does not name {module}" for module in sorted(modules - named)]
        found += [f"{name}'s row names {module}, which {name} does not hold" for module in sorted(named - modules)]
    assert not found, _offenders("the package table and the packages' modules disagree", found)


def test_every_module_at_the_top_of_the_harness_is_on_the_page() -> None:
    text = _doc()
    missing = [f"harness/{p.name}" for p in sorted(HARNESS.glob("*.py")) if f"`harness/{p.name}`" not in text]
    assert not missing, _offenders("modules at the top of harness/ the page does not name", missing)


def test_the_layers_are_pyprojects_contract_in_order() -> None:
    doc, contract = _doc_layers(_doc()), _contract_layers()

    def listed(layers: list[set[str]]) -> str:
        return "\n    ".join(f"{n}. {' | '.join(sorted(layer))}" for n, layer in enumerate(layers, 1))

    assert doc == contract, (
        "docs/architecture.md's layers are not pyproject's [tool.importlinter] layers contract:\n"
        f"  the page:\n    {listed(doc)}\n  pyproject.toml:\n    {listed(contract)}"
    )


def test_the_limits_on_the_page_are_the_ones_the_structure_test_enforces() -> None:
    tree = ast.parse((ROOT / "tests" / "harness" / "test_structure.py").read_text(encoding="utf-8"))
    limits = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, int)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    text = " ".join(_doc().split())
    said = {
        "MAX_TOP_LEVEL": r"at most (\d+) modules at the top",
        "MAX_PER_PACKAGE": r"at most (\d+) in a package",
        "MAX_LINES": r"no module over (\d+) lines",
    }
    found = []
    for name, pattern in said.items():
        match = re.search(pattern, text)
        if match is None:
            found.append(f"no sentence {pattern!r} (test_structure.py's {name} = {limits.get(name)})")
        elif int(match.group(1)) != limits.get(name):
            found.append(f"says {match.group(0)!r}, test_structure.py enforces {name} = {limits.get(name)}")
    assert not found, _offenders("limits that differ from tests/harness/test_structure.py", found)


def test_every_file_and_function_the_walks_name_exists() -> None:
    text = _doc()
    found = []
    for file, name in sorted(set(_REFERENCE.findall(text))):
        path = ROOT / file
        if not path.is_file():
            found.append(f"{file}:{name}: no file {file}")
        elif not _defines(path, name):
            found.append(f"{file}:{name}: {file} defines no {name}")
    for file in sorted(set(_PATH.findall(text))):
        if not (ROOT / file).exists():
            found.append(f"{file}: no such file or directory")
    assert not found, _offenders("references to code that is not there", found)


def test_the_page_is_parsed_at_all() -> None:
    """The checks above pass vacuously if the page's shape changes under them: it must still parse."""
    text = _doc()
    assert len(_table_rows(text)) >= len(_packages()), "the package table was not found or lost rows"
    assert _doc_layers(text), "the numbered list under '### Layers' was not found"
    assert len(_REFERENCE.findall(text)) >= 10, "the walks name fewer than ten `path/file.py:name` steps"
