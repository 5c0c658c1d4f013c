"""Scenario-clustered intervals: a rate that pools repeats of the same scenarios, with scenarios as the unit.

Repeats of one scenario share a persona, facts and usually a bot path, so they are correlated; counting
them as independent trials makes intervals too narrow (50 repeats of a deterministic bot say no more than
one). The method (docs/stats.md, "Repeats are not independent"):

1. The design effect from the between-scenario spread: the cluster-robust (sandwich, CR1) variance of the
   pooled rate, Var = G/(G-1) · Σ_g (k_g − p·n_g)² / N², over the plain binomial variance p(1−p)/N. It is
   never taken below 1, so the clustered interval is never narrower than the conversation-level one.
2. The effective sample size n_eff = N / deff: somewhere between the number of scenarios and the number of
   conversations.
3. A Wilson interval at p with n_eff trials and Student's t with G−1 degrees of freedom in place of z
   (Korn & Graubard's correction: few scenarios mean a poorly known variance, so the interval widens).

Wilson keeps the interval inside [0, 1] near 0% and 100%. When no failure (or no success) was seen the
spread says nothing about the correlation, so the worst case is assumed: every scenario behaves the same
in all its repeats, n_eff = G, and the one-sided zero-failure bound rests on the G distinct scenarios.
"""

from __future__ import annotations

__all__ = [
    "ClusteredInterval",
    "clustered_interval",
    "clustered_mcnemar",
    "clustered_paired_bootstrap",
    "clustered_zero_failure_bound",
    "decision_bound",
    "design_effect",
    "detectable_difference",
    "interval_from_sums",
    "scenarios_to_reach",
    "wilson_score",
]

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from simulator.stats.basic import wilson_score, z_for_confidence, zero_failure_upper_bound
from simulator.stats.dist import chi2_sf, t_critical


@dataclass(frozen=True)
class ClusteredInterval:
    """The clustered interval of a pooled rate k/n over `scenarios` scenarios (k counts successes or failures)."""

    low: float
    high: float
    scenarios: int
    n_eff: float
    design_effect: float
    icc: float | None
    critical_value: float
    confidence: float = 0.95


def design_effect(per_scenario: Sequence[tuple[int, int]]) -> float | None:
    """deff = cluster-robust variance / binomial variance of the pooled rate; None when it cannot be estimated.

    `per_scenario` holds (k, n) per scenario. Undefined with fewer than two scenarios, or when the pooled
    rate is exactly 0 or 1 (no spread to measure). Never below 1.
    """
    kept = [(k, n) for k, n in per_scenario if n > 0]
    g = len(kept)
    total_n = sum(n for _, n in kept)
    total_k = sum(k for k, _ in kept)
    if g < 2 or total_k in (0, total_n):
        return None
    p = total_k / total_n
    robust = g / (g - 1) * math.fsum((k - p * n) ** 2 for k, n in kept) / total_n**2
    return max(1.0, robust / (p * (1.0 - p) / total_n))


def clustered_interval(
    per_scenario: Sequence[tuple[int, int]], confidence: float = 0.95
) -> ClusteredInterval:
    """The scenario-clustered interval of sum(k)/sum(n) for per-scenario counts [(k, n), ...]."""
    kept = [(k, n) for k, n in per_scenario if n > 0]
    for k, n in kept:
        if not 0 <= k <= n:
            raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    total_n = sum(n for _, n in kept)
    total_k = sum(k for k, _ in kept)
    p = total_k / total_n if total_n else 0.0
    spread = math.fsum((k - p * n) ** 2 for k, n in kept)
    return interval_from_sums(len(kept), total_n, total_k, spread, confidence)


def interval_from_sums(
    scenarios: int, total_n: float, total_k: float, spread: float, confidence: float = 0.95
) -> ClusteredInterval:
    """The clustered interval from G, N, K and spread = Σ_g (k_g − p·n_g)²: the one home of the computation,
    used for the observed counts and for projected ones (stats/projection.py), so advice and decision
    can never disagree. Counts may be fractional (a projection scales them)."""
    g = scenarios
    z = z_for_confidence(confidence)
    if g == 0 or total_n <= 0:
        return ClusteredInterval(0.0, 1.0, 0, 0.0, 1.0, None, z, confidence)
    p = total_k / total_n
    if g < 2 or total_k <= 0 or total_k >= total_n:
        # One scenario, or no spread to measure: assume repeats of a scenario are copies (ICC = 1).
        n_eff = float(g)
        low, high = wilson_score(p, n_eff, z)
        if g == 1 and 0 < total_k < total_n:
            low, high = 0.0, 1.0  # one scenario with mixed results says nothing about other scenarios
        return ClusteredInterval(low, high, g, n_eff, total_n / g, None, z, confidence)
    robust = g / (g - 1) * spread / total_n**2
    deff = max(1.0, robust / (p * (1.0 - p) / total_n))
    n_eff = total_n / deff
    crit = t_critical(confidence, g - 1)
    low, high = wilson_score(p, n_eff, crit)
    mean_size = total_n / g
    icc = min(1.0, max(0.0, (deff - 1.0) / (mean_size - 1.0))) if mean_size > 1 else None
    return ClusteredInterval(low, high, g, n_eff, deff, icc, crit, confidence)


