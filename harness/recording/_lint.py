"""``harness cassettes lint``: the checks a folder of cassettes must pass before it is committed.

A cassette is committed once and replayed for years, so what is wrong with it stays wrong: a
file that no longer parses fails every run, a credential in it is a leak for as long as the
repository lives, and a cassette whose test was renamed or deleted is dead weight nobody dares
remove. Each rule below reports one :class:`Finding` (file and reason, never a secret's value):

- **format**: the file loads as a vcrpy cassette and each request routes to a provider endpoint;
- **replay**: no body contradicts its ``Content-Encoding`` (stored decoded but marked ``gzip``, or
  gzip bytes marked nothing: either breaks replay), and no interaction repeats an earlier one
  request and reply alike (an ``all``-mode re-record that appended), and no streamed reply ends
  inside an event (a killed recording, an edit); each finding says the fix;
- **secrets**: no credential or identity header (``harness.wire.CREDENTIAL_HEADERS``), no
  ``key=``-style query parameter (any of ``harness.wire.CREDENTIAL_QUERY_PARAMS``: ``key``,
  ``api-key``, ``access_token``...), no user or password in a URL, no AWS account id left in an
  ARN, nothing shaped like an API key, token or AWS access key, and no value of a credential variable of the environment
  (``harness.recording._scrub.find_credentials``);
- **age** (with ``max_age``, ``harness cassettes lint --max-age 90d``): the cassette is dated
  (``recorded_at``, which the recorder writes) and no older than that;
- **usage**: the cassette sits at ``<module>/<test>.yaml`` (pytest-recording's layout:
  ``<test dir>/cassettes/<module>/<test>.yaml``, or the project's ``cassettes/<module>/<test>.yaml``),
  a test module ``<module>.py`` exists (next to the ``cassettes`` folder, else anywhere under the
  tests folder, else a test module whose ``vcr_cassette_dir`` fixture names the folder), it
  defines the test function (``def <test>``, a ``Class.`` prefix naming its class, a
  ``[params]`` suffix ignored), else the cassette is **orphaned**; and the module mentions the
  ``recorded`` fixture or the ``vcr`` marker, else it is **unused**.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from vcr.serializers import yamlserializer

import harness._yaml as bounded_yaml
import harness.recording._age as age
import harness.recording._cassette as cassettes
import harness.recording._scrub as scrub
import harness.wire as wire
from harness.recording._vcr import cut_tail

SKIPPED_DIRS: Final = frozenset({"scenarios"})
"""Folders directly under the linted one that hold no cassettes (saved regression scenarios)."""

TOKEN_PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("an OpenAI or Anthropic API key (sk-...)", re.compile(r"(?<![A-Za-z0-9_-])sk-(?:[A-Za-z]+-)*[A-Za-z0-9_]{20,}")),
    ("an AWS access key id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])")),
    ("a Google API key (AIza...)", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}")),
    ("a Google OAuth token (ya29....)", re.compile(r"(?<![A-Za-z0-9_-])ya29\.[0-9A-Za-z_-]{20,}")),
    ("a bearer token", re.compile(r"Bearer\s+[A-Za-z0-9._~+/-]{20,}")),
    ("an AWS request signature", re.compile(r"Signature=[0-9a-f]{64}")),
)
"""What a credential looks like when nobody listed its header: (description, pattern)."""


_USES = re.compile(r"\brecorded\b|\bvcr\b")
_OVERRIDES_DIR = re.compile(r"^\s*def vcr_cassette_dir\b", re.MULTILINE)


@dataclass(frozen=True)
class Finding:
    """One problem with one cassette; ``str()`` is the line ``lint`` prints."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {' '.join(self.reason.split())}"  # one line, whatever the reason holds


def cassette_files(directory: Path) -> list[Path]:
    """Every ``*.yaml`` / ``*.yml`` under ``directory``, sorted, :data:`SKIPPED_DIRS` left out; and every
    ``*.json`` holding ``interactions`` (vcrpy's json serializer: other JSON, an index, is no cassette)."""
    found = []
    for path in sorted(directory.rglob("*")):
        if path.suffix not in (".yaml", ".yml", ".json") or not path.is_file():
            continue
        if path.suffix == ".json" and not _json_cassette(path):
            continue
        if path.relative_to(directory).parts[0] in SKIPPED_DIRS:
            continue
        found.append(path)
    return found


def _json_cassette(path: Path) -> bool:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "interactions" in data


def lint(
    directory: Path,
    tests: Path | None = None,
    environ: Mapping[str, str] | None = None,
    max_age: timedelta | None = None,
) -> tuple[list[Finding], int]:
    """Every finding under ``directory`` and how many cassettes were checked.

    ``tests`` is the tests folder for the usage rule (``None`` skips it); ``environ`` is where the
    credential variables are read (default ``os.environ``); ``max_age`` turns on the age rule.
    """
    files = cassette_files(directory)
    findings = [finding for path in files for finding in lint_file(path, directory, tests, environ, max_age)]
    return findings, len(files)


