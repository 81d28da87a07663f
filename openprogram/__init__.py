"""openprogram: give a model a menu of functions and let it pick until it answers in text.

>>> from openprogram import function, runtime
>>> @function
... def add(a: int, b: int) -> int:
...     "Add two integers."
...     return a + b

``runtime.exec("what is 2+3?", tools=[add])`` then runs the tool-call loop with the provider
bound by ``runtime.use(provider)``.
"""

from openprogram import runtime
from openprogram.functions import AgenticFunction, Function, agentic_function, function, registry
from openprogram.runtime import ExecError
from openprogram.tools import AgentTool, AgentToolResult
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

__version__ = "0.1.0"

__all__ = [
    "AgentTool",
    "AgentToolResult",
    "AgenticFunction",
    "AssistantMessage",
    "ExecError",
    "Function",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolResultMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "agentic_function",
    "function",
    "registry",
    "runtime",
]
