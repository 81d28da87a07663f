"""``benchmarks/wire_campaign.py`` still measures what docs/wire-campaigns.md quotes: run as a user
runs it, with two conversations (a seeded campaign's: example 0 and one mutation of the recording
it made of the same agent), its meters see every request the campaign made (it stops, saying
so, when the campaign no longer builds its emulator as the benchmark expects) and every row splits
its time into the agent, the wire and the harness. The numbers themselves are the benchmark's to
measure, not a test's."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wire_campaign_benchmark_runs_and_splits_every_row() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "wire_campaign.py"), "--conversations", "2", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| planted loop")]
    assert len(rows) == 3 and "in process" in rows[0] and "on loopback" in rows[1] and "seeded" in rows[2]
    # bare: two conversations of the fixed script's two requests; of the recorded script's six (five rounds)
    for row, bare_requests in zip(rows, (4, 4, 12), strict=True):
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert re.match(rf"[\d.]+ s, {bare_requests} requests", cells[1]), cells[1]
        for cell in cells[3:6]:  # the agent, the wire, the harness: each a time and its share
            assert re.match(r"[\d.]+ s \(\d+(\.\d)?%", cell), cell
    # the seeded campaign's example 0 is the recording unchanged: its six requests at least
    seeded = re.search(r"s, (\d+) requests", rows[2].split("|")[3])
    assert seeded is not None and int(seeded.group(1)) >= 6, rows[2]
    assert "pydantic-ai" in done.stdout  # measured, or skipped saying why
    node = [line for line in done.stdout.splitlines() if line.startswith("| node loop")]
    assert len(node) == 2 or "| skipped: node loop" in done.stdout  # a process each, and long-lived
