"""pytest-recording's own test suite, with and without the harness plugin: every test must end the same.

The harness's pytest plugin loads by entry point into every test of every project that installs
it, pytest-recording's users' among them; this is the suite of the plugin it sits on, at the
version installed here, from its released source (the sdist ships its tests). Run:
``python .ci/peer_suite.py`` in the environment the project is installed in; it installs the
suite's test requirements there, runs it twice (``-p no:harness`` and the default) and compares
the outcome of each test (``--junitxml``). Exit 1 when an outcome differs or nothing ran; when the
source or its requirements cannot be had it says so and exits 0, so the rest of CI stands.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ElementTree
from importlib import metadata
from pathlib import Path

PEER = "pytest-recording"


def outcomes(junit: Path) -> dict[str, str]:
    """Each test's id (``classname::name``) and how it ended: passed, failed, error or skipped."""
    found = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        ended = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        name = f"{case.get('classname')}::{case.get('name')}"
        found[name] = ("failed" if ended[0] == "failure" else ended[0]) if ended else "passed"
    return found


def differences(without: dict[str, str], with_plugin: dict[str, str]) -> list[str]:
    """One line per test whose outcome the plugin changed (or that ran in one session only)."""
    return [
        f"{name}: {without.get(name, 'not run')} without the harness, {with_plugin.get(name, 'not run')} with it"
        for name in sorted(without.keys() | with_plugin.keys())
        if without.get(name) != with_plugin.get(name)
    ]


def _source(version: str, into: Path) -> Path | None:
    """The unpacked sdist of the installed version, or ``None`` (said why) when it cannot be had."""
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps", "-d", str(into)]
    if subprocess.run([*pip, f"{PEER}=={version}"], check=False).returncode != 0:
        print(f"peer suite: could not download the {PEER} {version} sdist: not run", file=sys.stderr)
        return None
    archive = next(into.glob("*.tar.gz"), None)
    if archive is None:
        print(f"peer suite: the {PEER} {version} download is not an sdist: not run", file=sys.stderr)
        return None
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    root = next((path.parent for path in into.glob("*/pyproject.toml")), None)
    if root is None or not (root / "tests").is_dir():
        print(f"peer suite: the {PEER} {version} sdist has no tests/: not run", file=sys.stderr)
        return None
    return root


def _requirements(root: Path) -> list[str]:
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(project.get("optional-dependencies", {}).get("tests", []))


def _run(root: Path, junit: Path, *args: str) -> float:
    started = time.monotonic()
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *args, "tests"]
    subprocess.run(command, cwd=root, check=False)
    return time.monotonic() - started


def main() -> int:
    try:
        version = metadata.version(PEER)
    except metadata.PackageNotFoundError:
        print(f"peer suite: {PEER} is not installed: not run", file=sys.stderr)
        return 0
    if not any(entry.name == "harness" for entry in metadata.entry_points(group="pytest11")):
        print("peer suite: the harness pytest plugin is not installed here", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as directory:
        root = _source(version, Path(directory))
        if root is None:
            return 0
        requirements = _requirements(root)
        install = [sys.executable, "-m", "pip", "install", "-q", *requirements]
        if requirements and subprocess.run(install, check=False).returncode != 0:
            print(f"peer suite: could not install {PEER}'s test requirements {requirements}: not run", file=sys.stderr)
            return 0
        plain, plugged = Path(directory) / "without.xml", Path(directory) / "with.xml"
        seconds = _run(root, plain, "-p", "no:harness") + _run(root, plugged)
        without, with_plugin = outcomes(plain), outcomes(plugged)
    changed = differences(without, with_plugin)
    print(f"peer suite: {PEER} {version}, {len(without)} tests, twice in {seconds:.0f} s")
    if not without:
        print("peer suite: no test ran", file=sys.stderr)
        return 1
    for line in changed:
        print(f"peer suite: {line}", file=sys.stderr)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
