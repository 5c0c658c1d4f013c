"""Small, dependency-free statistics for eval results: intervals, bounds, paired tests, agreement, pass^k.

The one home of the interval and test formulas (Wilson, the rule of three and the exact zero-failure
bound, McNemar's exact test, the exact binomial test, the paired bootstrap, Cohen's kappa): analysis/
modules call these and keep only their domain metrics. `dist.py` holds the distribution functions the
clustered statistics need; `interrater.py` the scenario-clustered bootstrap (numpy).

Every function is pure and uses only the standard library (`math`, `random`, `statistics`), so reports
stay reproducible; the paired bootstrap draws its `random.Random` resamples in bulk with numpy
(`resample.py`), the same draws to the bit. The test suite cross-checks each function against scipy and
statsmodels.
"""

from __future__ import annotations

__all__ = [
    "Counts",
    "Interval",
    "Rate",
    "binomial_test",
    "bound_words",
    "cohens_kappa",
    "k_grid",
    "margin_of_error",
    "mcnemar_exact",
    "median",
    "paired_bootstrap",
    "pass_at_k",
    "pass_hat_k",
    "pct",
    "percentile",
    "rate",
    "rule_of_three",
    "runs_needed_for_bound",
    "sample_size_for_margin",
    "wilson_interval",
    "wilson_score",
    "worst_at_k",
    "z_for_confidence",
    "zero_failure_upper_bound",
]

import math
import random
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

Counts = Literal["failures", "successes"]
"""What `k` counts in `rate(k, n, counts=...)`: failures (the default) or successes."""


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")


def _check_counts(k: int, n: int) -> None:
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")


def pct(x: float | None, digits: int = 1) -> str:
    """A fraction as a percentage string (`0.0625` -> `6.2%`); None (nothing measured) as `n/a`. The one
    percent formatter of the package."""
    return "n/a" if x is None else f"{100 * x:.{digits}f}%"


