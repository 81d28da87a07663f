"""Gemini backend: google-genai's async ``generate_content`` / ``generate_content_stream``.

Gemini differs from the other backends in three ways this module absorbs, so the loop never sees
them: it sends no tool-call ids (except gemini-3.5), so ids are derived from the request and are
the same on every replay; it signs parts (``thought_signature``) and rejects a later request
whose function calls come back unsigned; and its stream repeats whole function-call parts rather
than argument fragments.

Signatures live in the message itself, not in a side table, so a history that was saved, replayed
or handed to a new provider object still round-trips. A signed thought part keeps its signature in
``ThinkingContent.signature``. A signed non-thought part (a function call or a text part) is
preceded by a *signature carrier*: ``ThinkingContent(thinking="", signature=...)``; when the
history is sent back, a carrier's signature goes onto the part that follows it (or onto an empty
text part when nothing follows, which is what Gemini itself sends at the end of a stream).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from typing import Any, ClassVar, TypeVar

try:
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
except ImportError as exc:  # pragma: no cover - exercised by simulating the missing extra
    raise ImportError(
        'The Gemini backend needs google-genai, an optional extra: pip install "openprogram[gemini]"'
    ) from exc

from openprogram.providers import ModelRequest, tool_choice
from openprogram.providers._shared import (
    CancelRace,
    SDKProvider,
    describe_exception,
    http_error_text,
    merge_same_role,
    retry_after,
    usage_with_cached_prompt,
)
from openprogram.providers.builder import MessageBuilder
from openprogram.types import (
    AssistantMessage,
    AssistantMessageEvent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

_T = TypeVar("_T")

_STOP_REASONS = {"STOP": "stop", "MAX_TOKENS": "length"}
"""Every other finish reason (safety, recitation, malformed or unexpected function call, ...) is an error."""


class GeminiProvider(SDKProvider[genai.Client]):
    """A :class:`~openprogram.providers.Provider` for Google's Gemini models.

    ``client`` is a ready ``google.genai.Client`` and is used as given. Without one, a client is
    built from ``client_kwargs`` (and the SDK's own environment variables, e.g.
    ``GEMINI_API_KEY``) once per event loop, because a nested synchronous ``runtime.exec`` runs
    a second loop on a helper thread and async HTTP pools cannot cross loops.
    """

    name: ClassVar[str] = "gemini"

    def _build_client(self) -> genai.Client:
        return genai.Client(**self._client_kwargs)

    def _describe(self, exc: Exception) -> str:
        if isinstance(exc, genai_errors.APIError):
            return describe_api_error(exc)
        return describe_exception(exc)  # transport failures, a cut stream, bad config

    async def _reply(
        self, request: ModelRequest, model: str, builder: MessageBuilder, race: CancelRace
    ) -> AsyncIterator[AssistantMessageEvent]:
        contents = to_gemini_contents(request.messages)
        config = self._config(request)
        reader = _ReplyReader(builder, id_prefix=_turn_hash(model, contents))
        models = self._client_for_running_loop().aio.models
        if self.streaming:
            pump = _ChunkPump(
                await race.run(models.generate_content_stream(model=model, contents=contents, config=config))
            )
            try:
                while (chunk := await race.run(pump.next())) is not None:
                    for event in reader.feed(chunk):
                        yield event
            finally:
                await pump.close()
        else:
            response = await race.run(models.generate_content(model=model, contents=contents, config=config))
            for event in reader.feed(response):
                yield event
        race.raise_if_cancelled()
        for event in reader.finish():
            yield event

    def _config(self, request: ModelRequest) -> genai_types.GenerateContentConfig:
        fields: dict[str, Any] = {
            "automatic_function_calling": genai_types.AutomaticFunctionCallingConfig(disable=True),
        }
        if request.system_prompt:
            fields["system_instruction"] = request.system_prompt
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens is not None:
            fields["max_output_tokens"] = max_tokens
        if request.temperature is not None:
            fields["temperature"] = request.temperature
        if request.tools:
            fields["tools"] = [to_gemini_tool(request.tools)]
            choice = tool_choice.gemini(request.tool_choice, request.parallel_tool_calls)
            if choice:
                fields["tool_config"] = choice
        fields.update(request.extra)
        return genai_types.GenerateContentConfig(**fields)


# -- request conversion ---------------------------------------------------------------------------


def to_gemini_tool(tools: Iterable[ToolSpec]) -> genai_types.Tool:
    """Our JSON Schema goes through ``parameters_json_schema`` untouched: no lossy OpenAPI rewrite."""
    return genai_types.Tool(
        function_declarations=[
            genai_types.FunctionDeclaration(
                name=spec.name, description=spec.description or None, parameters_json_schema=spec.parameters
            )
            for spec in tools
        ]
    )


def to_gemini_contents(messages: Sequence[Message]) -> list[genai_types.Content]:
    """Map the loop's history to Gemini contents, merging neighbours of the same role.

    Gemini wants the function responses of one batch in a single user content; merging every
    run of same-role messages gives that, and also keeps a steering message that follows the
    batch in the same turn. Assistant messages that ended in error or abort are dropped: their
    calls never got results, and Gemini rejects a call without its response.
    """
    return [genai_types.Content(role=role, parts=parts) for role, parts in merge_same_role(messages, _turn)]


def _turn(message: Message) -> tuple[str, list[genai_types.Part]]:
    if isinstance(message, UserMessage):
        return "user", _user_parts(message)
    if isinstance(message, ToolResultMessage):
        return "user", [_tool_result_part(message)]
    return "model", _assistant_parts(message)


def _user_parts(message: UserMessage) -> list[genai_types.Part]:
    if isinstance(message.content, str):
        return [genai_types.Part(text=message.content)]
    return [genai_types.Part(text=block.text) for block in message.content]


def _tool_result_part(message: ToolResultMessage) -> genai_types.Part:
    key = "error" if message.is_error else "result"
    return genai_types.Part(
        function_response=genai_types.FunctionResponse(
            id=message.tool_call_id, name=message.tool_name, response={key: message.text}
        )
    )


def _assistant_parts(message: AssistantMessage) -> list[genai_types.Part]:
    # Signatures are only meaningful to the model family that made them: a history produced by
    # another provider is sent without them (and without its thinking).
    own = message.provider in ("", GeminiProvider.name)
    parts: list[genai_types.Part] = []
    carried: bytes | None = None
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if not own:
                continue
            signature = _decode_signature(block.signature)
            if block.thinking:
                parts.append(genai_types.Part(text=block.thinking, thought=True, thought_signature=signature))
            elif signature is not None:
                carried = signature
        elif isinstance(block, TextContent):
            if block.text or carried is not None:
                parts.append(genai_types.Part(text=block.text, thought_signature=carried))
                carried = None
        elif isinstance(block, ToolCall):
            call = genai_types.FunctionCall(id=block.id, name=block.name, args=dict(block.arguments))
            parts.append(genai_types.Part(function_call=call, thought_signature=carried))
            carried = None
    if carried is not None:
        parts.append(genai_types.Part(text="", thought_signature=carried))
    return parts


def _decode_signature(signature: str | None) -> bytes | None:
    if not signature:
        return None
    try:
        return base64.b64decode(signature, validate=True)
    except ValueError:
        return base64.urlsafe_b64decode(signature)


def _encode_signature(signature: bytes | None) -> str | None:
    return base64.b64encode(signature).decode("ascii") if signature else None


def _turn_hash(model: str, contents: list[genai_types.Content]) -> str:
    """A digest of the request, so generated call ids are unique per turn and identical on replay."""
    payload = json.dumps(
        [model, [content.model_dump(mode="json", exclude_none=True) for content in contents]],
        sort_keys=True,
        ensure_ascii=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


# -- response reading ------------------------------------------------------------------------------


class _ReplyReader:
    """Turns Gemini responses (one, or the chunks of a stream) into builder events.

    Streamed text parts are deltas and are joined into one block; a function call arrives whole,
    so it opens and closes a tool-call block at once.
    """

    def __init__(self, builder: MessageBuilder, *, id_prefix: str) -> None:
        self._builder = builder
        self._id_prefix = id_prefix
        self._open: tuple[str, int] | None = None
        self._open_signed = False
        self._calls = 0
        self._finish_reason: str | None = None
        self._finish_message: str | None = None
        self._block_reason: str | None = None

    def feed(self, response: genai_types.GenerateContentResponse) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        if response.usage_metadata is not None:
            self._builder.usage = _usage(response.usage_metadata)
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self._block_reason = " ".join(
                filter(None, [_enum_name(feedback.block_reason), feedback.block_reason_message])
            )
        if not response.candidates:
            return events
        candidate = response.candidates[0]
        parts = candidate.content.parts if candidate.content is not None else None
        for part in parts or ():
            events.extend(self._part(part))
        if candidate.finish_reason is not None:
            self._finish_reason = _enum_name(candidate.finish_reason)
            self._finish_message = candidate.finish_message
        return events

    def finish(self) -> list[AssistantMessageEvent]:
        events = list(self._close())
        builder = self._builder
        has_calls = any(isinstance(block, ToolCall) for block in builder.snapshot().content)
        reason = self._finish_reason
        if self._block_reason is not None and not builder.has_content:
            events.append(builder.error("error", f"Gemini blocked the prompt: {self._block_reason}"))
        elif reason in _STOP_REASONS:
            events.append(builder.done(_STOP_REASONS[reason]))  # type: ignore[arg-type]
        elif reason in (None, "FINISH_REASON_UNSPECIFIED") and has_calls:
            events.append(builder.done("stop"))
        elif reason in (None, "FINISH_REASON_UNSPECIFIED"):
            events.append(builder.error("error", "Gemini response ended without a finish reason"))
        else:
            detail = f": {self._finish_message}" if self._finish_message else ""
            events.append(builder.error("error", f"Gemini finished with {reason}{detail}"))
        return events

    def _part(self, part: genai_types.Part) -> Iterator[AssistantMessageEvent]:
        signature = _encode_signature(part.thought_signature)
        if part.function_call is not None:
            yield from self._close()
            if signature is not None:
                yield from self._carrier(signature)
            yield from self._function_call(part.function_call)
        elif part.text is not None and part.thought:
            yield from self._thinking(part.text, signature)
        elif part.text is not None:
            if signature is not None:
                yield from self._close()
                yield from self._carrier(signature)
            if part.text:
                index = yield from self._ensure_open("text")
                yield self._builder.text_delta(index, part.text)

    def _thinking(self, text: str, signature: str | None) -> Iterator[AssistantMessageEvent]:
        if self._open is not None and self._open[0] == "thinking" and self._open_signed:
            yield from self._close()  # a signature closes its thought: never concatenate two of them
        index = yield from self._ensure_open("thinking")
        if text:
            yield self._builder.thinking_delta(index, text)
        if signature is not None:
            self._builder.thinking_signature(index, signature)
            self._open_signed = True

    def _function_call(self, call: genai_types.FunctionCall) -> Iterator[AssistantMessageEvent]:
        call_id = call.id or f"call_{self._id_prefix}_{self._calls}"
        self._calls += 1
        arguments = dict(call.args or {})
        index, event = self._builder.toolcall_start(call_id, call.name or "")
        yield event
        yield self._builder.toolcall_delta(index, json.dumps(arguments, ensure_ascii=False))
        yield self._builder.toolcall_end(index, arguments=arguments)

    def _carrier(self, signature: str) -> Iterator[AssistantMessageEvent]:
        index, event = self._builder.thinking_start()
        yield event
        self._builder.thinking_signature(index, signature)
        yield self._builder.thinking_end(index)

    def _ensure_open(self, kind: str) -> Iterator[AssistantMessageEvent]:
        """Open a block of ``kind`` unless one is open already; evaluates to its index."""
        if self._open is not None and self._open[0] == kind:
            return self._open[1]
        yield from self._close()
        if kind == "text":
            index, event = self._builder.text_start()
        else:
            index, event = self._builder.thinking_start()
        yield event
        self._open = (kind, index)
        return index

    def _close(self) -> Iterator[AssistantMessageEvent]:
        if self._open is None:
            return
        kind, index = self._open
        self._open = None
        self._open_signed = False
        yield self._builder.text_end(index) if kind == "text" else self._builder.thinking_end(index)


def _usage(meta: genai_types.GenerateContentResponseUsageMetadata) -> Usage:
    """``input`` excludes cached tokens (as on Anthropic and Bedrock); thoughts are billed as output."""
    cached = meta.cached_content_token_count or 0
    prompt = (meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0)
    output = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
    return usage_with_cached_prompt(prompt, output, cached, meta.total_token_count)


def _enum_name(value: Any) -> str:
    return str(getattr(value, "value", value))


# -- errors and cancellation ---------------------------------------------------------------------


def describe_api_error(error: genai_errors.APIError) -> str:
    """``HTTP <code> <STATUS>: <Gemini's message>``, plus the retry delay a 429 asks for."""
    return http_error_text(error.code, error.status or None, str(error.message or error.details), _retry_after(error))


