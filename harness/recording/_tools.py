"""Cassettes as data: a recorded conversation as a timeline, and as a scenario file.

A cassette is the most faithful record of what a model really did, but as YAML it is hard to
read (each request repeats the whole history, streamed replies are raw SSE or binary event
frames) and it can only be replayed as it is. This module reads one the way a person wants it:
per interaction, what was new in the request and what the model answered (the reply decoded by
our own backends, so streams read as the SDK reads them), and turns the same reading into a
scenario file: the recorded model turns become a scripted model, the recorded tool results
become the tools' plans, so ``harness run`` replays the real conversation through the loop and
the scenario is a seed to fuzz around.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import harness.recording._cassette as cassettes
import harness.recording._conformance as conformance
import harness.recording._live as live_env
import harness.recording._transcript as transcript
import harness.wire as wire
from harness.recording._transcript import Said
from harness.wire import clip
from openprogram.providers import ALLOW_MODEL_REQUESTS_ENV
from openprogram.types import AssistantMessage


class ConversionError(Exception):
    """A cassette that cannot be read or replayed; the message starts with its path."""


@dataclass(frozen=True)
class Step:
    """One interaction, read for a person: what the request added, and the decoded reply."""

    interaction: cassettes.Interaction
    call: conformance.RecordedCall
    conversation: transcript.Conversation
    new: tuple[Said, ...]
    """The messages this request added to the previous one's conversation (all of them at a new start)."""
    starts_conversation: bool
    reply: AssistantMessage


def read_steps(path: str | Path) -> list[Step]:
    """Every interaction of ``path`` with its reply decoded by the matching backend, offline."""
    try:
        cassette = cassettes.load(path)
        replies = asyncio.run(conformance.areplay_messages(path))
    except (cassettes.CassetteError, conformance.ReplayError) as exc:
        raise ConversionError(str(exc)) from exc
    steps: list[Step] = []
    previous: tuple[Said, ...] = ()
    for interaction, (call, reply) in zip(cassette, replies, strict=True):
        said = transcript.conversation(interaction.request)
        messages = said.messages
        continues = bool(steps) and len(messages) > len(previous) and messages[: len(previous)] == previous
        new = messages[len(previous) :] if continues else messages
        if continues:  # the previous reply, sent back as history, is not news
            while new and new[0].role == "assistant":
                new = new[1:]
        steps.append(Step(interaction, call, said, new, not continues, reply))
        previous = messages
    return steps


# ---------------------------------------------------------------------------------------------
# show: a readable timeline
# ---------------------------------------------------------------------------------------------


def render_timeline(path: str | Path, width: int = 100) -> str:
    """``harness cassettes show``: per interaction the endpoint, model, new messages and the reply."""
    steps = read_steps(path)
    provider = steps[0].call.provider if steps else "?"
    lines = [f"{path}: {len(steps)} interaction(s), {provider}"]
    names: dict[str, str] = {}
    for step in steps:
        call, response = step.call, step.interaction.response
        streamed = "streamed" if call.stream else "whole"
        where = f"{call.provider} {call.endpoint} · {call.model}"
        lines.append(f"#{step.interaction.index} {where} · {streamed} · HTTP {response.status}")
        if step.starts_conversation and step.conversation.system:
            lines.append(f"   system: {clip(step.conversation.system, width, flat=True)}")
        if step.starts_conversation and step.interaction.index:
            lines.append("   (a new conversation starts here)")
        for said in step.new:
            lines.append("   " + _said(said, names, width))
        lines.extend("   " + line for line in _reply(step.reply, width))
        for tool_call in step.reply.tool_calls:
            names[tool_call.id] = tool_call.name
    return "\n".join(lines)


def _said(said: Said, names: dict[str, str], width: int) -> str:
    if said.role == "tool":
        name = said.tool_name or names.get(said.call_id or "", "?")
        flag = " (error)" if said.is_error else ""
        return f"tool {name} [{said.call_id or '-'}]{flag} → {clip(said.text, width, flat=True)}"
    calls = "".join(f" + call {c.name}" for c in said.calls)
    return f"{said.role}: {clip(said.text, width, flat=True)}{calls}"


