"""The personas kind: who the simulated users of a simulation are, one persona a line; uploaded, never scored."""
