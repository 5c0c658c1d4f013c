"""The two-sample tests of compare-populations, checked against scipy and statsmodels on many inputs."""

from __future__ import annotations

import random

import pytest
from scipy import stats
from statsmodels.stats import proportion

from simulator.stats.twosample import (
    chi_square,
    fisher_exact,
    ks_two_sample,
    mann_whitney,
    newcombe_difference,
)


def _samples(seed: int) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    n, m = rng.randint(1, 40), rng.randint(1, 40)
    if seed % 2:  # integers: many ties, like turn counts
        return [rng.randint(1, 9) for _ in range(n)], [rng.randint(2, 12) for _ in range(m)]
    return [rng.gauss(0, 1) for _ in range(n)], [rng.gauss(0.5, 1.5) for _ in range(m)]


@pytest.mark.parametrize("seed", range(12))
def test_mann_whitney_matches_scipy(seed: int) -> None:
    x, y = _samples(seed)
    u, p = mann_whitney(x, y)
    expected = stats.mannwhitneyu(x, y, method="asymptotic")
    assert u == pytest.approx(expected.statistic)
    assert p == pytest.approx(expected.pvalue, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_ks_matches_scipy_exact(seed: int) -> None:
    x, y = _samples(seed)
    d, p = ks_two_sample(x, y)
    expected = stats.ks_2samp(x, y, method="exact")
    assert d == pytest.approx(expected.statistic)
    assert p == pytest.approx(expected.pvalue, rel=1e-6, abs=1e-9)


def test_ks_large_samples_use_the_asymptotic_distribution() -> None:
    rng = random.Random(3)
    x, y = [rng.gauss(0, 1) for _ in range(600)], [rng.gauss(0.1, 1) for _ in range(400)]
    d, p = ks_two_sample(x, y)
    expected = stats.ks_2samp(x, y, method="asymp")
    assert d == pytest.approx(expected.statistic)
    assert p == pytest.approx(expected.pvalue, abs=0.01)


@pytest.mark.parametrize("table", [(3, 7, 9, 2), (0, 10, 0, 5), (1, 0, 0, 1), (12, 30, 2, 40), (5, 5, 5, 5)])
def test_fisher_matches_scipy(table: tuple[int, int, int, int]) -> None:
    a, b, c, d = table
    assert fisher_exact(a, b, c, d) == pytest.approx(stats.fisher_exact([[a, b], [c, d]]).pvalue, rel=1e-9)


@pytest.mark.parametrize(
    "table", [[[10, 5, 3], [4, 8, 1]], [[50, 5, 30, 3], [4, 8, 1, 40]], [[66, 0], [9, 1]], [[3, 4], [5, 6]]]
)
def test_chi_square_matches_scipy(table: list[list[int]]) -> None:
    stat, dof, p = chi_square(table)
    expected = stats.chi2_contingency(table, correction=False)
    assert stat == pytest.approx(expected[0]) and dof == expected[2]
    assert p == pytest.approx(expected[1], rel=1e-9)


def test_chi_square_with_one_category_has_nothing_to_test() -> None:
    assert chi_square([[66], [10]]) == (0.0, 0, 1.0)


@pytest.mark.parametrize("counts", [(3, 10, 9, 11), (0, 20, 5, 10), (10, 10, 2, 30), (1, 66, 2, 10)])
def test_newcombe_matches_statsmodels(counts: tuple[int, int, int, int]) -> None:
    k1, n1, k2, n2 = counts
    low, high = proportion.confint_proportions_2indep(k1, n1, k2, n2, method="newcomb", compare="diff")
    interval = newcombe_difference(k1, n1, k2, n2)
    assert interval.low == pytest.approx(low, abs=1e-9) and interval.high == pytest.approx(high, abs=1e-9)
