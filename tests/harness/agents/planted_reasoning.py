"""Tool-call loops with reasoning enabled, over the official ``anthropic`` and ``openai`` SDKs, each
with one defect to plant: reasoning the provider asks back is left out of the history (W2's
reasoning rule, DESIGN 6). Without the defect each is the correct twin a campaign must pass.

- ``anthropic_agent``: Messages with ``thinking`` enabled, the assistant's content sent back as
  the API returned it (thinking, redacted thinking, text, tool use); ``drops_thinking`` keeps only
  the text and tool-use blocks, what a loop that "cleans up" the history does.
- ``responses_agent``: Responses with ``store: false`` and ``include:
  ["reasoning.encrypted_content"]``, the history sent by hand: every output item appended as it
  came; ``drops_reasoning`` keeps only messages and function calls.

Both retry 429, 500, 503 and 529 after their ``Retry-After`` (the SDKs' own retries off, as
``planted``'s), and are not streamed: the reasoning is what they test.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import anthropic
import openai

from tests.harness.agents.planted import TOOLS, _execute

ANTHROPIC_TOOLS = [
    {
        "name": t["function"]["name"],
        "description": t["function"]["description"],
        "input_schema": t["function"]["parameters"],
    }
    for t in TOOLS
]
RESPONSES_TOOLS = [{"type": "function", **t["function"]} for t in TOOLS]
RETRIED = (429, 500, 503, 529)


def _retrying(create: Callable[[], Any], error: type[Exception]) -> Any:
    for attempt in range(3):
        try:
            return create()
        except error as exc:
            status = getattr(exc, "status_code", None)
            if status not in RETRIED or attempt == 2:
                raise
            time.sleep(float(exc.response.headers.get("retry-after") or 1))  # type: ignore[attr-defined]
    raise AssertionError("unreachable")


def make_anthropic(drops_thinking: bool = False, max_rounds: int = 20) -> Callable[..., str]:
    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        client = anthropic.Anthropic(base_url=base_url, api_key=api_key, http_client=http_client, max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for _ in range(max_rounds):
            reply = _retrying(
                lambda: client.messages.create(
                    model="claude-test",
                    max_tokens=4096,
                    thinking={"type": "enabled", "budget_tokens": 2048},
                    tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
                    messages=messages,  # type: ignore[arg-type]
                ),
                anthropic.APIStatusError,
            )
            calls = [b for b in reply.content if b.type == "tool_use"]
            if not calls:
                return "".join(b.text for b in reply.content if b.type == "text")
            kept = [b for b in reply.content if not (drops_thinking and b.type in ("thinking", "redacted_thinking"))]
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in kept]})
            results = [
                {"type": "tool_result", "tool_use_id": c.id, "content": _execute(c.name, _json(c.input))} for c in calls
            ]
            messages.append({"role": "user", "content": results})
        raise RuntimeError(f"no answer after {max_rounds} rounds")

    agent.__name__ = "anthropic_drops_thinking" if drops_thinking else "anthropic_agent"
    return agent


def make_responses(drops_reasoning: bool = False, max_rounds: int = 20) -> Callable[..., str]:
    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0)
        items: list[Any] = [{"role": "user", "content": prompt}]
        for _ in range(max_rounds):
            reply = _retrying(
                lambda: client.responses.create(
                    model="gpt-test",
                    input=items,
                    tools=RESPONSES_TOOLS,  # type: ignore[arg-type]
                    store=False,
                    include=["reasoning.encrypted_content"],
                    reasoning={"effort": "low"},
                ),
                openai.APIStatusError,
            )
            calls = [item for item in reply.output if item.type == "function_call"]
            if not calls:
                return reply.output_text
            for item in reply.output:
                if not (drops_reasoning and item.type == "reasoning"):
                    items.append(item.model_dump(exclude_none=True))
            for call in calls:
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": call.call_id,
                        "output": _execute(call.name, call.arguments),
                    }
                )
        raise RuntimeError(f"no answer after {max_rounds} rounds")

    agent.__name__ = "responses_drops_reasoning" if drops_reasoning else "responses_agent"
    return agent


def _json(value: Any) -> str:
    return json.dumps(value)


anthropic_agent = make_anthropic()
anthropic_drops_thinking = make_anthropic(drops_thinking=True)
responses_agent = make_responses()
responses_drops_reasoning = make_responses(drops_reasoning=True)
"""By name, for ``harness fuzz --agent tests.harness.agents.planted_reasoning:NAME``."""
