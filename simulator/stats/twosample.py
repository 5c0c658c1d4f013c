"""Two-sample tests for comparing populations (simulated vs real users): Mann–Whitney U and Kolmogorov–
Smirnov for distributions, Fisher's exact test and Newcombe's interval for two rates, chi-square for
categories. Pure Python; tests check every figure against scipy/statsmodels."""

from __future__ import annotations

__all__ = [
    "chi_square",
    "fisher_exact",
    "ks_statistic",
    "ks_two_sample",
    "mann_whitney",
    "newcombe_difference",
]

import math
from collections.abc import Sequence
from statistics import NormalDist

from simulator.stats.basic import Interval, wilson_interval


def _ranks(values: list[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks of `values` (ties share their average rank) and the size of each tie group."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """(U of x, two-sided p): normal approximation with tie and continuity corrections (scipy's
    `mannwhitneyu(method="asymptotic")`). p is 1.0 when either sample is empty or all values tie."""
    n, m = len(x), len(y)
    if n == 0 or m == 0:
        return 0.0, 1.0
    ranks, ties = _ranks([*x, *y])
    u = sum(ranks[:n]) - n * (n + 1) / 2
    total = n + m
    variance = n * m / 12 * ((total + 1) - sum(t**3 - t for t in ties) / (total * (total - 1)))
    if variance <= 0:
        return u, 1.0
    z = (abs(u - n * m / 2) - 0.5) / math.sqrt(variance)
    return u, min(1.0, 2 * (1 - NormalDist().cdf(max(z, 0.0))))


def _ks_statistic(x: list[float], y: list[float]) -> float:
    values = sorted(set(x) | set(y))
    xs, ys = sorted(x), sorted(y)
    d = 0.0
    i = j = 0
    for v in values:
        while i < len(xs) and xs[i] <= v:
            i += 1
        while j < len(ys) and ys[j] <= v:
            j += 1
        d = max(d, abs(i / len(xs) - j / len(ys)))
    return d


def ks_statistic(x: Sequence[float], y: Sequence[float]) -> float:
    """The Kolmogorov–Smirnov distance D alone (no p-value): for permutation tests; 0 when a side is empty."""
    return _ks_statistic(list(x), list(y)) if len(x) and len(y) else 0.0


def _ks_exact(d: float, n: int, m: int) -> float:
    """P(D >= d) for samples of sizes n and m: lattice paths that reach |i/n - j/m| >= d, over all paths."""
    inside = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        for j in range(m + 1):
            if abs(i * m - j * n) >= d * n * m - 1e-9:
                continue  # the path would show a gap of d or more here
            inside[i][j] = (
                1 if i == j == 0 else (inside[i - 1][j] if i else 0) + (inside[i][j - 1] if j else 0)
            )
    return max(0.0, min(1.0, 1 - inside[n][m] / math.comb(n + m, n)))


def _ks_asymptotic(d: float, n: int, m: int) -> float:
    en = math.sqrt(n * m / (n + m))
    lam = (en + 0.12 + 0.11 / en) * d
    total = sum(2 * (-1) ** (k - 1) * math.exp(-2 * k * k * lam * lam) for k in range(1, 101))
    return max(0.0, min(1.0, total))


def ks_two_sample(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """(D, two-sided p): exact by counting lattice paths for up to 100,000 pairs, else Kolmogorov's limit."""
    n, m = len(x), len(y)
    if n == 0 or m == 0:
        return 0.0, 1.0
    d = _ks_statistic(list(x), list(y))
    if d == 0:
        return 0.0, 1.0
    return d, _ks_exact(d, n, m) if n * m <= 100_000 else _ks_asymptotic(d, n, m)


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p of Fisher's exact test on [[a, b], [c, d]]: tables at most as likely as the one seen."""
    row, col, total = a + b, a + c, a + b + c + d
    if total == 0:
        return 1.0

    def prob(k: int) -> float:
        return math.comb(col, k) * math.comb(total - col, row - k) / math.comb(total, row)

    seen = prob(a)
    low, high = max(0, row + col - total), min(row, col)
    return min(1.0, sum(p for k in range(low, high + 1) if (p := prob(k)) <= seen * (1 + 1e-7)))


def _gamma_q(s: float, x: float) -> float:
    """Regularised upper incomplete gamma Q(s, x) (series below s + 1, continued fraction above)."""
    if x <= 0:
        return 1.0
    log_front = s * math.log(x) - x - math.lgamma(s)
    if x < s + 1:
        term = total = 1 / s
        k = s
        while abs(term) > abs(total) * 1e-15:
            k += 1
            term *= x / k
            total += term
        return max(0.0, 1 - total * math.exp(log_front))
    b, c, d = x + 1 - s, 1e300, 1 / (x + 1 - s)
    h = d
    for i in range(1, 1000):
        an = -i * (i - s)
        b += 2
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return min(1.0, math.exp(log_front) * h)


def chi_square(table: Sequence[Sequence[int]]) -> tuple[float, int, float]:
    """(statistic, degrees of freedom, p) of Pearson's chi-square test of independence, no correction;
    rows and columns that are all zero are dropped."""
    rows = [list(r) for r in table if sum(r)]
    columns = [k for k in range(len(rows[0]) if rows else 0) if sum(r[k] for r in rows)]
    rows = [[r[k] for k in columns] for r in rows]
    if len(rows) < 2 or len(columns) < 2:
        return 0.0, 0, 1.0
    total = sum(map(sum, rows))
    col_sums = [sum(r[k] for r in rows) for k in range(len(columns))]
    stat = sum(
        (obs - sum(r) * col_sums[k] / total) ** 2 / (sum(r) * col_sums[k] / total)
        for r in rows
        for k, obs in enumerate(r)
    )
    dof = (len(rows) - 1) * (len(columns) - 1)
    return stat, dof, _gamma_q(dof / 2, stat / 2)


def newcombe_difference(k1: int, n1: int, k2: int, n2: int, confidence: float = 0.95) -> Interval:
    """Newcombe's hybrid score interval (method 10) for p1 - p2, from the two Wilson intervals."""
    p1 = k1 / n1 if n1 else 0.0
    p2 = k2 / n2 if n2 else 0.0
    a, b = wilson_interval(k1, n1, confidence), wilson_interval(k2, n2, confidence)
    diff = p1 - p2
    low = diff - math.sqrt((p1 - a.low) ** 2 + (b.high - p2) ** 2)
    high = diff + math.sqrt((a.high - p1) ** 2 + (p2 - b.low) ** 2)
    return Interval(max(-1.0, low), min(1.0, high), confidence)
