"""A request and token budget: at most `rpm` requests and `tpm` tokens to a provider in any minute, spread
evenly (token buckets), and kept in step with the budget the provider reports in its headers.

The adaptive limiter reacts to 429s after they happen; the pacer keeps a run inside a known budget so they
do not happen. Each budget is a token bucket with a small burst, refilled continuously; callers wait their
turn in order. A budget the suite does not set is learned from the provider's rate-limit headers (their
`limit` is per minute), and whenever the provider says less is left than the bucket holds, or nothing until
a reset, the bucket follows it. A provider that says nothing (429s without headers) has its rate found
from the 429s themselves (`ratefinder.py`), and that rate is kept in the same bucket. With several workers
(shards, Ray actors) each gets its share of the run-wide budget.
"""

from __future__ import annotations

__all__ = ["Pacer"]

import asyncio
import time
from collections.abc import Callable

from simulator.providers.ratefinder import RateFinder, limit_in_message
from simulator.providers.ratelimits import Allowance, RateLimits

# Where a budget came from, for the manifest and the progress line.
SUITE, HEADERS, MESSAGE, FOUND = "suite", "headers", "429 message", "found from 429s"


class Bucket:
    """One token bucket: `rate` units per second, at most `capacity` saved up; may go into debt."""

    __slots__ = ("capacity", "hold_until", "rate", "tokens", "updated")

    def __init__(self, per_minute: float, now: float, burst: float | None = None) -> None:
        if per_minute <= 0:
            raise ValueError("a budget must be positive")
        self.rate = per_minute / 60.0
        # A burst of one second's worth (at least one unit): smooth, but no idle start-up.
        self.capacity = burst if burst is not None else max(1.0, self.rate)
        self.tokens = self.capacity
        self.updated = now
        self.hold_until = 0.0  # the provider said nothing is left until then

    def set_rate(self, per_second: float, now: float) -> None:
        """Change the rate in place: what is saved up is kept (within the new burst), and a debt keeps its
        length in time, so the callers already waiting are not followed by a gap (or a rush)."""
        self.take(0.0, now)
        if self.tokens < 0:
            self.tokens *= per_second / self.rate
        self.rate = per_second
        self.capacity = max(1.0, per_second)
        self.tokens = min(self.tokens, self.capacity)

    def take(self, amount: float, now: float) -> float:
        """Spend `amount` now; seconds to wait before the request may go (0.0 when it may go at once)."""
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate) - amount
        self.updated = now
        debt = 0.0 if self.tokens >= 0 else -self.tokens / self.rate
        return max(debt, self.hold_until - now)

    def follow(self, allowance: Allowance, now: float) -> None:
        """Never hold more than the provider says is left; when nothing is left, wait for its reset."""
        self.take(0.0, now)  # bring the refill up to now first
        self.tokens = min(self.tokens, allowance.remaining)
        if allowance.remaining < 1 and allowance.reset_s and not allowance.limit:
            # Nothing left and no total to refill at: wait for the reset. (With a total, `reset` is when
            # the whole window is back; the bucket, in debt now, waits only for the next unit.)
            self.hold_until = max(self.hold_until, now + allowance.reset_s)


