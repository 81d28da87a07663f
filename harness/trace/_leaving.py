"""What a run did after its consumer stopped reading: the part of a trace no consumer sees.

A consumer that leaves early (``Scenario.leave``: ``await stream.aclose()``, or leaving an
``async with agent_loop(...) as stream:`` block) reads no more events, so the events alone
cannot show whether the run obeyed (DESIGN 4, Robustness: the run is cancelled, no tool starts
after the consumer has gone). The runner watches the stream's pushes and the tools to the end
and writes it down here, as ``Trace.left``; the reference model predicts it and the invariants
hold it to the contract.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Left(BaseModel):
    """The consumer left after reading ``after`` events; what the run did from then on."""

    model_config = ConfigDict(frozen=True)
    after: int
    """How many events the consumer had read (``Trace.events`` holds them) when it left."""
    events_after: list[str] = Field(default_factory=list)
    """The types of the events the run pushed after the consumer left (a cancelled run: none)."""
    tools_after: list[str] = Field(default_factory=list)
    """Tools whose bodies started after the consumer left (the contract: none)."""
    outcome: str = "cancelled"
    """``cancelled``: ``stream.result()`` raised ``CancelledError`` (the run was cancelled);
    ``ended``: it returned the run's messages (the run went on, or had ended before);
    ``raised: TEXT``: it raised something else."""
    provider_open: bool = False
    """The provider's stream was still open (never closed) after the run stopped."""
