"""Time per replayed interaction: our recorded backend against the bare SDK under plain vcrpy.

Run: ``python benchmarks/replay_overhead.py [--interactions N] [--repeat R] [--stream]``.

What it measures: a replayed cassette should cost about what vcrpy alone costs, since a test
suite replays hundreds of them on every run. First a cassette of N OpenAI chat-completions
interactions is recorded through ``harness.recording._recorded`` against the loopback emulator (so it is
the format our recorder writes). Then that one file is replayed R times two ways, interleaved, so
drift in the machine's speed hits both alike:

- ``recorded``: ``harness.recording._recorded.open_recording(path, "none")`` and the real
  ``OpenAIChatProvider`` over it (semantic body matching, event-by-event streams, the decoder to
  ``AssistantMessage`` events), one ``ModelRequest`` per interaction;
- ``bare vcrpy``: ``vcr.VCR(record_mode="none").use_cassette(path)`` around the ``openai`` SDK's
  own ``chat.completions.create(**recorded body)``, reading the whole reply (every chunk when
  streamed): what a project on plain vcrpy + pytest-recording pays.

Each repetition opens its cassette and builds its client (what every test does) and times all N
calls. The time is the process's CPU time, so other processes competing for the machine do not
count. It prints the medians per interaction in microseconds and their ratio; target (issue 10):
recorded / bare <= 1.3.

The proxy row (issue 30, ``harness proxy``): the same N requests sent by the ``openai`` SDK over
loopback HTTP, answered two ways, interleaved: ``proxy``, a ``harness.proxy.Proxy`` replaying the
cassette in ``none`` (a new proxy per repetition, which opens its cassette before serving, as
``harness proxy`` does before it prints its URL, as the emulator reads its script before), and
``emulator``, the emulator serving the same replies from its script directly (its script started
over per repetition). Both servers run in this process, so the CPU time counts client and server
alike; target (issue 34): proxy / emulator <= 1.1, whole and streamed. ``--no-proxy`` leaves the row out.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.emulator import Emulator
from harness.recording import load as load_cassette
from openprogram.providers import ModelRequest, allow_model_requests
from openprogram.types import UserMessage

MODEL = "gpt-4o-mini"
TARGET = 1.3
PROXY_TARGET = 1.1


def _request(number: int) -> ModelRequest:
    return ModelRequest(model=MODEL, messages=(UserMessage(content=f"Question {number}: what is {number} + 1?"),))


async def _consume(backend: Any, request: ModelRequest) -> Any:
    message = None
    async for event in backend.stream(request):
        if event.type in ("done", "error"):
            message = event.message if event.type == "done" else event.error
    return message


async def _ask_all(backend: Any, client: Any, interactions: int) -> None:
    """Send the benchmark's requests in order through ``backend``, then close its SDK client."""
    try:
        for number in range(interactions):
            message = await _consume(backend, _request(number))
            assert message.stop_reason == "stop", message.error_message
    finally:
        await client.aclose()


async def _record(path: Path, interactions: int, stream: bool) -> None:
    from harness.recording._recorded import open_recording, recorded_backend

    with Emulator(*_turns(interactions)) as emulator:
        recording = open_recording(path, "once")
        backend, client = recorded_backend(
            "openai", recording, "chat.completions", model=MODEL, stream=stream, upstream=emulator.base_url
        )
        await _ask_all(backend, client, interactions)
        recording.save()


async def _replay_recorded(path: Path, interactions: int, stream: bool) -> float:
    from harness.recording._recorded import open_recording, recorded_backend

    started = time.process_time()
    recording = open_recording(path, "none")
    backend, client = recorded_backend("openai", recording, "chat.completions", model=MODEL, stream=stream)
    await _ask_all(backend, client, interactions)
    return time.process_time() - started


async def _replay_bare(path: Path, bodies: list[dict[str, Any]]) -> float:
    import openai
    import vcr

    started = time.process_time()
    with vcr.VCR(record_mode="none").use_cassette(str(path)):
        client = openai.AsyncOpenAI(api_key="sk-benchmark", max_retries=0)
        try:
            for body in bodies:
                rest = {key: value for key, value in body.items() if key not in ("model", "messages", "stream")}
                call = client.chat.completions.create(
                    model=body["model"], messages=body["messages"], stream=bool(body.get("stream")), extra_body=rest
                )
                if body.get("stream"):
                    async for _chunk in await call:
                        pass
                else:
                    assert (await call).choices[0].finish_reason == "stop"
        finally:
            await client.close()
    return time.process_time() - started


def _turns(interactions: int) -> list[str]:
    return [f"The answer is {n + 1}. " + "It is a small number. " * 8 for n in range(interactions)]


