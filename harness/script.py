"""A provider that replays a script of model turns: the test double for unit tests of agents.

Each scripted turn streams the way a real provider does (text and tool-call arguments arrive in
small deterministic chunks), so code that consumes ``message_update`` events is exercised too.
Ids that the script does not give are generated per provider instance (``call_1``, ``call_2``,
...), so the same script always produces the same trace.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Union, get_args

from pydantic import TypeAdapter
from pydantic_core import to_json

from harness._contract import ABORTED_MESSAGE
from openprogram.providers import ModelRequest
from openprogram.providers.builder import MessageBuilder
from openprogram.types import AssistantMessage, AssistantMessageEvent, Message, StopReason, Usage, trusted

__all__ = ["ScriptViolation", "ScriptedCall", "ScriptedProvider", "Turn", "TurnLike", "estimate_usage", "turn"]


@dataclass(frozen=True)
class ScriptedCall:
    """One tool call in a scripted turn. ``raw`` is argument text sent verbatim (maybe not JSON)."""

    name: str
    args: dict[str, Any] | None = None
    id: str | None = None
    raw: str | None = None

    def arguments_text(self) -> str:
        return self._text

    @functools.cached_property
    def _text(self) -> str:  # once per call: a scripted turn is sent (and its usage counted) as often as asked
        if self.raw is not None:
            return self.raw
        return json.dumps(self.args or {}, ensure_ascii=False)

    def describe(self) -> str:
        shown = self.raw if self.raw is not None else json.dumps(self.args or {}, ensure_ascii=False)
        return f"{self.name}({shown})" + (f" id={self.id}" if self.id else "")


@dataclass(frozen=True)
class Turn:
    """One model reply: text and thinking blocks and tool calls in order, and how it ended."""

    blocks: tuple[tuple[str, str] | ScriptedCall, ...] = ()
    stop_reason: StopReason = "stop"
    error: str | None = None
    respond: Callable[[ModelRequest], Any] | None = None
    usage: Usage | None = None

    def __post_init__(self) -> None:
        # Refused here, where the test is written, not mid-run when the provider streams it.
        if self.stop_reason not in _STOP_REASONS:
            raise ValueError(f"stop_reason {self.stop_reason!r} is not one of {', '.join(_STOP_REASONS)}")
        if self.error is not None and not isinstance(self.error, str):
            raise TypeError(f"an {self.stop_reason} turn's message is a str, got {self.error!r:.60}")
        if self.usage is not None and not isinstance(self.usage, Usage):
            raise TypeError(f"usage is an openprogram.types.Usage, got {type(self.usage).__name__}")
        for block in self.blocks:
            if isinstance(block, ScriptedCall):
                continue
            if not (isinstance(block, tuple) and len(block) == 2 and block[0] in ("text", "thinking")):
                raise TypeError(f"a turn's block is a call or ('text' | 'thinking', str), got {block!r:.60}")
            if not isinstance(block[1], str):
                raise TypeError(f"a turn's {block[0]} is a str, got {type(block[1]).__name__}: {block[1]!r:.60}")

    def describe(self) -> str:
        if self.respond is not None:
            return f"respond({getattr(self.respond, '__name__', 'fn')})"
        if self.stop_reason in ("error", "aborted"):
            return f"{self.stop_reason}({self.error!r})"
        parts = []
        for block in self.blocks:
            if isinstance(block, ScriptedCall):
                parts.append("call " + block.describe())
            else:
                kind, text = block
                parts.append(f"{kind} {text[:40]!r}")
        body = ", ".join(parts) or "empty"
        return body + (f" [{self.stop_reason}]" if self.stop_reason != "stop" else "")


TurnLike = Union[Turn, ScriptedCall, str]
_STOP_REASONS = get_args(StopReason)


class turn:
    """Builders for scripted model turns."""

    @staticmethod
    def text(
        text: str, *, thinking: str | None = None, stop_reason: StopReason = "stop", usage: Usage | None = None
    ) -> Turn:
        """A reply in text (optionally after visible thinking): the model chose to finish."""
        blocks: list[tuple[str, str]] = []
        if thinking is not None:
            blocks.append(("thinking", thinking))
        blocks.append(("text", text))
        return Turn(blocks=tuple(blocks), stop_reason=stop_reason, usage=usage)

    @staticmethod
    def thinking(thinking: str, *, text: str | None = None, usage: Usage | None = None) -> Turn:
        """A reply that shows reasoning and, unless ``text`` is given, no visible text at all."""
        blocks: list[tuple[str, str]] = [("thinking", thinking)]
        if text is not None:
            blocks.append(("text", text))
        return Turn(blocks=tuple(blocks), usage=usage)

    @staticmethod
    def tool_call(
        name: str, args: Mapping[str, Any] | None = None, /, *, call_id: str | None = None, **kwargs: Any
    ) -> ScriptedCall:
        """A pick of ``name``. Every keyword but ``call_id`` is an argument, so a tool parameter
        called ``id``, ``name`` or ``args`` is just a keyword; ``args`` (positional) is the dict form,
        merged under the keywords. Arguments that cannot be sent as JSON are refused here, where the
        test is written, not at request time in the middle of a run."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"turn.tool_call: the tool name must be a non-empty str, got {name!r:.60}")
        if args is not None and not isinstance(args, Mapping):
            raise TypeError(
                f"turn.tool_call({name!r}, ...): the arguments are a dict (or keywords), got {type(args).__name__}; "
                "for argument text that is not an object use turn.raw_tool_call"
            )
        _check_call_id(name, call_id)
        merged = {**(args or {}), **kwargs}
        try:
            text = json.dumps(merged, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"turn.tool_call({name!r}, ...): the arguments cannot be sent as JSON ({exc}); "
                "pass str, int, float, bool, None, lists and dicts with str keys"
            ) from None
        call = ScriptedCall(name=name, args=merged, id=call_id)
        call.__dict__["_text"] = text  # the check made the very text arguments_text() would: keep it
        return call

    @staticmethod
    def raw_tool_call(name: str, arguments_text: str, /, *, call_id: str | None = None) -> ScriptedCall:
        """A pick whose argument text is sent verbatim: for "the model sent broken JSON"."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"turn.raw_tool_call: the tool name must be a non-empty str, got {name!r:.60}")
        if not isinstance(arguments_text, str):
            raise TypeError(
                f"turn.raw_tool_call({name!r}, ...): the argument text is a str, got {type(arguments_text).__name__}; "
                "for a dict use turn.tool_call"
            )
        _check_call_id(name, call_id)
        return ScriptedCall(name=name, raw=arguments_text, id=call_id)

    @staticmethod
    def tool_calls(
        *calls: ScriptedCall, text: str | None = None, stop_reason: StopReason = "stop", usage: Usage | None = None
    ) -> Turn:
        """Several picks in one reply (parallel calls), optionally after some text."""
        for call in calls:
            if not isinstance(call, ScriptedCall):
                raise TypeError(f"turn.tool_calls takes turn.tool_call(...) values, got {call!r:.60}")
        blocks: list[tuple[str, str] | ScriptedCall] = [("text", text)] if text is not None else []
        blocks.extend(calls)
        return Turn(blocks=tuple(blocks), stop_reason=stop_reason, usage=usage)

    @staticmethod
    def error(message: str) -> Turn:
        """The provider fails this request (an ``error`` event): the run ends with reason ``error``."""
        return Turn(stop_reason="error", error=message)

    @staticmethod
    def aborted(message: str = ABORTED_MESSAGE) -> Turn:
        """The request is cancelled mid-way: the run ends with reason ``aborted``."""
        return Turn(stop_reason="aborted", error=message)

    @staticmethod
    def empty(stop_reason: StopReason = "stop") -> Turn:
        """A reply with no content at all (real models do send these)."""
        return Turn(blocks=(), stop_reason=stop_reason)

    @staticmethod
    def respond(fn: Callable[[ModelRequest], TurnLike]) -> Turn:
        """Decide the reply from the request (``fn(request) -> turn | str``), like FunctionModel."""
        if not callable(fn):
            raise TypeError("turn.respond takes a function of the request")
        return Turn(respond=fn)


def _check_call_id(name: str, call_id: Any) -> None:
    if call_id is not None and not isinstance(call_id, str):
        raise TypeError(f"turn.tool_call({name!r}, ...): call_id is a str, got {call_id!r:.60}")


def as_turn(value: Any, where: str) -> Turn:
    if isinstance(value, Turn):
        return value
    if isinstance(value, ScriptedCall):
        return Turn(blocks=(value,))
    if isinstance(value, str):
        return turn.text(value)
    raise TypeError(f"{where}: expected a turn (turn.text(...), turn.tool_call(...), ...) or a str, got {value!r:.80}")


def estimate_usage(request: ModelRequest, reply: Turn) -> Usage:
    """A deterministic stand-in for the token counts of a turn scripted without ``usage=``.

    An estimate, not a tokenizer: about four characters a token, as pydantic-ai's TestModel
    guesses. Input is the request as JSON (system prompt, history, tool schemas), output the
    reply's text, thinking and call arguments; an error or aborted turn produced no output. The
    same request and turn always give the same numbers, so a test may assert on them.
    """
    try:
        sent = len(request.model_dump_json(exclude={"extra"}))
    except Exception:  # an exotic message object: its text form is as stable
        sent = len(repr(request))
    return _usage(sent, reply)


def _usage(sent: int, reply: Turn) -> Usage:
    produced = 0
    if reply.stop_reason not in ("error", "aborted"):
        for block in reply.blocks:
            produced += (
                len(block.name) + len(block.arguments_text()) if isinstance(block, ScriptedCall) else len(block[1])
            )
    input_tokens, output_tokens = max(1, sent // 4), (produced + 3) // 4
    values = {"input": input_tokens, "output": output_tokens, "cache_read": 0, "cache_write": 0}
    values["total_tokens"] = input_tokens + output_tokens
    return trusted(Usage, values, ("input", "output", "total_tokens"))


_MESSAGE_JSON = TypeAdapter(Message)


def _json_length(message: Any) -> int:
    """The length of ``message`` as a request's JSON shows it (its own model's serializer, as in a list).

    A reply's fields dumped as a dict read the same (each block and the usage by its own model's
    serializer) in half the time: the tagged union of block types is most of a reply's dump.
    """
    if type(message) is AssistantMessage:
        data = to_json(message.__dict__)
        return len(data) if data.isascii() else len(data.decode())
    serializer = getattr(type(message), "__pydantic_serializer__", None)
    data = serializer.to_json(message) if serializer is not None else _MESSAGE_JSON.dump_json(message)
    return len(data) if data.isascii() else len(data.decode())


class _RequestSizer:
    """The length of ``request.model_dump_json(exclude={"extra"})``, in time linear in what is new.

    Each request repeats the whole history, so dumping it every round is quadratic in the rounds
    (it was most of a scripted round's cost). Messages are frozen: each one's JSON length is
    computed once; the rest of the request is dumped once while it stays the same. The JSON of
    the request is its fields with ``"messages":[]`` filled by the messages joined with commas.
    """

    def __init__(self) -> None:
        self._lengths: dict[int, tuple[Any, int]] = {}  # id -> (message kept alive, its JSON length)
        self._frame: tuple[Any, ...] | None = None
        self._frame_length = 0
        self._last: tuple[tuple[Any, ...], int] = ((), 0)  # the last history measured, and its messages' total

    def size(self, request: ModelRequest) -> int:
        try:
            frame = (
                request.model,
                request.system_prompt,
                request.tools,
                request.tool_choice,
                request.parallel_tool_calls,
                request.max_tokens,
                request.temperature,
            )
            if frame != self._frame:
                empty = request.model_copy(update={"messages": ()})
                self._frame_length = len(empty.model_dump_json(exclude={"extra"}))
                self._frame = frame
            messages = request.messages
            total = self._frame_length + max(0, len(messages) - 1)
            seen, seen_total = self._last
            if seen and len(messages) >= len(seen) and messages[: len(seen)] == seen:
                total += seen_total  # the history so far (the usual case: the last request plus the new turns)
                new = messages[len(seen) :]
            else:
                new = messages
            self._last = ((), 0)  # until this request is measured
            lengths = self._lengths
            for message in new:
                known = lengths.get(id(message))
                if known is None or known[0] is not message:
                    known = lengths[id(message)] = (message, _json_length(message))
                total += known[1]
            self._last = (messages, total - self._frame_length - max(0, len(messages) - 1))
            return total
        except Exception:  # an exotic message object: the one-shot form knows its fallback
            try:
                return len(request.model_dump_json(exclude={"extra"}))
            except Exception:
                return len(repr(request))


@dataclass(frozen=True)
class ScriptViolation:
    request_number: int
    message: str


class ScriptedProvider:
    """Answers request N with scripted turn N.

    ``strict=True``: a request beyond the script, or turns left unused, make ``assert_complete()``
    fail. Either way a request beyond the script is answered with an error turn naming the
    request number (never an ``IndexError``), so the run ends cleanly with reason ``error``.
    """

    name = "scripted"
    estimate_usage: ClassVar[bool] = True
    """Give a turn scripted without ``usage=`` the :func:`estimate_usage` counts (else zeros)."""

    def __init__(self, *turns: TurnLike, strict: bool = True, chunk_size: int = 16) -> None:
        if len(turns) == 1 and isinstance(turns[0], (list, tuple)):
            turns = tuple(turns[0])
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        self.turns: list[Turn] = [as_turn(t, f"turn {i + 1}") for i, t in enumerate(turns)]
        self.strict = strict
        self.chunk_size = chunk_size
        self.violations: list[ScriptViolation] = []
        self._requests: list[ModelRequest] = []
        self._next_id = 0
        self._sizer = _RequestSizer()

    def __repr__(self) -> str:
        return f"ScriptedProvider({len(self.turns)} turn(s), {len(self._requests)} request(s), strict={self.strict})"

    @property
    def requests(self) -> tuple[ModelRequest, ...]:
        """Every request received, in order. Each is frozen and holds the history as it was sent."""
        return tuple(self._requests)

    # -- inspection -----------------------------------------------------------------------
    @property
    def remaining(self) -> list[Turn]:
        return self.turns[len(self._requests) :]

    def assert_complete(self) -> None:
        """Fail if the agent asked more, or less, of the model than the script says."""
        problems = [v.message for v in self.violations]
        unused = self.remaining
        if unused:
            first = len(self.turns) - len(unused) + 1
            listed = "; ".join(f"turn {first + i}: {t.describe()}" for i, t in enumerate(unused))
            problems.append(f"{len(unused)} scripted turn(s) never requested ({listed})")
        if problems:
            raise AssertionError("ScriptedProvider script not followed: " + " | ".join(problems))

    def add(self, *turns: TurnLike) -> None:
        """Extend the script (for tests that build it as they go)."""
        self.turns.extend(as_turn(t, f"turn {len(self.turns) + i + 1}") for i, t in enumerate(turns))

    # -- the Provider protocol --------------------------------------------------------------
    async def stream(
        self, request: ModelRequest, cancel_event: asyncio.Event | None = None
    ) -> AsyncGenerator[AssistantMessageEvent, None]:
        number = len(self._requests) + 1
        self._requests.append(request)
        builder = MessageBuilder(model=request.model or "scripted", provider=self.name)
        if number > len(self.turns):
            yield builder.start()
            yield builder.error("error", self._beyond_the_script(number))
            return
        scripted = self._turn(number, request)
        if scripted.usage is not None:
            builder.usage = scripted.usage
        elif self.estimate_usage:
            builder.usage = _usage(self._sizer.size(request), scripted)  # == estimate_usage(request, scripted)
        yield builder.start()
        if scripted.stop_reason in ("error", "aborted"):
            yield builder.error(scripted.stop_reason, scripted.error or "")
            return
        start: AssistantMessageEvent
        delta: Callable[[int, str], AssistantMessageEvent]
        end: Callable[[int], AssistantMessageEvent]
        for block in scripted.blocks:
            if cancel_event is not None and cancel_event.is_set():
                yield builder.error("aborted", ABORTED_MESSAGE)
                return
            if isinstance(block, ScriptedCall):  # inlined: a call is most rounds, a generator per level is dear
                index, start = builder.toolcall_start(
                    self._generated_id() if block.id is None else block.id, block.name
                )
                yield start
                text = block.arguments_text()
                size = self.chunk_size
                for i in range(0, len(text), size):
                    yield builder.toolcall_delta(index, text[i : i + size])
                yield builder.toolcall_end(index)
            else:
                kind, text = block
                if kind == "thinking":
                    index, start = builder.thinking_start()
                    delta, end = builder.thinking_delta, builder.thinking_end
                else:
                    index, start = builder.text_start()
                    delta, end = builder.text_delta, builder.text_end
                yield start
                size = self.chunk_size
                for i in range(0, len(text), size):
                    yield delta(index, text[i : i + size])
                yield end(index)
        yield builder.done(scripted.stop_reason)

    def _beyond_the_script(self, number: int) -> str:
        """The error a request past the last turn gets (a violation too, when strict)."""
        text = (
            f"ScriptedProvider: request {number} is beyond the script "
            f"({len(self.turns)} turn(s) scripted); add a turn or check why the agent asked again"
        )
        if self.strict:
            self.violations.append(ScriptViolation(number, text))
        return text

    def _turn(self, number: int, request: ModelRequest) -> Turn:
        """Turn ``number``, its ``respond`` function (if any) asked for the turn to send."""
        scripted = self.turns[number - 1]
        if scripted.respond is not None:
            reply = scripted.respond(request)
            scripted = as_turn(reply, f"turn {number} (respond)")
            if scripted.respond is not None:
                raise TypeError(f"turn {number}: a respond function must return a turn, not another respond")
        return scripted

    def _generated_id(self) -> str:
        self._next_id += 1
        return f"call_{self._next_id}"
