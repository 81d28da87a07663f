"""``harness fuzz --agent --html``: the wire campaign's page.

The report package sits below ``harness.agents`` (pyproject's import-linter layers) and cannot
read a request's menu: it draws what it is handed. This module, in the command line's layer,
hands it the agents layer's reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_wire_report(html: Path, result: Any, command: str, deviations: Any) -> None:
    """``--agent --html``: the report reads a request's menu the way the campaign did (the
    recording package's reader, which the report package must not import)."""
    from harness.agents import INVARIANTS
    from harness.agents._conversation import as_recorded
    from harness.cli._common import write_html
    from harness.report import wire_campaign_report

    write_html(
        html,
        lambda: wire_campaign_report(
            result,
            command=command,
            invariants=INVARIANTS,
            deviations=deviations,
            tools_of=lambda request: as_recorded(request).tools,
        ),
    )