def _reply(reply: AssistantMessage, width: int) -> list[str]:
    if reply.stop_reason in ("error", "aborted"):
        return [f"← {reply.stop_reason}: {clip(reply.error_message or '', width, flat=True)}"]
    lines = [f"← reply ({reply.stop_reason})" + (f": {clip(reply.text, width, flat=True)}" if reply.text else "")]
    for tool_call in reply.tool_calls:
        arguments = tool_call.raw_arguments or json.dumps(tool_call.arguments, ensure_ascii=False, sort_keys=True)
        lines.append(f"  call {tool_call.name}({clip(arguments, width, flat=True)}) [{tool_call.id}]")
    usage = reply.usage
    if usage.input or usage.output:
        cached = f", {usage.cache_read} cached" if usage.cache_read else ""
        lines.append(f"  usage: {usage.input} in{cached}, {usage.output} out")
    return lines


# ---------------------------------------------------------------------------------------------
# to-scenario: the recorded model turns as a scripted model
# ---------------------------------------------------------------------------------------------


@dataclass
class _Plans:
    """What the scenario's tools must return, learned from the results the next requests sent back."""

    specs: dict[str, Any] = field(default_factory=dict)
    plans: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add_spec(self, spec: Any) -> None:
        self.specs.setdefault(spec.name, spec)

    def add_result(self, name: str, said: Said) -> None:
        self.plans.setdefault(name, []).append({"error": said.text} if said.is_error else {"return": said.text})

    def tools(self) -> list[dict[str, Any]]:
        out = []
        for name in [*self.specs, *(n for n in self.plans if n not in self.specs)]:
            tool: dict[str, Any] = {"name": name}
            spec = self.specs.get(name)
            if spec is not None:
                if spec.description:
                    tool["description"] = spec.description
                tool["parameters"] = dict(spec.parameters)
            if self.plans.get(name):
                tool["plan"] = self.plans[name]
            out.append(tool)
        return out


def to_scenario(path: str | Path) -> tuple[dict[str, Any], list[str]]:
    """The scenario data of ``path``'s first conversation, and notes on what was left out.

    Prompts and history come from the first request, tools from the requests' tool specs, the
    turns from the decoded replies, each tool's plan from the results later requests sent back,
    follow-ups and steering from user messages that arrive later; ``meta.expect`` pins the number
    of requests and the tool ledger the recording shows. Raises :class:`ConversionError`.
    """
    steps = read_steps(path)
    if not steps:
        raise ConversionError(f"{path}: no interactions")
    notes: list[str] = []
    ends = next((i for i, s in enumerate(steps) if i and s.starts_conversation), len(steps))
    if ends < len(steps):
        notes.append(f"interactions {ends}-{len(steps) - 1} start a new conversation; only the first one was converted")
    steps = steps[:ends]
    first = steps[0]
    history, prompts = _opening(first.conversation.messages)
    plans = _Plans()
    turns: list[Any] = []
    follow_ups: dict[int, list[str]] = {}
    steering: dict[int, list[str]] = {}
    executed: list[str] = []
    names: dict[str, str] = {}
    poll = drains = 1  # steering is polled once before the first model call
    for number, step in enumerate(steps):
        for spec in step.call.tools:
            plans.add_spec(spec)
        if number:
            user = _apply(step.new, plans, names)
            if user and steps[number - 1].reply.tool_calls:
                steering[poll] = user
            elif user:
                follow_ups[drains - 1] = user
        reply = step.reply
        turns.append(_turn(reply))
        if reply.stop_reason in ("error", "aborted"):
            if number + 1 < len(steps):
                notes.append(f"the run ends at the {reply.stop_reason} of interaction {number}; the rest was left out")
            steps = steps[: number + 1]
            break
        for tool_call in reply.tool_calls:
            names[tool_call.id] = tool_call.name
            executed.append(f"{tool_call.name}#{tool_call.id}")
            poll += 1
        if reply.tool_calls:
            following = steps[number + 1].new if number + 1 < len(steps) else ()
            poll += 0 if any(s.role == "user" for s in following) else 1
        else:
            poll, drains = poll + 1, drains + 1
    data = _scenario(path, first, steps, prompts, history, plans, turns, follow_ups, steering, executed)
    return data, notes


