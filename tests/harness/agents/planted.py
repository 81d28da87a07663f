"""A small tool-call loop over the official ``openai`` SDK, with one defect per wire invariant to
plant on demand: what the wire campaign must find (and what the loop without them must pass).

``make(*defects)`` builds the agent callable ``agent(prompt, *, base_url, api_key, http_client)``;
the defects are the ways real loops go wrong, one per invariant:

- ``drop_second_result`` (W1): of several calls in one reply, only the first result is sent back;
- ``resend_without_result`` (W1): a call whose argument text is not JSON gets no result at all;
- ``rewrite_history`` (W2): an assistant message with calls is stored without its text;
- ``loop_on_unknown_tool`` (W3): after an unknown tool the loop never accepts an answer again;
- ``return_cut_text`` (W5): a stream cut before its finish reason is returned as the answer;
- ``retry_without_wait`` (W6): rate limits are retried at once, ignoring ``Retry-After``;
- ``keep_text_on_stream_error`` (W5): an error event inside a stream (the ``openai`` SDK raises
  ``APIError`` on it) ends the reply, and the text streamed before it is taken as the answer.

It retries 429, 500 and 503 itself (after their ``Retry-After``; not a 429 ``insufficient_quota``,
which no retry gets past), with the SDK's own retries off:
the SDK backs off for half a second and more on a dropped connection, which would make the
campaign slow without testing anything of the loop. Every loop here reads with a timeout
(:data:`READ_TIMEOUT`), as a careful engineer's does: a stream that stalls, open and silent, ends
its run (the SDK raises ``APITimeoutError``) instead of holding it for good.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import anthropic
import openai

READ_TIMEOUT = 0.75
"""Seconds a loop waits for the next bytes: above a slow first byte (0.3 s, with room for a loaded
machine), far below the time bound."""
LOOPBACK_READ_TIMEOUT = 2.0
"""The same for a client served on loopback (botocore, google-genai): a real socket under a loaded
machine (the suite's xdist workers) can take longer than 0.75 s for a whole reply, which read as a
stall made a correct loop raise; still far below the time bound."""

DEFECTS = (
    "drop_second_result",
    "resend_without_result",
    "rewrite_history",
    "loop_on_unknown_tool",
    "return_cut_text",
    "retry_without_wait",
    "keep_text_on_stream_error",
)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
        },
    },
]


def _execute(name: str, text: str) -> str:
    try:
        args = json.loads(text or "{}")
    except ValueError:
        return "error: the arguments are not JSON"
    if not isinstance(args, dict):
        return "error: the arguments are not an object"
    if name == "add":
        if set(args) != {"a", "b"} or not all(type(v) is int for v in args.values()):
            return "error: add takes integers a and b"
        return str(args["a"] + args["b"])
    if name == "lookup":
        if not isinstance(args.get("word"), str):
            return "error: lookup takes a word"
        return f"{args['word']}: a word"
    return f"error: no tool named {name}"


def answer_calls(messages: list[dict[str, Any]], text: str, calls: list[dict[str, Any]]) -> None:
    """A reply's calls sent back as a correct chat loop sends them: the assistant message holding
    them, then one result per call, by its id."""
    messages.append({"role": "assistant", "content": text or None, "tool_calls": calls})
    for call in calls:
        result = _execute(call["function"]["name"], call["function"]["arguments"])
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


class CutStream(RuntimeError):
    """The stream ended before its finish reason: the reply is not complete."""


class Filtered(RuntimeError):
    """The provider's content filter withheld the reply (``finish_reason: content_filter``): the
    text it left is not an answer."""


def make(*defects: str, max_rounds: int = 20) -> Callable[..., str]:
    unknown = set(defects) - set(DEFECTS)
    if unknown:
        raise ValueError(f"unknown defects {sorted(unknown)}")

    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        client = openai.OpenAI(
            base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
        )
        waits = "retry_without_wait" not in defects
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        insist = False
        for _ in range(max_rounds):
            text, calls, finish = _complete(client, messages, waits, "keep_text_on_stream_error" in defects)
            if finish is None and "return_cut_text" not in defects:
                raise CutStream(f"the stream ended without a finish reason after {text!r}")
            if not calls:
                if insist:
                    messages += [{"role": "assistant", "content": text}, {"role": "user", "content": "Use a tool."}]
                    continue
                return text
            stored = None if "rewrite_history" in defects else (text or None)
            messages.append({"role": "assistant", "content": stored, "tool_calls": calls})
            for position, call in enumerate(calls):
                name, arguments = call["function"]["name"], call["function"]["arguments"]
                if position > 0 and "drop_second_result" in defects:
                    break
                if "resend_without_result" in defects:
                    try:
                        json.loads(arguments)
                    except ValueError:
                        continue
                if name not in ("add", "lookup") and "loop_on_unknown_tool" in defects:
                    insist = True
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": _execute(name, arguments)})
        raise RuntimeError(f"no answer after {max_rounds} rounds")

    agent.__name__ = "planted_" + ("_".join(defects) or "none")
    return agent


def _complete(
    client: openai.OpenAI, messages: list[dict[str, Any]], waits: bool, keep_text: bool = False
) -> tuple[str, list[Any], str | None]:
    for attempt in range(3):
        try:
            stream = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS, stream=True)
            break
        except openai.APIStatusError as exc:
            if not retryable(exc) or attempt == 2:
                raise
            if waits:
                time.sleep(float(exc.response.headers.get("retry-after") or 1))
    text, calls, finish, refusal = "", {}, None, ""
    chunks = iter(stream)
    while True:
        try:
            chunk = next(chunks)
        except StopIteration:
            break
        except openai.APIError as exc:
            if not keep_text or isinstance(exc, openai.APIConnectionError):  # a dropped connection raises too
                raise
            return text, [], "stop"
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        text += choice.delta.content or ""
        refusal += choice.delta.refusal or ""
        add_call_deltas(calls, choice)
        finish = choice.finish_reason or finish
    if finish == "content_filter":
        raise Filtered(f"the provider's content filter withheld the reply after {text!r}")
    # a refusal's message comes in its own field, content null: it is the model's answer
    return text or refusal, [calls[i] for i in sorted(calls)], finish


def retryable(exc: openai.APIStatusError) -> bool:
    """A rate limit or a server error, which a later try may get past; not a 429 whose code is
    ``insufficient_quota`` (the account is out of credit: the same request fails the same way, W7)."""
    body = exc.body if isinstance(exc.body, dict) else {}
    return exc.status_code in (429, 500, 503) and body.get("code") != "insufficient_quota"


def add_call_deltas(calls: dict[int, dict[str, Any]], choice: Any) -> None:
    """A streamed chunk's tool-call deltas joined into ``calls`` by index, as the SDK's own helpers do."""
    for delta in choice.delta.tool_calls or []:
        slot = calls.setdefault(delta.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        slot["id"] = delta.id or slot["id"]
        if delta.function is not None:
            slot["function"]["name"] += delta.function.name or ""
            slot["function"]["arguments"] += delta.function.arguments or ""


def _answer_or_results(messages: list[dict[str, Any]], completion: Any) -> str | None:
    """A reply without calls is the answer; otherwise its calls are run and the reply and their
    results appended to ``messages`` for the next request (``None``)."""
    if completion.choices[0].finish_reason == "content_filter":
        raise Filtered("the provider's content filter withheld the reply")
    message = completion.choices[0].message
    calls = [c for c in message.tool_calls or [] if c.type == "function"]
    if not calls:
        return str(message.content or message.refusal or "")
    messages.append(message.model_dump(exclude_none=True))
    for call in calls:
        result = _execute(call.function.name, call.function.arguments)
        messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return None


agent = make()
"""The loop without defects: the campaign must find nothing."""

drop_second_result = make("drop_second_result")
resend_without_result = make("resend_without_result")
rewrite_history = make("rewrite_history")
loop_on_unknown_tool = make("loop_on_unknown_tool")
return_cut_text = make("return_cut_text")
retry_without_wait = make("retry_without_wait")
keep_text_on_stream_error = make("keep_text_on_stream_error")
"""Each defect alone, by name, for ``harness fuzz --agent tests.harness.agents.planted:NAME``."""


async def async_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The same loop, asynchronous and not streamed: it is given an ``httpx2.AsyncClient``."""
    client = openai.AsyncOpenAI(
        base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        for attempt in range(3):
            try:
                completion = await client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
                break
            except openai.APIStatusError as exc:
                if not retryable(exc) or attempt == 2:
                    raise
                await asyncio.sleep(float(exc.response.headers.get("retry-after") or 1))
        answer = _answer_or_results(messages, completion)
        if answer is not None:
            return answer
    raise RuntimeError("no answer after 20 rounds")


def loopback_agent(prompt: str, *, base_url: str, api_key: str) -> str:
    """The clean loop as an agent that builds its own HTTP client: served on a loopback port."""
    return agent(prompt, base_url=base_url, api_key=api_key)


_ANTHROPIC_TOOLS = [
    {
        "name": t["function"]["name"],
        "description": t["function"]["description"],
        "input_schema": t["function"]["parameters"],
    }
    for t in TOOLS
]


async def anthropic_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The clean loop over the ``anthropic`` SDK, streamed: the Anthropic wire, where a cut stream
    loses ``message_delta`` (the stop reason) and ``message_stop``."""
    client = anthropic.AsyncAnthropic(
        base_url=base_url, api_key=api_key, http_client=http_client, max_retries=2, timeout=READ_TIMEOUT
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        async with client.messages.stream(
            model="claude-test", max_tokens=100, messages=messages, tools=_ANTHROPIC_TOOLS
        ) as stream:
            message = await stream.get_final_message()
        if message.stop_reason is None:
            raise CutStream("the stream ended without a stop reason")
        uses = [block for block in message.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in message.content if block.type == "text")
        messages.append(
            {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]}
        )
        results = [
            {"type": "tool_result", "tool_use_id": block.id, "content": _execute(block.name, json.dumps(block.input))}
            for block in uses
        ]
        messages.append({"role": "user", "content": results})
    raise RuntimeError("no answer after 20 rounds")


_RESPONSES_TOOLS = [{"type": "function", **t["function"]} for t in TOOLS]


def _responses(prompt: str, base_url: str, api_key: str, http_client: Any, stale: bool) -> str:
    client = openai.OpenAI(
        base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
    )
    first = response = client.responses.create(model="gpt-test", input=prompt, tools=_RESPONSES_TOOLS)
    for _ in range(20):
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return _responses_answer(response)
        outputs = [
            {"type": "function_call_output", "call_id": call.call_id, "output": _execute(call.name, call.arguments)}
            for call in calls
        ]
        previous = first.id if stale else response.id
        response = client.responses.create(
            model="gpt-test", input=outputs, tools=_RESPONSES_TOOLS, previous_response_id=previous
        )
    raise RuntimeError("no answer after 20 rounds")


def _responses_answer(response: Any) -> str:
    """A Responses reply without calls as the answer: its text, or its refusal's message; a reply
    the content filter left incomplete is none."""
    details = response.incomplete_details
    if response.status == "incomplete" and details is not None and details.reason == "content_filter":
        raise Filtered("the provider's content filter withheld the reply")
    refusals = [
        p.refusal for item in response.output if item.type == "message" for p in item.content if p.type == "refusal"
    ]
    return str(response.output_text or "".join(refusals))


def referencing_responses_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The loop on the Responses API resending its history each round, each earlier output item as
    an ``item_reference`` to what OpenAI stored (as the AI SDK does); ``lose_call`` planted: the
    call items are left out of the history (W2)."""
    return _referencing(prompt, base_url, api_key, http_client, lose_call=False)


def lossy_referencing_responses_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The referencing loop that references only an earlier reply's messages, not its calls (W2)."""
    return _referencing(prompt, base_url, api_key, http_client, lose_call=True)


def _referencing(prompt: str, base_url: str, api_key: str, http_client: Any, lose_call: bool) -> str:
    client = openai.OpenAI(
        base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
    )
    history: list[Any] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        response = client.responses.create(model="gpt-test", input=history, tools=_RESPONSES_TOOLS)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return _responses_answer(response)
        history += [
            {"type": "item_reference", "id": item.id}
            for item in response.output
            if item.id and not (lose_call and item.type == "function_call")
        ]
        history += [
            {"type": "function_call_output", "call_id": call.call_id, "output": _execute(call.name, call.arguments)}
            for call in calls
        ]
    raise RuntimeError("no answer after 20 rounds")


def responses_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The loop on the Responses API, the history kept on the server (``previous_response_id``)."""
    return _responses(prompt, base_url, api_key, http_client, stale=False)


def stale_responses_agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The same loop always continuing from the first response: the stored history it names leaves
    out every round after the first (W2)."""
    return _responses(prompt, base_url, api_key, http_client, stale=True)


_GEMINI_TOOLS = [
    {"function_declarations": [{k: t["function"][k] for k in ("name", "description", "parameters")} for t in TOOLS]}
]


def gemini_agent(prompt: str, *, base_url: str, api_key: str) -> str:
    """The clean loop over ``google-genai`` on Gemini's ``generateContent``, on loopback. A reply
    with neither text nor calls (``MALFORMED_FUNCTION_CALL``: arguments Gemini could not make a
    JSON object of) is asked again, as pydantic-ai does; results go back by name, ids when given."""
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url=base_url, retry_options=types.HttpRetryOptions(attempts=1), timeout=int(LOOPBACK_READ_TIMEOUT * 1000)
    )
    client = genai.Client(api_key=api_key, http_options=options)
    contents: list[Any] = [{"role": "user", "parts": [{"text": prompt}]}]
    config = types.GenerateContentConfig(tools=_GEMINI_TOOLS)  # type: ignore[arg-type]
    for _ in range(20):
        response = client.models.generate_content(model="gemini-2.5-flash", contents=contents, config=config)
        if response.prompt_feedback is not None and response.prompt_feedback.block_reason is not None:
            raise Filtered(f"the prompt was blocked ({response.prompt_feedback.block_reason})")
        content = response.candidates[0].content if response.candidates else None
        parts = list(content.parts or []) if content is not None else []
        calls = [p.function_call for p in parts if p.function_call is not None]
        if not calls:
            text = "".join(p.text or "" for p in parts)
            if text:
                return text
            continue
        contents.append(content)
        contents.append(
            {
                "role": "user",
                "parts": [
                    {
                        "function_response": {
                            "id": call.id,
                            "name": call.name,
                            "response": {"result": _execute(call.name or "", json.dumps(call.args or {}))},
                        }
                    }
                    for call in calls
                ],
            }
        )
    raise RuntimeError("no answer after 20 rounds")


# -- agents the verdicts must stay right about (issue 26) --------------------------------------------


def slow_retry(prompt: str, *, base_url: str, api_key: str) -> str:
    """A plain SDK loop that waits 3 s before retrying a 429, whatever ``Retry-After`` says: under
    a 1 s time bound its run is abandoned, and its retry arrives during a later conversation."""
    client = openai.OpenAI(base_url=f"{base_url}/v1", api_key=api_key, max_retries=0, timeout=READ_TIMEOUT)
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        try:
            completion = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
        except openai.RateLimitError:
            time.sleep(3)
            continue
        answer = _answer_or_results(messages, completion)
        if answer is not None:
            return answer
    raise RuntimeError("no answer after 20 rounds")


def executor_agent(prompt: str, *, base_url: str, api_key: str) -> str:
    """A synchronous agent running its own event loop in a ``ThreadPoolExecutor`` thread, as some
    frameworks' sync entry points do, and backing off 120 s after a 429: nothing can cancel that
    thread, and ``concurrent.futures`` joins it when the interpreter exits."""
    from concurrent.futures import ThreadPoolExecutor

    async def run() -> str:
        client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key=api_key, max_retries=0, timeout=READ_TIMEOUT)
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for _ in range(20):
            try:
                completion = await client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
            except openai.RateLimitError:
                time.sleep(120)  # a blocking back-off: not even the thread's own loop can cancel it
                continue
            answer = _answer_or_results(messages, completion)
            if answer is not None:
                return answer
        raise RuntimeError("no answer after 20 rounds")

    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(asyncio.run, run()).result()
    finally:
        pool.shutdown(wait=False)


