"""Waiting in tests on a busy machine (CI runs the suite on two shared cores beside other jobs).

A test waits for the event it needs (`until`, `eventually`), with a long deadline that only a hang meets,
never for a fixed time it hopes is enough. A time a test measures is checked one-sidedly: never early is
exact, while the late side allows `LATE_S`, what a loaded machine may add to anything scheduled (a sleep
that wakes late, a message read late); a bound tighter than that measures the machine, not the code.
"""

from __future__ import annotations

__all__ = ["LATE_S", "eventually", "until"]

import asyncio
import time
from collections.abc import Callable

LATE_S = 1.0
_DEADLINE_S = 60.0


def until(predicate: Callable[[], object], what: str, timeout_s: float = _DEADLINE_S) -> None:
    """Return once `predicate()` is true; fail naming `what` after `timeout_s` (a hang, not a slow machine)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        time.sleep(0.02)


async def eventually(predicate: Callable[[], object], what: str, timeout_s: float = _DEADLINE_S) -> None:
    """`until` for a test on the event loop: the loop runs on while it waits."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        await asyncio.sleep(0.02)
