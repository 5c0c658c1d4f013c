"""`--max-errors`: when a clearly broken run should stop early instead of burning the whole plan."""

from __future__ import annotations

__all__ = ["ErrorBudget", "parse_max_errors"]

import math
import re

from simulator.errors import in_both

# Without --max-errors, a run stops when this many items in a row failed (every call 401, a dead bot);
# a smaller run finishes, its errors counted.
DEFAULT_FAILURE_STREAK = 10
# A fractional --max-errors is judged only once this many items have finished.
MIN_FRACTION_SAMPLE = 10


_RATE_LIMIT = re.compile(r"\brate_limit\b|\b429\b|\b529\b|overloaded", re.IGNORECASE)


def is_rate_limit(cause: str) -> bool:
    """Whether a failure is a provider's rate limit (429, 529 overloaded): a slow provider, not a broken
    configuration."""
    return _RATE_LIMIT.search(cause) is not None


def parse_max_errors(text: str) -> float:
    """`--max-errors`: `10` (a count), `0.05` or `5%` (a share of finished items), or `off`."""
    value = text.strip().lower()
    if value in ("off", "none", "inf"):
        return math.inf
    try:
        number = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        number = -1.0
    if number < 0 or (number >= 1 and not number.is_integer()) or (value.endswith("%") and number >= 1):
        raise ValueError(f"--max-errors takes a count (10), a share (0.05 or 5%) or off, not '{text}'")
    return number


def _budget(limit: float) -> str:
    return in_both(f"--max-errors {limit:g}", f"RunOptions(max_errors={limit:g})")


class ErrorBudget:
    """Counts finished items and failures; says why the run should stop, once it should."""

    def __init__(self, limit: float | None) -> None:
        # None: stop after DEFAULT_FAILURE_STREAK failures in a row; a count (0, 1, 2, ...) or a fraction
        # (0 < x < 1) of finished items; math.inf: never stop.
        self.limit = limit
        self.items = 0
        self.failed = 0
        self.streak = 0
        self.reason: str | None = None

    def account(self, cause: str | None) -> str | None:
        """Count one finished item (`cause` is its failure, or None); the reason to stop, the first time."""
        self.items += 1
        if cause is None:
            self.streak = 0
            return None
        self.failed += 1
        # A run of failures in a row says the configuration is wrong (key, model, URL); a provider's rate
        # limit says it is slow: those neither lengthen the run of failures nor end it.
        if not is_rate_limit(cause):
            self.streak += 1
        if self.reason is None:
            reason = self._exceeded()
            if reason is not None:
                self.reason = f"{reason} (last: {cause})"
                return self.reason
        return None

    def _exceeded(self) -> str | None:
        limit, errors, finished, streak = self.limit, self.failed, self.items, self.streak
        if limit is None:
            if streak >= DEFAULT_FAILURE_STREAK:
                first = "the first " if streak == finished else "the last "
                return f"{first}{streak} items all failed"
            return None
        if limit == math.inf:
            return None
        if limit >= 1 or limit == 0:
            return f"{errors} items failed, more than {_budget(limit)}" if errors > limit else None
        if finished >= MIN_FRACTION_SAMPLE and errors / finished > limit:
            return (
                f"{errors} of {finished} items failed ({errors / finished:.0%}), more than {_budget(limit)}"
            )
        return None
