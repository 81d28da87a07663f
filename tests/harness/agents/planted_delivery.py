"""Loops whose defects only the network's delivery shows (issue 36): bytes cut at any boundary,
and a stream that stalls, open and silent. Each has its correct twin, which a default campaign
must find nothing in.

- ``whole_events``: a hand-rolled SSE reader over ``httpx2`` (OpenAI chat, streamed) that takes
  each chunk it reads as whole lines: it splits the chunk on newlines and skips what is not a
  whole ``data:`` line (it raises on a whole line that is not JSON, as the twin does). An event
  cut across two reads is lost, so the answer it returns is not the one sent
  (W4; a lost call: W1). ``buffered_events`` is its twin: it keeps what a read leaves over and
  parses only whole events, as the SSE specification reads a stream.
- ``no_read_timeout``: the ``openai`` SDK loop built with the SDK's default timeout (ten minutes):
  a stream that stalls holds its run past any time bound (W3). ``with_read_timeout`` is its twin
  (:data:`tests.harness.agents.planted.READ_TIMEOUT`): the stall raises ``APITimeoutError``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx2
import openai

from tests.harness.agents.planted import READ_TIMEOUT, TOOLS, CutStream, _complete, answer_calls


class StreamError(RuntimeError):
    """The stream said it failed (an in-band error event), or carried an event that is not JSON."""


def _lines_per_read(reads: Iterable[bytes]) -> Iterator[bytes]:
    """The defect: every read taken as whole lines. It splits the read on newlines, drops what
    follows the last one (a line not finished yet, as it takes it) and skips the lines that are no
    ``data:`` field (the rest of an event the read before began): an event cut across reads is lost."""
    for chunk in reads:
        for line in chunk.split(b"\n")[:-1]:
            if line.startswith(b"data:"):
                yield line[5:].strip()


def _whole_events(reads: Iterable[bytes]) -> Iterator[bytes]:
    """Events as the SSE specification reads them: bytes buffered across reads, an event ending at
    a blank line, its ``data:`` lines joined; decoded only once whole."""
    buffer = b""
    for chunk in reads:
        buffer += chunk.replace(b"\r\n", b"\n")
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            data = b"\n".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
            if data:
                yield data


def _sse_agent(events_of: Callable[[Iterable[bytes]], Iterator[bytes]]) -> Callable[..., str]:
    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        client = http_client or httpx2.Client()
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for _ in range(20):
            text, calls = _round(client, f"{base_url}/v1/chat/completions", api_key, messages, events_of)
            if not calls:
                return text
            answer_calls(messages, text, calls)
        raise RuntimeError("no answer after 20 rounds")

    return agent


def _round(
    client: httpx2.Client,
    url: str,
    api_key: str,
    messages: list[dict[str, Any]],
    events_of: Callable[[Iterable[bytes]], Iterator[bytes]],
) -> tuple[str, list[dict[str, Any]]]:
    """One streamed request (429/500/503 retried after their ``Retry-After``): its text and calls."""
    body = {"model": "gpt-test", "messages": messages, "tools": TOOLS, "stream": True}
    headers = {"authorization": f"Bearer {api_key}"}
    for attempt in range(3):
        with client.stream("POST", url, json=body, headers=headers, timeout=READ_TIMEOUT) as response:
            out_of_quota = response.status_code == 429 and b"insufficient_quota" in response.read()  # no retry helps
            if response.status_code in (429, 500, 503) and attempt < 2 and not out_of_quota:
                time.sleep(float(response.headers.get("retry-after") or 1))
                continue
            if response.status_code != 200:
                raise StreamError(f"HTTP {response.status_code}: {response.read()[:200]!r}")
            return _read(events_of(response.iter_raw()))
    raise StreamError("no reply after 3 attempts")


def _read(events: Iterator[bytes]) -> tuple[str, list[dict[str, Any]]]:
    text, refusal, calls, finish, done = "", "", {}, None, False
    for data in events:
        if data == b"[DONE]":
            done = True
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            raise StreamError(f"an event that is not JSON: {data[:80]!r}") from None
        if "error" in chunk:
            raise StreamError(f"the stream failed: {chunk['error']}")
        for choice in chunk.get("choices") or []:
            text += (choice.get("delta") or {}).get("content") or ""
            refusal += (choice.get("delta") or {}).get("refusal") or ""  # the model's refusal, for the user to read
            for delta in (choice.get("delta") or {}).get("tool_calls") or []:
                slot = calls.setdefault(
                    delta["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                )
                slot["id"] = delta.get("id") or slot["id"]
                function = delta.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if not done and finish is None:
        raise CutStream(f"the stream ended without a finish reason after {text!r}")
    if finish == "content_filter":
        raise StreamError(f"the provider's content filter withheld the reply after {text!r}")
    return text or refusal, [calls[i] for i in sorted(calls)]


whole_events = _sse_agent(_lines_per_read)
whole_events.__name__ = "whole_events"
buffered_events = _sse_agent(_whole_events)
buffered_events.__name__ = "buffered_events"


def _sdk_agent(timeout: float | None) -> Callable[..., str]:
    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        given: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        client = openai.OpenAI(
            base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, **given
        )
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for _ in range(20):
            text, calls, finish = _complete(client, messages, waits=True)
            if finish is None:
                raise CutStream(f"the stream ended without a finish reason after {text!r}")
            if not calls:
                return text
            answer_calls(messages, text, calls)
        raise RuntimeError("no answer after 20 rounds")

    return agent


no_read_timeout = _sdk_agent(None)
no_read_timeout.__name__ = "no_read_timeout"
with_read_timeout = _sdk_agent(READ_TIMEOUT)
with_read_timeout.__name__ = "with_read_timeout"