def lint_file(
    path: Path,
    root: Path,
    tests: Path | None = None,
    environ: Mapping[str, str] | None = None,
    max_age: timedelta | None = None,
) -> list[Finding]:
    """The findings of one cassette (``root``: the linted folder, for its ``<module>/<test>`` place)."""
    findings: list[Finding] = []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return [Finding(path, f"cannot read: {exc.strerror or exc}")]
    text = raw.decode("utf-8", errors="replace")
    try:  # bounded: an alias bomb is refused here, not expanded by the scans
        data = bounded_yaml.load(raw, yamlserializer.deserialize)
    except Exception:  # the format rule (cassettes.load) reports a file that does not load
        data = None
    findings.extend(Finding(path, reason) for reason in _secrets_in_text(text, environ))
    findings.extend(Finding(path, reason) for reason in _hidden_secrets(data, environ))
    try:
        cassette = cassettes.load(path)
    except cassettes.CassetteError as exc:
        findings.append(Finding(path, exc.reason))
    else:
        findings.extend(Finding(path, reason) for reason in _interaction_problems(cassette))
        if max_age is not None:
            reason = age.stale(data, max_age)
            if reason is not None:
                findings.append(Finding(path, reason))
    if tests is not None:
        reason = _usage(path, root, tests)
        if reason is not None:
            findings.append(Finding(path, reason))
    return findings


def _interaction_problems(cassette: cassettes.Cassette) -> Iterator[str]:
    for interaction in cassette:
        request, where = interaction.request, f"interaction {interaction.index}"
        try:
            request.route  # noqa: B018 - routing is the check
        except wire.RouteError as exc:
            yield f"{where}: {exc}"
        for side, headers in (("request", request.headers), ("response", interaction.response.headers)):
            for name in dict.fromkeys(name.lower() for name, _ in headers):
                if wire.is_credential_header(name):
                    yield f"{where}: {side} header {name!r} carries a credential or an identity"
        for name in dict.fromkeys(wire.credential_query_names(request.uri)):
            yield f"{where}: the request URI has a {name}= query parameter (a credential)"
        if wire.has_userinfo(request.uri):
            yield f"{where}: the request URI names a user or password before its host (a credential)"
        if scrub.scrub_arns(request.uri) != request.uri:
            yield f"{where}: the request URI holds an AWS account id (in an ARN)"
        for side, part in (("request", request), ("response", interaction.response)):
            if scrub.scrub_arns_in(part.body.data) != part.body.data:
                yield f"{where}: the {side} body holds an AWS account id (in an ARN)"
        for side, part in (("request", request), ("response", interaction.response)):
            reason = _encoding_problem(part.headers, part.body.stored)
            if reason is not None:
                yield f"{where}: the {side} {reason}"
        response = interaction.response
        cut = cut_tail(response.body.data, response.headers.get("content-type"))
        if cut:
            yield (
                f"{where}: the streamed reply ends inside an event (its last {cut} bytes are no whole event), so a"
                " replay reads a shorter reply and no error: re-record the test"
            )
    yield from _duplicates(cassette)


def _encoding_problem(headers: cassettes.Headers, stored: bytes) -> str | None:
    """Why a body and its ``Content-Encoding`` disagree (so replay breaks), with the fix; or None.

    A recorder that decodes bodies for readability must drop the header too: a body stored
    decoded but still marked ``gzip`` makes the client's decompression fail on replay; gzip bytes
    with no header reach the SDK as they are, which then fails to parse them.
    """
    if not stored:
        return None
    outer = wire.outer_coding(headers) or "identity"
    if stored.startswith(wire.GZIP_MAGIC):
        if outer not in ("gzip", "x-gzip"):
            return (
                f"body is stored gzip-compressed but says content-encoding: {outer}, so a replaying client "
                "reads compressed bytes: add content-encoding: gzip, or store the body decoded"
            )
        return None
    if outer in wire.COMPRESSED and (outer in ("gzip", "x-gzip") or _reads_as_text(stored)):
        return (
            f"body is stored decoded but says content-encoding: {outer}, so a replaying client fails to"
            " decompress it: remove the content-encoding header (or re-record)"
        )
    return None


def _reads_as_text(stored: bytes) -> bool:
    try:
        text = stored.decode("utf-8").lstrip()
    except UnicodeDecodeError:
        return False
    return text[:1] in ("{", "[") or text.startswith(("data:", "event:"))


def _duplicates(cassette: cassettes.Cassette) -> Iterator[str]:
    """Interactions that repeat earlier ones, request and reply alike (ids and dates included): what an
    ``all``-mode re-record that appended to the old cassette leaves (``A B A B``), or a repeat
    (``A A``); a real API never answers with the same ids twice. A run of repeats is one finding."""
    interactions = list(cassette)
    runs: list[list[tuple[int, int]]] = []  # [(earlier, repeat), ...], consecutive repeats of consecutive originals
    for later, interaction in enumerate(interactions):
        earlier = next((i for i in range(later) if _same(interactions[i], interaction)), None)
        if earlier is None:
            continue
        if runs and runs[-1][-1] == (earlier - 1, later - 1):
            runs[-1].append((earlier, later))
        else:
            runs.append([(earlier, later)])
    for run in runs:
        (first, start), (last, end) = run[0], run[-1]
        repeats = f"interaction {start}" if start == end else f"interactions {start}-{end}"
        repeated = f"interaction {first}" if first == last else f"interactions {first}-{last}"
        yield (
            f"{repeats} repeat{'s' if start == end else ''} {repeated}, request and reply alike (a re-record"
            f" that appended instead of replacing?): delete {repeats}, or re-record the test with"
            " --record-mode=rewrite"
        )


