"""An adaptive per-provider connection limit: cut on a burst of rate limits, grown back as calls succeed."""

from __future__ import annotations

__all__ = ["AdaptiveLimiter"]

import asyncio
from collections import deque
from types import TracebackType


class AdaptiveLimiter:
    """Caps calls in flight to one provider; every role (users, bots, judges) shares one limiter.

    Additive increase, multiplicative decrease (as TCP does): a rate-limit error halves the limit, but
    only once per window, because the calls already in flight were sent under the old limit and their
    429s say nothing new. The window ends when a call that started after the cut comes back. Each run of
    `limit` successes adds one slot, up to `maximum`.
    """

    def __init__(self, maximum: int, *, minimum: int = 1, adaptive: bool = True) -> None:
        if maximum < 1 or not 1 <= minimum <= maximum:
            raise ValueError("need 1 <= minimum <= maximum")
        self.maximum = maximum
        self.minimum = minimum
        self.adaptive = adaptive
        self.limit = maximum
        self.in_flight = 0
        self.cuts = 0
        self.lowest = maximum
        self._generation = 0  # bumped at every cut; a call remembers the generation it started in
        self._successes = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def acquire(self) -> int:
        """Wait for a slot; return the generation to hand back to `release`."""
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return self._generation
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release_slot()  # granted the slot just as we were cancelled: give it back
            elif future in self._waiters:  # a release may already have skipped and dropped it
                self._waiters.remove(future)
            raise
        return self._generation

    def release(self, generation: int, *, rate_limited: bool = False, succeeded: bool = False) -> None:
        """Give the slot back, telling the limiter how the call went."""
        if self.adaptive:
            if rate_limited:
                self._on_rate_limit(generation)
            elif succeeded:
                self._on_success()
        self._release_slot()

    def slot(self) -> _Slot:
        """`async with limiter.slot() as slot:` (set `slot.rate_limited` / `slot.succeeded` inside)."""
        return _Slot(self)

    def _on_rate_limit(self, generation: int) -> None:
        if generation != self._generation:
            return  # sent before the last cut: already accounted for
        self._generation += 1
        self._successes = 0
        new = max(self.minimum, self.limit // 2)
        if new < self.limit:
            self.limit = new
            self.cuts += 1
            self.lowest = min(self.lowest, new)

    def _on_success(self) -> None:
        if self.limit >= self.maximum:
            return
        self._successes += 1
        if self._successes >= self.limit:
            self._successes = 0
            self.limit += 1

    def _release_slot(self) -> None:
        self.in_flight -= 1
        while self._waiters and self.in_flight < self.limit:
            future = self._waiters.popleft()
            if not future.done():
                self.in_flight += 1
                future.set_result(None)


class _Slot:
    """One held slot; records how the call went so the limiter can adapt."""

    __slots__ = ("_generation", "_limiter", "rate_limited", "succeeded")

    def __init__(self, limiter: AdaptiveLimiter) -> None:
        self._limiter = limiter
        self._generation = 0
        self.rate_limited = False
        self.succeeded = False

    async def __aenter__(self) -> _Slot:
        self._generation = await self._limiter.acquire()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._limiter.release(self._generation, rate_limited=self.rate_limited, succeeded=self.succeeded)
