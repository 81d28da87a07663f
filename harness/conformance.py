"""Replay real, third-party provider recordings through our backends and report what they made of them.

The backends are only as good as their reading of what providers really send, and what providers
send (interleaved reasoning, proxies repeating ids, JSON errors to streamed requests, gzip SSE)
is never what a hand-written fixture imagines. So this module takes vcrpy cassettes recorded by
other projects' test suites, sends one request per recorded interaction through the matching
backend, lets vcrpy answer it offline, and normalizes the resulting ``AssistantMessage`` into the
shape of ``harness conformance --json``. Comparing that with the expected values kept next to the
cassettes is then a plain dict comparison.

Only the recorded response matters: requests are matched on method, scheme, host, port, path and
query, never on the body, so the request we send is deliberately minimal (the recorded model,
stream flag and tools, and one user message).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import click
import vcr
import yaml

from openprogram.providers import ModelRequest, Provider
from openprogram.types import AssistantMessage, ToolSpec, UserMessage

__all__ = [
    "CASSETTES_ENV",
    "RecordedCall",
    "ReplayError",
    "areplay_cassette",
    "conformance_command",
    "default_cassette_dir",
    "query_except_beta",
    "read_recorded_calls",
    "render_result",
    "replay_cassette",
]

CASSETTES_ENV = "HARNESS_PROVIDER_CASSETTES"
"""Environment variable naming the provider-cassettes folder, overriding the default location."""

_FAKE_KEY = "fake"
_IGNORED_QUERY_KEYS = frozenset({"beta"})
"""Query keys that never select a different response. Anthropic SDKs once sent ``?beta=true`` on
the same endpoint; current ones do not, so matching it would reject recordings for no reason."""


class ReplayError(Exception):
    """A cassette could not be replayed at all (as opposed to a backend that read it wrongly)."""


def default_cassette_dir() -> Path:
    """Where the shared provider cassettes live: ``$HARNESS_PROVIDER_CASSETTES`` or ``<repo>/../shared/...``.

    The cassettes are third-party recordings kept outside the repository (they are read in place,
    never copied in), so the default is relative to the checkout rather than the package.
    """
    override = os.environ.get(CASSETTES_ENV)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1].parent / "shared" / "provider-cassettes"


# ---------------------------------------------------------------------------------------------
# Reading the recorded requests: which backend, which model, streamed or not, which tools.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedCall:
    """What one recorded request asked for, as far as choosing and configuring a backend goes."""

    index: int
    method: str
    uri: str
    provider: str
    endpoint: str
    model: str
    stream: bool
    tools: tuple[ToolSpec, ...]


def read_recorded_calls(path: str | Path) -> list[RecordedCall]:
    """Parse a cassette's requests; raises ``ReplayError`` naming the file when one is unusable."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read the cassette: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise ReplayError(f"{path}: not a YAML cassette: {exc}") from exc
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not interactions:
        raise ReplayError(f"{path}: not a vcrpy cassette (no interactions)")
    calls = [_read_call(path, index, interaction) for index, interaction in enumerate(interactions)]
    providers = {call.provider for call in calls}
    if len(providers) > 1:
        raise ReplayError(f"{path}: mixes providers ({', '.join(sorted(providers))}); replay them as separate files")
    return calls


def _read_call(path: Path, index: int, interaction: Any) -> RecordedCall:
    try:
        request = interaction["request"]
        method, uri = str(request["method"]), str(request["uri"])
    except (KeyError, TypeError) as exc:
        raise ReplayError(f"{path}: interaction {index} has no request method/uri") from exc
    body = _json_body(request.get("body"))
    parts = urlsplit(uri)
    host, route = parts.hostname or "", parts.path
    where = f"{path}: interaction {index} ({method} {uri})"

    if host == "api.openai.com":
        if route.endswith("/chat/completions"):
            provider, endpoint = "openai", "chat.completions"
        elif route.endswith("/responses"):
            provider, endpoint = "openai", "responses"
        else:
            raise ReplayError(f"{where}: no backend for the OpenAI endpoint {route}")
        model, stream, tools = body.get("model"), body.get("stream") is True, _openai_tools(body, endpoint)
    elif host == "api.anthropic.com":
        if not route.endswith("/messages"):
            raise ReplayError(f"{where}: no backend for the Anthropic endpoint {route}")
        provider, endpoint = "anthropic", "messages"
        model, stream, tools = body.get("model"), body.get("stream") is True, _anthropic_tools(body)
    elif host == "generativelanguage.googleapis.com":
        model_part, _, method_name = route.rpartition("/models/")[2].partition(":")
        if method_name not in ("generateContent", "streamGenerateContent"):
            raise ReplayError(f"{where}: no backend for the Gemini method {method_name or route}")
        provider, endpoint = "gemini", method_name
        model, stream, tools = unquote(model_part), method_name == "streamGenerateContent", _gemini_tools(body)
    elif host.startswith("bedrock-runtime.") and host.endswith(".amazonaws.com"):
        model_part, _, operation = route.rpartition("/model/")[2].partition("/")
        if operation not in ("converse", "converse-stream"):
            raise ReplayError(f"{where}: no backend for the Bedrock operation {operation or route}")
        provider, endpoint = "bedrock", operation
        model, stream, tools = unquote(model_part), operation == "converse-stream", _bedrock_tools(body)
    else:
        raise ReplayError(f"{where}: no backend for host {host!r}")
    if not isinstance(model, str) or not model:
        raise ReplayError(f"{where}: the recorded request names no model")
    return RecordedCall(index, method, uri, provider, endpoint, model, stream, tools)


