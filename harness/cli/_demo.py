"""The example agent: an ``@agentic_function`` with two ``@function`` tools on a scripted model.

It shows, offline and deterministically, what a run looks like: the model picks two tools in
parallel, sends one bad argument and gets the validation error back, corrects itself, and
answers in text. ``harness demo`` (in ``harness.cli``) prints the resulting trace as a timeline.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from harness.script import ScriptedProvider, turn
from harness.trace import TraceRecorder
from openprogram import agentic_function, function, runtime
from openprogram.agent.events import observe_runs

_FORECASTS = {"paris": (18.5, "light rain"), "oslo": (4.0, "snow"), "lisbon": (24.0, "sunny")}


@function(register=False)
def get_weather(city: str) -> dict[str, object]:
    """Today's forecast for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    celsius, sky = _FORECASTS.get(city.lower(), (15.0, "cloudy"))
    return {"city": city, "celsius": celsius, "sky": sky}


@function(register=False)
def convert_temperature(celsius: float, unit: Literal["F", "K"]) -> float:
    """Convert a Celsius temperature for a reader who thinks in another unit.

    Args:
        celsius: The temperature in degrees Celsius.
        unit: "F" for Fahrenheit or "K" for Kelvin.
    """
    return round(celsius * 9 / 5 + 32, 1) if unit == "F" else round(celsius + 273.15, 2)


@agentic_function(register=False)
def trip_advisor(city: str) -> str:
    """Advise a traveller on what to pack, asking a model that can look up the weather."""
    return runtime.exec(
        f"I'm flying to {city} today and think in Fahrenheit. What should I pack?",
        tools=[get_weather, convert_temperature],
        system_prompt="You are a concise travel assistant. Use the tools; never guess the weather.",
        clock=_demo_clock(),
    )


def _demo_clock() -> Callable[[], int]:
    ticks = iter(range(1_767_225_600_000, 1_767_225_600_000 + 10_000_000, 1_000))
    return lambda: next(ticks)


def demo_script() -> ScriptedProvider:
    """What the model says in the demo: parallel picks, one bad argument, a correction, an answer."""
    return ScriptedProvider(
        turn.tool_calls(
            turn.tool_call("get_weather", city="Paris"),
            turn.tool_call("convert_temperature", celsius=18.5, unit="fahrenheit"),
            text="Let me check the forecast.",
        ),
        turn.tool_call("convert_temperature", celsius=18.5, unit="F"),
        turn.text("Paris: 65.3°F with light rain. Pack a light jacket and an umbrella."),
    )


def run_demo() -> tuple[str, str]:
    """Run the example agent; return its answer and the rendered trace."""
    provider = demo_script()
    recorder = TraceRecorder(ledger=False)
    with runtime.use(provider, model="scripted-demo"), observe_runs(recorder.on_event):
        answer = trip_advisor("Paris")
    provider.assert_complete()
    return answer, recorder.finish(provider.requests).render()