async def _ask_server(base_url: str, bodies: list[dict[str, Any]]) -> float:
    """CPU seconds for the SDK to send ``bodies`` to ``base_url`` and read every reply (every chunk)."""
    import openai

    started = time.process_time()
    client = openai.AsyncOpenAI(api_key="sk-benchmark", base_url=f"{base_url}/v1", max_retries=0)
    try:
        for body in bodies:
            rest = {key: value for key, value in body.items() if key not in ("model", "messages", "stream")}
            if body.get("stream"):  # the body as recorded: no "stream": false where the recording had none
                stream = await client.chat.completions.create(
                    model=body["model"], messages=body["messages"], stream=True, extra_body=rest
                )
                async for _chunk in stream:
                    pass
            else:
                reply = await client.chat.completions.create(
                    model=body["model"], messages=body["messages"], extra_body=rest
                )
                assert reply.choices[0].finish_reason == "stop"
    finally:
        await client.close()
    return time.process_time() - started


def proxy_row(path: Path, bodies: list[dict[str, Any]], repeat: int) -> tuple[float, float]:
    """Median CPU seconds per repetition: replayed through ``harness proxy``, and served by the emulator."""
    from harness.proxy import Proxy

    through_proxy, from_emulator = [], []
    with Emulator(*_turns(len(bodies))) as emulator:
        for _ in range(repeat + 1):  # the first of each is a warm-up
            with Proxy(path, mode="none") as proxy:
                proxy.open_default()  # as `harness proxy` does before it prints its URL
                through_proxy.append(asyncio.run(_ask_server(proxy.base_url, bodies)))
            outcome = proxy.finish()
            assert not outcome.problems, outcome.problems
            emulator.reset_script()
            from_emulator.append(asyncio.run(_ask_server(emulator.base_url, bodies)))
            gc.collect()
    return statistics.median(through_proxy[1:]), statistics.median(from_emulator[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interactions", type=int, default=20, help="interactions in the cassette")
    parser.add_argument("--repeat", type=int, default=15, help="replays of the cassette per side")
    parser.add_argument("--stream", action="store_true", help="streamed replies (SSE) instead of whole ones")
    parser.add_argument("--no-proxy", action="store_true", help="leave out the harness proxy row")
    args = parser.parse_args()
    try:
        import harness.recording._recorded  # noqa: F401 - the half under test
    except ImportError as exc:
        print(f"harness.recording._recorded is not available ({exc}): nothing to compare against bare vcrpy")
        return 2
    with tempfile.TemporaryDirectory() as folder, allow_model_requests():
        path = Path(folder) / "replay_overhead.yaml"
        asyncio.run(_record(path, args.interactions, args.stream))
        bodies = [interaction.request.body.object for interaction in load_cassette(path)]
        assert len(bodies) == args.interactions, f"recorded {len(bodies)} of {args.interactions} interactions"
        asyncio.run(_replay_recorded(path, args.interactions, args.stream))  # warm up both sides
        asyncio.run(_replay_bare(path, bodies))
        ours, bare = [], []
        gc.disable()
        try:
            for _ in range(args.repeat):
                ours.append(asyncio.run(_replay_recorded(path, args.interactions, args.stream)))
                bare.append(asyncio.run(_replay_bare(path, bodies)))
                gc.collect()
            proxied = proxy_row(path, bodies, args.repeat) if not args.no_proxy else None
        finally:
            gc.enable()
    per_ours = statistics.median(ours) / args.interactions * 1e6
    per_bare = statistics.median(bare) / args.interactions * 1e6
    ratio = per_ours / per_bare
    kind = "streamed" if args.stream else "whole"
    print(
        json.dumps(
            {
                "interactions": args.interactions,
                "repeat": args.repeat,
                "replies": kind,
                "recorded_us_per_interaction": round(per_ours, 1),
                "bare_vcrpy_us_per_interaction": round(per_bare, 1),
                "ratio": round(ratio, 3),
                "target": TARGET,
            }
        )
    )
    print(
        f"{args.interactions} {kind} interactions, median of {args.repeat}: recorded {per_ours:.0f} µs, "
        f"bare vcrpy {per_bare:.0f} µs per interaction; ratio {ratio:.2f} (target <= {TARGET})"
    )
    if proxied is None:
        return 0 if ratio <= TARGET else 1
    per_proxy, per_emulator = (seconds / args.interactions * 1e6 for seconds in proxied)
    proxy_ratio = per_proxy / per_emulator
    print(
        json.dumps(
            {
                "row": "proxy",
                "replies": kind,
                "proxy_us_per_interaction": round(per_proxy, 1),
                "emulator_us_per_interaction": round(per_emulator, 1),
                "ratio": round(proxy_ratio, 3),
                "target": PROXY_TARGET,
            }
        )
    )
    print(
        f"{args.interactions} {kind} interactions over loopback HTTP, median of {args.repeat}: harness proxy "
        f"{per_proxy:.0f} µs, the emulator directly {per_emulator:.0f} µs per interaction; "
        f"ratio {proxy_ratio:.2f} (target <= {PROXY_TARGET})"
    )
    return 0 if ratio <= TARGET and proxy_ratio <= PROXY_TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