def _json_body(body: Any) -> dict[str, Any]:
    if isinstance(body, Mapping) and "string" in body:  # some recorders nest the body like responses
        body = body["string"]
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body:
        return {}
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


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
    functions = [t.get("function") for t in tools if isinstance(t.get("function"), dict)]
    return _specs(_spec(f.get("name"), f.get("description"), f.get("parameters")) for f in functions)


def _anthropic_tools(body: dict[str, Any]) -> tuple[ToolSpec, ...]:
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("type") in (None, "custom")]
    return _specs(_spec(t.get("name"), t.get("description"), t.get("input_schema")) for t in tools)


def _gemini_tools(body: dict[str, Any]) -> tuple[ToolSpec, ...]:
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


def _bedrock_tools(body: dict[str, Any]) -> tuple[ToolSpec, ...]:
    config = body.get("toolConfig") if isinstance(body.get("toolConfig"), dict) else {}
    specs = [t.get("toolSpec") for t in config.get("tools") or [] if isinstance(t, dict)]
    return _specs(
        _spec(s.get("name"), s.get("description"), (s.get("inputSchema") or {}).get("json"))
        for s in specs
        if isinstance(s, dict)
    )


# ---------------------------------------------------------------------------------------------
# Replaying: one SDK client per file, one backend call per interaction, vcrpy answering offline.
# ---------------------------------------------------------------------------------------------


def replay_cassette(path: str | Path) -> dict[str, Any]:
    """Replay every interaction of ``path`` through the matching backend, in order, offline.

    Returns ``{"file", "provider", "interactions": [{"index", "stop_reason", "text", "tool_calls":
    [{"id", "name", "arguments"}], "error_message"}]}``. Raises ``ReplayError`` when the file cannot
    be replayed (unreadable, unknown provider, a request vcrpy could not match, a backend that raised
    or never finished); a backend that reads a response wrongly is reported in the result, not raised.
    """
    return asyncio.run(areplay_cassette(path))


async def areplay_cassette(path: str | Path) -> dict[str, Any]:
    """``replay_cassette`` for callers already inside an event loop."""
    calls = read_recorded_calls(path)
    provider = calls[0].provider
    recorder = vcr.VCR(
        record_mode="none",
        match_on=["method", "scheme", "host", "port", "path", "query_except_beta"],
    )
    recorder.register_matcher("query_except_beta", query_except_beta)
    client, close = _make_client(path, provider)
    results = []
    try:
        with recorder.use_cassette(str(path), allow_playback_repeats=False) as cassette:
            for call in calls:
                played_before = cassette.play_count
                message = await _run_interaction(path, call, _make_backend(path, call, client))
                if cassette.play_count - played_before != 1 or cassette.play_counts[call.index] != 1:
                    raise ReplayError(_mismatch(path, call, cassette.play_count - played_before, message))
                results.append(_normalize(call.index, message))
    finally:
        await close()
    return {"file": str(path), "provider": provider, "interactions": results}


def query_except_beta(sent: Any, recorded: Any) -> None:
    """vcrpy matcher (its name shows in vcrpy's mismatch report): the query, minus keys that select nothing."""

    def significant(request: Any) -> list[tuple[str, str]]:
        return [(key, value) for key, value in request.query if key not in _IGNORED_QUERY_KEYS]

    assert significant(sent) == significant(recorded), f"sent query {sent.query}, recorded {recorded.query}"


def _mismatch(path: str | Path, call: RecordedCall, played: int, message: AssistantMessage) -> str:
    where = f"{path}: interaction {call.index} ({call.method} {call.uri})"
    if played == 0:
        why = message.error_message or "the backend finished without sending a request"
        return f"{where}: the backend's request matched no recorded interaction: {why}"
    if played > 1:
        return f"{where}: the backend used {played} recorded responses for one call (retries or extra requests)"
    return f"{where}: the backend's request was answered by another recorded interaction (out of order)"


