"""The README's example and the main job (``harness demo``) must keep working as documented."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cli._demo import run_demo
from openprogram.functions import registry

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_FILE_BLOCK = re.compile(r"<!-- readme-file: (\S+) -->\n```python\n(.*?)```", flags=re.S)
_REPORT_BLOCK = re.compile(r"<!-- readme-report: (\S+) -->\n```text\n(.*?)```", flags=re.S)


def _python_blocks() -> list[str]:
    """The blocks that run on their own; those marked as a file of a user's project run in one."""
    text = _FILE_BLOCK.sub("", README.read_text(encoding="utf-8"))
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_opens_with_the_two_setup_commands() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert first_block is not None
    commands = [line for line in first_block.group(1).splitlines() if line.strip()]
    assert commands == ["pip install -e . && harness fuzz", 'pip install -e ".[dev]" && python -m pytest']


def test_readme_python_examples_run() -> None:
    blocks = _python_blocks()
    assert blocks, "the README should show the loop in a runnable example"
    with registry.isolated():
        for block in blocks:
            exec(compile(block, str(README), "exec"), {"__name__": "readme_example"})


def test_testing_your_own_agent_runs_as_a_users_project(pytester: pytest.Pytester) -> None:
    """The section's files, written into a fresh project, pass and fail as the README says."""
    readme = README.read_text(encoding="utf-8")
    files = dict(_FILE_BLOCK.findall(readme))
    assert set(files) == {"myagent.py", "test_myagent.py", "test_stream.py", "test_report.py"}
    pytester.makepyfile(**{name.removesuffix(".py"): source for name, source in files.items()})
    pytester.syspathinsert()
    with registry.isolated():
        result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    assert "FAILED test_report.py::test_the_answer_mentions_the_sum" in result.stdout.str()

    (name, shown), *_ = _REPORT_BLOCK.findall(readme)
    assert name == "test_report.py"
    output = [line.rstrip() for line in result.stdout.lines]
    position = 0
    for line in shown.rstrip("\n").splitlines():  # every line shown is really printed, in order
        assert line.rstrip() in output[position:], f"the README's report shows {line!r}, pytest did not print it"
        position = output.index(line.rstrip(), position) + 1


_FROM_THE_INDEX = re.compile(r"""pip install\s+(?:-U\s+)?["']?(?:openprogram|harness)\b""")


def test_no_doc_or_message_installs_this_project_from_the_package_index() -> None:
    # The names on PyPI belong to unrelated projects: every install goes through the checkout.
    paths = [README, *sorted((ROOT / "docs").glob("*.md"))]
    paths += [*sorted((ROOT / "harness").rglob("*.py")), *sorted((ROOT / "openprogram").rglob("*.py"))]
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in paths
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _FROM_THE_INDEX.search(line)
    ]
    assert not found, "install from the checkout (pip install -e ...), not the index:\n" + "\n".join(found)


def test_the_index_check_recognises_the_forms_it_refuses() -> None:
    for line in ('pip install "openprogram[gemini]"', "pip install openprogram", "pip install 'harness[x]'"):
        assert _FROM_THE_INDEX.search(line), line
    for line in ('pip install -e ".[gemini]"', "pip install -e /path/to/openprogram", "pip install syrupy"):
        assert not _FROM_THE_INDEX.search(line), line


def test_demo_run_shows_error_feedback_and_the_answer() -> None:
    answer, rendered = run_demo()
    assert answer == "Paris: 65.3°F with light rain. Pack a light jacket and an umbrella."
    lines = rendered.splitlines()
    assert lines[0] == "agent_start"
    assert lines[-1] == "agent_end reason=stop (7 new messages)"
    assert any('ERROR -> Validation failed for tool "convert_temperature"' in line for line in lines)
    assert "tool convert_temperature#call_3 -> 65.3" in rendered


def test_demo_is_deterministic() -> None:
    assert run_demo() == run_demo()


def test_harness_demo_command_prints_the_trace() -> None:
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    assert "-- turn 3 --" in result.output
    assert result.output.rstrip().endswith("Pack a light jacket and an umbrella.")


def test_harness_help_lists_every_command() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("demo", "run", "fuzz", "conformance", "schema"):
        assert command in result.output


HARNESS = Path(__file__).resolve().parents[1] / "harness"


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at module level or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return names


def test_only_the_command_line_imports_click() -> None:
    # recording/_conformance.py still defines its own command (registered lazily by the cli)
    users = {
        ".".join(path.relative_to(HARNESS.parent).with_suffix("").parts).removesuffix(".__init__")
        for path in HARNESS.rglob("*.py")
        if "click" in _imports(path)
    }
    outside = {user for user in users if user != "harness.cli" and not user.startswith("harness.cli.")}
    assert outside <= {"harness.recording._conformance"}, outside
