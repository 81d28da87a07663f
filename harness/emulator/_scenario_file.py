"""A scenario file as the emulator's script: its ``turns:`` as entries, read so that a file that
cannot be used is refused in one line naming the file and what is wrong.

``harness emulate --script FILE`` and :meth:`harness.emulator.Emulator.from_file` both load files
here; a wire campaign (``harness.agents``) turns its drawn replies into entries with
:func:`script_of`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from harness.emulator._faults import Fault, fault
from harness.script import ScriptedCall, Turn

AfterLast = Literal["error", "repeat"]
AFTER_LAST: tuple[AfterLast, ...] = ("error", "repeat")
"""What a request beyond the script gets: ``error`` a 400 in the provider's envelope, ``repeat``
the script's last entry again."""


def script_of(turns: Sequence[Any]) -> list[Turn | Fault]:
    """A scenario's ``turns:`` as emulator entries: replies as ``ModelTurn.scripted()`` makes them
    (what ``ScenarioProvider`` plays), ``raise`` as a connection dropped mid-stream, ``hang_up`` as
    a stream cut before its terminal event, ``status: N`` as that HTTP error, and a ``wire:``
    fault (``harness.scenarios._scenario_parts.WIRE_FAULTS``) wrapped around its reply."""
    entries: list[Turn | Fault] = []
    for model_turn in turns:
        wire = dict(model_turn.wire)
        scripted: Any = model_turn.scripted()
        if "status" in wire:
            entries.append(
                fault.status(
                    wire["status"], model_turn.message, retry_after=wire.get("retry_after"), code=wire.get("code")
                )
            )
            continue
        if model_turn.kind == "raise":
            scripted = fault.drop_mid_stream(1 if model_turn.has_content else 0, scripted)
        elif model_turn.kind == "hang_up":
            scripted = fault.truncate(scripted)
        if "redacted_thinking" in wire:
            scripted = _redacted(scripted, wire["redacted_thinking"])
        for name, parameter in reversed(model_turn.wire):  # the first one written wraps the others
            if name != "redacted_thinking":
                scripted = _WIRE[name](parameter, scripted)
        entries.append(scripted)
    return entries


def _redacted(scripted: Turn, data: str) -> Turn:
    """A reply with Anthropic ``redacted_thinking`` (``wire: {redacted_thinking: DATA}``): the
    block after its thinking, before its text and calls, where Anthropic sends it."""
    from harness.emulator._anthropic import redacted_thinking

    at = sum(1 for block in scripted.blocks if not isinstance(block, ScriptedCall) and block[0] == "thinking")
    blocks = (*scripted.blocks[:at], redacted_thinking(data), *scripted.blocks[at:])
    return dataclasses.replace(scripted, blocks=blocks)


_WIRE: dict[str, Callable[[Any, Any], Fault]] = {
    "drop_mid_stream": lambda chunks, inner: fault.drop_mid_stream(chunks, inner),
    "truncate": lambda _, inner: fault.truncate(inner),
    "cut_mid_event": lambda _, inner: fault.cut_mid_event(inner),
    "error_event": lambda status, inner: fault.error_event(status, inner=inner),
    "bad_checksum": lambda _, inner: fault.bad_checksum(inner),
    "slow": lambda seconds, inner: fault.slow(seconds, inner),
    "malformed_chunk": lambda _, inner: fault.malformed_chunk(inner),
    "unknown_event": lambda _, inner: fault.unknown_event(inner),
    "gzip": lambda _, inner: fault.gzip(inner),
    "split": lambda sizes, inner: fault.split(sizes, inner),
    "stall": lambda events, inner: fault.stall(events, inner),
    "slow_first_byte": lambda seconds, inner: fault.slow_first_byte(seconds, inner),
    "unknown_fields": lambda _, inner: fault.unknown_fields(inner),
    "interleaved": lambda _, inner: fault.interleaved(inner),
    "refusal": lambda _, inner: fault.refusal(inner),
    "content_filter": lambda _, inner: fault.content_filter(inner),
}
"""Each ``wire:`` fault name of a scenario file -> its ``harness.emulator._faults`` builder."""


def load_script(path: str | Path) -> tuple[list[Turn | Fault], AfterLast]:
    """The entries of a scenario file's ``turns:`` and its ``meta.emulate.after_last`` (``repeat``
    is what a wire campaign saves; anything else is ``error``).

    Raises ``harness.scenarios.ScenarioError`` whose message is one line starting with the path:
    no such file, a directory, unreadable, not UTF-8, not YAML (with the line and column), or
    not a scenario (each problem, joined by ``; ``)."""
    import yaml

    import harness._yaml as bounded_yaml
    from harness.scenarios import Scenario, ScenarioError

    path = Path(path)

    def refuse(reason: str) -> ScenarioError:
        return ScenarioError(f"{path}: {reason}")

    if path.is_dir():
        raise refuse("is a directory; give a scenario YAML file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise refuse("no such file") from None
    except OSError as exc:
        raise refuse(f"cannot read it: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refuse(f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save it as UTF-8") from None
    try:
        data = bounded_yaml.load(text)  # an alias bomb refused, not expanded
    except yaml.YAMLError as exc:
        raise refuse(f"not valid YAML: {_yaml_problem(exc)}") from None
    try:
        scenario = Scenario.from_data(data)
        entries = script_of(scenario.turns)
    except (ScenarioError, ValueError, TypeError) as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        if len(lines) > 1 and lines[0].endswith("problems:"):
            lines = [lines[0].removesuffix(":") + ": " + "; ".join(lines[1:])]
        raise refuse("; ".join(lines)) from None
    emulate = scenario.meta.get("emulate")
    after_last: AfterLast = "repeat" if isinstance(emulate, dict) and emulate.get("after_last") == "repeat" else "error"
    return entries, after_last


def _yaml_problem(exc: Exception) -> str:
    """PyYAML's error as the file's own place (1-based line and column), in one line."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    said = f"{problem} ({context})" if context else problem
    return where + " ".join(str(said).split())