async def _run_interaction(path: str | Path, call: RecordedCall, backend: Provider) -> AssistantMessage:
    request = ModelRequest(
        model=call.model,
        messages=(UserMessage(content=f"Replay of interaction {call.index} of {Path(path).name}."),),
        tools=call.tools,
    )
    where = f"{path}: interaction {call.index}"
    events = backend.stream(request)
    try:
        async for event in events:
            if event.type == "done":
                return event.message
            if event.type == "error":
                return event.error
    except Exception as exc:  # a backend must report failures as events; raising is a contract breach
        raise ReplayError(f"{where}: the {call.provider} backend raised {type(exc).__name__}: {exc}") from exc
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:  # release the SDK stream now, inside this cassette, not at garbage collection
            await aclose()
    raise ReplayError(f"{where}: the {call.provider} backend's stream ended without a done or error event")


def _normalize(index: int, message: AssistantMessage) -> dict[str, Any]:
    return {
        "index": index,
        "stop_reason": message.stop_reason,
        "text": message.text,
        "tool_calls": [
            {
                "id": call.id,
                "name": call.name,
                "arguments": {"__raw__": call.raw_arguments} if call.raw_arguments is not None else call.arguments,
            }
            for call in message.tool_calls
        ],
        "error_message": message.error_message if message.stop_reason in ("error", "aborted") else None,
    }


_Closer = Callable[[], Awaitable[None]]


def _make_client(path: str | Path, provider: str) -> tuple[Any, _Closer]:
    """An official SDK client with fake credentials and no retries (a retry would find no recording)."""
    try:
        if provider == "openai":
            import openai

            client = openai.AsyncOpenAI(api_key=_FAKE_KEY, base_url="https://api.openai.com/v1", max_retries=0)
            return client, client.close
        if provider == "anthropic":
            import anthropic

            client = anthropic.AsyncAnthropic(api_key=_FAKE_KEY, base_url="https://api.anthropic.com", max_retries=0)
            return client, client.close
        if provider == "gemini":
            from google import genai

            client = genai.Client(
                api_key=_FAKE_KEY, http_options={"api_version": "v1beta", "retry_options": {"attempts": 1}}
            )
            return client, client.aio.aclose
        import boto3
        from botocore.config import Config

        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            aws_access_key_id=_FAKE_KEY,
            aws_secret_access_key=_FAKE_KEY,
            config=Config(retries={"max_attempts": 1, "mode": "standard"}),
        )

        async def close_boto() -> None:
            client.close()

        return client, close_boto
    except ImportError as exc:
        raise ReplayError(f"{path}: replaying {provider} cassettes needs its SDK: {exc}") from exc


_BACKENDS = {
    ("openai", "chat.completions"): ("openprogram.providers.openai", "OpenAIChatProvider"),
    ("openai", "responses"): ("openprogram.providers.openai", "OpenAIResponsesProvider"),
    ("anthropic", "messages"): ("openprogram.providers.anthropic", "AnthropicProvider"),
    ("gemini", "generateContent"): ("openprogram.providers.gemini", "GeminiProvider"),
    ("gemini", "streamGenerateContent"): ("openprogram.providers.gemini", "GeminiProvider"),
    ("bedrock", "converse"): ("openprogram.providers.bedrock", "BedrockProvider"),
    ("bedrock", "converse-stream"): ("openprogram.providers.bedrock", "BedrockProvider"),
}


def _make_backend(path: str | Path, call: RecordedCall, client: Any) -> Provider:
    module_name, class_name = _BACKENDS[(call.provider, call.endpoint)]
    try:
        backend_class = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ReplayError(
            f"{path}: no {call.provider} backend to replay with ({module_name}.{class_name}): {exc}"
        ) from exc
    return backend_class(client, model=call.model, stream=call.stream)


# ---------------------------------------------------------------------------------------------
# Presenting: a readable summary, and the `harness conformance` command.
# ---------------------------------------------------------------------------------------------


def render_result(result: Mapping[str, Any]) -> str:
    """A replay result as text a person can scan: one block per interaction, calls one per line."""
    lines = [f"{result['file']} ({result['provider']}, {len(result['interactions'])} interactions)"]
    for item in result["interactions"]:
        lines.append(f"  #{item['index']} {item['stop_reason']}")
        if item["error_message"] is not None:
            lines.append(f"     error: {item['error_message']}")
        if item["text"]:
            lines.append(f"     text: {_clip(item['text'])}")
        for call in item["tool_calls"]:
            arguments = json.dumps(call["arguments"], ensure_ascii=False, sort_keys=True)
            lines.append(f"     call {call['id']} {call['name']}({_clip(arguments)})")
    return "\n".join(lines)


def _clip(text: str, limit: int = 100) -> str:
    flat = text.replace("\n", "\\n")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@click.command("conformance")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per file, one per line.")
def conformance_command(files: tuple[Path, ...], as_json: bool) -> None:
    """Replay provider cassettes (vcrpy YAML) through the backends and print what they read.

    Exits 1 when any file cannot be replayed; the other files are still reported.
    """
    failed = False
    for file in files:
        try:
            result = replay_cassette(file)
        except ReplayError as exc:
            failed = True
            click.echo(f"error: {exc}", err=True)
            continue
        click.echo(json.dumps(result, ensure_ascii=False) if as_json else render_result(result))
    if failed:
        click.get_current_context().exit(1)
