"""Inter-rater tools for meta-evaluation (judges, labellers): Fleiss' kappa, and the bootstrap over
conversations clustered by scenario that puts intervals on the agreement figures of analysis/agreement.py.

A pair's counts are kept per cluster (scenario) as the nine cells of its 3×3 confusion matrix (pass, fail,
not applicable; see agreement.py for the n/a rule), so every bootstrap replicate is one matrix product.
"""

from __future__ import annotations

__all__ = [
    "Estimate",
    "PairCounts",
    "cluster_weights",
    "estimate",
    "fleiss_kappa",
    "percentile_bounds",
]

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from simulator.models import ResultModel

# The verdict labels agreement is computed over, in this order.
LABELS = ("pass", "fail", "not_applicable")


Array = NDArray[np.float64]
BOOTSTRAP = 2000


class Estimate(ResultModel):
    """A figure and its 95% bootstrap interval (clustered by scenario); None when it cannot be computed."""

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


def cluster_weights(clusters: int, replicates: int = BOOTSTRAP, seed: int = 0) -> Array:
    """How many times each cluster is drawn in each replicate (replicates × clusters)."""
    rng = np.random.default_rng(seed)
    if clusters == 0:
        return np.zeros((replicates, 0))
    return rng.multinomial(clusters, np.full(clusters, 1.0 / clusters), size=replicates).astype(float)


@dataclass
class PairCounts:
    """One rater against one reference: the 3×3 counts of every cluster (scenario), and what was left out."""

    clusters: dict[Hashable, Array] = field(default_factory=dict)
    left_out: int = 0

    def add(self, cluster: Hashable, reference: str, rater: str) -> None:
        """Count one item; an item without a label on either side (error, not judged) is left out."""
        if reference not in LABELS or rater not in LABELS:
            self.left_out += 1
            return
        row = self.clusters.setdefault(cluster, np.zeros((3, 3)))
        row[LABELS.index(reference), LABELS.index(rater)] += 1

    def total(self) -> Array:
        return sum(self.clusters.values(), np.zeros((3, 3)))

    def replicates(self, weights: Array, order: Sequence[Hashable]) -> Array:
        """The pair's matrix in every bootstrap replicate (replicates × 3 × 3); `weights` is replicates ×
        clusters in `order`, and a cluster this pair never saw counts zero."""
        cells = np.array([self.clusters.get(c, np.zeros((3, 3))).ravel() for c in order]).reshape(
            len(order), 9
        )
        return (weights @ cells).reshape(-1, 3, 3)


def estimate(point: float, replicates: Array) -> Estimate:
    """A point value with the 2.5th and 97.5th percentiles of its replicates (NaN replicates dropped)."""
    if np.isnan(point):
        return Estimate(value=None)
    good = replicates[~np.isnan(replicates)]
    if good.size == 0:
        return Estimate(value=float(point))
    low, high = percentile_bounds(good)
    return Estimate(value=float(point), low=low, high=high)


def percentile_bounds(replicates: Array) -> tuple[float, float]:
    """The 95% percentile interval of bootstrap replicates: their 2.5th and 97.5th percentiles."""
    low, high = np.percentile(replicates, [2.5, 97.5])
    return float(low), float(high)
