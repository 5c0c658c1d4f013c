"""The tests behind the engine's verdict words (FIXED, IMPROVED, BROKE SOMETHING, likely simulator-induced,
flaky simulation): one-sided exact tests at a stated level, so a word is printed only when chance alone
would print it at most `ALPHA` of the time, and "no evidence either way" otherwise.

- `sign_test_greater(k, n)`: of n paired flips, k went one way; P(at least k | each way 1/2). Exact for a
  change that does nothing whenever the two runs' conversations are independent draws: then each pair's
  two results are exchangeable, whatever the correlation between repeats of a vignette.
- `fisher_greater(a, b, c, d)`: [[a, b], [c, d]] with rows the groups and columns (event, no event);
  P(at least a events in the first row | the margins). Exact under "the groups do not differ".

docs/stats.md, "Words with tests", states the levels and the planted-truth false-alarm rates.
"""

from __future__ import annotations

__all__ = ["ALPHA", "fisher_greater", "sign_test_greater", "smallest_significant_flips"]

import math

ALPHA = 0.05  # the level of every verdict word


def sign_test_greater(k: int, n: int) -> float:
    """One-sided exact sign test: P(X >= k) for X ~ Binomial(n, 1/2); 1.0 when n == 0."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 1.0
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n


def smallest_significant_flips(alpha: float = ALPHA) -> int:
    """The fewest flips, all one way, that a one-sided sign test calls significant at `alpha`."""
    n = 1
    while 0.5**n >= alpha:
        n += 1
    return n


def fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact test on [[a, b], [c, d]]: P(first row holds at least `a` events | margins)."""
    if min(a, b, c, d) < 0:
        raise ValueError("counts must be >= 0")
    row, col, total = a + b, a + c, a + b + c + d
    if total == 0 or row == 0 or col == 0:
        return 1.0
    high = min(row, col)
    denominator = math.comb(total, row)
    return sum(math.comb(col, k) * math.comb(total - col, row - k) for k in range(a, high + 1)) / denominator
