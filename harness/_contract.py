"""The loop's contract (DESIGN sections 1, 3 and 4), restated once for the oracle.

The reference model, the invariants, the fuzz summary and the scripted provider all judge or
imitate the loop by these texts and numbers. They live here, and only here, so that the oracle
cannot drift from itself; and this module imports nothing of ``openprogram``'s loop, so the
oracle never takes its expectations from the code it judges.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

HARD_CAP = 50
"""The seed's ``MAX_INNER_ITERATIONS``: no run makes more model requests than this."""

SKIPPED_STEERING = "Skipped due to queued user message."
"""The result text of a call skipped because a steering message arrived mid-batch."""

SKIPPED_CANCELLED = "Skipped due to cancellation."
"""The result text of a call skipped because the run's cancel event was set."""

ABORTED_MESSAGE = "Request was aborted"
"""The ``error_message`` of an assistant message that ends a cancelled run."""

HUNG_UP_MESSAGE = "provider stream ended without a done or error event"
"""The ``error_message`` of a run whose provider stream stopped without finishing (DESIGN 4)."""

END_REASONS = ("stop", "error", "aborted", "max_iterations")
"""Every value ``agent_end.reason`` may take."""

RECEIVED_ARGUMENTS = "Received arguments:"
"""The line before the arguments quoted in an invalid-JSON or a validation result."""

VALIDATION_ERROR_LINE = "\n  - "
"""How each ``PATH: MESSAGE`` error line of a validation result starts."""

ResultKind = Literal["not_found", "invalid_json", "invalid_args", "skipped", "executed"]
CallKind = Literal["not_found", "invalid_json", "invalid_args", "skipped", "executed", "unchecked"]


def effective_cap(max_iterations: int | None) -> int:
    """``min(50, max(1, max_iterations))``; ``None`` (nothing asked) is the hard cap."""
    if max_iterations is None:
        return HARD_CAP
    return max(1, min(HARD_CAP, int(max_iterations)))


def not_found_prefix(name: str) -> str:
    return f'Tool "{name}" not found.'


def not_found_list_prefix(name: str) -> str:
    """The not-found text up to the list of the menu's names."""
    return f"{not_found_prefix(name)} Available tools: "


def not_found_text(name: str, available: Iterable[str]) -> str:
    """What the model reads after calling a tool its menu lacks (an empty menu says ``(none)``)."""
    names = ", ".join(available) or "(none)"
    return not_found_list_prefix(name) + names


def invalid_json_prefix(name: str) -> str:
    return f'Invalid JSON arguments for tool "{name}":'


def invalid_json_text(name: str, raw: str) -> str:
    """What the model reads after sending argument text that is not a JSON object."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        reason = str(exc)
    else:
        reason = f"expected a JSON object, got {type(value).__name__}"
    return f"{invalid_json_prefix(name)} {reason}\n\n{RECEIVED_ARGUMENTS}\n{raw}"


def validation_prefix(name: str) -> str:
    return f'Validation failed for tool "{name}":'


def classify_result_text(name: str, text: str, is_error: bool) -> ResultKind:
    """Which contract path produced a result, judged by its text alone (for traces whose
    requests were not captured, and for summaries)."""
    if not is_error:
        return "executed"
    if text in (SKIPPED_STEERING, SKIPPED_CANCELLED):
        return "skipped"
    prefixes: tuple[tuple[str, ResultKind], ...] = (
        (not_found_prefix(name), "not_found"),
        (invalid_json_prefix(name), "invalid_json"),
        (validation_prefix(name), "invalid_args"),
    )
    for prefix, kind in prefixes:
        if text.startswith(prefix):
            return kind
    return "executed"


def looks_skipped(text: str, is_error: bool) -> bool:
    """A skip text (steering's or cancellation's), or an error evidently meant as one (a tool's own
    "skipped" output is not): an inexact skip text must be reported as such, not judged as a
    tool's result."""
    if text in (SKIPPED_STEERING, SKIPPED_CANCELLED):
        return True
    lower = text.lower()
    meant = "queued" in lower or "user message" in lower or "cancel" in lower
    return is_error and len(lower) < 120 and lower.startswith("skipped") and meant


