"""``harness cassettes to-scenario``: the recorded model turns as a scripted model, a scenario file.

The recorded model turns become a scripted model and the recorded tool results become the tools'
plans, so ``harness run`` replays the real conversation through the loop, and the scenario is a
seed to fuzz around.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.recording._tools._timeline import ConversionError, Step, read_steps
from harness.recording._transcript import Said
from openprogram.types import AssistantMessage


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
    steps, notes = _first_conversation(path, read_steps(path))
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


def _first_conversation(path: str | Path, steps: list[Step]) -> tuple[list[Step], list[str]]:
    """The steps up to the first that starts a new conversation, and a note on what was left out."""
    if not steps:
        raise ConversionError(f"{path}: no interactions")
    ends = next((i for i, s in enumerate(steps) if i and s.starts_conversation), len(steps))
    if ends < len(steps):
        return steps[:ends], [
            f"interactions {ends}-{len(steps) - 1} start a new conversation; only the first one was converted"
        ]
    return steps, []


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
