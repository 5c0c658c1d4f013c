"""The receiver's limits: per-client rate limiting (a token bucket per client address), the connection cap
and the read deadline (served by collect/connections.py)."""

from __future__ import annotations

__all__ = ["MAX_CONNECTIONS", "READ_TIMEOUT_S", "RateLimiter"]

import math
from collections import OrderedDict

MAX_CLIENTS = 10_000  # buckets kept; the least recently seen client is forgotten first
MAX_CONNECTIONS = 512  # uvicorn's `limit_concurrency`: 503 past it
# The OTLP exporters give up on a request after 10 s (OTEL_EXPORTER_OTLP_TIMEOUT): one still being sent
# after that has nobody waiting for its answer.
READ_TIMEOUT_S = 10.0


class RateLimiter:
    """`rate` requests a second per client, with bursts of up to `burst`; `take` says how long to wait."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = max(burst, 1.0)
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # client -> (tokens, at)

    def take(self, client: str, now: float) -> float:
        """0 when the request may go ahead (one token taken), else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        tokens, at = self.buckets.pop(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens >= 1.0:
            self.buckets[client] = (tokens - 1.0, now)
            wait = 0.0
        else:
            self.buckets[client] = (tokens, now)
            wait = (1.0 - tokens) / self.rate
        while len(self.buckets) > MAX_CLIENTS:
            self.buckets.popitem(last=False)
        return wait

    @staticmethod
    def retry_after(wait: float) -> str:
        return str(max(1, math.ceil(wait)))
