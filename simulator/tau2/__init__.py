"""tau2-bench's tasks as suites: a feature slice that reads a tau2 tasks file and its database and writes a
suite folder this engine runs (docs/tau2.md). Reached from the command line by `simulator import-tau2`."""

from __future__ import annotations

__all__: list[str] = []
