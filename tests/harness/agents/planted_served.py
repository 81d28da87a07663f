"""Loops over the official ``openai`` SDK for what a campaign serves and how it says what it found
(issue 35): a menu with a tool declared ``strict: true``, a loop that gives each call a turn of its
own, and one that retries a failing reply until its own step limit.

- ``strict_agent``: a clean loop whose ``add`` is declared ``strict: true`` (OpenAI's structured
  outputs) and ``lookup`` not; it keeps the argument text every ``add`` call came with
  (``ADD_ARGUMENTS``), so a test can check that none failed the schema.
- ``moves_calls``: sends a reply's calls back one per assistant message, each followed by its
  result: no call is lost, each has been moved to a turn of its own (W2 says so).
- ``retries_failures``: streams; a reply that fails (a stream cut inside an event, an error) is
  asked for again, up to 12 times: served the same failing reply forever it never ends (W3 names
  the repeated reply); served one cut and then a whole answer, it returns that answer.
- ``blanks_answers``: asks twice, sending the first answer back as an empty assistant message: W2
  counts that message as the wire carries it.
"""

from __future__ import annotations

import copy
from typing import Any

import openai

from tests.harness.agents.planted import READ_TIMEOUT, TOOLS, _answer_or_results, _complete, _execute, answer_calls

STRICT_TOOLS: list[dict[str, Any]] = copy.deepcopy(TOOLS)
STRICT_TOOLS[0]["function"]["strict"] = True
ADD_SCHEMA: dict[str, Any] = STRICT_TOOLS[0]["function"]["parameters"]
ADD_ARGUMENTS: list[str] = []
"""The argument text of every ``add`` call ``strict_agent`` was sent."""


def _client(base_url: str, api_key: str, http_client: Any) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
    )


def strict_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    client = _client(base_url, api_key, http_client)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        completion = client.chat.completions.create(model="gpt-test", messages=messages, tools=STRICT_TOOLS)
        for call in completion.choices[0].message.tool_calls or []:
            if call.type == "function" and call.function.name == "add":
                ADD_ARGUMENTS.append(call.function.arguments)
        answer = _answer_or_results(messages, completion)
        if answer is not None:
            return answer
    raise RuntimeError("no answer after 20 rounds")


def moves_calls(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    client = _client(base_url, api_key, http_client)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        message = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS).choices[0].message
        calls = [c for c in message.tool_calls or [] if c.type == "function"]
        if not calls:
            return message.content or ""
        for call in calls:  # the defect: each call in an assistant turn of its own, its result after it
            messages.append({"role": "assistant", "content": None, "tool_calls": [call.model_dump()]})
            result = _execute(call.function.name, call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise RuntimeError("no answer after 20 rounds")


def retries_failures(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    client = _client(base_url, api_key, http_client)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(12):
        try:
            text, calls, finish = _complete(client, messages, waits=True)
        except openai.APIError:
            continue  # any failure is asked again, until the step limit
        if finish is None:
            continue  # a stream cut before its finish reason: asked again too
        if not calls:
            return text
        answer_calls(messages, text, calls)
    raise RuntimeError("no answer after 12 steps")


def blanks_answers(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """After a text answer it asks again, sending that answer back as an empty assistant message."""
    client = _client(base_url, api_key, http_client)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(2):
        message = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS).choices[0].message
        messages.append({"role": "assistant", "content": ""})  # the defect: the text is not kept
    return message.content or ""
