"""Helpers shared by the tests: builders, bots, servers and snapshots (never test modules themselves)."""
