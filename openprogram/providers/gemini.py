"""Gemini backend: google-genai's async ``generate_content`` / ``generate_content_stream``.

Gemini differs from the other backends in three ways this module absorbs, so the loop never sees
them: it sends no tool-call ids (except gemini-3.5), so ids are derived from the request and are
the same on every replay; it signs parts (``thought_signature``) and rejects a later request
whose function calls come back unsigned; and its stream repeats whole function-call parts rather
than argument fragments.

Signatures live in the message itself, not in a side table, so a history that was saved, replayed
or handed to a new provider object still round-trips. A signed thought part keeps its signature in
``ThinkingContent.signature``; a signed function call keeps it in ``ToolCall.thought_signature``.
A signed text part (``TextContent`` has no signature field) is preceded by a *signature carrier*:
``ThinkingContent(thinking="", signature=...)``; when the history is sent back, a carrier's
signature goes onto the part that follows it (or onto an empty text part when nothing follows,
which is what Gemini itself sends at the end of a stream). Histories saved before
``ToolCall.thought_signature`` existed carry a function call's signature in a carrier too, and
still send it back the same way.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Sequence
from typing import Any, ClassVar, TypeVar

try:
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
except ImportError as exc:  # pragma: no cover - exercised by simulating the missing extra
    raise ImportError(
        "The Gemini backend needs google-genai, an optional extra:"
        ' pip install -e ".[gemini]" in the openprogram checkout'
    ) from exc

from openprogram.errors import describe_exception
from openprogram.providers import ModelRequest, tool_choice
from openprogram.providers._shared import (
    CancelRace,
    Decoder,
    SDKProvider,
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
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

_T = TypeVar("_T")

STOP_REASONS: dict[str, StopReason] = {"STOP": "stop", "MAX_TOKENS": "length"}
"""Every other finish reason (safety, recitation, malformed or unexpected function call, ...) is an error."""


class GeminiProvider(SDKProvider[genai.Client]):
    """A :class:`~openprogram.providers.Provider` for Google's Gemini models.

    ``client`` is a ready ``google.genai.Client`` and is used as given. Without one, a client is
    built from ``client_kwargs`` (and the SDK's own environment variables, e.g.
    ``GEMINI_API_KEY``) once per event loop, because a nested synchronous ``runtime.exec`` runs
    a second loop on a helper thread and async HTTP pools cannot cross loops.
    """

    name: ClassVar[str] = "gemini"

    client_factory: ClassVar[Callable[..., Any]] = genai.Client

    def _describe(self, exc: Exception) -> str:
        return describe_error(exc)

    async def _reply(
        self, request: ModelRequest, model: str, builder: MessageBuilder, race: CancelRace
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        contents = convert_messages(request.messages)
        config = self._config(request)
        decoder = GeminiDecoder(builder, id_prefix=_turn_hash(model, contents))
        models = self._client_for_running_loop().aio.models
        if self.streaming:
            pump = _ChunkPump(
                await race.run(models.generate_content_stream(model=model, contents=contents, config=config))
            )
            try:
                while (chunk := await race.run(pump.next())) is not None:
                    for event in decoder.feed(chunk):
                        yield event
            finally:
                await pump.close()
            race.raise_if_cancelled()
            for event in decoder.finish():
                yield event
        else:
            response = await race.run(models.generate_content(model=model, contents=contents, config=config))
            *blocks, finish = decoder.whole(response)
            for event in blocks:
                yield event
            race.raise_if_cancelled()  # a consumer that cancelled on a block's event gets an abort
            yield finish

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
            fields["tools"] = convert_tools(request.tools)
            choice = tool_choice.gemini(request.tool_choice, request.parallel_tool_calls)
            if choice:
                fields["tool_config"] = choice
        fields.update(request.extra)
        return genai_types.GenerateContentConfig(**fields)


# -- request conversion ---------------------------------------------------------------------------


def convert_tools(tools: Iterable[ToolSpec]) -> list[genai_types.Tool]:
    """Our JSON Schema goes through ``parameters_json_schema`` untouched: no lossy OpenAPI rewrite."""
    declarations = [
        genai_types.FunctionDeclaration(
            name=spec.name, description=spec.description or None, parameters_json_schema=spec.parameters
        )
        for spec in tools
    ]
    return [genai_types.Tool(function_declarations=declarations)]


def convert_messages(messages: Sequence[Message]) -> list[genai_types.Content]:
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
            signature = _decode_signature(block.thought_signature) if own else None
            parts.append(genai_types.Part(function_call=call, thought_signature=signature or carried))
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


class GeminiDecoder(Decoder):
    """Gemini responses (one, or the chunks of a stream) as builder calls.

    Streamed text parts are deltas and are joined into one block; a function call arrives whole,
    so it opens and closes a tool-call block at once.
    """

    def __init__(self, builder: MessageBuilder, *, id_prefix: str) -> None:
        super().__init__(builder)
        self._id_prefix = id_prefix
        self._open: int | None = None  # the text or thinking block later parts extend
        self._open_signed = False
        self._calls = 0
        self._finish_reason: str | None = None
        self._finish_message: str | None = None
        self._block_reason: str | None = None
        self._whole = False

    def feed(self, response: genai_types.GenerateContentResponse) -> list[AssistantMessageEvent]:
        events: list[AssistantMessageEvent] = []
        if response.usage_metadata is not None:
            self.builder.usage = _usage(response.usage_metadata)
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

    def whole(self, response: genai_types.GenerateContentResponse) -> list[AssistantMessageEvent]:
        self._whole = True
        return [*self.feed(response), *self.finish()]

    def finish(self) -> list[AssistantMessageEvent]:
        events = self._close()
        builder = self.builder
        reason = self._finish_reason
        if self._block_reason is not None and not builder.has_content:
            events.append(builder.error("error", f"Gemini blocked the prompt: {self._block_reason}"))
        elif reason in STOP_REASONS:
            events.append(builder.done(STOP_REASONS[reason]))
        elif reason in (None, "FINISH_REASON_UNSPECIFIED") and builder.has_tool_calls and self._whole:
            events.append(builder.done("stop"))
        elif reason in (None, "FINISH_REASON_UNSPECIFIED") and self._whole:
            events.append(builder.error("error", "Gemini response ended without a finish reason"))
        elif reason in (None, "FINISH_REASON_UNSPECIFIED"):
            # Gemini closes every stream with a chunk carrying the finish reason: without it the
            # stream was cut, and calls received so far may be only some of the reply's calls.
            events.append(builder.error("error", "Gemini stream ended without a finish reason (stream cut?)"))
        else:
            detail = f": {self._finish_message}" if self._finish_message else ""
            events.append(builder.error("error", f"Gemini finished with {reason}{detail}"))
        return events

    def _part(self, part: genai_types.Part) -> list[AssistantMessageEvent]:
        builder = self.builder
        signature = _encode_signature(part.thought_signature)
        events: list[AssistantMessageEvent] = []
        if part.function_call is not None:
            events += self._close()
            call = part.function_call
            call_id = call.id or f"call_{self._id_prefix}_{self._calls}"
            self._calls += 1
            arguments = dict(call.args or {})
            events += builder.whole_toolcall(call_id, call.name or "", arguments, thought_signature=signature)
        elif part.text is not None and part.thought:
            if self._open_signed:
                events += self._close()  # a signature closes its thought: never concatenate two of them
            index = self._ensure_open(ThinkingContent, events)
            if part.text:
                events.append(builder.thinking_delta(index, part.text))
            if signature is not None:
                builder.thinking_signature(index, signature)
                self._open_signed = True
        elif part.text is not None:
            if signature is not None:
                events += [*self._close(), *builder.whole_thinking("", signature)]  # the signature carrier
            if part.text:
                index = self._ensure_open(TextContent, events)
                events.append(builder.text_delta(index, part.text))
        return events

    def _ensure_open(self, kind: type, events: list[AssistantMessageEvent]) -> int:
        """The open block if it is of ``kind``, else a new one (its start event goes to ``events``)."""
        if self._open is not None and isinstance(self.builder.block(self._open), kind):
            return self._open
        events += self._close()
        start = self.builder.text_start if kind is TextContent else self.builder.thinking_start
        self._open, opened = start()
        events.append(opened)
        return self._open

    def _close(self) -> list[AssistantMessageEvent]:
        index, self._open, self._open_signed = self._open, None, False
        return [] if index is None else self.builder.close(index)


def _usage(meta: genai_types.GenerateContentResponseUsageMetadata) -> Usage:
    """``input`` excludes cached tokens (as on Anthropic and Bedrock); thoughts are billed as output."""
    cached = meta.cached_content_token_count or 0
    prompt = (meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0)
    output = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
    return usage_with_cached_prompt(prompt, output, cached, meta.total_token_count)


def _enum_name(value: Any) -> str:
    return str(getattr(value, "value", value))


# -- errors and cancellation ---------------------------------------------------------------------


def describe_error(error: BaseException) -> str:
    """``HTTP <code> <STATUS>: <Gemini's message>``, plus the retry delay a 429 asks for."""
    if not isinstance(error, genai_errors.APIError):
        return describe_exception(error)  # transport failures, a cut stream, bad config
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


__all__ = ["STOP_REASONS", "GeminiDecoder", "GeminiProvider", "convert_messages", "convert_tools", "describe_error"]
