"""Calls waiting out a retry: the provider said "later" (a 429's Retry-After, a backoff), so they send
nothing until then. The run's pool listens: a conversation whose call waits lends its place to another
conversation (`engine/session.py`), so a provider's random 429s cost the run the waits' share of its
connections, not the waits themselves.

One `RetryWaits` per model hub, shared by every provider's client and role.
"""

from __future__ import annotations

__all__ = ["RetryWaits"]

import asyncio
from collections.abc import Callable


class RetryWaits:
    """How many calls are waiting out a retry now (`count`), the most at once (`most`), and who to tell."""

    def __init__(self) -> None:
        self.count = 0
        self.most = 0
        self.total = 0  # retry waits begun, ever
        self._listeners: list[Callable[[int], None]] = []

    def listen(self, listener: Callable[[int], None]) -> Callable[[], None]:
        """Call `listener(count)` each time a wait begins or ends; returns what stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def sleep(self, seconds: float) -> None:
        """`asyncio.sleep(seconds)`, counted as a retry wait while it lasts (cancellation included)."""
        self._change(+1)
        try:
            await asyncio.sleep(seconds)
        finally:
            self._change(-1)

    def _change(self, step: int) -> None:
        self.count += step
        if step > 0:
            self.total += 1
            self.most = max(self.most, self.count)
        for listener in list(self._listeners):
            listener(self.count)
