"""The Python API: plan, run and compare suites from a program or a notebook, and read the typed results.
The command line, the pytest plugin and the review desk call these same functions (docs/python-api.md)."""

from __future__ import annotations

__all__ = [
    "Comparison",
    "Plan",
    "Result",
    "acompare",
    "aresume",
    "arun",
    "atalk",
    "compare",
    "execute",
    "execute_matrix",
    "load_suite",
    "prepare",
    "resolve_bot",
    "resume",
    "run",
    "run_sync",
]

from simulator.api.comparing import acompare, compare, execute_matrix
from simulator.api.plan import Plan, load_suite, prepare, resolve_bot
from simulator.api.result import Comparison, Result
from simulator.api.running import aresume, arun, atalk, execute, resume, run, run_sync