def _opening(messages: tuple[Said, ...]) -> tuple[list[dict[str, Any]], list[str]]:
    """The first request as (history, prompts): its trailing user messages are the prompts."""
    cut = len(messages)
    while cut and messages[cut - 1].role == "user":
        cut -= 1
    prompts = [said.text for said in messages[cut:]]
    history = []
    for said in messages[:cut]:
        if said.role == "user":
            history.append({"user": said.text})
        elif said.role == "assistant":
            entry: dict[str, Any] = {"assistant": said.text or None}
            if said.calls:
                entry["calls"] = [_call(c.name, c.arguments, c.raw, c.id) for c in said.calls]
            history.append(entry)
        else:
            history.append({"tool_result": said.text, "id": said.call_id or "", "name": said.tool_name or ""})
    return history, prompts


def _apply(new: tuple[Said, ...], plans: _Plans, names: dict[str, str]) -> list[str]:
    """Record a request's tool results in the plans; return its new user messages' texts.

    ``names`` holds the previous reply's calls (id -> tool); a result is matched by its call id,
    else by the tool name it gives, else (Gemini sends neither) by the order of the calls.
    """
    waiting = dict(names)
    user = []
    for said in new:
        if said.role == "user":
            user.append(said.text)
            continue
        if said.role != "tool":
            continue
        call_id = said.call_id if said.call_id in waiting else None
        if call_id is None and said.tool_name:
            call_id = next((i for i, n in waiting.items() if n == said.tool_name), None)
        if call_id is None and waiting:
            call_id = next(iter(waiting))
        name = waiting.pop(call_id) if call_id is not None else said.tool_name or "?"
        plans.add_result(name, said)
    names.clear()
    return user


def _call(name: str, arguments: dict[str, Any], raw: str | None, call_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name}
    if raw is not None:
        entry["raw"] = raw
    elif arguments:
        entry["args"] = arguments
    if call_id:
        entry["id"] = call_id
    return entry


def _turn(reply: AssistantMessage) -> Any:
    if reply.stop_reason in ("error", "aborted"):
        return {reply.stop_reason: reply.error_message or reply.stop_reason}
    calls = [_call(c.name, c.arguments, c.raw_arguments, c.id) for c in reply.tool_calls]
    if not calls and reply.stop_reason != "length":
        return reply.text if reply.text else {"empty": True}
    turn: dict[str, Any] = {}
    if reply.text:
        turn["text"] = reply.text
    if calls:
        turn["calls"] = calls
    if reply.stop_reason == "length":
        turn["stop"] = "length"
    return turn


def _scenario(
    path: str | Path,
    first: Step,
    steps: list[Step],
    prompts: list[str],
    history: list[dict[str, Any]],
    plans: _Plans,
    turns: list[Any],
    follow_ups: dict[int, list[str]],
    steering: dict[int, list[str]],
    executed: list[str],
) -> dict[str, Any]:
    last = steps[-1].reply
    call = first.call
    expect: dict[str, Any] = {"requests": len(turns), "executed": executed}
    config: dict[str, Any] = {"model": call.model}
    if first.conversation.system:
        config["system_prompt"] = first.conversation.system
    if last.stop_reason in ("error", "aborted"):
        expect["reason"] = last.stop_reason
    elif last.tool_calls and last.stop_reason != "length":
        # the recording stops after these calls: the cap ends the run where the recording ends
        config["max_iterations"] = len(turns)
        expect["reason"] = "max_iterations"
    else:
        expect["reason"] = "stop"
        expect["final_text"] = last.text
    data: dict[str, Any] = {
        "name": f"recorded {Path(path).stem}",
        "notes": (
            f"Converted by `harness cassettes to-scenario` from {Path(path).name}: {len(steps)} {call.provider} "
            f"{call.endpoint} interaction(s) with {call.model}. The turns are the recorded replies, each tool's "
            "plan the results the recording sent back."
        ),
        "prompts": prompts,
    }
    if history:
        data["history"] = history
    tools = plans.tools()
    if tools:
        data["tools"] = tools
    data["turns"] = turns
    if steering:
        data["steering"] = steering
    if follow_ups:
        data["follow_ups"] = follow_ups
    data["config"] = config
    data["meta"] = {"expect": expect, "recorded_from": str(path)}
    return data


# ---------------------------------------------------------------------------------------------
# harness cassettes drift: is the cassette still what the server sends?
# ---------------------------------------------------------------------------------------------

_NOT_FORWARDED = frozenset(
    {"host", "content-length", "content-encoding", "accept-encoding", "connection", "transfer-encoding"}
)
"""Headers the client sets itself: the body goes out decoded (gzip undone), with its own length."""


