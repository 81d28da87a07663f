"""pytest plugin for the harness (work in progress)."""
