"""The tools a recorded request declared, read per provider into openprogram ``ToolSpec`` s.

Each provider spells a tool declaration its own way (OpenAI's ``function`` wrapper or the
responses API's flat form, Anthropic's ``input_schema``, Gemini's function declarations in an
OpenAPI subset, Bedrock's ``toolConfig``); :data:`TOOL_READERS` reads each into JSON Schema
parameters, leaving provider-run tools out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from openprogram.types import ToolSpec


def _spec(name: Any, description: Any, parameters: Any) -> ToolSpec | None:
    if not isinstance(name, str) or not name:
        return None
    schema = parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}
    return ToolSpec(name=name, description=description if isinstance(description, str) else "", parameters=schema)


def _specs(candidates: Iterable[ToolSpec | None]) -> tuple[ToolSpec, ...]:
    return tuple(spec for spec in candidates if spec is not None)


def _openai_tools(body: dict[str, Any], endpoint: str) -> tuple[ToolSpec, ...]:
    tools = [tool for tool in body.get("tools") or [] if isinstance(tool, dict) and tool.get("type") == "function"]
    if endpoint == "responses":
        return _specs(_spec(t.get("name"), t.get("description"), t.get("parameters")) for t in tools)
    functions: list[dict[str, Any]] = [t["function"] for t in tools if isinstance(t.get("function"), dict)]
    return _specs(_spec(f.get("name"), f.get("description"), f.get("parameters")) for f in functions)


def _anthropic_tools(body: dict[str, Any], endpoint: str) -> tuple[ToolSpec, ...]:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") in (None, "custom")]
    return _specs(_spec(t.get("name"), t.get("description"), t.get("input_schema")) for t in tools)


def _gemini_tools(body: dict[str, Any], endpoint: str) -> tuple[ToolSpec, ...]:
    declarations: list[dict[str, Any]] = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            found = tool.get("functionDeclarations") or tool.get("function_declarations") or []
            declarations.extend(d for d in found if isinstance(d, dict))
    specs = []
    for declaration in declarations:
        schema = declaration.get("parametersJsonSchema") or declaration.get("parameters_json_schema")
        if schema is None:  # Gemini's OpenAPI subset spells types in capitals; ToolSpec holds JSON Schema
            schema = _lowercase_types(declaration.get("parameters"))
        specs.append(_spec(declaration.get("name"), declaration.get("description"), schema))
    return _specs(specs)


def _lowercase_types(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            key: value.lower() if key == "type" and isinstance(value, str) else _lowercase_types(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_lowercase_types(item) for item in schema]
    return schema


def _bedrock_tools(body: dict[str, Any], endpoint: str) -> tuple[ToolSpec, ...]:
    if endpoint.startswith("invoke"):  # Claude on InvokeModel: Anthropic's own body
        return _anthropic_tools(body, endpoint)
    config: dict[str, Any] = body["toolConfig"] if isinstance(body.get("toolConfig"), dict) else {}
    specs = [t.get("toolSpec") for t in config.get("tools") or [] if isinstance(t, dict)]
    return _specs(
        _spec(s.get("name"), s.get("description"), (s.get("inputSchema") or {}).get("json"))
        for s in specs
        if isinstance(s, dict)
    )


TOOL_READERS = {
    "openai": _openai_tools,
    "anthropic": _anthropic_tools,
    "gemini": _gemini_tools,
    "bedrock": _bedrock_tools,
    "ollama": _openai_tools,  # Ollama declares tools in Chat Completions' shape
}
"""provider -> the reader of its request body's tool declarations (and the endpoint, which decides the form)."""