@dataclass(frozen=True)
class Drift:
    """One structural difference between a recorded reply and the one the server sends now.

    ``breaking`` when code written against the recording may fail on the new reply (a field or an
    event gone, a type or the status changed, events reordered); ``benign`` when the server only
    adds (a new field, a new kind of event). Values are never compared: ids, texts and token
    counts change on every call.
    """

    interaction: int
    severity: str
    what: str

    def __str__(self) -> str:
        return f"interaction {self.interaction}: {self.severity}: {self.what}"


def drift(
    path: str | Path,
    base_url: str | None = None,
    *,
    live: bool = False,
    timeout: float = 60.0,
    environ: Mapping[str, str] | None = None,
) -> list[Drift]:
    """Re-send each recorded request of ``path`` and compare the replies' structure with the recorded ones.

    The request goes out as recorded (body, method, path below the recorded server's root, query,
    its non-credential headers) either to ``base_url`` with placeholder keys (any server that speaks
    the provider's wire: the loopback emulator, a proxy) or, ``live``, to the provider itself with
    the environment's credentials (see :func:`drift_targets`). Raises :class:`ConversionError`,
    before anything is sent, for an unreadable cassette or a missing credential.
    """
    return send_for_drift(drift_targets(path, base_url, live=live, environ=environ), timeout=timeout)


@dataclass(frozen=True)
class DriftTarget:
    """One recorded request and where :func:`drift` sends it again; ``live``: with real credentials."""

    path: Path
    interaction: cassettes.Interaction
    url: str
    live: bool
    region: str | None = None
    """The region a Bedrock request is signed for (SigV4)."""
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)


