"""The loop: ``agent_loop`` runs a conversation until the model answers in text."""

from openprogram.agent.agent_loop import (
    MAX_INNER_ITERATIONS,
    SKIPPED_TEXT,
    AgentContext,
    AgentLoopConfig,
    agent_loop,
    agent_loop_continue,
    effective_max_iterations,
)
from openprogram.agent.events import *  # noqa: F403
from openprogram.agent.events import __all__ as _events_all

__all__ = [
    "MAX_INNER_ITERATIONS",
    "SKIPPED_TEXT",
    "AgentContext",
    "AgentLoopConfig",
    "agent_loop",
    "agent_loop_continue",
    "effective_max_iterations",
    *_events_all,
]
