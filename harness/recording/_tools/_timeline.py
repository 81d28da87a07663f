"""A cassette read the way a person wants it: per interaction, what the request added and the reply.

A cassette is the most faithful record of what a model really did, but as YAML it is hard to
read (each request repeats the whole history, streamed replies are raw SSE or binary event
frames). :func:`read_steps` reads one per interaction: what was new in the request and what the
model answered, the reply decoded by our own backends so streams read as the SDK reads them;
:func:`render_timeline` is ``harness cassettes show``. The steps are what ``to-scenario`` and the
HTML timeline read too; :class:`ConversionError` is every cassette tool's refusal.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path

import harness.recording._cassette as cassettes
import harness.recording._conformance as conformance
import harness.recording._transcript as transcript
from harness.recording._transcript import Said
from harness.wire import clip
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
