"""The three bootstraps as they were before their draws went to numpy (simulator/stats/resample.py): one
`random.Random.choices` call a resample. The reference that tests/test_resample.py holds the new ones to, bit
for bit, and that bench/resample_bench.py times them against."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from simulator.stats.basic import Interval, _sorted_percentile, percentile, z_for_confidence
from simulator.stats.clustered import _quantile
from simulator.stats.dist import t_critical


def old_paired_bootstrap(
    a: Sequence[Any], b: Sequence[Any], iters: int, seed: int, confidence: float
) -> Interval:
    """`paired_bootstrap` as it was."""
    n = len(a)
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    choices = random.Random(seed).choices
    means = sorted(sum(choices(diffs, k=n)) / n for _ in range(iters))
    tail = (1.0 - confidence) / 2.0 * 100.0
    return Interval(_sorted_percentile(means, tail), _sorted_percentile(means, 100.0 - tail), confidence)


def old_clustered_paired_bootstrap(
    diffs_by_scenario: Sequence[Sequence[float]], iters: int, seed: int, confidence: float
) -> tuple[float, float]:
    """`clustered_paired_bootstrap` as it was."""
    cells = [(math.fsum(d), len(d)) for d in diffs_by_scenario if len(d)]
    g = len(cells)
    if g < 2:
        return -1.0, 1.0
    rng = random.Random(seed)
    picks = range(g)
    means = []
    for _ in range(iters):
        chosen = rng.choices(picks, k=g)
        means.append(sum(cells[i][0] for i in chosen) / sum(cells[i][1] for i in chosen))
    means.sort()
    tail = (1.0 - confidence) / 2.0
    centre = sum(c for c, _ in cells) / sum(n for _, n in cells)
    widen = math.sqrt(g / (g - 1)) * t_critical(confidence, g - 1) / z_for_confidence(confidence)
    low = centre - widen * (centre - _quantile(means, tail))
    high = centre + widen * (_quantile(means, 1.0 - tail) - centre)
    return max(-1.0, low), min(1.0, high)


def old_pass_hat_k_interval(rng: random.Random, groups: list[list[float]], iters: int) -> dict[str, float]:
    """pass^k's interval over vignettes as `pass_hat_k_table` computed it (its `_resamples` and `_interval`)."""
    samples = [
        [value for group in rng.choices(groups, k=len(groups)) for value in group] for _ in range(iters)
    ]
    means = sorted(math.fsum(sample) / len(sample) for sample in samples)
    return {"low": percentile(means, 2.5), "high": percentile(means, 97.5)}
