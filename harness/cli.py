"""The ``harness`` command: one entry point whose subcommands live beside what they drive.

Subcommands are imported lazily so ``harness --help`` stays fast and an optional extra that is
missing only breaks the command that needs it.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

_COMMANDS = {
    "demo": ("harness.demo", "demo_command", "Run the example agent on the scripted backend and print its trace."),
    "run": ("harness.scenario", "run_command", "Run scenario YAML files and check them against the reference."),
    "fuzz": ("harness.fuzz", "fuzz_command", "Generate adversarial model behaviour and check every invariant."),
    "conformance": (
        "harness.conformance",
        "conformance_command",
        "Replay recorded provider cassettes through the real backends.",
    ),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in _COMMANDS:
            return None
        module, attribute, _ = _COMMANDS[name]
        return getattr(importlib.import_module(module), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, _COMMANDS[name][2]) for name in sorted(_COMMANDS)])


@click.group(cls=_LazyGroup)
@click.version_option(package_name="openprogram")
def main() -> None:
    """Deterministic simulation and record-replay testing for tool-calling agents."""


def run(*args: Any) -> None:  # pragma: no cover - convenience for `python -m harness.cli`
    main(*args)


if __name__ == "__main__":  # pragma: no cover
    main()
