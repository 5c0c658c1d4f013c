"""Scenario-clustered statistics: checked against scipy/statsmodels, and a coverage simulation with a known
intraclass correlation (clustered intervals cover about 95%; conversation-level Wilson intervals do not)."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from simulator.analysis.missing import binomial_test
from simulator.stats.basic import k_grid, pass_hat_k, wilson_interval, worst_at_k, zero_failure_upper_bound
from simulator.stats.clustered import (
    clustered_interval,
    clustered_mcnemar,
    design_effect,
    detectable_difference,
    scenarios_to_reach,
)
from simulator.stats.dist import binomial_two_sided, chi2_sf, t_cdf_two_sided, t_critical
from simulator.stats.rates import rate_view

# ---- the distribution functions against scipy ---------------------------------------------------------------


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 9, 10, 29, 30, 99, 299, 300, 301, 500])
def test_student_t_matches_scipy(df: int) -> None:
    for t in (0.05, 0.7, 1.96, 3.0, 12.0):
        assert t_cdf_two_sided(t, df) == pytest.approx(1 - 2 * stats.t.sf(t, df), abs=1e-12)
    for confidence in (0.8, 0.95, 0.99, 0.999):
        assert t_critical(confidence, df) == pytest.approx(stats.t.ppf((1 + confidence) / 2, df), rel=1e-9)


@pytest.mark.parametrize("df", [1_000, 9_999, 99_999, 100_000, 250_000, 1_000_000, 10**8])
def test_student_t_critical_of_many_degrees_of_freedom_matches_scipy(df: int) -> None:
    """Where the exact search cost seconds (the scenarios a bound needs, searched to a million), and where it
    returned the normal quantile (100,000 on: 2.4e-5 off at 95%)."""
    for confidence in (0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999):
        assert t_critical(confidence, df) == pytest.approx(stats.t.ppf((1 + confidence) / 2, df), rel=1e-9)


@pytest.mark.parametrize("df", range(1, 26))
def test_chi_square_tail_matches_scipy(df: int) -> None:
    for x in (0.01, 0.5, 2.0, 3.84, 11.07, 40.0):
        assert chi2_sf(x, df) == pytest.approx(stats.chi2.sf(x, df), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(
    ("k", "n", "p"), [(0, 10, 0.3), (7, 10, 0.3), (3, 12, 0.25), (12, 40, 0.1), (5, 5, 0.9)]
)
def test_exact_binomial_tests_match_scipy(k: int, n: int, p: float) -> None:
    assert binomial_test(k, n, p) == pytest.approx(stats.binomtest(k, n, p).pvalue, rel=1e-9)
    assert binomial_two_sided(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue, rel=1e-9)


# ---- the clustered interval ------------------------------------------------------------------------------


def test_design_effect_is_the_cluster_robust_variance_statsmodels_computes() -> None:
    """The sandwich (CR1) variance of an intercept-only regression on 0/1 outcomes, clustered by scenario."""
    per_scenario = [(3, 10), (9, 10), (0, 8), (5, 12), (7, 7), (1, 9)]
    y = np.concatenate([np.r_[np.ones(k), np.zeros(n - k)] for k, n in per_scenario])
    groups = np.concatenate([np.full(n, g) for g, (_, n) in enumerate(per_scenario)])
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    p, n = y.mean(), len(y)
    assert design_effect(per_scenario) == pytest.approx(fit.bse[0] ** 2 / (p * (1 - p) / n), rel=1e-9)


def test_a_deterministic_bot_gains_nothing_from_repeats() -> None:
    """Two scenarios, one always right and one always wrong: 5 or 50 repeats give the same clustered
    interval (about one effective trial), while the conversation-level Wilson interval shrinks."""
    five = clustered_interval([(5, 5), (0, 5)])
    fifty = clustered_interval([(50, 50), (0, 50)])
    assert (five.low, five.high) == pytest.approx((fifty.low, fifty.high))
    assert five.n_eff == pytest.approx(1.0) and fifty.n_eff == pytest.approx(1.0)
    assert fifty.icc == pytest.approx(1.0)
    assert wilson_interval(50, 100).width < 0.2 < fifty.high - fifty.low


def test_independent_repeats_keep_the_conversation_level_interval() -> None:
    """No between-scenario spread (every scenario 5/10): deff is 1, the interval is Wilson's with t."""
    ci = clustered_interval([(5, 10)] * 8)
    assert ci.design_effect == 1.0 and ci.n_eff == 80
    assert ci.critical_value == pytest.approx(stats.t.ppf(0.975, 7))
    wilson = wilson_interval(40, 80)
    assert ci.low < wilson.low and ci.high > wilson.high  # never narrower


def test_no_failures_rest_on_the_distinct_scenarios() -> None:
    view = rate_view(0, 400, per_scenario=[(0, 100)] * 4)
    assert view.bound == pytest.approx(zero_failure_upper_bound(400))  # conversations: 0.75%
    assert view.clustered is not None and view.clustered.scenarios == 4
    assert view.clustered.bound == pytest.approx(zero_failure_upper_bound(4))  # scenarios: 52.7%
    assert "4 vignettes" in view.text


def test_one_scenario_with_mixed_results_says_nothing_about_other_scenarios() -> None:
    ci = clustered_interval([(3, 10)])
    assert (ci.low, ci.high) == (0.0, 1.0)


