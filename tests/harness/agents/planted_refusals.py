"""Loops over the official SDKs that meet a refusal: the provider refusing a request for good (W7)
or the model declining to answer (the refusal rule, DESIGN 6). One defect each, and its correct twin.

- ``retries_every_error`` (W7): every error status is retried, a 401 and a quota 429 included, so
  the same doomed request goes out again; ``gives_up`` is its twin, retrying only what a later try
  may get past (a rate limit, a server error) and raising on the rest.
- ``resets_after_refusal``: over the ``anthropic`` SDK, on ``stop_reason: refusal`` the loop drops
  the refused turn and asks again rephrased, as Anthropic documents; it must hold (W2 allows it).
- ``hides_refusal`` (W4): reads only ``message.content``, so OpenAI's refusal (content null, the
  text in ``message.refusal``) comes back as an empty answer; ``tells_refusal`` is its twin.
"""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic
import openai

from tests.harness.agents.planted import _ANTHROPIC_TOOLS, READ_TIMEOUT, TOOLS, _answer_or_results, _execute, retryable


def _loop(prompt: str, base_url: str, api_key: str, http_client: Any, *, retry_all: bool, hide: bool = False) -> str:
    client = openai.OpenAI(
        base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        for attempt in range(3):
            try:
                completion = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
                break
            except openai.APIStatusError as exc:
                if attempt == 2 or not (retry_all or retryable(exc)):
                    raise
                time.sleep(float(exc.response.headers.get("retry-after") or 0.05))
        message = completion.choices[0].message
        if message.refusal is not None:  # the defect: content alone is read, and it is null
            return str(message.content or "") if hide else f"The model declined: {message.refusal}"
        answer = _answer_or_results(messages, completion)
        if answer is not None:
            return answer
    raise RuntimeError("no answer after 20 rounds")


def retries_every_error(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    return _loop(prompt, base_url, api_key, http_client, retry_all=True)


def gives_up(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    return _loop(prompt, base_url, api_key, http_client, retry_all=False)


def hides_refusal(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    return _loop(prompt, base_url, api_key, http_client, retry_all=False, hide=True)


tells_refusal = gives_up
"""The twin of ``hides_refusal``: it returns the refusal's message, in its own words."""

RESETS: list[int] = []
"""How many times ``resets_after_refusal`` reset its context: a test checks the reset happened."""


async def resets_after_refusal(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The refused turn dropped and the prompt asked again rephrased, once; a second refusal ends
    the run with a message saying so."""
    client = anthropic.AsyncAnthropic(
        base_url=base_url, api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    reset = False
    for _ in range(20):
        message = await client.messages.create(
            model="claude-test", max_tokens=100, messages=messages, tools=_ANTHROPIC_TOOLS
        )
        if message.stop_reason == "refusal":
            if reset:
                return "The model declined this request."
            reset = True
            RESETS.append(1)
            messages = [{"role": "user", "content": f"{prompt} (asked again, rephrased)"}]
            continue
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in message.content if block.type == "text")
        messages.append(
            {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]}
        )
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": _execute(b.name, json.dumps(b.input))} for b in uses
        ]
        messages.append({"role": "user", "content": results})
    raise RuntimeError("no answer after 20 rounds")
