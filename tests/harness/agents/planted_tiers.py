"""Loops over the official ``openai`` SDK whose defects only a realistic, precise verdict tells
apart: the two ways a stream is cut, a deviation declared for the reply that causes it, calls
sharing an id rewritten on their way back.

- ``returns_text_on_reset``: a connection reset mid-reply is taken as the end of the answer (what
  the stream carried so far is returned); a body that ends cleanly without its finish reason
  raises, as it should. W5, on the ``network`` tier, only after a reset.
- ``joins_texts``: returns every reply's text joined, a W4 departure it declares for the reply
  that causes it (``kinds=("text and a call",)``), not for the last reply.
- ``overwrites_shared_ids``: keeps one call per id, the last, where two calls share one (as
  langchain-aws builds Bedrock's ``toolUseId`` history), and sends both results: one call lost,
  the other sent twice. W2 on the ``invalid`` tier (no provider sends two calls sharing an id).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import openai

from harness.agents import Deviation
from tests.harness.agents.planted import READ_TIMEOUT, TOOLS, Filtered, _execute, add_call_deltas, retryable


class CutStream(Exception):
    """The stream ended cleanly without its finish reason."""


def _loop(
    prompt: str, base_url: str, api_key: str, http_client: Any, *, on_reset: bool, join: bool, overwrite: bool
) -> str:
    client = openai.OpenAI(
        base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    said: list[str] = []
    for _ in range(20):
        text, calls, finish = "", {}, None
        for attempt in range(3):
            try:
                stream = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS, stream=True)
                break
            except openai.APIStatusError as exc:
                if not retryable(exc) or attempt == 2:
                    raise
                time.sleep(float(exc.response.headers.get("retry-after") or 1))
        try:
            for chunk in stream:
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                text += choice.delta.content or choice.delta.refusal or ""  # a refusal's message is its answer
                add_call_deltas(calls, choice)
                finish = choice.finish_reason or finish
        except (openai.APIStatusError, openai.APIResponseValidationError):
            raise
        except Exception:  # the connection went: httpx's error, or the SDK's APIConnectionError
            if on_reset:
                return text  # the defect: what came so far is the answer
            raise
        if finish is None:
            raise CutStream(f"the stream ended without a finish reason after {text!r}")
        if finish == "content_filter":
            raise Filtered(f"the provider's content filter withheld the reply after {text!r}")
        said.append(text)
        ordered = [calls[i] for i in sorted(calls)]
        if not ordered:
            return "\n".join(t for t in said if t) if join else text
        sent = ordered
        if overwrite:  # one call per id, the last one sharing it, in the place of each
            last = {call["id"]: call for call in ordered}
            sent = [last[call["id"]] for call in ordered]
        messages.append({"role": "assistant", "content": text or None, "tool_calls": sent})
        for call in ordered:
            result = _execute(call["function"]["name"], call["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise RuntimeError("no answer after 20 rounds")


def _agent(name: str, **defect: bool) -> Callable[..., str]:
    options = {"on_reset": False, "join": False, "overwrite": False, **defect}

    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        return _loop(prompt, base_url, api_key, http_client, **options)

    agent.__name__ = name
    return agent


returns_text_on_reset = _agent("returns_text_on_reset", on_reset=True)
joins_texts = _agent("joins_texts", join=True)
joins_texts.wire_deviations = [  # type: ignore[attr-defined]
    Deviation("W4", "the answer is every text the model said, the one before a call too", kinds=("text and a call",))
]
overwrites_shared_ids = _agent("overwrites_shared_ids", overwrite=True)
clean = _agent("clean")
"""The same loop without defects."""
