"""Per-round overhead of ``agent_loop`` on the scripted backend, side by side with its peers.

Run: ``python benchmarks/loop_overhead.py [--repeat N]``. The peers (pydantic-ai's
``FunctionModel``, the OpenAI Agents SDK with a scripted ``Model``) come with the ``bench`` extra
(``pip install -e ".[bench]"``, best in a venv of its own); a peer that is not installed is skipped,
saying so.

The work: N rounds in which the model picks one trivial tool, then a final text reply. Every
contender runs the same work in one process, interleaved (so drift in the machine's speed hits all
alike), each repetition with a fresh model built outside the timed region. Time is the process's
CPU time, so other processes competing for the machine count less. Reported, as medians of
``--repeat`` repetitions (peers: a tenth as many, they are slow), in microseconds:

- ``per round``: the run's time divided by its rounds plus the text round (what a user sees);
- ``marginal``: ``(t(N) - t(0)) / N`` where ``t(0)`` is a run with only the text turn, the cost of
  one more round once the fixed cost of a run is paid. The ratio of the per-round costs at 40
  and 5 rounds exposes work that grows with the history (quadratic copying);
- ``bare asyncio``: the same dispatch (an async generator of picks, a dict of tools, a list of
  results) with no framework at all: the floor Python itself sets;
- ``iterating``: our loop with a consumer that iterates every event (``result()`` only lets the
  loop skip the ``message_update`` events nobody would see).

Targets (issue 11): at most 50 us a round, 40-round cost within 1.3x the 5-round one, and at least
50x faster than the faster peer.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import ScriptedProvider, turn
from openprogram import function
from openprogram.agent import AgentContext, AgentLoopConfig, agent_loop

SIZES = (5, 40)
PEER_ROUNDS = 40


def lookup(key: int) -> str:
    """Return the value stored under a key."""
    return "value"


TOOL = function(register=False)(lookup).to_agent_tool()


def _clock() -> int:
    return 0


# -- ours --------------------------------------------------------------------------------------
def script(rounds: int) -> ScriptedProvider:
    return ScriptedProvider(*[turn.tool_call("lookup", key=i) for i in range(rounds)], turn.text("done"))


def ours(rounds: int, *, iterate: bool = False) -> Callable[[], Awaitable[Any]]:
    provider = script(rounds)

    async def run() -> Any:
        config = AgentLoopConfig(provider=provider, clock=_clock)
        context = AgentContext(system_prompt="You look things up.", tools=[TOOL])
        stream = agent_loop(["look up some keys"], context, config)
        if iterate:
            async for _event in stream:
                pass
        messages = await stream.result()
        assert len(messages) == 2 + 2 * rounds, len(messages)

    return run


# -- bare asyncio --------------------------------------------------------------------------------
def bare(rounds: int) -> Callable[[], Awaitable[Any]]:
    tools = {"lookup": lookup}

    async def model(number: int) -> AsyncIterator[tuple[str, Any]]:
        if number < rounds:
            yield "call", ("lookup", {"key": number})
        else:
            yield "text", "done"

    async def run() -> Any:
        history: list[Any] = ["look up some keys"]
        for number in range(rounds + 1):
            picks = []
            async for kind, value in model(number):
                history.append(value)
                if kind == "call":
                    picks.append(value)
            for name, args in picks:
                history.append(tools[name](**args))
            if not picks:
                break
        assert len(history) == 2 + 2 * rounds

    return run


# -- peers -------------------------------------------------------------------------------------
def pydantic_ai_peer() -> Callable[[int], Callable[[], Awaitable[Any]]] | str:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel
    except ImportError as exc:
        return f"pydantic-ai not installed ({exc.name}); pip install -e '.[bench]'"

    def make(rounds: int) -> Callable[[], Awaitable[Any]]:
        def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            done = sum(1 for m in messages if isinstance(m, ModelResponse))
            if done < rounds:
                return ModelResponse(parts=[ToolCallPart("lookup", {"key": done})])
            return ModelResponse(parts=[TextPart("done")])

        agent = Agent(FunctionModel(respond), system_prompt="You look things up.", tools=[lookup])

        async def run() -> Any:
            result = await agent.run("look up some keys")
            assert result.output == "done"

        return run

    return make


def openai_agents_peer() -> Callable[[int], Callable[[], Awaitable[Any]]] | str:
    try:
        from agents import Agent, Model, Runner, Usage, function_tool, set_tracing_disabled
        from agents import ModelResponse as AgentsResponse
        from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
    except ImportError as exc:
        return f"openai-agents not installed ({exc.name}); pip install -e '.[bench]'"
    set_tracing_disabled(True)
    tool = function_tool(lookup)

    class Scripted(Model):  # type: ignore[misc]
        def __init__(self, rounds: int) -> None:
            self.rounds = rounds
            self.asked = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            self.asked += 1
            n = self.asked
            if n <= self.rounds:
                arguments = json.dumps({"key": n})
                output: list[Any] = [
                    ResponseFunctionToolCall(
                        type="function_call", call_id=f"c{n}", name="lookup", arguments=arguments, id=f"f{n}"
                    )
                ]
            else:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                output = [
                    ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
                ]
            return AgentsResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    def make(rounds: int) -> Callable[[], Awaitable[Any]]:
        model = Scripted(rounds)
        agent = Agent(name="lookup", instructions="You look things up.", tools=[tool], model=model)

        async def run() -> Any:
            result = await Runner.run(agent, "look up some keys", max_turns=rounds + 5)
            assert result.final_output == "done"

        return run

    return make


# -- measuring ---------------------------------------------------------------------------------
def contenders() -> tuple[dict[str, tuple[int, Callable[[], Callable[[], Awaitable[Any]]], bool]], list[str]]:
    """name -> (rounds, factory of a fresh run, is a peer); and the skip notes."""
    table: dict[str, tuple[int, Callable[[], Callable[[], Awaitable[Any]]], bool]] = {
        "ours 0": (0, lambda: ours(0), False),
        "ours 5": (5, lambda: ours(5), False),
        "ours 40": (40, lambda: ours(40), False),
        "ours 40 iterating": (40, lambda: ours(40, iterate=True), False),
        "bare asyncio 40": (40, lambda: bare(40), False),
    }
    skipped = []
    for name, peer in (("pydantic-ai FunctionModel", pydantic_ai_peer()), ("openai-agents", openai_agents_peer())):
        if isinstance(peer, str):
            skipped.append(f"{name}: skipped, {peer}")
        else:
            table[f"{name} {PEER_ROUNDS}"] = (PEER_ROUNDS, lambda peer=peer: peer(PEER_ROUNDS), True)
    return table, skipped


def measure(repeat: int) -> tuple[dict[str, list[int]], dict[str, int], list[str]]:
    table, skipped = contenders()
    samples: dict[str, list[int]] = {name: [] for name in table}
    loop = asyncio.new_event_loop()
    try:
        for _ in range(3):  # warm up: imports, caches, pydantic's first validations
            for _name, (_rounds, make, _peer) in table.items():
                loop.run_until_complete(make()())
        gc.collect()
        peer_every = 10
        for i in range(repeat):
            for name, (_rounds, make, peer) in table.items():
                if peer and i % peer_every:
                    continue
                run = make()
                started = time.process_time_ns()
                loop.run_until_complete(run())
                samples[name].append(time.process_time_ns() - started)
    finally:
        loop.close()
    return samples, {name: rounds for name, (rounds, _m, _p) in table.items()}, skipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=300, help="repetitions per contender (default 300)")
    args = parser.parse_args(argv)

    samples, rounds, skipped = measure(args.repeat)
    print(f"{PEER_ROUNDS} tool rounds plus a text round, {args.repeat} repetitions (Python {sys.version.split()[0]})")
    base = statistics.median(samples["ours 0"]) / 1000
    print(f"  {'ours, text only (fixed cost)':34s} median {base:9.1f} us")
    per_round: dict[str, float] = {}
    for name, times in samples.items():
        if name == "ours 0":
            continue
        n = rounds[name]
        total = statistics.median(times) / 1000
        per_round[name] = total / (n + 1)
        marginal = statistics.median([(t / 1000 - base) / n for t in times])
        extra = f", {marginal:6.1f} marginal" if name.startswith("ours") else ""
        print(
            f"  {name:34s} median {total:9.1f} us total, {per_round[name]:8.1f} us/round{extra} "
            f"(best {min(times) / 1000 / (n + 1):.1f}, {len(times)} runs)"
        )
    for note in skipped:
        print(f"  {note}")
    ratio = per_round["ours 40"] / per_round["ours 5"]
    print(f"  per round, 40 vs 5 rounds: {ratio:.2f} (target <= 1.3)")
    peers = [v for k, v in per_round.items() if not k.startswith(("ours", "bare"))]
    if peers:
        faster = min(peers)
        print(f"  faster peer / ours: {faster / per_round['ours 40']:.0f}x (target >= 50x)")
    print(f"  ours / bare asyncio: {per_round['ours 40'] / per_round['bare asyncio 40']:.0f}x")
    met = per_round["ours 40"] <= 50 and ratio <= 1.3 and (not peers or min(peers) / per_round["ours 40"] >= 50)
    print("  targets:", "met" if met else "NOT met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
