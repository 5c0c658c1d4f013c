"""Two-sample comparisons with scenarios as the unit: repeats of one simulated scenario are not independent
users, so every interval and p-value here resamples or counts scenarios, never conversations.

- Two rates: the Newcombe hybrid interval of p1 − p2 built from each side's scenario-clustered interval
  (`clustered_interval`), and its p-value by inversion: the largest confidence at which the interval still
  excludes 0. Interval and p are one test, so a 95% interval excludes 0 exactly when p < 0.05.
- Distributions and categories: a permutation test that reassigns whole scenarios (all their values
  together) to the two sides, on the statistic shown (KS distance D, total variation distance). Seeded.
"""

from __future__ import annotations

__all__ = ["Clusters", "clustered_mean", "clustered_rate_difference", "permutation_p"]

import math
import random
from collections.abc import Callable, Sequence

from simulator.stats.clustered import clustered_interval
from simulator.stats.dist import t_critical

Clusters = Sequence[Sequence[float]]  # the values of each scenario (a conversation's, or a message's)


def _difference(
    a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]], confidence: float
) -> tuple[float, float]:
    """Newcombe's hybrid interval of p_a − p_b from the two clustered intervals at `confidence`."""
    ka, na = sum(k for k, _ in a), sum(n for _, n in a)
    kb, nb = sum(k for k, _ in b), sum(n for _, n in b)
    pa, pb = ka / na, kb / nb
    ca, cb = clustered_interval(a, confidence), clustered_interval(b, confidence)
    diff = pa - pb
    low = diff - math.sqrt((pa - ca.low) ** 2 + (cb.high - pb) ** 2)
    high = diff + math.sqrt((ca.high - pa) ** 2 + (pb - cb.low) ** 2)
    return max(-1.0, low), min(1.0, high)


def clustered_rate_difference(
    a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]], confidence: float = 0.95
) -> tuple[float, float, float]:
    """(low, high, p) for p_a − p_b from per-scenario (k, n) counts of each side; p inverts the interval
    (the smallest 1 − confidence at which it excludes 0), 1.0 when the rates are equal or a side is empty."""
    a = [(k, n) for k, n in a if n > 0]
    b = [(k, n) for k, n in b if n > 0]
    if not a or not b:
        return -1.0, 1.0, 1.0
    low, high = _difference(a, b, confidence)

    def excludes(level: float) -> bool:
        lo, hi = _difference(a, b, level)
        return lo > 0 or hi < 0

    if not excludes(1e-6):
        return low, high, 1.0
    inside, outside = 1e-6, 1.0 - 1e-12  # excludes 0 at `inside`; at `outside` assume it does not
    if excludes(outside):
        return low, high, 1e-12
    for _ in range(60):
        mid = (inside + outside) / 2
        if excludes(mid):
            inside = mid
        else:
            outside = mid
    return low, high, 1.0 - (inside + outside) / 2


def permutation_p(
    a: Clusters,
    b: Clusters,
    statistic: Callable[[list[float], list[float]], float],
    permutations: int = 2000,
    seed: int = 0,
) -> float:
    """P(statistic ≥ observed) when whole scenarios are reassigned at random between the sides (a and b
    keep their numbers of scenarios); (1 + hits) / (1 + permutations), so never 0."""
    clusters = [list(c) for c in a if len(c)] + [list(c) for c in b if len(c)]
    g = len([c for c in a if len(c)])
    if g == 0 or g == len(clusters):
        return 1.0
    observed = statistic([v for c in clusters[:g] for v in c], [v for c in clusters[g:] for v in c])
    rng = random.Random(seed)
    order = list(range(len(clusters)))
    hits = 0
    for _ in range(permutations):
        rng.shuffle(order)
        left = [v for i in order[:g] for v in clusters[i]]
        right = [v for i in order[g:] for v in clusters[i]]
        hits += statistic(left, right) >= observed - 1e-12
    return (1 + hits) / (1 + permutations)


def clustered_mean(clusters: Clusters, confidence: float = 0.95) -> tuple[float, float, float] | None:
    """(mean, low, high) of the pooled values with the cluster-robust standard error and Student's t on
    G − 1 degrees of freedom; None with fewer than two scenarios."""
    kept = [list(c) for c in clusters if len(c)]
    g = len(kept)
    n = sum(len(c) for c in kept)
    if g < 2:
        return None
    centre = math.fsum(v for c in kept for v in c) / n
    spread = math.fsum((math.fsum(c) - centre * len(c)) ** 2 for c in kept)
    se = math.sqrt(g / (g - 1) * spread) / n
    half = t_critical(confidence, g - 1) * se
    return centre, centre - half, centre + half
