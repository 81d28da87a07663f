"""Tool-call loops with reasoning enabled, over the official ``anthropic`` and ``openai`` SDKs, each
with one defect to plant: reasoning the provider asks back is left out of the history (W2's
reasoning rule, DESIGN 6). Without the defect each is the correct twin a campaign must pass.

- ``anthropic_agent``: Messages with ``thinking`` enabled, the assistant's content sent back as
  the API returned it (thinking, redacted thinking, text, tool use); ``drops_thinking`` keeps only
  the text and tool-use blocks, what a loop that "cleans up" the history does.
- ``gemini_agent``: ``google-genai`` on a Gemini 3 model with thinking on, each reply's content
  sent back as it came; ``drops_signatures`` rebuilds the model turn from its calls' names and
  arguments, losing the ``thoughtSignature`` Gemini 3 requires back on the first call.
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

from tests.harness.agents.planted import (
    LOOPBACK_READ_TIMEOUT,
    READ_TIMEOUT,
    TOOLS,
    Filtered,
    _execute,
    _responses_answer,
)

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
            status = getattr(exc, "status_code", None) or getattr(exc, "code", None)  # google-genai: code
            body = getattr(exc, "body", None)
            out_of_quota = isinstance(body, dict) and body.get("code") == "insufficient_quota"  # no retry gets past it
            if status not in RETRIED or out_of_quota or attempt == 2:
                raise
            headers = getattr(getattr(exc, "response", None), "headers", None) or {}
            time.sleep(float(headers.get("retry-after") or 0.1))  # no Retry-After (a 500): a short back-off
    raise AssertionError("unreachable")


def make_anthropic(drops_thinking: bool = False, max_rounds: int = 20) -> Callable[..., str]:
    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        client = anthropic.Anthropic(
            base_url=base_url, api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
        )
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
        client = openai.OpenAI(
            base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
        )
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
                return _responses_answer(reply)
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


GEMINI_TOOLS = [
    {"function_declarations": [{k: t["function"][k] for k in ("name", "description", "parameters")} for t in TOOLS]}
]


def make_gemini(drops_signatures: bool = False, max_rounds: int = 20) -> Callable[..., str]:
    def agent(prompt: str, *, base_url: str, api_key: str) -> str:
        from google import genai
        from google.genai import types

        options = types.HttpOptions(
            base_url=base_url,
            retry_options=types.HttpRetryOptions(attempts=1),
            timeout=int(LOOPBACK_READ_TIMEOUT * 1000),
        )
        client = genai.Client(api_key=api_key, http_options=options)
        contents: list[Any] = [{"role": "user", "parts": [{"text": prompt}]}]
        config = types.GenerateContentConfig(
            tools=GEMINI_TOOLS,  # type: ignore[arg-type]
            thinking_config=types.ThinkingConfig(thinking_budget=128),
        )
        for _ in range(max_rounds):
            response = _retrying(
                lambda: client.models.generate_content(model="gemini-3-pro-preview", contents=contents, config=config),
                genai.errors.APIError,
            )
            if response.prompt_feedback is not None and response.prompt_feedback.block_reason is not None:
                raise Filtered(f"the prompt was blocked ({response.prompt_feedback.block_reason})")
            content = response.candidates[0].content if response.candidates else None
            parts = list(content.parts or []) if content is not None else []
            calls = [p.function_call for p in parts if p.function_call is not None]
            if not calls:
                text = "".join(p.text or "" for p in parts if not p.thought)
                if text:
                    return text
                continue  # MALFORMED_FUNCTION_CALL: asked again
            if drops_signatures:  # the calls rebuilt from their names and arguments: signatures lost
                content = types.Content(
                    role="model",
                    parts=[
                        types.Part(function_call=types.FunctionCall(name=c.name, args=c.args, id=c.id)) for c in calls
                    ],
                )
            contents.append(content)
            results = [
                {
                    "function_response": {
                        "id": c.id,
                        "name": c.name,
                        "response": {"result": _execute(c.name or "", _json(c.args or {}))},
                    }
                }
                for c in calls
            ]
            contents.append({"role": "user", "parts": results})
        raise RuntimeError(f"no answer after {max_rounds} rounds")

    agent.__name__ = "gemini_drops_signatures" if drops_signatures else "gemini_agent"
    return agent


def _json(value: Any) -> str:
    return json.dumps(value)


anthropic_agent = make_anthropic()
anthropic_drops_thinking = make_anthropic(drops_thinking=True)
responses_agent = make_responses()
responses_drops_reasoning = make_responses(drops_reasoning=True)
gemini_agent = make_gemini()
gemini_drops_signatures = make_gemini(drops_signatures=True)
"""By name, for ``harness fuzz --agent tests.harness.agents.planted_reasoning:NAME``."""