def _same(one: cassettes.Interaction, other: cassettes.Interaction) -> bool:
    a, b = one.request, other.request
    if (a.method, a.uri, a.body.data) != (b.method, b.uri, b.body.data):
        return False
    x, y = one.response, other.response
    return (x.status, x.body.data, sorted(x.headers)) == (y.status, y.body.data, sorted(y.headers))


def _secrets_in_text(text: str, environ: Mapping[str, str] | None) -> Iterator[str]:
    for number, line in enumerate(text.splitlines(), 1):
        for description, pattern in TOKEN_PATTERNS:
            if pattern.search(line):
                yield f"line {number}: looks like {description}"
    for finding in scrub.find_credentials(text, environ):
        yield f"holds {finding}"


def _hidden_secrets(data: Any, environ: Mapping[str, str] | None) -> Iterator[str]:
    """What no line of the file shows: binary (``!!binary``) bodies decoded (gzip undone), streamed
    values joined across their events."""
    if data is None:
        return
    data = _gunzipped(data)
    for index, interaction in enumerate(data.get("interactions") or [] if isinstance(data, dict) else []):
        for side in ("request", "response"):
            part = interaction.get(side) if isinstance(interaction, dict) else None
            body = part.get("body") if isinstance(part, dict) else None
            stored = body.get("string") if isinstance(body, dict) else body
            if isinstance(stored, bytes):
                decoded = stored.decode("utf-8", "replace")
                for description, pattern in TOKEN_PATTERNS:
                    if pattern.search(decoded):
                        yield f"interaction {index}: the {side} body (binary) looks like it holds {description}"
    for finding in scrub.find_hidden_credentials(data, environ):
        yield f"holds {finding}"


def _gunzipped(data: Any) -> Any:
    """``data`` with every gzip body (a recorder that kept ``content-encoding: gzip`` bytes) undone, so
    the scans read what the provider sent: a key inside a gzip stream is no line of the file either."""
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not isinstance(interactions, list):
        return data
    copied = []
    for interaction in interactions:
        if isinstance(interaction, dict):
            interaction = dict(interaction)
            for side in ("request", "response"):
                part = interaction.get(side)
                body = part.get("body") if isinstance(part, dict) else None
                stored = body.get("string") if isinstance(body, dict) else body
                if isinstance(part, dict) and isinstance(stored, bytes) and stored.startswith(wire.GZIP_MAGIC):
                    plain = wire.gunzipped(stored)
                    interaction[side] = {**part, "body": {**body, "string": plain} if isinstance(body, dict) else plain}
        copied.append(interaction)
    return {**data, "interactions": copied}


def _usage(path: Path, root: Path, tests: Path) -> str | None:
    relative = path.relative_to(root)
    if len(relative.parts) < 2:
        return "orphaned: not at <test module>/<test name>.yaml, so no test can be found for it"
    module, test = relative.parts[-2], path.stem
    sources = _module_sources(path, module, tests)
    if not sources:
        return f"orphaned: no test module {module}.py (next to the cassettes folder or under {tests})"
    cls, _, function = test.split("[", 1)[0].rpartition(".")
    reasons = [_test_in(source, module, cls, function) for source in sources]
    return None if None in reasons else reasons[0]


def _test_in(source: str, module: str, cls: str, function: str) -> str | None:
    if not re.search(rf"^\s*(?:async\s+)?def {re.escape(function)}\(", source, re.MULTILINE):
        return f"orphaned: {module}.py has no test function {function}"
    if cls and not re.search(rf"^\s*class {re.escape(cls)}\b", source, re.MULTILINE):
        return f"orphaned: {module}.py has no test class {cls}"
    if not _USES.search(source):
        return f"unused: {module}.py uses neither the recorded fixture nor the vcr marker"
    return None


def _module_sources(path: Path, module: str, tests: Path) -> list[str]:
    name = module.rpartition(".")[2] + ".py"
    beside = path.parent.parent.parent / name  # pytest-recording: <test dir>/cassettes/<module>/<test>.yaml
    candidates = [beside] if beside.is_file() else sorted(tests.rglob(name)) if tests.is_dir() else []
    sources = [_read(candidate) for candidate in candidates]
    if not any(sources) and tests.is_dir():  # a folder named by a vcr_cassette_dir fixture, not after a module
        folder = re.compile(rf"""[\"'/]{re.escape(module)}[\"']""")
        sources = [
            text
            for text in map(_read, sorted(tests.rglob("*.py")))
            if _OVERRIDES_DIR.search(text) and folder.search(text)
        ]
    return [source for source in sources if source]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
