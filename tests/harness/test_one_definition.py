"""One definition of each piece of wire knowledge (issue 27, DESIGN section 2's ``wire`` package).

Recording, the emulator and the agents campaign sit in one layer and may not import each other,
so what all three need was copied, and the copies drifted: two credential lists that disagreed,
two event-stream codecs, three route tables, Content-Encoding read four ways, an atomic writer
that one caller lost, five ``_clip`` s. ``harness.wire`` holds each piece once; these checks say
that no second copy grows back elsewhere in ``harness/``. Where a module outside ``harness/wire``
must still spell a piece, it is listed here with the reason.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.wire import CREDENTIAL_HEADERS, CREDENTIAL_QUERY_PARAMS, ROUTES

HARNESS = Path(__file__).resolve().parents[2] / "harness"
WIRE = HARNESS / "wire"
OUTSIDE = sorted(p for p in HARNESS.rglob("*.py") if WIRE not in p.parents)

ALLOWED: dict[tuple[str, str], str] = {
    ("emulator/_anthropic.py", "anthropic-organization-id"): "the emulator sends the reply header Anthropic sends",
    ("emulator/_faults.py", "data: "): "faults rewrite a rendered event's data line (the tiers helpers' module)",
    ("emulator/_faults.py", "content-encoding"): "the gzip fault writes the header of the body it compresses",
    ("recording/_scrub.py", "content-encoding"): "honest_encoding removes a header wire.outer_coding judged false",
    ("recording/_tools/_drift.py", "content-encoding"): "drift lets the HTTP client set the headers it sends itself",
    ("recording/_legacy_vertex.py", "content-encoding"): "a rewritten body drops the headers of the old one",
}
"""``(module, spelling)`` -> why that module spells a piece ``harness.wire`` owns."""

PRIVATE_IMPORT_BUDGET = 35
"""Imports of another package's private module (87 before ``harness.wire``; every import of a name
a facade exports now goes through that facade). What is left reaches names no facade offers (the
campaign's hygiene, the regressions' directory, trace internals the plugin drives). Lower it as
facades take the rest; never raise it. Raised once, by one, with its reason: ``harness.proxy``
replays a stored reply split at its events with ``harness.recording._vcr.reply_parts``, the
splitter the recorded transport uses (a second copy would drift from it). Then lowered to 35, the
count after issue 28's splits (the wire campaign's command imports its pieces once, at the top)."""


def _name(path: Path) -> str:
    return path.relative_to(HARNESS).as_posix()


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _docstrings(tree: ast.AST) -> set[int]:
    return {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}


def _strings(path: Path) -> Iterator[tuple[int, str]]:
    """Every string or bytes literal of a module that is code, not documentation."""
    tree = _tree(path)
    skipped = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in skipped and isinstance(node.value, str | bytes):
            value = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            yield node.lineno, value


def _found(spelled: str, matches: object) -> list[str]:
    assert callable(matches)
    return [
        f"{_name(path)}:{line}: {value!r}"
        for path in OUTSIDE
        for line, value in _strings(path)
        if matches(value) and (_name(path), spelled) not in ALLOWED
    ]


# the hyphenated spellings are the wire's own; ``key`` and ``api_key`` are also Python names
CREDENTIAL_SPELLINGS = sorted(CREDENTIAL_HEADERS | {n for n in CREDENTIAL_QUERY_PARAMS if "-" in n})


@pytest.mark.parametrize("name", CREDENTIAL_SPELLINGS)
def test_each_credential_name_is_spelled_only_in_harness_wire(name: str) -> None:
    found = [
        f"{_name(path)}:{line}: {value!r}"
        for path in OUTSIDE
        for line, value in _strings(path)
        if value.lower() == name and (_name(path), name) not in ALLOWED
    ]
    assert not found, f"{name!r} spelled outside harness/wire (use harness.wire's vocabulary): {found}"


def test_the_route_table_is_the_only_place_a_provider_path_is_spelled() -> None:
    fixed = [route.path for route in ROUTES if "{" not in route.path]
    markers = (*fixed, ":generateContent", ":streamGenerateContent", "/model/{")
    found = [
        f"{_name(path)}:{line}: {value!r}"
        for path in OUTSIDE
        for line, value in _strings(path)
        if any(marker in value for marker in markers)
    ]
    assert not found, f"provider paths outside harness.wire.ROUTES: {found}"


def test_there_is_one_route_class() -> None:
    found = [
        _name(path)
        for path in OUTSIDE
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ClassDef) and node.name == "Route"
    ]
    assert not found, f"a second Route class: {found}"


def _calls(attribute: str) -> list[str]:
    """Where ``X.attribute(...)`` or a bare ``attribute(...)`` is called outside harness/wire."""
    found = []
    for path in OUTSIDE:
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Call):
                called = node.func
                name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", None)
                if name == attribute:
                    found.append(f"{_name(path)}:{node.lineno}")
    return found


@pytest.mark.parametrize("call", ["crc32", "from_bytes"])
def test_event_stream_framing_is_one_codec(call: str) -> None:
    """Prelude lengths and CRCs are read and written only by harness.wire's event-stream codec."""
    assert not _calls(call), f"event-stream framing outside harness/wire: {_calls(call)}"