def _options(base_url: str) -> dict[str, Any]:
    from typing import Union, cast

    return {"base_url": base_url, "kind": cast(Any, Union)()}  # raises TypeError, as a framework's option did


def _client(base_url: str, api_key: str) -> openai.OpenAI:
    return openai.OpenAI(api_key=api_key, **_options(base_url))


def raises_deep(prompt: str, *, base_url: str, api_key: str) -> str:
    """An agent whose every run raises two calls deep, before any request: ``TypeError: Cannot
    instantiate typing.Union``, which says nothing about base URLs. It logs and warns first, as
    frameworks do."""
    import logging
    import warnings

    logging.getLogger("planted.framework").warning("building the client for %s", base_url)
    warnings.warn("planted: this framework's option is deprecated", UserWarning, stacklevel=1)
    completion = _client(base_url, api_key).chat.completions.create(model="gpt-test", messages=[])
    return completion.choices[0].message.content or ""


def chatty(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The clean loop, printing a line per run and logging a warning per run, as a framework that
    reports every model name does: its output must not flood the campaign's summary."""
    import logging

    print(f"chatty: starting a run on {base_url}")
    logging.getLogger("planted.chatty").warning("chatty: a run")
    return agent(prompt, base_url=base_url, api_key=api_key, http_client=http_client)


def all_the_text(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """A loop that returns every text the model said in the run, not only the last reply's (W4 by
    design, as frameworks that keep the preamble of a call do), declared for "text and a call"."""
    client = openai.OpenAI(
        base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    said: list[str] = []
    for _ in range(20):
        text, calls, finish = _complete(client, messages, waits=True)
        if finish is None:
            raise CutStream(f"the stream ended without a finish reason after {text!r}")
        if text:
            said.append(text)
        if not calls:
            return " ".join(said)
        answer_calls(messages, text, calls)
    raise RuntimeError("no answer after 20 rounds")


def _is_httpx(client: Any, name: str) -> bool:
    """``isinstance(client, httpx.<name>)``, as a framework checks it (no httpx installed: never)."""
    try:
        import httpx  # type: ignore[import-not-found, unused-ignore]  # absent where only httpx2 is installed
    except ImportError:
        return False
    return isinstance(client, getattr(httpx, name))


def httpx_only(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """A framework that takes an ``http_client`` only when it is a real ``httpx.Client`` and
    silently builds its own otherwise (as some check ``isinstance``)."""
    if not _is_httpx(http_client, "Client"):
        http_client = None
    return agent(prompt, base_url=base_url, api_key=api_key, http_client=http_client)


async def async_httpx_only(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The async form: an ``http_client`` that is not an ``httpx.AsyncClient`` is silently dropped."""
    if not _is_httpx(http_client, "AsyncClient"):
        http_client = None
    return await async_agent(prompt, base_url=base_url, api_key=api_key, http_client=http_client)


_CACHED: dict[str, openai.OpenAI] = {}
"""Issue 35's framework: model clients cached across conversations, keyed by the model alone."""


def cached_client(prompt: str, *, base_url: str, api_key: str) -> str:
    """The clean loop (not streamed) on a client cached by model name, not by base URL: run
    long-lived (``serve_lines``), every conversation after the first sends its requests to the
    first one's URL. The campaign must say inconclusive, naming the shared state, not green."""
    client = _CACHED.setdefault(
        "gpt-test", openai.OpenAI(base_url=f"{base_url}/v1", api_key=api_key, max_retries=0, timeout=READ_TIMEOUT)
    )
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    for _ in range(20):
        completion = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS)
        answer = _answer_or_results(messages, completion)
        if answer is not None:
            return answer
    raise RuntimeError("no answer after 20 rounds")


def _read_settings(number: int) -> dict[str, Any]:
    raise ValueError(f"settings of conversation {number}: no model configured")


def _profile(number: int) -> str:
    profiles: dict[str, str] = {}
    return profiles[f"profile-{number % 2}"]


def raises_mostly(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
    """The clean loop in one conversation of three; the others raise before their first request,
    in one of two places (a ``ValueError`` reading settings, a ``KeyError`` looking a profile up),
    as a framework misconfigured for most inputs does. Too little is tested to say "held"."""
    number = int(base_url.rstrip("/").rsplit("/", 1)[-1])
    if number % 3 == 2:
        _read_settings(number)
    if number % 3 == 0:
        _profile(number)
    return agent(prompt, base_url=base_url, api_key=api_key, http_client=http_client)


if __name__ == "__main__":  # python -m tests.harness.agents.planted NAME: the long-lived mode's loop
    import sys

    from harness.agents import serve_lines

    serve_lines(globals()[sys.argv[1]])


DEEP_ROUNDS = 4
"""Tool rounds a deep-defect agent handles correctly before its defect shows."""


def make_deep(defect: str) -> Callable[..., str]:
    """The loop of :func:`make`, correct for its first :data:`DEEP_ROUNDS` tool rounds, then with
    ``defect`` (``retry_without_wait``: W6; ``return_cut_text``: W5): a bug only a long
    conversation reaches, so a campaign from scratch (a few replies per conversation) misses it and
    one seeded by a recording of five rounds or more finds it."""

    def agent(prompt: str, *, base_url: str, api_key: str, http_client: Any = None) -> str:
        client = openai.OpenAI(
            base_url=f"{base_url}/v1", api_key=api_key, http_client=http_client, max_retries=0, timeout=READ_TIMEOUT
        )
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        for rounds in range(20):
            deep = rounds >= DEEP_ROUNDS
            text, calls, finish = _complete(client, messages, waits=not (deep and defect == "retry_without_wait"))
            if finish is None and not (deep and defect == "return_cut_text"):
                raise CutStream(f"the stream ended without a finish reason after {text!r}")
            if not calls:
                return text
            answer_calls(messages, text, calls)
        raise RuntimeError("no answer after 20 rounds")

    agent.__name__ = f"deep_{defect}"
    return agent


deep_retry_without_wait = make_deep("retry_without_wait")
deep_return_cut_text = make_deep("return_cut_text")
"""Each deep defect by name, for ``harness fuzz --agent tests.harness.agents.planted:NAME --from-cassette FILE``."""


def bedrock_agent(prompt: str, *, base_url: str, api_key: str) -> str:
    """The loop on Bedrock's Converse API through ``boto3`` (one attempt: botocore's own retries
    would back off for seconds on every drawn error status)."""
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "bedrock-runtime",
        endpoint_url=base_url,
        config=Config(retries={"max_attempts": 0}, read_timeout=LOOPBACK_READ_TIMEOUT),
        region_name="us-east-1",
        aws_access_key_id="emulated",
        aws_secret_access_key="emulated",
    )
    specs = [
        {"toolSpec": {"name": t["function"]["name"], "inputSchema": {"json": t["function"]["parameters"]}}}
        for t in TOOLS
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": prompt}]}]
    for _ in range(20):
        reply = client.converse(modelId="m-1", messages=messages, toolConfig={"tools": specs})
        if reply["stopReason"] == "guardrail_intervened":
            raise Filtered("a guardrail withheld the reply")
        content = reply["output"]["message"]["content"]
        uses = [block["toolUse"] for block in content if "toolUse" in block]
        if not uses:
            return "".join(block.get("text", "") for block in content)
        messages.append({"role": "assistant", "content": content})
        results = [
            {
                "toolResult": {
                    "toolUseId": u["toolUseId"],
                    "content": [{"text": _execute(u["name"], json.dumps(u["input"]))}],
                }
            }
            for u in uses
        ]
        messages.append({"role": "user", "content": results})
    raise RuntimeError("no answer after 20 rounds")