def test_per_scenario_counts_must_add_up() -> None:
    with pytest.raises(ValueError, match="do not add up"):
        rate_view(3, 10, per_scenario=[(1, 5), (1, 5)])


def _coverage(
    scenarios: int, repeats: int, icc: float, mean: float, sims: int, seed: int
) -> tuple[float, float]:
    """Share of clustered and of conversation-level Wilson intervals that contain the true mean rate, when
    each scenario's rate is Beta-distributed with intraclass correlation `icc` (beta-binomial repeats)."""
    rng = np.random.default_rng(seed)
    scale = (1 - icc) / icc
    rates = rng.beta(mean * scale, (1 - mean) * scale, size=(sims, scenarios))
    successes = rng.binomial(repeats, rates)
    clustered = naive = 0
    for row in successes:
        ci = clustered_interval([(int(k), repeats) for k in row])
        clustered += ci.low <= mean <= ci.high
        wilson = wilson_interval(int(row.sum()), scenarios * repeats)
        naive += wilson.low <= mean <= wilson.high
    return clustered / sims, naive / sims


@pytest.mark.parametrize(
    ("scenarios", "repeats", "icc", "mean", "seed"),
    [(10, 20, 0.3, 0.3, 1), (20, 10, 0.2, 0.2, 2), (6, 50, 0.2, 0.3, 3), (30, 20, 0.1, 0.5, 4)],
)
def test_clustered_intervals_cover_95_percent_and_naive_ones_do_not(
    scenarios: int, repeats: int, icc: float, mean: float, seed: int
) -> None:
    clustered, naive = _coverage(scenarios, repeats, icc, mean, sims=1000, seed=seed)
    assert 0.93 <= clustered <= 0.985, clustered
    assert naive < 0.85, naive


def test_with_independent_repeats_both_cover() -> None:
    """ICC near 0: the clustered interval costs little and still covers."""
    clustered, naive = _coverage(12, 10, 0.001, 0.3, sims=1000, seed=5)
    assert clustered >= 0.93 and naive >= 0.92


def test_a_rare_event_with_few_scenarios_is_the_weak_spot_and_still_far_better_than_wilson() -> None:
    """10 scenarios, rate 10%, ICC 0.3: skewed scenario rates; documented in docs/stats.md."""
    clustered, naive = _coverage(10, 20, 0.3, 0.1, sims=1000, seed=6)
    assert 0.89 <= clustered < 0.93 and naive < 0.6


# ---- scenario-level paired tests ----------------------------------------------------------------------------


def test_clustered_mcnemar_with_one_pair_per_scenario_is_the_ordinary_mcnemar_chi_square() -> None:
    b, c = 9, 3
    per_scenario = [(1, 0)] * b + [(0, 1)] * c + [(0, 0)] * 20
    reference = mcnemar([[20, b], [c, 0]], exact=False, correction=False)
    assert clustered_mcnemar(per_scenario) == pytest.approx(reference.pvalue, rel=1e-9)


def test_two_scenarios_can_never_be_significant() -> None:
    assert clustered_mcnemar([(50, 0), (50, 0)]) == pytest.approx(stats.chi2.sf(2, 1))
    assert clustered_mcnemar([(5, 0), (500, 0)]) > 0.05
    assert scenarios_to_reach(0.05) == (4, 6)
    assert clustered_mcnemar([]) == 1.0 and clustered_mcnemar([(2, 2)]) == 1.0


def test_detectable_difference_shrinks_with_more_scenarios() -> None:
    small, observed = detectable_difference([0.1, -0.2, 0.3, 0.0])
    large, _ = detectable_difference([0.1, -0.2, 0.3, 0.0] * 25)
    sd = statistics.stdev([0.1, -0.2, 0.3, 0.0])
    assert observed and small == pytest.approx((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * sd / 2)
    assert large < small / 4
    assumed, observed = detectable_difference([0.2, 0.2])  # two scenarios: an assumed SD of 0.5
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert not observed and assumed == pytest.approx(z * 0.5 / math.sqrt(2))


# ---- pass^k and worst-at-k at scale ------------------------------------------------------------------------


def test_k_grid_is_powers_of_two_and_the_repeat_count() -> None:
    assert k_grid(1) == [1] and k_grid(3) == [1, 2, 3] and k_grid(8) == [1, 2, 4, 8]
    assert k_grid(1250) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1250]


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_worst_at_k_is_the_mean_minimum_over_every_k_subset(n: int) -> None:
    scores = [((i * 37) % 11) / 10 for i in range(n)]
    for k in range(1, n + 1):
        brute = statistics.fmean(min(c) for c in itertools.combinations(scores, k))
        assert worst_at_k(scores, k) == pytest.approx(brute, abs=1e-12)


def test_worst_at_k_of_pass_fail_scores_is_pass_hat_k() -> None:
    scores = [1.0] * 7 + [0.0] * 3
    for k in range(1, 11):
        assert worst_at_k(scores, k) == pytest.approx(pass_hat_k([(10, 7)], k))
    assert worst_at_k([1.0] * 1200 + [0.0] * 50, 1024) == pytest.approx(pass_hat_k([(1250, 1200)], 1024))
