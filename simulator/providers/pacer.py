"""A request budget: at most `rpm` requests to a provider in any minute, spread evenly (a token bucket).

The adaptive limiter reacts to 429s after they happen; the pacer keeps a run inside a known budget so they
do not happen. It is a token bucket with a small burst, refilled continuously; callers wait their turn in
order. With several workers (shards, Ray actors) each gets its share of the run-wide budget.
"""

from __future__ import annotations

__all__ = ["Pacer"]

import asyncio
import time
from collections.abc import Callable


class Pacer:
    """`await pacer.wait()` before each request: returns once the budget allows one more."""

    def __init__(
        self, per_minute: float, *, burst: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if per_minute <= 0:
            raise ValueError("a request budget must be positive")
        self.rate = per_minute / 60.0  # tokens per second
        # A burst of one second's worth (at least one request): smooth, but no idle start-up.
        self.capacity = burst if burst is not None else max(1.0, self.rate)
        self._clock = clock
        self._tokens = self.capacity
        self._updated = clock()
        self._lock = asyncio.Lock()
        self.waited_s = 0.0  # total time callers spent waiting for the budget

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
        self._updated = now

    def delay(self) -> float:
        """Take one token now if there is one (0.0); otherwise reserve the next and say how long to wait."""
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    async def wait(self) -> None:
        # The lock keeps callers in order: each reserves its token, then sleeps until it is due.
        async with self._lock:
            pause = self.delay()
        if pause > 0:
            self.waited_s += pause
            await asyncio.sleep(pause)