_DEFAULT_ROOTS: Final = {
    "openai": "https://api.openai.com",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
_ALLOW_OFF: Final = frozenset({"0", "false", "no", "off"})


def drift_targets(
    path: str | Path, base_url: str | None = None, *, live: bool = False, environ: Mapping[str, str] | None = None
) -> list[DriftTarget]:
    """Where each recorded request of ``path`` goes again; every problem is raised before one is sent.

    Exactly one of ``base_url`` and ``live``. Live, a request goes to the provider's base-URL
    variable when it is set (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``,
    ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``: the ones live runs and the recorder honour), else to the
    recorded host when it is the provider's, else to the provider's default URL; the credential
    must be in the environment (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``GEMINI_API_KEY`` or
    ``GOOGLE_API_KEY``, AWS keys or ``AWS_PROFILE``; Vertex project paths: Google's default
    credentials), else :class:`ConversionError` names the variable.
    """
    if (base_url is None) == (not live):
        raise ConversionError("drift needs exactly one of a base URL and live")
    environ = os.environ if environ is None else environ
    if live:
        switch = environ.get(ALLOW_MODEL_REQUESTS_ENV)
        if switch is not None and switch.strip().lower() in _ALLOW_OFF:
            raise ConversionError(f"--live sends real requests, and {ALLOW_MODEL_REQUESTS_ENV}={switch} turns them off")
    targets = []
    for interaction in _loaded_for_drift(path):
        request, where = interaction.request, f"{path}: {interaction.where}"
        try:
            route = request.route
        except wire.RouteError as exc:
            raise ConversionError(f"{where}: {exc}") from None
        prefix = urlsplit(route.base_url).path if route.base_url else ""
        below = request.path.removeprefix(prefix) if request.path.startswith(prefix) else request.path
        query = urlsplit(wire.scrub_url(request.uri)).query  # a recorded key goes nowhere, live or not
        region = None
        if live:
            root, region = _live_root(where, request, route, environ)
            _check_credentials(where, route, environ)
        else:
            root = (base_url or "").rstrip("/")
        targets.append(
            DriftTarget(Path(path), interaction, root + below + (f"?{query}" if query else ""), live, region, environ)
        )
    return targets


def _live_root(
    where: str, request: cassettes.Request, route: wire.Destination, environ: Mapping[str, str]
) -> tuple[str, str | None]:
    """The server a live request goes to, and (Bedrock) the region it is signed for."""
    try:
        root = live_env.base_url_from_env(route.provider, environ)
    except live_env.LiveError as exc:
        raise ConversionError(f"{where}: {exc}") from None
    region = None
    if route.provider == "bedrock":
        region = route.region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        if region is None:
            raise ConversionError(f"{where}: --live needs AWS_REGION (the recording does not name the Bedrock region)")
    if root is not None:
        return root, region
    if route.base_url is None:  # the provider's own host, as recorded (never a recorded password)
        parts = urlsplit(wire.scrub_url(request.uri))
        return f"{parts.scheme}://{parts.netloc}", region
    if route.provider == "bedrock":
        return f"https://bedrock-runtime.{region}.amazonaws.com", region
    if route.provider == "gemini" and route.vertex:
        location = route.region or "global"
        return f"https://{'' if location == 'global' else location + '-'}aiplatform.googleapis.com", region
    return _DEFAULT_ROOTS[route.provider], region


def _check_credentials(where: str, route: wire.Destination, environ: Mapping[str, str]) -> None:
    if route.provider == "gemini" and route.project:
        _google_token(where)  # Vertex with a project takes Google's default credentials, not a key
        return
    missing = live_env.missing_credentials(route.provider, environ)
    if missing is not None:
        raise ConversionError(f"{where}: --live needs {missing} in the environment (the {route.provider} credentials)")


def _google_token(where: str) -> str:
    """A bearer token from Google's default credentials (fetched once per process, then reused)."""
    import google.auth.exceptions

    try:
        return _default_google_token()
    except google.auth.exceptions.GoogleAuthError as exc:
        raise ConversionError(
            f"{where}: --live needs Google's default credentials for a Vertex project"
            f" (GOOGLE_APPLICATION_CREDENTIALS, or gcloud auth application-default login): {exc}"
        ) from None


@functools.cache
def _default_google_token() -> str:
    import google.auth
    import google.auth.transport.requests

    credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    credentials.refresh(google.auth.transport.requests.Request())  # type: ignore[no-untyped-call]  # google-auth is unannotated
    return str(credentials.token)


def _live_headers(target: DriftTarget, headers: dict[str, str]) -> dict[str, str]:
    """``headers`` with the environment's credential added, as the provider's SDK adds it."""
    request, environ = target.interaction.request, target.environ
    route = request.route
    if route.provider == "openai":
        headers.update([wire.key_header("openai", environ["OPENAI_API_KEY"])])
    elif route.provider == "anthropic":
        headers.update([wire.key_header("anthropic", environ["ANTHROPIC_API_KEY"])])
        headers.setdefault("anthropic-version", "2023-06-01")  # required; recorders often drop it
    elif route.provider == "gemini" and route.project:
        headers.update([wire.key_header("vertex", _google_token(f"{target.path}: {target.interaction.where}"))])
    elif route.provider == "gemini":
        headers.update([wire.key_header("gemini", environ.get("GEMINI_API_KEY") or environ["GOOGLE_API_KEY"])])
    else:
        headers = _sigv4(target, headers)
    return headers


def _sigv4(target: DriftTarget, headers: dict[str, str]) -> dict[str, str]:
    """The headers of a Bedrock request signed as botocore signs it (SigV4, service ``bedrock``)."""
    import botocore.session
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    environ = target.environ
    if environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"):
        credentials = Credentials(
            environ["AWS_ACCESS_KEY_ID"], environ["AWS_SECRET_ACCESS_KEY"], environ.get("AWS_SESSION_TOKEN")
        )
    else:
        found = botocore.session.Session(profile=environ.get("AWS_PROFILE")).get_credentials()
        if found is None:  # checked before any request was sent; said here too rather than by botocore
            raise ConversionError("--live needs AWS credentials for Bedrock (AWS_ACCESS_KEY_ID, or a profile)")
        credentials = found
    assert target.region is not None  # a live Bedrock target always has its region (_live_root)
    signed = AWSRequest(
        target.interaction.request.method, target.url, data=target.interaction.request.body.data, headers=headers
    )
    SigV4Auth(credentials, "bedrock", target.region).add_auth(signed)
    return {name.lower(): value for name, value in signed.headers.items()}


def send_for_drift(targets: list[DriftTarget], *, timeout: float = 60.0) -> list[Drift]:
    """Send each target's request and compare each reply's structure with the recorded one."""
    import httpx2

    found: list[Drift] = []
    with httpx2.Client(timeout=timeout) as client:
        for target in targets:
            interaction = target.interaction
            request = interaction.request
            headers = {
                name.lower(): value
                for name, value in request.headers
                if name.lower() not in _NOT_FORWARDED and not wire.is_credential_header(name)
            }
            if target.live:
                headers = _live_headers(target, headers)
            else:
                headers.update(wire.PLACEHOLDER_HEADERS)
            try:
                reply = client.request(request.method, target.url, content=request.body.data, headers=headers)
            except httpx2.HTTPError as exc:
                raise ConversionError(
                    f"{target.path}: interaction {interaction.index}: cannot reach {target.url}: {exc}"
                ) from None
            recorded = interaction.response
            found.extend(
                Drift(interaction.index, severity, what)
                for severity, what in compare_replies(
                    (recorded.status, recorded.body.data, recorded.headers.get("content-type")),
                    (reply.status_code, reply.content, reply.headers.get("content-type")),
                )
            )
    return found


def _loaded_for_drift(path: str | Path) -> cassettes.Cassette:
    try:
        return cassettes.load(path)
    except cassettes.CassetteError as exc:
        raise ConversionError(str(exc)) from None


Reply = tuple[int, bytes, "str | None"]


def compare_replies(recorded: Reply, live: Reply) -> list[tuple[str, str]]:
    """``(severity, what)`` for each structural difference of ``live`` from ``recorded``."""
    found: list[tuple[str, str]] = []
    if recorded[0] != live[0]:
        found.append(("breaking", f"status {recorded[0]} is now {live[0]}"))
    old_kinds, old_fields = reply_structure(recorded[1], recorded[2])
    new_kinds, new_fields = reply_structure(live[1], live[2])
    for kind in dict.fromkeys(old_kinds):
        if kind not in new_kinds:
            found.append(("breaking", f"event {kind!r} is no longer sent"))
    for kind in dict.fromkeys(new_kinds):
        if kind not in old_kinds:
            found.append(("benign", f"new event {kind!r}"))
    common = [kind for kind in old_kinds if kind in new_kinds]
    if common != [kind for kind in new_kinds if kind in old_kinds]:
        found.append(("breaking", f"events reordered: {' > '.join(old_kinds)} is now {' > '.join(new_kinds)}"))
    for field_path, kind in old_fields.items():
        if field_path not in new_fields:
            found.append(("breaking", f"field {field_path} is gone"))
        elif new_fields[field_path] != kind:
            found.append(("breaking", f"field {field_path} was {kind}, is now {new_fields[field_path]}"))
    found.extend(("benign", f"new field {p}") for p in new_fields if p not in old_fields)
    return found


def reply_structure(body: bytes, content_type: str | None) -> tuple[list[str], dict[str, str]]:
    """A reply as its event kinds in order (repeats collapsed: the number of deltas follows the text)
    and its fields, ``KIND:path -> JSON type`` (list items merged as ``[]``)."""
    from harness.recording._scrub import stream_events

    events = [(_event_kind(event), event) for event in stream_events(body, content_type)]
    if not events:
        try:
            events = [("body", json.loads(body))] if body.strip() else []
        except ValueError:
            return ["text"], {}
    kinds = [kind for i, (kind, _) in enumerate(events) if i == 0 or events[i - 1][0] != kind]
    fields: dict[str, str] = {}
    for kind, event in events:
        _shape(event, f"{kind}:", fields)
    return kinds, fields


def _event_kind(event: Any) -> str:
    if isinstance(event, dict):
        for key in ("type", "object"):
            found = event.get(key)
            if isinstance(found, str):
                return found
        return "+".join(sorted(key for key in event if key != "p"))  # Bedrock: the payload's keys ("p" is padding)
    return type(event).__name__


def _shape(value: Any, path: str, into: dict[str, str]) -> None:
    if isinstance(value, dict):
        if not path.endswith(":"):  # an event itself is no field: its kind is compared
            into.setdefault(path, "object")
        for key, item in value.items():
            _shape(item, f"{path}.{key}" if not path.endswith(":") else f"{path}{key}", into)
    elif isinstance(value, list):
        into.setdefault(path, "array")
        for item in value:
            _shape(item, f"{path}[]", into)
    else:
        kind = {bool: "boolean", int: "number", float: "number", str: "string", type(None): "null"}.get(
            type(value), type(value).__name__
        )
        if into.get(path) not in (None, kind) and kind == "null":
            return  # a field that is sometimes null keeps its other type
        into[path] = kind if into.get(path) in (None, "null") else into[path]
