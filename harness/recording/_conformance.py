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

A reply another client got in another wire form is put into the one our SDK asks for before the
SDK reads it (the legacy Vertex SDK's enum numbers and JSON-array streams, see
:class:`harness.recording._legacy_vertex.AsOurSDKsRead`); the cassette file is never changed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

import vcr

import harness.recording._cassette as cassettes
import harness.recording._clients as backends
import harness.wire as wire
from harness.recording._legacy_vertex import AsOurSDKsRead, asks_int_enums, schema_type_names
from harness.wire import clip
from openprogram.providers import ModelRequest, Provider, allow_model_requests
from openprogram.types import AssistantMessage, ToolSpec, UserMessage

CASSETTES_ENV = "HARNESS_PROVIDER_CASSETTES"
"""Environment variable naming the provider-cassettes folder, overriding the default location."""

TRANSPORT_ONLY_QUERY: Final[Mapping[str, str | None]] = {
    "beta": None,
    "$alt": None,
    "alt": "json",
    "$prettyPrint": None,
    "prettyPrint": None,
}
"""Query parameters that never select a different reply, only how one client asked for it (key ->
the only value that is transport-only, ``None``: any value). Replay ignores them on both sides, so
a recording another client made replays through our SDKs:

- ``beta``: Anthropic SDKs once sent ``?beta=true`` on the same endpoint; current ones do not;
- ``$alt`` (``json;enum-encoding=int``): the legacy Vertex SDK's (``vertexai``, REST transport)
  choice of wire encoding; ``alt=json`` is the JSON every client gets anyway (``alt=sse``, a
  stream of events, is not transport-only: it changes the body);
- ``prettyPrint`` / ``$prettyPrint``: Google's whitespace switch.
"""


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
    return Path(__file__).resolve().parents[2].parent / "shared" / "provider-cassettes"


# ---------------------------------------------------------------------------------------------
# The replay plan: per recorded request, which backend, which model, streamed or not, which tools.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedCall:
    """What one recorded request asked for, as far as choosing and configuring a backend goes."""

    index: int
    method: str
    uri: str
    route: wire.Destination
    model: str
    stream: bool
    tools: tuple[ToolSpec, ...]

    @property
    def provider(self) -> str:
        return self.route.provider

    @property
    def endpoint(self) -> str:
        return self.route.endpoint


def read_recorded_calls(path: str | Path) -> list[RecordedCall]:
    """Parse a cassette's requests; raises ``ReplayError`` naming the file when one is unusable."""
    try:
        cassette = cassettes.load(path)
    except cassettes.CassetteError as exc:
        raise ReplayError(str(exc)) from exc
    calls = [_recorded_call(cassette.path, interaction) for interaction in cassette]
    providers = {call.provider for call in calls}
    if len(providers) > 1:
        raise ReplayError(f"{path}: mixes providers ({', '.join(sorted(providers))}); replay them as separate files")
    return calls


def _recorded_call(path: Path, interaction: cassettes.Interaction) -> RecordedCall:
    request, where = interaction.request, f"{path}: {interaction.where}"
    try:
        route, model, stream, tools = request.route, request.model, request.stream, request.tools
    except wire.RouteError as exc:
        raise ReplayError(f"{where}: {exc}") from exc
    if model is None:
        raise ReplayError(f"{where}: the recorded request names no model")
    if asks_int_enums(request.uri):  # the legacy Vertex SDK sends schema types as numbers too (6: OBJECT)
        tools = tuple(tool.model_copy(update={"parameters": schema_type_names(tool.parameters)}) for tool in tools)
    return RecordedCall(interaction.index, request.method, request.uri, route, model, stream, tools)


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
    """``replay_cassette`` for callers already inside an event loop.

    The result gets a ``"notes"`` list only when replay had something to say about how it read
    the file (an enum number of a legacy Vertex reply that ``_legacy_vertex.PROTO_ENUMS`` does not know).
    """
    replies, notes = await _areplay(path)
    interactions = [_normalize(call.index, message) for call, message in replies]
    result = {"file": str(path), "provider": replies[0][0].provider, "interactions": interactions}
    if notes:
        result["notes"] = notes
    return result


async def areplay_messages(path: str | Path) -> list[tuple[RecordedCall, AssistantMessage]]:
    """Each recorded call of ``path`` with the ``AssistantMessage`` our backend made of its reply
    (usage and thinking included), replayed as :func:`replay_cassette` does; raises ``ReplayError``."""
    return (await _areplay(path))[0]


