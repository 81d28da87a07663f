"""Recordings in another client's wire form, read as our SDKs read: the legacy Vertex SDK's int enums
and JSON-array streams.

The legacy Vertex SDK (``vertexai``, REST transport) asks for enums as numbers
(``$alt=json;enum-encoding=int``) and reads ``:streamGenerateContent`` as one JSON array; google-genai
reads only names, and only server-sent events. :class:`AsOurSDKsRead`, a vcrpy persister, puts each
such reply into the form our SDK asks for before the SDK reads it, by the one table
:data:`PROTO_ENUMS`; the cassette file is never changed. ``harness conformance``
(``harness.recording._conformance``) replays through it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias
from urllib.parse import parse_qsl, urlencode, urlsplit

from vcr.persisters.filesystem import FilesystemPersister

import harness.recording._cassette as cassettes
import harness.wire as wire
from harness.wire import SSE, sse_frame


@dataclass(frozen=True)
class ProtoEnum:
    """One proto enum of the Vertex AI v1 API: its name under ``google.cloud.aiplatform.v1`` and
    its value names, the tuple index being the number (every enum here numbers its values 0..n)."""

    name: str
    names: tuple[str, ...]

    def __getitem__(self, number: int) -> str | None:
        return self.names[number] if 0 <= number < len(self.names) else None


_Shape: TypeAlias = Mapping[str, "ProtoEnum | _Shape"]


_SAFETY_RATING: Final[_Shape] = {
    "category": ProtoEnum(
        "HarmCategory",
        (
            "HARM_CATEGORY_UNSPECIFIED",
            "HARM_CATEGORY_HATE_SPEECH",
            "HARM_CATEGORY_DANGEROUS_CONTENT",
            "HARM_CATEGORY_HARASSMENT",
            "HARM_CATEGORY_SEXUALLY_EXPLICIT",
            "HARM_CATEGORY_CIVIC_INTEGRITY",
            "HARM_CATEGORY_JAILBREAK",
        ),
    ),
    "probability": ProtoEnum(
        "SafetyRating.HarmProbability", ("HARM_PROBABILITY_UNSPECIFIED", "NEGLIGIBLE", "LOW", "MEDIUM", "HIGH")
    ),
    "severity": ProtoEnum(
        "SafetyRating.HarmSeverity",
        (
            "HARM_SEVERITY_UNSPECIFIED",
            "HARM_SEVERITY_NEGLIGIBLE",
            "HARM_SEVERITY_LOW",
            "HARM_SEVERITY_MEDIUM",
            "HARM_SEVERITY_HIGH",
        ),
    ),
}


_TOKEN_COUNT: Final[_Shape] = {
    "modality": ProtoEnum("Modality", ("MODALITY_UNSPECIFIED", "TEXT", "IMAGE", "VIDEO", "AUDIO", "DOCUMENT"))
}


PROTO_ENUMS: Final[_Shape] = {
    "candidates": {
        "finishReason": ProtoEnum(
            "Candidate.FinishReason",
            (
                "FINISH_REASON_UNSPECIFIED",
                "STOP",
                "MAX_TOKENS",
                "SAFETY",
                "RECITATION",
                "OTHER",
                "BLOCKLIST",
                "PROHIBITED_CONTENT",
                "SPII",
                "MALFORMED_FUNCTION_CALL",
                "MODEL_ARMOR",
            ),
        ),
        "safetyRatings": _SAFETY_RATING,
        "content": {
            "parts": {
                "executableCode": {
                    "language": ProtoEnum("ExecutableCode.Language", ("LANGUAGE_UNSPECIFIED", "PYTHON"))
                },
                "codeExecutionResult": {
                    "outcome": ProtoEnum(
                        "CodeExecutionResult.Outcome",
                        ("OUTCOME_UNSPECIFIED", "OUTCOME_OK", "OUTCOME_FAILED", "OUTCOME_DEADLINE_EXCEEDED"),
                    )
                },
            }
        },
        "urlContextMetadata": {
            "urlMetadata": {
                "urlRetrievalStatus": ProtoEnum(
                    "UrlMetadata.UrlRetrievalStatus",
                    ("URL_RETRIEVAL_STATUS_UNSPECIFIED", "URL_RETRIEVAL_STATUS_SUCCESS", "URL_RETRIEVAL_STATUS_ERROR"),
                )
            }
        },
    },
    "promptFeedback": {
        "blockReason": ProtoEnum(
            "GenerateContentResponse.PromptFeedback.BlockedReason",
            (
                "BLOCKED_REASON_UNSPECIFIED",
                "SAFETY",
                "OTHER",
                "BLOCKLIST",
                "PROHIBITED_CONTENT",
                "MODEL_ARMOR",
                "JAILBREAK",
            ),
        ),
        "safetyRatings": _SAFETY_RATING,
    },
    "usageMetadata": {
        "promptTokensDetails": _TOKEN_COUNT,
        "cacheTokensDetails": _TOKEN_COUNT,
        "candidatesTokensDetails": _TOKEN_COUNT,
        "toolUsePromptTokensDetails": _TOKEN_COUNT,
        "trafficType": ProtoEnum(
            "GenerateContentResponse.UsageMetadata.TrafficType",
            ("TRAFFIC_TYPE_UNSPECIFIED", "ON_DEMAND", "PROVISIONED_THROUGHPUT", "ON_DEMAND_PRIORITY", "ON_DEMAND_FLEX"),
        ),
    },
}
"""Where a ``GenerateContentResponse`` holds an enum, by JSON field (lists entered element by
element), and the enum's names by number. The one table replay reads a reply recorded with
``enum-encoding=int`` by. Numbers follow googleapis' ``google/cloud/aiplatform/v1``
(``prediction_service.proto``, ``content.proto``, ``tool.proto``, ``openapi.proto``) as of
googleapis commit 8874a5fbc8 (2026-08-04). Fields outside it (a function call's ``args``, free
JSON) are never touched, so a number there stays a number."""


SCHEMA_TYPE: Final = ProtoEnum(
    "Type", ("TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT")
)
"""``openapi.proto``'s ``Type``: how the legacy SDK's requests spell a tool schema's ``type``."""


