"""An adaptive per-provider connection limit: cut on a burst of rate limits, grown back as calls succeed.

Isolated 429s are noise (a shared provider answers a few at random whatever one client does): they are
retried, and the pacer keeps the run inside the provider's budget. Only a burst, 429s for at least
`burst_share` of the calls sent since the first of them, cuts the limit, and never below a floor.
"""

from __future__ import annotations

__all__ = ["AdaptiveLimiter"]

import asyncio
import heapq
import itertools
import time
from types import TracebackType

_RETRY = float("-inf")  # a retry has waited its backoff already: it is served before any fresh call


class AdaptiveLimiter:
    """Caps calls in flight to one provider; every role (users, bots, judges) shares one limiter.

    Additive increase, multiplicative decrease (as TCP does): a burst of rate-limit errors halves the
    limit, but only once per window, because the calls already in flight were sent under the old limit
    and their 429s say nothing new. The window ends when a call that started after the cut comes back.
    A burst is at least `min_refused` 429s within `window_s` of the first, and at least `burst_share` of
    the calls *sent* in that time, counting those still in flight when it began. Counting sends, not
    answers, is what tells noise from a limit: 429s answered instantly arrive ahead of the successes of
    the same wave, so among answers a few random ones look like a burst, while among the wave's sends
    they are the few per cent they are; a provider that refuses most calls crosses the share at once.
    The limit never goes below `minimum` (by default a quarter of `maximum`). Each run of `limit`
    successes adds one slot, up to `maximum`.

    Calls waiting for a slot are served oldest work first (`since`: when the conversation they belong to
    began), not in arrival order: a conversation held back by a Retry-After catches up instead of queueing
    behind conversations that started after it, so the run does not end with a tail of stragglers.
    """

    def __init__(
        self,
        maximum: int,
        *,
        minimum: int | None = None,
        adaptive: bool = True,
        burst_share: float = 0.25,
        min_refused: int = 3,
        window_s: float = 1.0,
    ) -> None:
        minimum = max(1, -(-maximum // 4)) if minimum is None else minimum
        if maximum < 1 or not 1 <= minimum <= maximum:
            raise ValueError("need 1 <= minimum <= maximum")
        if not 0.0 < burst_share <= 1.0 or min_refused < 1 or window_s <= 0:
            raise ValueError("need 0 < burst_share <= 1, min_refused >= 1 and window_s > 0")
        self.maximum = maximum
        self.minimum = minimum
        self.burst_share = burst_share
        self.min_refused = min_refused
        self.window_s = window_s
        self.sent = 0  # calls given a slot, ever
        self._burst_start = float("-inf")  # when the current window of 429s began
        self._sent_before = 0  # `sent` then, less the calls then in flight
        self._refused = 0  # 429s in the current window
        self.adaptive = adaptive
        self.limit = maximum
        self.in_flight = 0
        self.cuts = 0
        self.lowest = maximum
        self._generation = 0  # bumped at every cut; a call remembers the generation it started in
        self._successes = 0
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []  # a heap: (since, order, future)
        self._order = itertools.count()

    async def acquire(self, *, first: bool = True, since: float | None = None) -> int:
        """Wait for a slot; return the generation to hand back to `release`. Waiting calls are served by
        `since` (the monotonic time their work began; now when not given), oldest first; a retry
        (`first=False`) has already waited its backoff and is served before them all."""
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            self.sent += 1
            return self._generation
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        key = _RETRY if not first else time.monotonic() if since is None else since
        heapq.heappush(self._waiters, (key, next(self._order), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release_slot()  # granted the slot just as we were cancelled: give it back
            else:  # still queued (cancellations are rare: a linear removal is fine)
                self._waiters = [entry for entry in self._waiters if entry[2] is not future]
                heapq.heapify(self._waiters)
            raise
        return self._generation

    def release(self, generation: int, *, rate_limited: bool = False, succeeded: bool = False) -> None:
        """Give the slot back, telling the limiter how the call went."""
        if self.adaptive:
            if rate_limited:
                if self._burst(time.monotonic()):
                    self._on_rate_limit(generation)
            elif succeeded:
                self._on_success()
        self._release_slot()

    def _burst(self, now: float) -> bool:
        """Count one 429; True when the 429s of the current window make a burst."""
        if now - self._burst_start > self.window_s:
            self._burst_start = now
            self._sent_before = self.sent - self.in_flight  # the calls in flight belong to the window
            self._refused = 0
        self._refused += 1
        sent = max(1, self.sent - self._sent_before)
        return self._refused >= self.min_refused and self._refused >= self.burst_share * sent

    def slot(self, *, first: bool = True, since: float | None = None) -> _Slot:
        """`async with limiter.slot() as slot:` (set `slot.rate_limited` / `slot.succeeded` inside)."""
        return _Slot(self, first, since)

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
            future = heapq.heappop(self._waiters)[2]
            if not future.done():
                self.in_flight += 1
                self.sent += 1
                future.set_result(None)


class _Slot:
    """One held slot; records how the call went so the limiter can adapt."""

    __slots__ = ("_first", "_generation", "_limiter", "_since", "rate_limited", "succeeded")

    def __init__(self, limiter: AdaptiveLimiter, first: bool = True, since: float | None = None) -> None:
        self._limiter = limiter
        self._first = first
        self._since = since
        self._generation = 0
        self.rate_limited = False
        self.succeeded = False

    async def __aenter__(self) -> _Slot:
        self._generation = await self._limiter.acquire(first=self._first, since=self._since)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._limiter.release(self._generation, rate_limited=self.rate_limited, succeeded=self.succeeded)