async def _areplay(path: str | Path) -> tuple[list[tuple[RecordedCall, AssistantMessage]], list[str]]:
    calls = read_recorded_calls(path)
    recorder = vcr.VCR(
        record_mode="none",
        match_on=["method", "scheme", "host", "port", "path", "query_except_transport"],
    )
    recorder.register_matcher("query_except_transport", query_except_transport)
    persister = AsOurSDKsRead()
    recorder.register_persister(persister)
    client = _client(path, calls[0].route)
    results: list[tuple[RecordedCall, AssistantMessage]] = []
    try:
        # record_mode="none": vcrpy answers every request or refuses it, so none reaches a provider
        with recorder.use_cassette(str(path), allow_playback_repeats=False) as cassette, allow_model_requests():
            for call in calls:
                played_before = cassette.play_count
                message = await _run_interaction(path, call, _backend(path, call, client))
                if cassette.play_count - played_before != 1 or cassette.play_counts[call.index] != 1:
                    raise ReplayError(_mismatch(path, call, cassette.play_count - played_before, message))
                results.append((call, message))
    finally:
        await client.aclose()
    return results, persister.notes


def _client(path: str | Path, route: wire.Destination) -> backends.SDKClient:
    """A test-key client (no retries: a retry would find no recording) aimed at the recorded host:
    the provider's own, or the recorded server's root (the emulator, a proxy) when it was another."""
    where = backends.Where(
        region=route.region, vertex=route.vertex, project=route.project, api_version=route.api_version
    )
    if route.base_url is not None:
        connection = backends.Connection.at(route.base_url + wire.surface_prefix(route), **where)
    else:
        connection = backends.Connection.test(**where)
    try:
        return backends.surface_client(route) or backends.sdk_client(route.provider, connection)
    except backends.BackendError as exc:
        raise ReplayError(f"{path}: cannot replay {route.provider} cassettes: {exc}") from exc


def _backend(path: str | Path, call: RecordedCall, client: backends.SDKClient) -> Provider:
    try:
        return backends.backend(call.provider, call.endpoint, model=call.model, stream=call.stream, client=client)
    except backends.BackendError as exc:
        raise ReplayError(f"{path}: cannot replay {call.provider} cassettes: {exc}") from exc


def transport_only(key: str, value: str) -> bool:
    """Whether the query pair ``key=value`` only says how a client asked (:data:`TRANSPORT_ONLY_QUERY`)."""
    if key not in TRANSPORT_ONLY_QUERY:
        return False
    only = TRANSPORT_ONLY_QUERY[key]
    return only is None or value == only


def query_except_transport(sent: Any, recorded: Any) -> None:
    """vcrpy matcher (its name shows in vcrpy's mismatch report): the query, minus transport-only pairs."""

    def significant(request: Any) -> list[tuple[str, str]]:
        return [(key, value) for key, value in request.query if not transport_only(key, value)]

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


# ---------------------------------------------------------------------------------------------
# Presenting: a readable summary, and the logic of `harness conformance` (the command is in harness.cli).
# ---------------------------------------------------------------------------------------------


def render_result(result: Mapping[str, Any]) -> str:
    """A replay result as text a person can scan: one block per interaction, calls one per line."""
    lines = [f"{result['file']} ({result['provider']}, {len(result['interactions'])} interactions)"]
    for item in result["interactions"]:
        lines.append(f"  #{item['index']} {item['stop_reason']}")
        if item["error_message"] is not None:
            lines.append(f"     error: {item['error_message']}")
        if item["text"]:
            lines.append(f"     text: {clip(item['text'], 100, flat=True)}")
        for call in item["tool_calls"]:
            arguments = json.dumps(call["arguments"], ensure_ascii=False, sort_keys=True)
            lines.append(f"     call {call['id']} {call['name']}({clip(arguments, 100, flat=True)})")
    lines.extend(f"  note: {note}" for note in result.get("notes", ()))
    return "\n".join(lines)


def report(
    files: Iterable[str | Path], *, as_json: bool = False, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Replay each file and write what the backends read: the logic of ``harness conformance``.

    One JSON object per line with ``as_json``, else :func:`render_result`'s summary; a file that
    cannot be replayed is reported on ``err`` as ``error: ...`` (and, with ``as_json``, as
    ``{"file", "error"}`` on ``out`` too, so a consumer of the JSON sees every file it asked for),
    and the others still run. Returns the exit status: 1 when any file failed, else 0.
    """
    out, err = out or sys.stdout, err or sys.stderr
    failed = False
    for file in files:
        try:
            result = replay_cassette(file)
        except ReplayError as exc:
            message = str(exc)
        except Exception as exc:  # a bug of ours: say so, per file, instead of a bare AttributeError
            message = (
                f"{file}: internal error while replaying ({type(exc).__name__}: {exc}); "
                "this is a bug in the harness, not in the cassette"
            )
        else:
            print(json.dumps(result, ensure_ascii=False) if as_json else render_result(result), file=out)
            continue
        failed = True
        print(f"error: {message}", file=err)
        if as_json:
            print(json.dumps({"file": str(file), "error": message}, ensure_ascii=False), file=out)
    return 1 if failed else 0