def _retry_after(error: genai_errors.APIError) -> str | None:
    headers = getattr(error.response, "headers", None)
    if headers is not None:
        with contextlib.suppress(Exception):  # whatever response object the SDK's HTTP library gave
            delay = retry_after(headers)
            if delay is not None:
                return delay
    details = error.details.get("error", error.details) if isinstance(error.details, dict) else {}
    for detail in details.get("details", ()) if isinstance(details, dict) else ():
        if isinstance(detail, dict) and detail.get("retryDelay"):
            return str(detail["retryDelay"])
    return None


class _ChunkPump:
    """Reads the SDK's chunk stream in a task of its own, so it can always be stopped cleanly.

    The SDK stream is a chain of nested async generators ending in the HTTP response. Closing the
    outer generator while it is parked at a ``yield`` leaves the inner ones (and the connection)
    open until garbage collection. Cancelling a task that is awaiting the next chunk instead
    unwinds the whole chain at once, and the response is closed by the SDK's own ``finally``.
    """

    def __init__(self, chunks: AsyncIterator[_T]) -> None:
        self._queue: asyncio.Queue[tuple[Any, BaseException | None]] = asyncio.Queue()
        self._task = asyncio.ensure_future(self._pump(chunks))

    async def _pump(self, chunks: AsyncIterator[Any]) -> None:
        try:
            async for chunk in chunks:
                self._queue.put_nowait((chunk, None))
        except Exception as error:
            self._queue.put_nowait((None, error))
        else:
            self._queue.put_nowait((None, None))

    async def next(self) -> Any:
        """The next chunk, ``None`` at the end; re-raises what the stream raised."""
        chunk, error = await self._queue.get()
        if error is not None:
            raise error
        return chunk

    async def close(self) -> None:
        self._task.cancel()
        await asyncio.wait({self._task})


__all__ = ["GeminiProvider", "describe_api_error", "to_gemini_contents", "to_gemini_tool"]
