"""A scenario file served by the emulator: ``harness emulate --script`` refuses a file it cannot
use in one line naming the file and the reason (exit 2), and ``Emulator.from_file`` loads the same
files the same way."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import openai
import pytest

from harness.emulator import Emulator
from harness.scenarios import ScenarioError
from tests.harness.support import console_script


def _emulate(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [console_script(), "emulate", "--script", str(script), "--port", "0"]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)


def _make(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "script.yaml"
    if kind == "directory":
        path.mkdir()
    elif kind == "not UTF-8":
        path.write_bytes(b"turns: [caf\xe9]\n")
    elif kind == "malformed YAML":
        path.write_text("turns: [a\n  - : ]]\n")
    elif kind == "not a mapping":
        path.write_text("[1, 2]\n")
    elif kind == "not a scenario":
        path.write_text("turns: [{txt: a}, {calls: 5}]\n")
    return path


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("directory", "is a directory; give a scenario YAML file"),
        ("missing", "no such file"),
        ("not UTF-8", "not UTF-8 text (byte 0xe9 at offset 11); save it as UTF-8"),
        ("malformed YAML", "not valid YAML: line 2, column 5: expected ',' or ']', but got ':'"),
        ("not a mapping", "a scenario is a mapping (prompts:, tools:, turns:, ...)"),
        ("not a scenario", "2 problems: "),
    ],
)
def test_harness_emulate_refuses_an_unusable_script_in_one_line_naming_the_file_with_exit_2(
    tmp_path: Path, kind: str, reason: str
) -> None:
    script = _make(tmp_path, kind)
    result = _emulate(Path("script.yaml"), tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr  # one line, nothing else
    assert result.stderr.startswith(f"Error: --script script.yaml: {reason}"), result.stderr
    assert "internal error" not in result.stderr and "<unicode string>" not in result.stderr
    assert script.exists() or kind == "missing"


def test_a_script_that_lists_several_problems_says_each_on_the_one_line(tmp_path: Path) -> None:
    _make(tmp_path, "not a scenario")
    (line,) = _emulate(Path("script.yaml"), tmp_path).stderr.splitlines()
    assert "2 problems: turn 1: unknown key(s) txt (did you mean text?)" in line, line
    assert line.endswith("; turn 2, calls: expected a list, got 5"), line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its permissions")
def test_harness_emulate_refuses_a_script_it_may_not_read(tmp_path: Path) -> None:
    script = tmp_path / "script.yaml"
    script.write_text("turns: [hi]\n")
    script.chmod(0)
    result = _emulate(script, tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == f"Error: --script {script}: cannot read it: Permission denied"


def test_an_unreadable_script_is_refused_with_the_systems_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The subprocess test above cannot run as root (CI containers); the refusal itself can.
    script = tmp_path / "script.yaml"
    script.write_text("turns: [hi]\n")

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(ScenarioError) as raised:
        Emulator.from_file(script)
    assert str(raised.value) == f"{script}: cannot read it: Permission denied"


# -- Emulator.from_file ----------------------------------------------------------------------------


def test_emulator_from_file_serves_the_files_turns_and_honours_its_after_last(tmp_path: Path) -> None:
    script = tmp_path / "regression.yaml"
    script.write_text("meta: {emulate: {after_last: repeat}}\nturns:\n  - first\n  - {text: again}\n")
    emulator = Emulator.from_file(script)
    assert emulator.after_last == "repeat"
    with emulator:
        client = openai.OpenAI(base_url=f"{emulator.base_url}/v1", api_key="sk-test", max_retries=0)
        answers = [
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
            .choices[0]
            .message.content
            for _ in range(3)
        ]
    assert answers == ["first", "again", "again"]
    assert Emulator.from_file(script, after_last="error").after_last == "error"


def test_emulator_from_file_refuses_a_bad_file_as_the_command_does(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"script.yaml: not valid YAML: line 2, column 5"):
        Emulator.from_file(_make(tmp_path, "malformed YAML"))


def test_an_after_last_the_emulator_does_not_know_is_refused() -> None:
    with pytest.raises(ValueError, match="after_last must be one of error, repeat, got 'again'"):
        Emulator("hi", after_last="again")  # type: ignore[arg-type]
