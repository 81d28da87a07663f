"""``python -m harness``: the ``harness`` command, for when the console script is not on PATH."""

from harness.cli import main

if __name__ == "__main__":
    main(prog_name="harness")
