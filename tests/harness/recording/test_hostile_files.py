"""Files nobody vetted (an alias bomb, a Latin-1 byte, a control character), as the installed
``harness`` command and a user's pytest run meet them: one line naming the file and the place,
memory bounded, never an internal error.

Every command runs in a child process whose address space is capped, so a reader that expanded
the aliases fails here with MemoryError instead of taking the machine down.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

MEMORY = 1536 * 1024 * 1024
"""The cap on each child's address space: far above what reading these files needs."""

HARNESS = shutil.which("harness") or str(Path(sys.executable).parent / "harness")

REPLY = (
    '{"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [{"index": 0, '
    '"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}'
)


def _laughs(indent: str = "  ") -> str:
    """Nine levels of nine aliases each: 9**10 strings from 1 KB of YAML."""
    lines = [f'{indent}lol0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"{indent}lol{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    return "\n".join(lines)


def _cassette(trace: str = "[one]", content: str = "hi") -> str:
    return f"""version: 1
laughs:
{_laughs()}
interactions:
- request:
    method: POST
    uri: https://api.openai.com/v1/chat/completions
    body: '{{"model": "m", "messages": [{{"role": "user", "content": "{content}"}}]}}'
    headers:
      x-trace: {trace}
  response:
    status: {{code: 200, message: OK}}
    headers: {{content-type: [application/json]}}
    body: {{string: '{REPLY}'}}
"""


BOMB = _cassette(trace="*a9")


def _harness(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    return subprocess.run(
        [HARNESS, *args], cwd=cwd, capture_output=True, text=True, timeout=300, preexec_fn=cap, check=False
    )


def _said(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ("cassettes", "lint", "cassettes"),
        ("cassettes", "show", "cassettes/test_chat/test_chat.yaml"),
        ("cassettes", "to-scenario", "cassettes/test_chat/test_chat.yaml"),
        ("conformance", "cassettes/test_chat/test_chat.yaml"),
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_an_alias_bomb_in_a_cassette_is_one_line_naming_the_file(tmp_path: Path, command: tuple[str, ...]) -> None:
    cassette = tmp_path / "cassettes" / "test_chat" / "test_chat.yaml"
    cassette.parent.mkdir(parents=True)
    cassette.write_text(BOMB, encoding="utf-8")
    result = _harness(*command, cwd=tmp_path)
    said = _said(result)
    assert result.returncode != 0
    assert "MemoryError" not in said and "internal error" not in said and "Traceback" not in said, said
    [line] = [line for line in said.splitlines() if "alias" in line]
    assert "cassettes/test_chat/test_chat.yaml" in line and "alias bomb" in line, said
    assert cassette.read_text(encoding="utf-8") == BOMB


def test_aliases_within_bounds_still_load(tmp_path: Path) -> None:
    """A cassette may share a value by alias (PyYAML writes ``&id001`` for a repeated list)."""
    cassette = tmp_path / "cassettes" / "test_chat" / "test_chat.yaml"
    cassette.parent.mkdir(parents=True)
    shared = _cassette(trace="&trace [one, two]").replace(f"laughs:\n{_laughs()}\n", "")
    shared = shared.replace(
        "headers: {content-type: [application/json]}", "headers: {content-type: [application/json], x-trace: *trace}"
    )
    cassette.write_text(shared, encoding="utf-8")
    result = _harness("cassettes", "show", str(cassette), cwd=tmp_path)
    assert result.returncode == 0, _said(result)
    assert "hi" in result.stdout


SCENARIO = """name: laughs
meta:
{laughs}
prompts: ['hi']
tools:
  - name: add
    plan:
      - {{return: *a9}}
turns:
  - calls:
      - {{name: add, args: {{a: 1}}}}
  - done
"""


def test_an_alias_bomb_in_a_scenario_file_is_one_line_naming_the_file(tmp_path: Path) -> None:
    scenario = tmp_path / "laughs.yaml"
    scenario.write_text(SCENARIO.format(laughs=_laughs()), encoding="utf-8")
    result = _harness("run", scenario.name, cwd=tmp_path)
    said = _said(result)
    assert result.returncode != 0
    assert "MemoryError" not in said and "internal error" not in said, said
    assert any("laughs.yaml" in line and "alias bomb" in line for line in said.splitlines()), said


BAD_TEXT = {  # what the reply's content holds, and what is said of its first bad byte or character
    "latin-1": (b"caf\xe9", "byte 0xE9 is not UTF-8"),
    "control character": (b"bell\x07", "U+0007 (a control character) may not appear in YAML"),
}


def _bad_cassette(path: Path, kind: str) -> str:
    """Write a cassette whose reply holds ``kind``'s bytes; what a reader must say of it, place first."""
    bad, said = BAD_TEXT[kind]
    path.parent.mkdir(parents=True, exist_ok=True)
    text = _cassette().replace(f"laughs:\n{_laughs()}\n", "").encode("utf-8")
    text = text.replace(b'"content": "hi"}, "finish', b'"content": "' + bad + b'"}, "finish')
    path.write_bytes(text)
    at = text.index(bad) + len(bad) - 1  # the text before it is ASCII: a byte is a column
    line, column = text.count(b"\n", 0, at) + 1, at - text.rfind(b"\n", 0, at)
    return f"line {line}, column {column}: {said}"


@pytest.mark.parametrize("kind", sorted(BAD_TEXT))
def test_a_byte_yaml_cannot_read_is_placed_by_line_and_column_on_the_command_line(tmp_path: Path, kind: str) -> None:
    cassette = tmp_path / "cassettes" / "test_chat" / "test_chat.yaml"
    place = _bad_cassette(cassette, kind)
    for command in (("cassettes", "show", str(cassette)), ("cassettes", "lint", "cassettes")):
        said = _said(_harness(*command, cwd=tmp_path))
        assert f"{cassette if command[1] == 'show' else 'cassettes/test_chat/test_chat.yaml'}: " in said, said
        assert place in said, said
        assert "<byte string>" not in said and "position" not in said, said


MARKED = """
import openai, pytest

@pytest.mark.vcr
def test_chat():
    client = openai.OpenAI(base_url="https://api.openai.com/v1", api_key="k", max_retries=0)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
"""

FIXTURE = """
from openprogram import runtime

def test_chat(recorded):
    runtime.exec("hi", provider=recorded("openai", model="m"), tools=[])
"""

CAP = f"""
import resource
resource.setrlimit(resource.RLIMIT_AS, ({MEMORY}, {MEMORY}))
"""


@pytest.mark.parametrize("way", ["vcr marker", "recorded fixture"])
@pytest.mark.parametrize("kind", ["alias bomb", *sorted(BAD_TEXT)])
def test_a_hostile_cassette_fails_a_replay_with_one_line_naming_the_file_and_place(
    pytester: pytest.Pytester, way: str, kind: str
) -> None:
    pytester.makepyfile(test_chat=MARKED if way == "vcr marker" else FIXTURE)
    cassette = pytester.path / "cassettes" / "test_chat" / "test_chat.yaml"
    if kind == "alias bomb":
        cassette.parent.mkdir(parents=True)
        cassette.write_text(BOMB, encoding="utf-8")
        expected = "alias bomb"
    else:
        expected = _bad_cassette(cassette, kind)
    before = cassette.read_bytes()
    args = ("-p", "no:cacheprovider", "-q", "-rN", "--record-mode=once")
    if kind == "alias bomb":  # in a process of its own whose memory is capped: expanding the bomb would fail it
        pytester.makeconftest(CAP)
        result = pytester.runpytest_subprocess(*args)
    else:  # bad text costs no memory: in process
        result = pytester.runpytest(*args)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret != 0
    assert "MemoryError" not in output and "Traceback" not in output, output
    assert f"{cassette}: the cassette does not parse: " in output, output
    assert expected in output and "position" not in output, output
    assert cassette.read_bytes() == before  # never overwritten, in a mode that records