def test_sse_events_are_framed_only_by_harness_wire() -> None:
    found = _found("data: ", lambda value: "data: " in value)
    assert not found, f"SSE framing outside harness.wire.sse_frame / sse_data: {found}"


def test_content_encoding_is_read_one_way() -> None:
    found = _found("content-encoding", lambda value: value.lower() == "content-encoding")
    assert not found, f"Content-Encoding read outside harness.wire.content_codings: {found}"
    assert not _calls("decompress"), f"gzip undone outside harness.wire.gunzipped: {_calls('decompress')}"
    magic = _found("gzip magic", lambda value: value.startswith("\x1f\x8b"))
    assert not magic, f"gzip's magic bytes outside harness.wire.GZIP_MAGIC: {magic}"


@pytest.mark.parametrize("call", ["replace", "rename", "mkstemp", "NamedTemporaryFile"])
def test_files_are_replaced_only_by_write_atomic(call: str) -> None:
    """A file the harness replaces goes through harness.wire.write_atomic: whole, and through a link."""
    found = [
        f"{_name(path)}:{node.lineno}"
        for path in OUTSIDE
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == call
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("os", "tempfile", "Path")
    ]
    assert not found, f"{call} outside harness.wire.write_atomic: {found}"


def test_clip_is_defined_once() -> None:
    found = [
        _name(path)
        for path in OUTSIDE
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.FunctionDef) and node.name in ("clip", "_clip") and _name(path) != "report/_env.py"
    ]  # report/_env.clip is the timeline's one-line summary of any JSON value, not a second cut
    assert not found, f"a second clip: {found} (use harness.wire.clip)"


def _private_imports() -> list[str]:
    """``module:line name`` for each import of another harness package's private module."""
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        parts = path.relative_to(HARNESS).with_suffix("").parts
        package = parts[0] if len(parts) > 1 else ""
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                names = module.split(".")
                if names[0] == "harness" and len(names) > 2 and names[1] != package and names[2].startswith("_"):
                    found.append(f"{_name(path)}:{node.lineno} {module}")
    return found


def test_reaching_into_another_packages_private_modules_does_not_grow() -> None:
    found = _private_imports()
    assert len(found) <= PRIVATE_IMPORT_BUDGET, "\n".join(
        [f"{len(found)} imports reach another package's private module (at most {PRIVATE_IMPORT_BUDGET}):", *found]
    )


def test_agents_read_the_emulator_and_recording_through_their_facades() -> None:
    found = [f for f in _private_imports() if f.startswith("agents/") and (".emulator." in f or ".recording." in f)]
    assert not found, f"agents reaching past a facade: {found}"
