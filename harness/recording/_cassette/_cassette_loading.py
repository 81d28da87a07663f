"""Reading a cassette file into values, refusing one in a shape vcrpy would not replay.

:func:`load` reads (never writes) the YAML that vcrpy writes, with vcrpy's own safe loader through
``harness._yaml`` (memory bounded), and checks only what every use needs (the file parses, each
interaction has a request method and URI and a response status). :func:`shape_problem` is the one
judgement of an interaction's shape: the tools refuse what a replay refuses, in the same words.
Every refusal is a :class:`CassetteError` naming the file and the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from vcr.serializers import yamlserializer

import harness._yaml as bounded_yaml
from harness.recording._cassette._cassette_values import Body, Cassette, Headers, Interaction, Request, Response


class CassetteError(Exception):
    """A file that cannot be read as a vcrpy cassette; the message starts with the path."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


def load(path: str | Path) -> Cassette:
    """Read a vcrpy YAML cassette; raises :class:`CassetteError` naming the file and the reason."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise CassetteError(path, f"cannot read the cassette: {exc.strerror or exc}") from exc
    try:
        data = bounded_yaml.load(text, yamlserializer.deserialize)
    except yaml.YAMLError as exc:
        raise CassetteError(path, f"not a YAML cassette: {bounded_yaml.reason(exc)}") from None
    recorded = data.get("interactions") if isinstance(data, dict) else None
    if not recorded or not isinstance(recorded, list):
        raise CassetteError(path, "not a vcrpy cassette (no interactions)")
    problem = next(filter(None, (shape_problem(i, item) for i, item in enumerate(recorded))), None)
    if problem is not None:  # what a replay refuses, the tools refuse in the same words
        raise CassetteError(path, problem)
    return Cassette(path, tuple(_interaction(path, index, item) for index, item in enumerate(recorded)))


def shape_problem(index: int, interaction: Any) -> str | None:
    """Why interaction ``index`` is not in the shape vcrpy replays, or ``None``."""
    where = f"interactions[{index}]"
    if not isinstance(interaction, dict) or not {"request", "response"} <= interaction.keys():
        return f"interaction {index} has no request or response"
    request, response = interaction["request"], interaction["response"]
    for side, part in (("request", request), ("response", response)):
        if not isinstance(part, dict):
            return f"{where}.{side} is {_kind(part)}, not a mapping"
        headers = part.get("headers")
        if headers is not None and not isinstance(headers, dict):
            return f"{where}.{side}.headers is {_kind(headers)}; vcrpy stores headers as a mapping of name to values"
    for key in ("method", "uri"):
        if not isinstance(request.get(key), str):
            return f"{where}.request has no {key}"
    for key in ("body", "headers"):  # vcrpy's Request takes both (null and {} are enough)
        if key not in request:
            return f"{where}.request has no {key} (vcrpy writes {key}: null or {{}} when there is none)"
    if "status_code" in response:  # the form vcrpy's httpx stub once wrote, which it still replays
        return None
    status = response.get("status")
    if not isinstance(status, dict) or not _is_status(status.get("code")):
        return f"{where}.response has no status code (status: {{code: 200, message: OK}})"
    body = response.get("body")
    if not isinstance(body, dict) or "string" not in body:
        return f"{where}.response.body has no string (body: {{string: ...}})"
    return None


def _kind(value: Any) -> str:
    return "missing" if value is None else f"a {type(value).__name__}"


def _is_status(code: Any) -> bool:
    return isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599


def _interaction(path: Path, index: int, recorded: Any) -> Interaction:
    request = recorded.get("request") if isinstance(recorded, Mapping) else None
    if not isinstance(request, Mapping) or "method" not in request or "uri" not in request:
        raise CassetteError(path, f"interaction {index} has no request method/uri")
    response = recorded.get("response")
    status = response.get("status") if isinstance(response, Mapping) else None
    if not isinstance(response, Mapping) or not isinstance(status, Mapping) or not _is_code(status.get("code")):
        raise CassetteError(path, f"interaction {index} has no response status code")
    return Interaction(
        index,
        Request(
            str(request["method"]),
            str(request["uri"]),
            Headers.of(request.get("headers")),
            Body.of(request.get("body")),
        ),
        Response(
            int(status["code"]),
            str(status.get("message") or ""),
            Headers.of(response.get("headers")),
            Body.of(response.get("body")),
        ),
    )


def _is_code(value: Any) -> bool:
    try:
        return 100 <= int(value) <= 599
    except (TypeError, ValueError):
        return False
