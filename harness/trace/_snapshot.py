"""A run as a small, stable value for snapshot tests: ``Trace.snapshot()`` / ``snapshot_json()``.

``Trace.to_json()`` is the complete record (every streaming event with its partial message, every
request with the whole history and the tool schemas), which is what the determinism check and
the diff need, and far too much to keep in a snapshot file or review in a pull request: a
two-request run is kilobytes, mostly partials. The snapshot keeps what a reviewer reads:

- ``reason`` and ``error``: how the run ended;
- ``messages``: the messages the run committed, in order;
- ``requests``: per model call, the tool names offered, the options set, how many messages were
  sent, and only the messages the previous request had not already sent (``repeats`` says how
  many leading ones it repeated), so a long conversation does not grow the snapshot quadratically;
- ``ledger``: what the tool bodies really did (``None`` when nobody kept a ledger);
- ``nested``: each run started from inside a tool, with its end reason and messages.

Values equal to their defaults are left out (an empty usage, ``is_error: false``, a ``None``
``raw_arguments``); a text-only content is one string. Timestamps stay: a run under the
harness's clocks stamps the same values every time, and they show the order things happened.
Keys come in a fixed order, so ``snapshot_json()`` gives the same bytes for the same run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from openprogram.providers import ModelRequest
from openprogram.types import Message, TextContent


class TraceParts(Protocol):
    """What a snapshot reads of a ``harness.trace.Trace`` (named by shape: trace imports this module)."""

    @property
    def reason(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def new_messages(self) -> Sequence[Message]: ...
    @property
    def requests(self) -> Sequence[ModelRequest]: ...
    @property
    def ledger(self) -> Sequence[Any] | None: ...


class RunParts(Protocol):
    """What a snapshot reads of a nested run (a ``harness.trace.RunView``)."""

    label: str

    @property
    def end(self) -> Any | None: ...
    @property
    def committed(self) -> list[Message]: ...


def snapshot(trace: TraceParts, nested: Sequence[RunParts] = ()) -> dict[str, Any]:
    """The conversation of ``trace`` without streaming detail: JSON-able, keys in a fixed order.

    ``Trace.snapshot()`` is the way to call it: it passes the nested runs, split out of the events.
    """
    requests: list[dict[str, Any]] = []
    previous: Sequence[Message] = ()
    for request in trace.requests:
        requests.append(snapshot_request(request, previous))
        previous = request.messages
    return {
        "reason": trace.reason,
        "error": trace.error,
        "messages": [snapshot_message(m) for m in trace.new_messages],
        "requests": requests,
        "ledger": None if trace.ledger is None else [entry.model_dump(mode="json") for entry in trace.ledger],
        "nested": [
            {
                "run": run.label,
                "reason": run.end.reason if run.end is not None else None,
                "messages": [snapshot_message(m) for m in run.committed],
            }
            for run in nested
        ],
    }


def snapshot_message(message: Message) -> dict[str, Any]:
    """One message: its role first, then the fields that differ from their defaults."""
    data: dict[str, Any] = {"role": message.role}
    data.update(message.model_dump(mode="json", exclude_defaults=True))
    content = getattr(message, "content", None)
    if isinstance(content, tuple):
        if len(content) == 1 and isinstance(content[0], TextContent):
            data["content"] = content[0].text
        else:  # keep each block's type, which exclude_defaults would drop
            data["content"] = [{"type": b.type, **b.model_dump(mode="json", exclude_defaults=True)} for b in content]
    return data


def snapshot_request(request: ModelRequest, previous: Sequence[Message] = ()) -> dict[str, Any]:
    """One request: the tools' names, the options set, and the messages ``previous`` lacked."""
    repeats = 0
    for sent, before in zip(request.messages, previous, strict=False):
        if sent != before:
            break
        repeats += 1
    data: dict[str, Any] = {"tools": [tool.name for tool in request.tools]}
    data.update(request.model_dump(mode="json", exclude_defaults=True, exclude={"messages", "tools"}))
    data["message_count"] = len(request.messages)
    data["repeats"] = repeats
    data["messages"] = [snapshot_message(m) for m in request.messages[repeats:]]
    return data