def decision_bound(
    low: float,
    high: float,
    scenarios: int,
    failures: float,
    *,
    counts: str,
    upper: bool,
    confidence: float = 0.95,
) -> float:
    """The one bound a requirement is judged on (the gate, safety controls, alerts): the clustered upper
    end for `<=` (the one-sided zero-failure bound over the scenarios when no failure was seen and k counts
    failures), the lower end for `>=` (1 − that bound when k counts successes and none failed)."""
    zero = clustered_zero_failure_bound(scenarios, confidence) if failures <= 0 else None
    if upper:
        return zero if zero is not None and counts == "failures" else high
    return 1.0 - zero if zero is not None and counts == "successes" else low


def clustered_zero_failure_bound(scenarios: int, confidence: float = 0.95) -> float:
    """The one-sided failure bound when no failure was seen: it rests on the distinct scenarios only."""
    return zero_failure_upper_bound(scenarios, confidence)


def clustered_mcnemar(discordant: Sequence[tuple[int, int]]) -> float:
    """Clustered McNemar test (Durkalski et al. 2003) over scenarios: p-value of "A and B are equally good".

    `discordant` holds (b, c) per scenario: pairs only A passed, pairs only B passed. The statistic
    (Σ(b−c))² / Σ(b−c)² is chi-square with 1 df; it is at most the number of scenarios that changed, so
    two scenarios can never give p below 0.157 however many repeats they had. No change gives 1.0.
    """
    diffs = [b - c for b, c in discordant]
    denominator = sum(d * d for d in diffs)
    if denominator == 0:
        return 1.0
    return chi2_sf(sum(diffs) ** 2 / denominator, 1)


def clustered_paired_bootstrap(
    diffs_by_scenario: Sequence[Sequence[float]], iters: int = 10_000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """Bootstrap interval of the pooled mean difference D = Σd / Σn of paired pass/fail scores (each d in
    −1, 0, 1), resampling scenarios (each with all its repeats), like the clustered McNemar test that decides:
    repeats of a scenario move together, so resampling conversations makes the interval too narrow.

    A percentile bootstrap over few clusters is itself too narrow (6 scenarios, 3 of them worse, would
    exclude 0), so each end's distance from D is widened by √(G/(G−1)) · t_{G−1} / z, the small-sample
    correction the clustered interval uses; ends are kept in [−1, 1]. Seeded. Fewer than two scenarios say
    nothing about other scenarios: (−1, 1)."""
    cells = [(math.fsum(d), len(d)) for d in diffs_by_scenario if len(d)]
    g = len(cells)
    if g < 2:
        return -1.0, 1.0
    # numpy loads only when a bootstrap runs: the collector's trends use this module's intervals alone.
    from simulator.stats.resample import draws, sums

    # Each resample is `chosen = rng.choices(range(g), k=g)` and Σ totals / Σ sizes over it, to the bit.
    totals, sizes = [total for total, _ in cells], [size for _, size in cells]
    means = []
    for rows in draws(random.Random(seed), g, g, iters):
        means += [total / size for total, size in zip(sums(totals, rows), sums(sizes, rows), strict=True)]
    means.sort()
    tail = (1.0 - confidence) / 2.0
    centre = sum(c for c, _ in cells) / sum(n for _, n in cells)
    widen = math.sqrt(g / (g - 1)) * t_critical(confidence, g - 1) / z_for_confidence(confidence)
    low = centre - widen * (centre - _quantile(means, tail))
    high = centre + widen * (_quantile(means, 1.0 - tail) - centre)
    return max(-1.0, low), min(1.0, high)


def _quantile(xs: Sequence[float], q: float) -> float:
    """Linear interpolation between sorted values (numpy's default), q in [0, 1]."""
    position = q * (len(xs) - 1)
    low = math.floor(position)
    high = min(low + 1, len(xs) - 1)
    return xs[low] + (xs[high] - xs[low]) * (position - low)


def scenarios_to_reach(alpha: float) -> tuple[int, int]:
    """Fewest scenarios that must all change in the same direction before the clustered McNemar test and
    the exact sign test can reach `alpha` (4 and 6 at 0.05): fewer cannot show any difference."""
    mcnemar = 1
    while chi2_sf(float(mcnemar), 1) >= alpha:
        mcnemar += 1
    sign = 1
    while 2.0 * 0.5**sign >= alpha:
        sign += 1
    return mcnemar, sign


def detectable_difference(
    diffs: Sequence[float], alpha: float = 0.05, power: float = 0.8
) -> tuple[float, bool]:
    """The smallest mean change in per-scenario pass rate a scenario-level test would likely detect:
    (z_{1−α/2} + z_power) · SD / √G. Uses the observed SD of the per-scenario differences when there are
    at least three scenarios and they vary, else an assumed SD of 0.5 (returned flag False)."""
    g = len(diffs)
    if g == 0:
        return 1.0, False
    observed = g >= 3 and len(set(diffs)) > 1
    sd = statistics.stdev(diffs) if observed else 0.5
    z = z_for_confidence(1 - alpha) + NormalDist().inv_cdf(power)
    return min(2.0, z * sd / math.sqrt(g)), observed