def asks_int_enums(uri: str) -> bool:
    """Whether a request asked for a reply with enums as numbers (``$alt=json;enum-encoding=int``)."""
    return any(
        key == "$alt" and "enum-encoding=int" in (part.strip() for part in value.split(";"))
        for key, value in parse_qsl(urlsplit(uri).query, keep_blank_values=True)
    )


def _enum_names(value: Any, shape: _Shape, path: str, notes: list[str]) -> None:
    """Replace, in place, each enum number of ``value`` at a field ``shape`` names by its name;
    a number the table does not know stays, and a line in ``notes`` says so."""
    if isinstance(value, list):
        for position, item in enumerate(value):
            _enum_names(item, shape, f"{path}[{position}]", notes)
        return
    if not isinstance(value, dict):
        return
    for key, inner in shape.items():
        found, where = value.get(key), f"{path}.{key}" if path else key
        if not isinstance(inner, ProtoEnum):
            _enum_names(found, inner, where, notes)
        elif isinstance(found, int) and not isinstance(found, bool):
            name = inner[found]
            if name is None:
                notes.append(
                    f"{where} is {found}, no number of google.cloud.aiplatform.v1.{inner.name} this harness knows;"
                    " kept as the number, which the SDK may not read"
                )
            else:
                value[key] = name


def schema_type_names(schema: Any) -> Any:
    """A tool schema with ``openapi.proto`` type numbers as the JSON Schema type names ToolSpec holds."""
    if isinstance(schema, dict):
        return {
            key: SCHEMA_TYPE.names[item].lower()
            if key == "type" and isinstance(item, int) and 0 < item < len(SCHEMA_TYPE.names)
            else schema_type_names(item)
            for key, item in schema.items()
        }
    if isinstance(schema, list):
        return [schema_type_names(item) for item in schema]
    return schema


class AsOurSDKsRead:
    """A vcrpy persister: loads a cassette as vcrpy does, then puts each reply another client got
    in another wire form into the one our SDK asks for, so replay reads what the server said.

    - ``$alt=json;enum-encoding=int`` (the legacy Vertex SDK's REST transport): enum numbers
      become their names (:data:`PROTO_ENUMS`); google-genai reads only names.
    - ``:streamGenerateContent`` without ``alt=sse`` (the same transport): the reply is one JSON
      array of chunks; it becomes one server-sent event per chunk, and the recorded request gets
      the ``alt=sse`` google-genai sends, so it still matches.

    What it could not read is collected in :attr:`notes` for the report. It never writes a file.
    """

    def __init__(self) -> None:
        self.notes: list[str] = []

    def load_cassette(self, cassette_path: Any, serializer: Any) -> Any:
        loaded = FilesystemPersister.load_cassette(cassette_path, serializer)
        for index, (request, response) in enumerate(zip(loaded[0], loaded[1], strict=False)):
            self._reread(index, request, response)
        return loaded

    @staticmethod
    def save_cassette(cassette_path: Any, cassette_dict: Any, serializer: Any) -> None:
        """Replay never writes: the cassette is someone else's recording, read in place."""

    def _reread(self, index: int, request: Any, response: dict[str, Any]) -> None:
        int_enums = asks_int_enums(request.uri)
        parts = urlsplit(request.uri)
        query = parse_qsl(parts.query, keep_blank_values=True)
        found = wire.route_by_path(parts.path)
        array_stream = found is not None and found.endpoint == "streamGenerateContent" and ("alt", "sse") not in query
        if array_stream:
            request.uri = parts._replace(query=urlencode([*query, ("alt", "sse")])).geturl()
        status = response.get("status") or {}
        if not (int_enums or array_stream) or not 200 <= int(status.get("code", 0)) < 300:
            return
        reply = cassettes.Body.of(response.get("body")).json
        if array_stream and isinstance(reply, list):
            for position, chunk in enumerate(reply):
                if int_enums:
                    notes: list[str] = []
                    _enum_names(chunk, PROTO_ENUMS, "", notes)
                    self.notes.extend(f"interaction {index}, chunk {position}: {note}" for note in notes)
            body = b"".join(sse_frame(json.dumps(chunk), crlf=True) for chunk in reply)
            content_type = SSE
        elif int_enums and isinstance(reply, dict):
            _enum_names(reply, PROTO_ENUMS, "", notes := [])
            self.notes.extend(f"interaction {index}: {note}" for note in notes)
            body, content_type = json.dumps(reply).encode(), "application/json"
        else:
            return
        dropped = {"content-encoding", "content-length", "content-type", "transfer-encoding"}
        headers = {
            name: values for name, values in (response.get("headers") or {}).items() if name.lower() not in dropped
        }
        response["headers"] = {**headers, "Content-Type": [content_type]}
        response["body"] = {"string": body}
