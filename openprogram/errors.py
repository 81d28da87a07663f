"""How a failure that is reported instead of raised is put into words, written once.

The loop never lets a tool's or a provider's exception escape: each becomes text (a tool result
the model reads, an assistant message's ``error_message`` a person reads). The loop, the tools
and every SDK backend describe exceptions with :func:`describe_exception`, so the texts DESIGN
sections 3 and 4 pin cannot drift apart between them. This module imports nothing, so the lowest
of them may use it.
"""

from __future__ import annotations


class ReplyError(Exception):
    """A failure whose text is already the whole ``error_message`` (a stream cut after a 2xx, an
    error frame inside one): reported as it is, not re-described."""


def describe_exception(exc: BaseException, *, with_type: bool = True) -> str:
    """The text that stands for ``exc`` where it is reported instead of raised.

    Two contracts, one per reader, hence the flag:

    - ``with_type=True`` (the default): a provider failure, ``"<Type>: <text>"`` (DESIGN 4). It
      ends up in ``error_message``, read by a person debugging a run, for whom the type is half
      the story (``"TimeoutError: "`` says more than an empty text). A :class:`ReplyError`'s text
      is already complete and is kept as it is.
    - ``with_type=False``: a tool's failure, fed back to the model as the tool result (DESIGN 3):
      the exception's text alone, the words the tool's author wrote for that reader; its type
      name only when the text is empty, so the model is never handed an empty error.

    Either way an exception whose ``str()`` itself fails is reported by its type name: describing
    a failure must not raise a second one.
    """
    try:
        text = str(exc)
    except Exception:
        return type(exc).__name__
    if not with_type:
        return text or type(exc).__name__
    if isinstance(exc, ReplyError):
        return text
    return f"{type(exc).__name__}: {text}"


__all__ = ["ReplyError", "describe_exception"]
