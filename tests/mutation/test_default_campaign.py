"""The default campaign, exactly as ``harness fuzz`` runs it, as the one test mutation testing runs.

``benchmarks/mutation.sh`` points mutmut at this file alone: a mutant of the loop's core counts as
killed only if the campaign a user gets from a bare ``harness fuzz`` (``DEFAULT_EXAMPLES``
scenarios under ``DEFAULT_SEED``) reports a violation. It is also an ordinary test: the real loop
passes that campaign.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from harness.campaigns._loop_campaign import DEFAULT_EXAMPLES, DEFAULT_SEED, run_campaign
from harness.cli import main


def test_the_default_campaign_finds_no_violation(tmp_path: Path) -> None:
    # What `harness fuzz` runs with no options; unshrunk, since only finding counts here (shrinking
    # a mutant's failure would cost minutes and never changes whether it is found).
    result = run_campaign(DEFAULT_EXAMPLES, DEFAULT_SEED, save_dir=tmp_path, shrink=False)
    assert result.stats.scenarios == DEFAULT_EXAMPLES
    assert result.ok, str(result.failure)


def test_a_bare_harness_fuzz_runs_under_the_default_seed(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["fuzz", "--examples", "3", "--save-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"seed {DEFAULT_SEED}" in result.output