def call_kind(
    name: str,
    arguments: Any,
    raw_arguments: str | None,
    menu: Mapping[str, Any] | None,
    text: str,
    is_error: bool,
) -> CallKind:
    """Which contract path a call must have taken, judged from the menu its request offered
    (``menu``: each tool's name and parameter schema; ``None`` when no request was captured, and
    then the result's text is trusted). ``unchecked``: the tool's own schema is unusable, so the
    contract says nothing about the text."""
    if looks_skipped(text, is_error):
        return "skipped"  # inexact skip texts too: the skip rule owns (and reports) them
    if menu is None:
        kind = classify_result_text(name, text, is_error)
        return kind
    if name not in menu:
        return "not_found"
    if raw_arguments is not None:
        return "invalid_json"
    schema = menu[name]
    errors = schema_errors(schema, arguments)
    if errors is None:
        return "unchecked"
    if not errors:
        return "executed"
    if schema_errors(schema, loosely_coerced(arguments, schema)):
        return "invalid_args"
    # only lenient coercion makes these arguments valid: either answer is within the contract
    return "invalid_args" if text.startswith(validation_prefix(name)) else "executed"


_validators: dict[str, Any] = {}


def _schema_key(schema: Any) -> str:
    try:
        return json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(schema)


def _validator(schema: Any) -> Any:
    """A checked validator for ``schema`` (cached: checking a schema costs more than using it)."""
    key = _schema_key(schema)
    if key not in _validators:
        import jsonschema  # here: the scripted backend imports this module, and jsonschema costs 80 ms

        try:
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            cls.check_schema(schema)
            validator: Any = cls(schema)
        except Exception:
            validator = None
        if len(_validators) >= 512:
            _validators.clear()
        _validators[key] = validator
    return _validators[key]


def schema_errors(schema: Any, arguments: Any) -> list[str] | None:
    """Validation errors of ``arguments`` against ``schema``; ``None`` when the schema is unusable.

    The oracle's own judgement (jsonschema), not the loop's validator, so the two can disagree.
    Remembered per schema and arguments: a campaign validates the same pairs again and again (the
    default one 431 times, 82 pairs), and validating is most of what judging a call costs. The
    answer is a new list each time."""
    try:
        key = _schema_key(schema), _value_key(arguments)
    except RecursionError:  # nested deeper than a key can be built: judged afresh
        key = ("", None)
    if key[1] is not None:
        if key in _judged:
            known = _judged[key]
            return None if known is None else list(known)
    errors = _errors(schema, arguments)
    if key[1] is not None:
        if len(_judged) >= 4096:
            _judged.clear()
        _judged[key] = None if errors is None else tuple(errors)
    return errors


def _errors(schema: Any, arguments: Any) -> list[str] | None:
    validator = _validator(schema)
    if validator is None:
        return None
    try:
        return [error.message for error in validator.iter_errors(arguments)]
    except Exception:
        return None


_judged: dict[tuple[str, Any], tuple[str, ...] | None] = {}


def _value_key(value: Any) -> Any:
    """``value`` as a hashable key that tells apart every two values jsonschema may judge apart
    (each item keeps its type: ``1``, ``1.0``, ``True`` and ``"1"`` differ, so do lists and
    tuples); ``None`` for a value of any other type, which is then judged afresh."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return (kind, value)
    if kind is float:
        return (kind, repr(value))  # -0.0 == 0.0, yet a message shows which it was
    if kind is list or kind is tuple:
        items = tuple(_value_key(item) for item in value)
        return None if None in items else (kind, items)
    if kind is dict:
        pairs = tuple((_value_key(k), _value_key(v)) for k, v in value.items())
        return None if any(k is None or v is None for k, v in pairs) else (kind, pairs)
    return None


def _declared_types(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(declared or ())
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            types |= _declared_types(branch)
    return types


def loosely_coerced(value: Any, schema: Any) -> Any:
    """Strings toward the scalar type the schema asks for, the lenience models need ("5" → 5)."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, str):
        types = _declared_types(schema)
        if not types or "string" in types:
            return value
        text = value.strip()
        for kind, convert in (("integer", int), ("number", float)):
            if kind in types:
                try:
                    number = convert(text)
                except ValueError:
                    continue
                return int(number) if isinstance(number, float) and number.is_integer() and kind == "number" else number
        if "boolean" in types and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if "null" in types and text.lower() in ("null", "none", ""):
            return None
        return value
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        return {k: loosely_coerced(v, properties.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [loosely_coerced(v, schema["items"]) for v in value]
    return value
