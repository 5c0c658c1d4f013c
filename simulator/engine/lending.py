"""The run's worker pool, whose places a waiting conversation lends: `width` workers, plus one for each call
now waiting out a retry (a 429's Retry-After, a backoff), at most `lend` more.

Why: a worker holds its conversation from the first turn to the last verdict. A conversation whose call
was told "429, Retry-After: 1" sends nothing for that second, yet held its place, so with 5% random 429s
each conversation of ~23 calls waited about a second more and a run of `concurrency` workers did about
30% less in the same time, while the provider's connections sat idle. Lending the place lets another
conversation use them meanwhile. What reaches the provider stays bounded by its connection limit and
pace; the oldest conversation's calls are still served first (`AdaptiveLimiter`), so the lent places
never overtake the conversation that lent them. At most `lend` (by default `width`) places are lent at
once, so never more than twice `concurrency` conversations are open.
"""

from __future__ import annotations

__all__ = ["LendingPool"]

import asyncio
from collections.abc import Awaitable, Callable

from simulator.providers.waits import RetryWaits

# A worker: runs items until it is told to stop (the predicate it is given says when) or the work runs out.
Worker = Callable[[Callable[[], bool]], Awaitable[None]]


class LendingPool:
    """`await pool.run()` runs `width` workers (more while calls wait out retries) until all have stopped;
    returns each worker's exception or None. `tasks` is the live list of worker tasks."""

    def __init__(self, width: int, worker: Worker, waits: RetryWaits | None, lend: int | None = None) -> None:
        self.width = max(1, width)
        self.lend = self.width if lend is None else max(0, lend)
        self._worker = worker
        self._waits = waits
        self.tasks: list[asyncio.Task[None]] = []
        self.active = 0  # workers running now
        self.most = 0  # the most at once
        self._closed = False  # a worker found the work done (or stopped): no more places are lent

    @property
    def target(self) -> int:
        """Workers wanted now: `width`, plus one per call waiting out a retry, at most `lend` more."""
        waiting = self._waits.count if self._waits is not None else 0
        return self.width + min(self.lend, waiting)

    async def run(self) -> list[BaseException | None]:
        stop = self._waits.listen(self._on_waits) if self._waits is not None else None
        try:
            for _ in range(self.width):
                self._spawn()
            while pending := [task for task in self.tasks if not task.done()]:
                await asyncio.wait(pending)
        except asyncio.CancelledError:
            for task in self.tasks:
                task.cancel()
            await asyncio.gather(*self.tasks, return_exceptions=True)
            raise
        finally:
            if stop is not None:
                stop()
        return [asyncio.CancelledError() if task.cancelled() else task.exception() for task in self.tasks]

    def _on_waits(self, count: int) -> None:
        while not self._closed and self.active < self.target:
            self._spawn()

    def _spawn(self) -> None:
        self.active += 1
        self.most = max(self.most, self.active)
        self.tasks.append(asyncio.create_task(self._run_one()))

    async def _run_one(self) -> None:
        left = False  # this worker stopped because the pool had more than it wanted

        def surplus() -> bool:
            nonlocal left
            if self.active > self.target:
                left = True
            return left

        try:
            await self._worker(surplus)
        finally:
            self.active -= 1
            if not left:  # the work ran out or was stopped: what is in flight finishes, nothing new starts
                self._closed = True
