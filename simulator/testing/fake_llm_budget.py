"""A provider-side rate limit for the fake LLM server: token buckets for requests and tokens per minute, the
rate-limit headers the real APIs send with every answer, and a 429 when a request does not fit.

As at OpenAI and Anthropic, a bucket holds up to `burst` (by default a whole minute's budget) and refills
continuously; a request costs one request and its input tokens plus max_tokens. OpenAI's headers give
resets as durations ("1s", "6m0s", "20ms"), Anthropic's as RFC 3339 times; both mean "full again at".

Many gateways, Azure deployments and local proxies say less: `send_headers=False` sends no rate-limit
headers, `retry_after_s` a fixed Retry-After (e.g. "1") instead of the exact wait, and
`retry_after_date` writes it as an HTTP date. The 429's message says which budget ran out ("requests
per minute" or "tokens per minute") and, with `state_limit`, its size, as OpenAI's messages do.
"""

from __future__ import annotations

__all__ = ["ServerBudget", "go_duration"]

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from simulator.testing.fake_llm_behaviour import Api


def go_duration(seconds: float) -> str:
    """A duration as OpenAI writes it: "20ms", "1.5s", "6m0s"."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    if seconds < 60:
        return f"{seconds:.3g}s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.0f}s"


@dataclass
class _Bucket:
    per_minute: float
    burst: float
    level: float = -1.0  # starts full
    updated: float = 0.0

    def refill(self, now: float) -> None:
        if self.level < 0:
            self.level, self.updated = self.burst, now
        self.level = min(self.burst, self.level + (now - self.updated) * self.per_minute / 60)
        self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until `amount` fits (0.0 when it fits now)."""
        short = amount - self.level
        return 0.0 if short <= 0 else short * 60 / self.per_minute

    def full_in(self) -> float:
        return (self.burst - self.level) * 60 / self.per_minute


@dataclass
class ServerBudget:
    """`rpm` requests and `tpm` tokens per minute (either may be None: unlimited); `burst` caps what a
    bucket saves up (default: a minute's worth, as the real providers do)."""

    rpm: float | None = None
    tpm: float | None = None
    burst_requests: float | None = None
    burst_tokens: float | None = None
    send_headers: bool = True
    retry_after_s: float | None = None  # None: the exact wait until the request would fit
    retry_after_date: bool = False  # Retry-After as an HTTP date (whole seconds, rounded up)
    state_limit: bool = False  # the 429's message names the limit ("Limit 600")
    rejected: int = 0
    admitted: int = 0
    last_refused: str = "requests"  # the bucket that refused the last request over the budget
    _buckets: dict[str, _Bucket] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.rpm:
            self._buckets["requests"] = _Bucket(self.rpm, self.burst_requests or self.rpm)
        if self.tpm:
            self._buckets["tokens"] = _Bucket(self.tpm, self.burst_tokens or self.tpm)

    def admit(self, api: Api, tokens: float, now: float) -> tuple[float, dict[str, str]]:
        """Take one request of `tokens` if it fits: (0.0, headers); else (seconds to wait, headers) for a 429."""
        costs = {"requests": 1.0, "tokens": tokens}
        for bucket in self._buckets.values():
            bucket.refill(now)
        wait = max((b.wait_for(costs[name]) for name, b in self._buckets.items()), default=0.0)
        if wait == 0.0:
            self.admitted += 1
            for name, bucket in self._buckets.items():
                bucket.level -= costs[name]
        else:
            self.rejected += 1
            self.last_refused = max(self._buckets, key=lambda n: self._buckets[n].wait_for(costs[n]))
        return wait, self._headers(api) if self.send_headers else {}

    def retry_after(self, wait: float) -> str:
        """The Retry-After header for a 429 that would fit in `wait` seconds."""
        seconds = self.retry_after_s if self.retry_after_s is not None else wait
        if self.retry_after_date:
            # An HTTP date has whole seconds: one more than asked, so the client never comes back early.
            when = datetime.now(UTC) + timedelta(seconds=int(seconds) + 1)
            return format_datetime(when, usegmt=True)
        return f"{seconds:.3f}"

    def refusal_message(self) -> str:
        """What the 429 says: which budget ran out, per minute, and with `state_limit` its size."""
        name = self.last_refused
        per_minute = self._buckets[name].per_minute
        limit = f": Limit {per_minute:g}" if self.state_limit else ""
        return f"Rate limit reached on {name} per min{limit} (fake LLM server budget). Please retry later."

    def _headers(self, api: Api) -> dict[str, str]:
        headers: dict[str, str] = {}
        now = datetime.now(UTC)
        for name, bucket in self._buckets.items():
            limit, remaining = f"{bucket.per_minute:g}", f"{max(0, int(bucket.level))}"
            if api == "openai":
                headers[f"x-ratelimit-limit-{name}"] = limit
                headers[f"x-ratelimit-remaining-{name}"] = remaining
                headers[f"x-ratelimit-reset-{name}"] = go_duration(bucket.full_in())
            else:
                when = (now + timedelta(seconds=bucket.full_in())).isoformat(timespec="seconds")
                prefix = f"anthropic-ratelimit-{name}"
                headers[f"{prefix}-limit"] = limit
                headers[f"{prefix}-remaining"] = remaining
                headers[f"{prefix}-reset"] = when.replace("+00:00", "Z")
        return headers
