"""One way to put a reported failure into words, with the two texts DESIGN 3 and 4 pin: a
provider's failure as ``<Type>: <text>`` for the person reading ``error_message``, a tool's as
its own text (its type name when that is empty) for the model."""

from __future__ import annotations

import pytest

from openprogram.errors import ReplyError, describe_exception


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() itself fails")


class Quiet(Exception):
    pass


@pytest.mark.parametrize(
    ("exc", "provider_text", "tool_text"),
    [
        (TimeoutError("slow"), "TimeoutError: slow", "slow"),
        (Quiet(), "Quiet: ", "Quiet"),
        (Unprintable("x"), "Unprintable", "Unprintable"),
        (ReplyError("stream ended early"), "stream ended early", "stream ended early"),
        (ReplyError(), "", "ReplyError"),
    ],
)
def test_the_provider_and_the_tool_texts(exc: BaseException, provider_text: str, tool_text: str) -> None:
    assert describe_exception(exc) == provider_text
    assert describe_exception(exc, with_type=True) == provider_text
    assert describe_exception(exc, with_type=False) == tool_text


def test_the_loop_the_tools_and_the_backends_share_the_one_function() -> None:
    import importlib

    from openprogram.providers import _shared, anthropic, bedrock, gemini, openai

    loop = importlib.import_module("openprogram.agent.agent_loop")  # the package exports a function by that name
    for module in (loop, _shared, anthropic, bedrock, gemini, openai):
        assert module.describe_exception is describe_exception, module.__name__
    for module in (_shared, anthropic, bedrock, openai):
        assert getattr(module, "ReplyError", ReplyError) is ReplyError, module.__name__
    import openprogram.tools as tools

    assert not hasattr(tools, "describe_exception") and not hasattr(tools, "exception_text")