class Pacer:
    """`await pacer.wait(tokens)` before each request: returns once every budget allows it."""

    def __init__(
        self,
        per_minute: float | None = None,
        *,
        tokens_per_minute: float | None = None,
        burst: float | None = None,
        learn: bool = True,
        find: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        now = clock()
        self.requests = Bucket(per_minute, now, burst) if per_minute else None
        self.tokens = Bucket(tokens_per_minute, now) if tokens_per_minute else None
        self.learn = learn  # follow the provider's headers (and take unset budgets from their `limit`)
        self.find = find  # find the rate from 429s that come without headers
        self.sources: dict[str, str] = {}
        if per_minute:
            self.sources["requests"] = SUITE
        if tokens_per_minute:
            self.sources["tokens"] = SUITE
        # The suite's budget is a ceiling: a rate found lower is kept, never one above it.
        self.found = RateFinder(ceiling_per_s=per_minute / 60 if per_minute else None)
        self.found_tokens = RateFinder(
            ceiling_per_s=tokens_per_minute / 60 if tokens_per_minute else None, min_refused=3
        )
        self.counting_tokens = tokens_per_minute is not None  # the client adds each call's tokens
        self._lock = asyncio.Lock()
        self.waited_s = 0.0  # total time callers spent waiting for the budget

    @property
    def rate(self) -> float:
        """Requests per second allowed (0.0 when there is no request budget)."""
        return self.requests.rate if self.requests is not None else 0.0

    @property
    def capacity(self) -> float:
        return self.requests.capacity if self.requests is not None else 0.0

    def delay(self, tokens: float = 0.0) -> float:
        """Spend one request (and `tokens`) now; seconds to wait before sending it."""
        now = self._clock()
        if now >= self.found.period_end or now >= self.found_tokens.period_end:
            self._tick(now)
        pause = self.requests.take(1.0, now) if self.requests is not None else 0.0
        if self.tokens is not None and tokens:
            pause = max(pause, self.tokens.take(tokens, now))
        self.found.turns += 1
        self.found_tokens.turns += 1
        return pause

    def refused(self, message: str, tokens: float, sent_at: float, in_flight: int) -> None:
        """A 429 that came without rate-limit headers: its message may state the limit; else find the rate.
        `tokens` is the refused call's token cost, `sent_at` when it was sent (monotonic), `in_flight` the
        calls sent and not yet answered."""
        if not self.find:
            return
        now = self._clock()
        kind, stated = limit_in_message(message)
        if stated is not None:
            if self.sources.get(kind) not in (SUITE, MESSAGE):
                self._install(kind, stated / 60, MESSAGE, now)
            return
        if kind == "tokens":
            if not self.counting_tokens:
                self.counting_tokens = True  # from now on the client counts tokens sent
                self.found_tokens.sent += tokens * in_flight  # those in flight, as big as this one
            if self.found_tokens.refused(tokens, sent_at, tokens * in_flight, now):
                self._install("tokens", self.found_tokens.rate or 0.0, FOUND, now)
        elif self.found.refused(1.0, sent_at, in_flight, now):
            self._install("requests", self.found.rate or 0.0, FOUND, now)

    def _tick(self, now: float) -> None:
        if self.found.tick(now):
            self._install("requests", self.found.rate or 0.0, FOUND, now)
        if self.found_tokens.tick(now):
            self._install("tokens", self.found_tokens.rate or 0.0, FOUND, now)

    def _install(self, kind: str, per_second: float, source: str, now: float) -> None:
        bucket = self.requests if kind == "requests" else self.tokens
        if bucket is None:
            bucket = Bucket(per_second * 60, now)
            bucket.tokens = min(bucket.tokens, 1.0)  # it starts after a burst of 429s: no saved-up burst
        else:
            bucket.set_rate(per_second, now)
        if kind == "requests":
            self.requests = bucket
        else:
            self.tokens = bucket
            self.counting_tokens = True
        if self.sources.get(kind) != SUITE:
            self.sources[kind] = source

    def describe(self) -> dict[str, object]:
        """The budgets kept and where they came from, per minute: for the manifest and the progress line."""
        out: dict[str, object] = {}
        if self.requests is not None:
            out["rpm"] = round(self.requests.rate * 60, 1)
            out["rpm_source"] = self.sources.get("requests", HEADERS)
        if self.tokens is not None:
            out["tpm"] = round(self.tokens.rate * 60, 1)
            out["tpm_source"] = self.sources.get("tokens", HEADERS)
        if self.found.refusals or self.found_tokens.refusals:
            out["rate_cuts"] = self.found.cuts + self.found_tokens.cuts
        if self.found.observed is not None:
            out["observed_rpm"] = round(self.found.observed * 60, 1)
        if self.found_tokens.observed is not None:
            out["observed_tpm"] = round(self.found_tokens.observed * 60, 1)
        return out

    async def wait(self, tokens: float = 0.0) -> None:
        # The lock keeps callers in order, and each sleeps until it is due while holding it: only one turn
        # is ever taken ahead, so a rate changed while callers wait (a budget found or cut, a header's
        # reset) applies to the very next of them, not after a queue booked at the old rate.
        queued = self._lock.locked()  # others wait their turn before us: the budget binds
        async with self._lock:
            pause = self.delay(tokens)
            if queued or pause > 0:
                self.found.held += 1
                self.found_tokens.held += 1
            if pause > 0:
                self.waited_s += pause
                await asyncio.sleep(pause)

    def observe(self, limits: RateLimits) -> None:
        """Follow what the provider says is left of its budget (from a response's or a 429's headers)."""
        now = self._clock()
        if limits.requests is not None:
            self.requests = self._follow(self.requests, limits.requests, now)
        if limits.tokens is not None:
            self.tokens = self._follow(self.tokens, limits.tokens, now)

    def _follow(self, bucket: Bucket | None, allowance: Allowance, now: float) -> Bucket | None:
        if bucket is None:
            if not (self.learn and allowance.limit):
                return None
            bucket = Bucket(allowance.limit, now)
        bucket.follow(allowance, now)
        return bucket

    @property
    def active(self) -> bool:
        """Whether any budget is being kept (set by the suite, learned from the provider, or being found)."""
        return (
            self.requests is not None
            or self.tokens is not None
            or self.found.measuring
            or self.found_tokens.measuring
        )
