"""Loops that break on replies the provider documents as well-formed (issue 36): each a correct
loop with one defect, beside its correct twin, for the default wire campaign to tell apart.

- ``index_every_chunk`` (W8): OpenAI chat streamed with ``stream_options.include_usage``, reading
  ``chunk.choices[0]`` on every chunk; the last one, the usage-only chunk, has ``choices: []``.
- ``raise_on_unknown_event`` (W8): a hand-rolled Anthropic SSE reader whose ``match`` on the event
  name raises on a name it does not know; Anthropic documents that new event types may be added.
- ``last_chunk_calls`` (W1): ``google-genai`` streaming, keeping the calls of the last chunk that
  had any; Gemini streams calls one a chunk (an older model sends them together, so only the
  campaign's interleaved kind shows it).

Each twin retries nothing and raises on what is not whole (a cut stream, an error), as a careful
loop does; every one has a read timeout, so a stalled stream ends the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import openai

from tests.harness.agents.planted import (
    _ANTHROPIC_TOOLS,
    _GEMINI_TOOLS,
    LOOPBACK_READ_TIMEOUT,
    READ_TIMEOUT,
    TOOLS,
    CutStream,
    Filtered,
    _execute,
    add_call_deltas,
    answer_calls,
)

ROUNDS = 20


# -- OpenAI chat, streamed with usage ----------------------------------------------------------------


def _chat(index_every_chunk: bool) -> Callable[..., str]:
    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        client = openai.OpenAI(
            base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
        )
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for _ in range(ROUNDS):
            stream = client.chat.completions.create(
                model="gpt-test", messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True}
            )
            text, refusal, calls, finish = "", "", {}, None
            for chunk in stream:
                if not chunk.choices and not index_every_chunk:
                    continue  # the usage-only chunk: choices is empty there, as OpenAI documents
                choice = chunk.choices[0]
                text += choice.delta.content or ""
                refusal += getattr(choice.delta, "refusal", None) or ""
                add_call_deltas(calls, choice)
                finish = choice.finish_reason or finish
            if finish is None:
                raise CutStream(f"the stream ended without a finish reason after {text!r}")
            if finish == "content_filter":
                raise Filtered(f"the provider's content filter withheld the reply after {text!r}")
            if not calls:
                return text or refusal
            ordered = [calls[i] for i in sorted(calls)]
            answer_calls(messages, text, ordered)
        raise RuntimeError(f"no answer after {ROUNDS} rounds")

    return agent


index_every_chunk = _chat(index_every_chunk=True)
chat_with_usage = _chat(index_every_chunk=False)
"""The twin: skips a chunk without choices."""


# -- Anthropic Messages, read by hand ----------------------------------------------------------------


class StreamError(RuntimeError):
    """The provider's in-band ``error`` event."""


def _anthropic(raise_on_unknown: bool) -> Callable[..., str]:
    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        client = http_client or httpx2.Client(timeout=READ_TIMEOUT)
        headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for _ in range(ROUNDS):
            body = {"model": "claude-test", "max_tokens": 100, "messages": messages, "tools": _ANTHROPIC_TOOLS}
            with client.stream(
                "POST", f"{base_url}/v1/messages", json={**body, "stream": True}, headers=headers, timeout=READ_TIMEOUT
            ) as r:
                if r.status_code != 200:
                    raise RuntimeError(f"HTTP {r.status_code}: {r.read()[:200]!r}")
                blocks, stop = _read_message(r.iter_lines(), raise_on_unknown)
            if stop is None:
                raise CutStream("the stream ended without a stop reason")
            uses = [b for b in blocks if b["type"] == "tool_use"]
            if not uses:
                return "".join(b["text"] for b in blocks if b["type"] == "text")
            messages.append({"role": "assistant", "content": blocks})
            results = [
                {"type": "tool_result", "tool_use_id": b["id"], "content": _execute(b["name"], json.dumps(b["input"]))}
                for b in uses
            ]
            messages.append({"role": "user", "content": results})
        raise RuntimeError(f"no answer after {ROUNDS} rounds")

    return agent


def _read_message(lines: Any, raise_on_unknown: bool) -> tuple[list[dict[str, Any]], str | None]:
    """The content blocks and the stop reason of one streamed message (``None``: it never came)."""
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    stop, name = None, ""
    for line in lines:
        if line.startswith("event:"):
            name = line[6:].strip()
            continue
        if not line.startswith("data:"):
            continue
        data = json.loads(line[5:])
        match name:
            case "message_start" | "ping" | "message_stop":
                pass
            case "content_block_start":
                blocks.append(dict(data["content_block"]))
                partial[data["index"]] = ""
            case "content_block_delta":
                delta = data["delta"]
                if delta["type"] == "text_delta":
                    blocks[data["index"]]["text"] += delta["text"]
                elif delta["type"] == "input_json_delta":
                    partial[data["index"]] += delta["partial_json"]
            case "content_block_stop":
                block = blocks[data["index"]]
                if block["type"] == "tool_use":
                    block["input"] = json.loads(partial[data["index"]] or "{}")
            case "message_delta":
                stop = data["delta"].get("stop_reason") or stop
            case "error":
                raise StreamError(data["error"]["message"])
            case _ if raise_on_unknown:
                raise ValueError(f"unexpected event {name!r}")
            case _:
                pass  # Anthropic: "new event types may be added; handle unknown ones gracefully"
    kept = [{k: b[k] for k in ("type", "text", "id", "name", "input") if k in b} for b in blocks]
    return [b for b in kept if b["type"] != "text" or b["text"]], stop


raise_on_unknown_event = _anthropic(raise_on_unknown=True)
anthropic_by_hand = _anthropic(raise_on_unknown=False)
"""The twin: ignores an event it does not know."""


# -- Gemini, streamed with google-genai --------------------------------------------------------------


def _gemini(last_chunk_calls: bool) -> Callable[..., str]:
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
        config = types.GenerateContentConfig(tools=_GEMINI_TOOLS)  # type: ignore[arg-type]
        for _ in range(ROUNDS):
            text, calls, finish = "", [], None
            for chunk in client.models.generate_content_stream(
                model="gemini-2.0-flash", contents=contents, config=config
            ):
                candidate = chunk.candidates[0] if chunk.candidates else None
                parts = candidate.content.parts or [] if candidate and candidate.content else []
                text += "".join(part.text or "" for part in parts if not part.thought)
                found = [part.function_call for part in parts if part.function_call is not None]
                if last_chunk_calls:
                    calls = found or calls  # the defect: each chunk with calls replaces the ones before
                else:
                    calls += found
                finish = (candidate.finish_reason if candidate else None) or finish
            if finish is None:
                raise CutStream("the stream ended without a finish reason")
            if not calls:
                if text:
                    return text
                continue  # MALFORMED_FUNCTION_CALL: neither text nor calls, asked again
            parts: list[Any] = [{"text": text}] if text else []
            parts += [{"function_call": {"id": c.id, "name": c.name, "args": c.args or {}}} for c in calls]
            contents.append({"role": "model", "parts": parts})
            responses = [
                {
                    "function_response": {
                        "id": c.id,
                        "name": c.name,
                        "response": {"result": _execute(c.name or "", json.dumps(c.args or {}))},
                    }
                }
                for c in calls
            ]
            contents.append({"role": "user", "parts": responses})
        raise RuntimeError(f"no answer after {ROUNDS} rounds")

    return agent


last_chunk_calls = _gemini(last_chunk_calls=True)
gemini_streamed = _gemini(last_chunk_calls=False)
"""The twin: gathers the calls of every chunk."""
