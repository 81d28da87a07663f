"""harness: deterministic simulation and record-replay testing for the openprogram loop."""
