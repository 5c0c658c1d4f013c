"""The rate-limit budget a provider reports in its response headers, in one shape for both providers.

OpenAI sends `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` with resets as relative durations
("1s", "6m0s", "20ms", "1h2m3.5s"); Anthropic sends `anthropic-ratelimit-{requests,tokens,input-tokens,
output-tokens}-{limit,remaining,reset}` with resets as RFC 3339 times. The pacer reads these to keep a run
inside the budget instead of learning it from 429s.
"""

from __future__ import annotations

__all__ = ["Allowance", "RateLimits", "parse_duration_s", "parse_reset_s", "rate_limits_from_headers"]

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True, slots=True)
class Allowance:
    """One budget: how much is left now, the window's total when known, and seconds until it refills."""

    remaining: float
    limit: float | None = None
    reset_s: float | None = None


@dataclass(frozen=True, slots=True)
class RateLimits:
    """Requests and tokens left; for tokens, the tightest of the provider's token budgets."""

    requests: Allowance | None = None
    tokens: Allowance | None = None


_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")


def parse_duration_s(text: str) -> float | None:
    """Seconds in a Go-style duration ("1s", "6m0s", "20ms", "1h2m3.5s") or a bare number of seconds."""
    text = text.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    position, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    return total if position == len(text) and position > 0 else None


def parse_reset_s(text: str, now: datetime | None = None) -> float | None:
    """Seconds until a reset given as a duration (OpenAI) or an RFC 3339 time (Anthropic); never negative.
    Two of them (a header sent twice, joined by commas): the later reset."""
    if "," in text:
        resets = [
            reset for reset in (parse_reset_s(part, now) for part in text.split(",")) if reset is not None
        ]
        return max(resets) if resets else None
    duration = parse_duration_s(text)
    if duration is not None:
        return duration
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _number(value: str | None) -> float | None:
    """A budget's number; a header sent twice (a proxy adding its own) arrives joined by commas, and the
    smaller value is the one that binds."""
    if value is None:
        return None
    try:
        return float(value)  # one value: the usual case
    except ValueError:
        pass
    numbers = []
    for part in value.split(","):
        try:
            number = float(part)
        except ValueError:
            continue
        if not math.isnan(number):
            numbers.append(number)
    return min(numbers) if numbers else None


def _allowance(
    headers: Mapping[str, str], names: tuple[str, str, str], now: datetime | None
) -> Allowance | None:
    limit_name, remaining_name, reset_name = names
    remaining = _number(headers.get(remaining_name))
    if remaining is None:
        return None
    reset = headers.get(reset_name)
    return Allowance(
        remaining=remaining,
        limit=_number(headers.get(limit_name)),
        reset_s=parse_reset_s(reset, now) if reset else None,
    )


def _openai(kind: str) -> tuple[str, str, str]:
    return (f"x-ratelimit-limit-{kind}", f"x-ratelimit-remaining-{kind}", f"x-ratelimit-reset-{kind}")


def _anthropic(kind: str) -> tuple[str, str, str]:
    prefix = f"anthropic-ratelimit-{kind}"
    return (f"{prefix}-limit", f"{prefix}-remaining", f"{prefix}-reset")


def _tightest(allowances: list[Allowance | None]) -> Allowance | None:
    """The budget closest to running out (by share left when the total is known, else by what is left)."""
    present = [a for a in allowances if a is not None]
    if not present:
        return None
    return min(present, key=lambda a: (a.remaining / a.limit) if a.limit else a.remaining)


def rate_limits_from_headers(headers: Mapping[str, str], now: datetime | None = None) -> RateLimits | None:
    """The budget in a response's headers (either provider's names), or None when it sends none.

    `headers` must look names up case-insensitively (httpx and aiohttp headers do) or be lower-case.
    """
    if headers.get("x-ratelimit-remaining-requests") is not None or (
        headers.get("x-ratelimit-remaining-tokens") is not None
    ):
        requests = _allowance(headers, _openai("requests"), now)
        tokens = _allowance(headers, _openai("tokens"), now)
    elif headers.get("anthropic-ratelimit-requests-remaining") is not None or any(
        headers.get(f"anthropic-ratelimit-{kind}-remaining") is not None
        for kind in ("tokens", "input-tokens", "output-tokens")
    ):
        requests = _allowance(headers, _anthropic("requests"), now)
        tokens = _tightest(
            [
                _allowance(headers, _anthropic(kind), now)
                for kind in ("tokens", "input-tokens", "output-tokens")
            ]
        )
    else:
        return None
    return RateLimits(requests=requests, tokens=tokens)
