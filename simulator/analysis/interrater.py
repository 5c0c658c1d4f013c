"""Inter-rater figures for meta-evaluation (judges, labellers): Fleiss' kappa, and binary pass/fail agreement figures with
intervals from a bootstrap over conversations clustered by scenario.

Binary figures compare a rater with a reference on items both answered pass or fail. Counts are kept per
cluster (scenario) as four numbers, so every bootstrap replicate is one matrix product:
`a` both pass, `b` reference pass / rater fail, `c` reference fail / rater pass (a false pass), `d` both fail.
"""

from __future__ import annotations

__all__ = [
    "Estimate",
    "PairCounts",
    "cluster_weights",
    "estimate",
    "false_pass_rate",
    "fleiss_kappa",
    "kappa",
    "macro_f1",
]

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

Array = NDArray[np.float64]
BOOTSTRAP = 2000


class Estimate(BaseModel):
    """A figure and its 95% bootstrap interval (clustered by scenario); None when it cannot be computed."""

    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)

    value: float | None
    low: float | None = None
    high: float | None = None

    @property
    def short(self) -> str:
        if self.value is None:
            return "n/a"
        if self.low is None or self.high is None:
            return f"{self.value:.2f}"
        return f"{self.value:.2f} ({self.low:.2f}–{self.high:.2f})"


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of an items × categories table of rating counts (the same number of raters per item);
    None when chance agreement is perfect (every rating in one category) or there is no item."""
    counts = np.asarray(table, dtype=float)
    if counts.ndim != 2 or counts.shape[0] == 0:
        return None
    raters = counts.sum(axis=1)
    if raters.min() < 2 or not np.all(raters == raters[0]):
        raise ValueError("Fleiss' kappa needs the same number (at least 2) of ratings for every item")
    m = raters[0]
    p_item = ((counts * counts).sum(axis=1) - m) / (m * (m - 1))
    shares = counts.sum(axis=0) / counts.sum()
    expected = float((shares * shares).sum())
    if expected >= 1.0:
        return None
    return (float(p_item.mean()) - expected) / (1.0 - expected)


def _div(num: Array, den: Array) -> Array:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def macro_f1(m: Array) -> Array:
    """Mean of the F1 for pass and the F1 for fail; a class neither rater used is left out (as sklearn's
    `f1_score(average="macro")` does with the labels it sees). `m` is (..., 4) counts a, b, c, d."""
    a, b, c, d = m[..., 0], m[..., 1], m[..., 2], m[..., 3]
    f_pass, f_fail = _div(2 * a, 2 * a + b + c), _div(2 * d, 2 * d + b + c)
    used = (~np.isnan(f_pass)).astype(float) + (~np.isnan(f_fail)).astype(float)
    return _div(np.nan_to_num(f_pass) + np.nan_to_num(f_fail), used)


def kappa(m: Array) -> Array:
    """Cohen's kappa of the 2×2 table; NaN when chance agreement is perfect."""
    a, b, c, d = m[..., 0], m[..., 1], m[..., 2], m[..., 3]
    n = a + b + c + d
    observed = _div(a + d, n)
    chance = _div((a + b) * (a + c) + (c + d) * (b + d), n * n)
    return _div(observed - chance, 1 - chance)


def false_pass_rate(m: Array) -> Array:
    """Share of the reference's fails the rater passed: the dangerous direction."""
    return _div(m[..., 2], m[..., 2] + m[..., 3])


def cluster_weights(clusters: int, replicates: int = BOOTSTRAP, seed: int = 0) -> Array:
    """How many times each cluster is drawn in each replicate (replicates × clusters)."""
    rng = np.random.default_rng(seed)
    if clusters == 0:
        return np.zeros((replicates, 0))
    return rng.multinomial(clusters, np.full(clusters, 1.0 / clusters), size=replicates).astype(float)


@dataclass
class PairCounts:
    """One rater against one reference: the 2×2 counts of every cluster (scenario), and what was left out."""

    clusters: dict[Hashable, Array] = field(default_factory=dict)
    left_out: int = 0

    def add(self, cluster: Hashable, reference: str, rater: str) -> None:
        """Count one item; anything but pass / fail on either side is left out."""
        if reference not in ("pass", "fail") or rater not in ("pass", "fail"):
            self.left_out += 1
            return
        cell = {("pass", "pass"): 0, ("pass", "fail"): 1, ("fail", "pass"): 2, ("fail", "fail"): 3}
        row = self.clusters.setdefault(cluster, np.zeros(4))
        row[cell[(reference, rater)]] += 1

    def total(self) -> Array:
        return sum(self.clusters.values(), np.zeros(4))

    def matrix(self, order: Sequence[Hashable]) -> Array:
        """Counts per cluster in `order` (clusters × 4); a cluster this pair never saw is zeros."""
        return np.array([self.clusters.get(c, np.zeros(4)) for c in order]).reshape(len(order), 4)


def estimate(point: float, replicates: Array) -> Estimate:
    """A point value with the 2.5th and 97.5th percentiles of its replicates (NaN replicates dropped)."""
    if np.isnan(point):
        return Estimate(value=None)
    good = replicates[~np.isnan(replicates)]
    if good.size == 0:
        return Estimate(value=float(point))
    low, high = np.percentile(good, [2.5, 97.5])
    return Estimate(value=float(point), low=float(low), high=float(high))