def _conf_label(confidence: float) -> str:
    return f"{100 * confidence:g}%"


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval [low, high] at a stated confidence level."""

    low: float
    high: float
    confidence: float = 0.95

    def __contains__(self, x: float) -> bool:
        return self.low <= x <= self.high

    @property
    def width(self) -> float:
        """high - low."""
        return self.high - self.low

    def percent(self, digits: int = 1) -> str:
        """The interval as percentages, e.g. `8.7%–32.0%`."""
        return f"{pct(self.low, digits)}–{pct(self.high, digits)}"

    def __str__(self) -> str:
        return f"{_conf_label(self.confidence)} CI [{self.low:.4g}, {self.high:.4g}]"


@dataclass(frozen=True)
class Rate:
    """A proportion k/n shown with its counts, its Wilson interval and, when no failure was seen, a bound.

    `zero_failure_bound` is always an upper bound on the *failure* rate (exact, one-sided, at
    `confidence`): it is set when no failure was observed, that is k == 0 when `counts == "failures"`,
    or k == n when `counts == "successes"`; it is None otherwise and when n == 0. `rate` is None when
    n == 0 (nothing was measured); the interval is then (0, 1).
    """

    k: int
    n: int
    rate: float | None
    low: float
    high: float
    zero_failure_bound: float | None
    counts: Counts = "failures"
    confidence: float = 0.95

    @property
    def interval(self) -> Interval:
        """The Wilson interval as an `Interval`."""
        return Interval(self.low, self.high, self.confidence)

    def __str__(self) -> str:
        if self.rate is None:
            return f"{self.k}/{self.n} = n/a (no cases)"
        if (
            self.zero_failure_bound is not None
        ):  # one bound, in the direction of the rate (not a 2nd interval)
            return (
                f"{self.k}/{self.n} = {pct(self.rate)} ({bound_words(self.zero_failure_bound, self.counts)}"
                + (f", {_conf_label(self.confidence)} one-sided)")
            )
        ci = f"{_conf_label(self.confidence)} CI {self.interval.percent()}"
        return f"{self.k}/{self.n} = {pct(self.rate)} ({ci})"


def bound_words(zero_failure_bound: float, counts: Counts) -> str:
    """The one-sided bound of a rate with nothing against it, in the rate's own direction: `none seen: at
    most 4.4%` for a rate that counts events (errors, under-triage), `none missed: at least 95.6%` for one
    that counts successes (sensitivity); never "fail" for a rate that is not a failure rate."""
    if counts == "successes":
        return f"none missed: at least {pct(1 - zero_failure_bound)}"
    return f"none seen: at most {pct(zero_failure_bound)}"


def z_for_confidence(confidence: float = 0.95) -> float:
    """The two-sided normal critical value z for a confidence level (0.95 -> 1.959964, often written 1.96)."""
    _check_confidence(confidence)
    return NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for k successes in n trials; safe near 0% and 100% and for small n.

    With n == 0 nothing is known, so the interval is the whole range (0, 1).
    """
    _check_counts(k, n)
    _check_confidence(confidence)
    if n == 0:
        return Interval(0.0, 1.0, confidence)
    low, high = wilson_score(k / n, n, z_for_confidence(confidence))
    return Interval(low, high, confidence)


def wilson_score(p: float, n: float, crit: float) -> tuple[float, float]:
    """Wilson's score interval for proportion p seen in (possibly fractional, e.g. effective) n trials, at
    critical value `crit` (z, or Student's t for the clustered interval); (0, 1) when n is not positive."""
    if n <= 0:
        return 0.0, 1.0
    c2 = crit * crit
    denom = 1.0 + c2 / n
    centre = (p + c2 / (2 * n)) / denom
    half = crit * math.sqrt(max(0.0, p * (1.0 - p) / n + c2 / (4 * n * n))) / denom
    low = 0.0 if p <= 0.0 else max(0.0, centre - half)
    high = 1.0 if p >= 1.0 else min(1.0, centre + half)
    return low, high


def margin_of_error(p: float, n: int, confidence: float = 0.95) -> float:
    """Normal-approximation half-width z·sqrt(p(1-p)/n): the quick "±x points" for an observed rate p."""
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    return z_for_confidence(confidence) * math.sqrt(p * (1.0 - p) / n)


def zero_failure_upper_bound(n: int, confidence: float = 0.95) -> float:
    """Exact one-sided upper bound on a failure rate after zero failures in n runs: 1 - (1-confidence)^(1/n).

    This is the p at which seeing no failure in n runs has probability 1 - confidence (Clopper–Pearson,
    one-sided). With n == 0 nothing is known and the bound is 1.
    """
    _check_confidence(confidence)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n == 0:
        return 1.0
    # -expm1(log1p(-c)/n) == 1 - (1-c)**(1/n), without cancellation for large n.
    return -math.expm1(math.log1p(-confidence) / n)


def rule_of_three(n: int) -> float:
    """The seed's approximation 3/n of the 95% bound after zero failures in n runs (capped at 1), kept for
    reference and tests only: every report uses the exact bound, `zero_failure_upper_bound`."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return 1.0 if n == 0 else min(1.0, 3.0 / n)


def runs_needed_for_bound(target: float, confidence: float = 0.95) -> int:
    """Smallest n such that zero failures in n runs bounds the failure rate at or below `target`.

    For example a 1% target at 95% confidence needs 299 failure-free runs (the rule of three says 300).
    """
    _check_confidence(confidence)
    if not 0.0 < target < 1.0:
        raise ValueError(f"target must be strictly between 0 and 1, got {target!r}")
    n = max(1, math.ceil(math.log1p(-confidence) / math.log1p(-target)))
    # Guard against rounding in the logarithms: settle on the exact smallest n.
    while n > 1 and zero_failure_upper_bound(n - 1, confidence) <= target:
        n -= 1
    while zero_failure_upper_bound(n, confidence) > target:
        n += 1
    return n


def rate(k: int, n: int, *, counts: Counts = "failures", confidence: float = 0.95) -> Rate:
    """k of n with its Wilson interval; when no failure was seen, also the exact zero-failure bound.

    Say what k counts with `counts`: "failures" (the default, for error rates such as under-triage) or
    "successes" (for pass rates). The bound always concerns the failure rate, so it appears for 0 failures
    of n, or for n successes of n (where it bounds 1 - pass rate).
    """
    _check_counts(k, n)
    if counts not in ("failures", "successes"):
        raise ValueError(f'counts must be "failures" or "successes", got {counts!r}')
    interval = wilson_interval(k, n, confidence)
    failures = k if counts == "failures" else n - k
    bound = zero_failure_upper_bound(n, confidence) if n > 0 and failures == 0 else None
    return Rate(
        k=k,
        n=n,
        rate=k / n if n else None,
        low=interval.low,
        high=interval.high,
        zero_failure_bound=bound,
        counts=counts,
        confidence=confidence,
    )


def sample_size_for_margin(p: float, margin: float, confidence: float = 0.95) -> int:
    """Cases needed so a rate near p is measured to ±margin: ceil(z² p(1-p) / margin²), at least 1.

    Use p = 0.5 when nothing is known about the rate (the largest, safest answer).
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    if not 0.0 < margin < 1.0:
        raise ValueError(f"margin must be strictly between 0 and 1, got {margin!r}")
    z = z_for_confidence(confidence)
    exact = z * z * p * (1.0 - p) / (margin * margin)
    # The tolerance keeps a product that is an integer up to float noise from rounding up one extra case.
    return max(1, math.ceil(exact - 1e-9))


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value for paired pass/fail results.

    b = cases only A got right, c = cases only B got right. Under "A and B are equally good" each of the
    b + c disagreements goes either way with probability 1/2, so the p-value is twice the binomial tail
    at min(b, c), capped at 1. No disagreements (b + c == 0) gives 1.0.
    """
    if b < 0 or c < 0:
        raise ValueError(f"b and c must be >= 0, got b={b}, c={c}")
    n, k = b + c, min(b, c)
    if n == 0:
        return 1.0
    # Exact integer sum of C(n, i) for i <= k, then one correctly rounded division.
    term, tail = 1, 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        tail += term
    return min(1.0, 2 * tail / 2**n)


def _binomial_pmf(i: int, n: int, p: float) -> float:
    if p in (0.0, 1.0):
        return float(i == (0 if p == 0.0 else n))
    log = math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
    return math.exp(log + i * math.log(p) + (n - i) * math.log1p(-p))


def binomial_test(k: int, n: int, p: float) -> float:
    """Exact two-sided binomial test of k successes in n at probability p (scipy's "minlike" method)."""
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 1.0
    observed = _binomial_pmf(k, n, p)
    tolerance = 1.0 + 1e-7
    return min(
        1.0, math.fsum(q for i in range(n + 1) if (q := _binomial_pmf(i, n, p)) <= observed * tolerance)
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (q in 0..100) with linear interpolation between order statistics.

    Same definition as numpy's default: position (len - 1) * q / 100 in the sorted values.
    """
    if not values:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"q must be in [0, 100], got {q!r}")
    xs = sorted(values)
    return _sorted_percentile(xs, q)


def _sorted_percentile(xs: Sequence[float], q: float) -> float:
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    frac = pos - lo
    if frac == 0.0 or xs[lo] == xs[hi]:
        return float(xs[lo])
    return xs[lo] + (xs[hi] - xs[lo]) * frac


def median(values: Sequence[float]) -> float:
    """The median (the 50th percentile with linear interpolation)."""
    return percentile(values, 50.0)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    iters: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Interval:
    """Bootstrap confidence interval of mean(b - a) for per-case scores of A and B on the SAME cases.

    Resamples cases with replacement `iters` times and takes the middle `confidence` share of the mean
    differences (percentile method, linear interpolation). Works for any numbers: 0/1 verdicts, judge
    scores, costs, latencies. Seeded with `random.Random(seed)`, so the same inputs give the same interval.
    """
    _check_confidence(confidence)
    if len(a) != len(b):
        raise ValueError(f"a and b must be paired (same length), got {len(a)} and {len(b)}")
    if not a:
        raise ValueError("paired_bootstrap needs at least one case")
    if iters < 1:
        raise ValueError(f"iters must be >= 1, got {iters}")
    # numpy loads only when a bootstrap runs: the rest of this module serves paths that never resample.
    from simulator.stats.resample import draws, sums

    n = len(a)
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    # `sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(iters))`, drawn in bulk, to the bit. Integer
    # verdicts stay integers, so the sums are exact; one division per resample at the end.
    means = sorted(
        total / n for rows in draws(random.Random(seed), n, n, iters) for total in sums(diffs, rows)
    )
    tail = (1.0 - confidence) / 2.0 * 100.0
    return Interval(_sorted_percentile(means, tail), _sorted_percentile(means, 100.0 - tail), confidence)


def cohens_kappa(labels_a: Sequence[Hashable], labels_b: Sequence[Hashable]) -> float:
    """Cohen's kappa between two raters' labels on the same items: agreement corrected for chance.

    kappa = (p_o - p_e) / (1 - p_e), with p_o the observed agreement and p_e the agreement expected if
    both labelled independently at their own base rates. Labels may be any hashable values.
    Degenerate case: when p_e == 1 (both raters gave one and the same label to every item) kappa is 0/0;
    it is returned as NaN, meaning "not measurable: the sample needs items of more than one label".
    """
    if len(labels_a) != len(labels_b):
        raise ValueError(f"label lists differ in length: {len(labels_a)} and {len(labels_b)}")
    n = len(labels_a)
    if n == 0:
        raise ValueError("cohens_kappa needs at least one labelled item")
    agree = sum(1 for x, y in zip(labels_a, labels_b, strict=True) if x == y)
    count_a, count_b = Counter(labels_a), Counter(labels_b)
    chance = sum(count_a[label] * count_b[label] for label in count_a)
    # Scaled by n²: p_o = agree/n, p_e = chance/n², so kappa = (n·agree - chance) / (n² - chance).
    if chance == n * n:
        return math.nan
    return (n * agree - chance) / (n * n - chance)


def _check_k(k: int) -> None:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def _eligible(per_scenario: Sequence[tuple[int, int]], k: int) -> list[tuple[int, int]]:
    _check_k(k)
    for n, c in per_scenario:
        _check_counts(c, n)
    kept = [(n, c) for n, c in per_scenario if n >= k]
    if not kept:
        raise ValueError(f"no scenario has at least k={k} trials")
    return kept


def pass_hat_k(per_scenario: Sequence[tuple[int, int]], k: int) -> float:
    """pass^k (tau-bench): the chance that k fresh runs of a scenario ALL succeed, averaged over scenarios.

    `per_scenario` holds (n trials, c successes) per scenario; each contributes C(c, k) / C(n, k), the
    unbiased estimate of p^k from its n trials. Scenarios with n < k cannot estimate it and are left out;
    if none has n >= k, a ValueError says so. pass^1 is the plain mean pass rate.
    """
    kept = _eligible(per_scenario, k)
    return math.fsum(math.comb(c, k) / math.comb(n, k) for n, c in kept) / len(kept)


def pass_at_k(per_scenario: Sequence[tuple[int, int]], k: int) -> float:
    """pass@k: the chance that AT LEAST ONE of k runs succeeds, 1 - C(n-c, k) / C(n, k), averaged.

    The optimistic counterpart of `pass_hat_k`, for contrast: a bot that must be right every time is
    judged by pass^k. Same (n, c) input and the same exclusion of scenarios with n < k.
    """
    kept = _eligible(per_scenario, k)
    return math.fsum(1.0 - math.comb(n - c, k) / math.comb(n, k) for n, c in kept) / len(kept)


def k_grid(runs: int) -> list[int]:
    """The k at which pass^k and worst-at-k are reported: 1, 2, 4, 8, ... up to `runs`, and `runs` itself."""
    if runs < 1:
        return []
    ks = []
    k = 1
    while k <= runs:
        ks.append(k)
        k *= 2
    if ks[-1] != runs:
        ks.append(runs)
    return ks


def worst_at_k(scores: Sequence[float], k: int) -> float:
    """The expected lowest score among k of a scenario's n repeats drawn without replacement (HealthBench).

    With scores sorted ascending s_1 <= ... <= s_n, the i-th is the minimum of a random k-subset with
    probability C(n-i, k-1) / C(n, k); the weights are built by a running ratio, so one k costs O(n). For
    0/1 scores it equals pass^k. Raises ValueError when k > n.
    """
    _check_k(k)
    n = len(scores)
    if k > n:
        raise ValueError(f"worst-at-{k} needs at least {k} scores, got {n}")
    xs = sorted(scores)
    weight = k / n  # i = 1: C(n-1, k-1) / C(n, k)
    total = 0.0
    for i in range(1, n - k + 2):
        total += weight * xs[i - 1]
        # C(n-i-1, k-1) / C(n-i, k-1) = (n-i-k+1) / (n-i)
        weight = weight * (n - i - k + 1) / (n - i) if n - i > 0 else 0.0
    return total
