"""Tests for simulator.stats.basic: the seed's worked examples, hand-made cases, scipy/statsmodels checks."""

from __future__ import annotations

import math
import random
from itertools import combinations

import pytest

from simulator.stats.basic import (
    Interval,
    Rate,
    cohens_kappa,
    margin_of_error,
    mcnemar_exact,
    median,
    paired_bootstrap,
    pass_at_k,
    pass_hat_k,
    percentile,
    rate,
    rule_of_three,
    runs_needed_for_bound,
    sample_size_for_margin,
    wilson_interval,
    z_for_confidence,
    zero_failure_upper_bound,
)

# The seed's paired example: 166 right for both, b = 6 only A, c = 15 only B, 13 wrong for both.
SEED_A = [1] * 166 + [1] * 6 + [0] * 15 + [0] * 13
SEED_B = [1] * 166 + [0] * 6 + [1] * 15 + [0] * 13

# The seed's judge-vs-human example on 100 outputs.
HUMAN = ["pass"] * 40 + ["fail"] * 45 + ["fail"] * 10 + ["pass"] * 5
JUDGE = ["pass"] * 40 + ["fail"] * 45 + ["pass"] * 10 + ["fail"] * 5


# ---------------------------------------------------------------- the seed's worked examples


def test_seed_wilson_172_and_181_of_200() -> None:
    assert wilson_interval(172, 200).percent() == "80.5%–90.1%"
    assert wilson_interval(181, 200).percent() == "85.6%–93.8%"


def test_seed_intervals_overlap_heavily() -> None:
    a, b = wilson_interval(172, 200), wilson_interval(181, 200)
    assert b.low < a.high
    assert 172 / 200 in b  # B's interval still contains A's score


def test_seed_normal_margin_about_4_5_points() -> None:
    assert round(margin_of_error(0.88, 200), 3) == 0.045


def test_seed_mcnemar_b6_c15() -> None:
    p = mcnemar_exact(6, 15)
    assert round(p, 3) == 0.078
    assert p > 0.05


def test_seed_paired_bootstrap_roughly_0_to_0_09() -> None:
    ci = paired_bootstrap(SEED_A, SEED_B)
    assert abs(ci.low - 0.0) <= 0.01
    assert abs(ci.high - 0.09) <= 0.01
    assert ci.low <= 0.045 <= ci.high


def test_seed_kappa_0_70() -> None:
    assert cohens_kappa(HUMAN, JUDGE) == pytest.approx(0.70, abs=1e-12)
    assert cohens_kappa(JUDGE, HUMAN) == pytest.approx(0.70, abs=1e-12)


def test_seed_sample_sizes() -> None:
    assert sample_size_for_margin(0.85, 0.03) == 545
    assert sample_size_for_margin(0.85, 0.05) == 196


def test_seed_rule_of_three_0_of_100() -> None:
    assert rule_of_three(100) == pytest.approx(0.03)
    assert round(zero_failure_upper_bound(100), 4) == 0.0295
    r = rate(0, 100)
    assert r.zero_failure_bound == pytest.approx(0.029513, abs=1e-6)


# ---------------------------------------------------------------- hand-computed cases


def test_z_for_confidence_default_is_1_96() -> None:
    assert round(z_for_confidence(), 2) == 1.96
    assert z_for_confidence(0.99) > z_for_confidence(0.95) > z_for_confidence(0.90)


def test_wilson_edges() -> None:
    assert wilson_interval(0, 0) == Interval(0.0, 1.0)
    zero = wilson_interval(0, 50)
    assert zero.low == 0.0 and 0.0 < zero.high < 0.1
    full = wilson_interval(50, 50)
    assert full.high == 1.0 and 0.9 < full.low < 1.0
    assert wilson_interval(10, 20).low == pytest.approx(1 - wilson_interval(10, 20).high)


@pytest.mark.parametrize(("k", "n"), [(-1, 5), (6, 5), (0, -1)])
def test_invalid_counts_are_rejected(k: int, n: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(k, n)
    with pytest.raises(ValueError):
        rate(k, n)


@pytest.mark.parametrize("confidence", [0.0, 1.0, 95, -0.5])
def test_invalid_confidence_is_rejected(confidence: float) -> None:
    with pytest.raises(ValueError):
        z_for_confidence(confidence)


def test_rate_string_shows_counts_and_interval() -> None:
    assert str(rate(7, 40)) == "7/40 = 17.5% (95% CI 8.7%–31.9%)"


def test_rate_zero_failures_shows_bound() -> None:
    r = rate(0, 100)
    assert r.rate == 0.0 and r.counts == "failures"
    # One bound for one zero (reading item 5), in the rate's own words: no "fail" for an error rate (item 7).
    assert str(r) == "0/100 = 0.0% (none seen: at most 3.0%, 95% one-sided)"


def test_rate_success_counts_bound_the_complementary_failure_rate() -> None:
    all_pass = rate(40, 40, counts="successes")
    assert all_pass.zero_failure_bound == pytest.approx(zero_failure_upper_bound(40))
    # A success rate gets a lower bound on itself, never a failure bound beside it (reading item 6).
    assert str(all_pass) == "40/40 = 100.0% (none missed: at least 92.8%, 95% one-sided)"
    # Zero successes is not zero failures: no bound.
    assert rate(0, 40, counts="successes").zero_failure_bound is None
    # k == n failures: no bound either.
    assert rate(40, 40).zero_failure_bound is None
    assert rate(3, 40, counts="successes").zero_failure_bound is None


def test_rate_with_no_cases() -> None:
    r = rate(0, 0)
    assert r.rate is None and r.zero_failure_bound is None
    assert (r.low, r.high) == (0.0, 1.0)
    assert str(r) == "0/0 = n/a (no cases)"


def test_rate_rejects_unknown_counts() -> None:
    with pytest.raises(ValueError):
        rate(1, 2, counts="passes")  # type: ignore[arg-type]


def test_rate_is_frozen_and_exposes_interval() -> None:
    r = rate(3, 10, confidence=0.9)
    assert r.interval == wilson_interval(3, 10, 0.9)
    assert str(r).startswith("3/10 = 30.0% (90% CI ")
    with pytest.raises(AttributeError):
        r.k = 4  # type: ignore[misc]
    assert isinstance(r, Rate)


def test_rule_of_three_caps_at_one() -> None:
    assert rule_of_three(0) == 1.0
    assert rule_of_three(2) == 1.0
    assert rule_of_three(300) == pytest.approx(0.01)


def test_zero_failure_bound_is_close_to_rule_of_three_for_large_n() -> None:
    for n in (100, 1000, 10_000):
        ratio = zero_failure_upper_bound(n) / rule_of_three(n)
        assert 0.98 < ratio < 1.0  # -ln(0.05) = 2.996, just under 3
    assert zero_failure_upper_bound(0) == 1.0


def test_runs_needed_for_one_percent_is_299() -> None:
    assert runs_needed_for_bound(0.01) == 299
    assert zero_failure_upper_bound(299) <= 0.01 < zero_failure_upper_bound(298)
    assert runs_needed_for_bound(0.05) == 59
    assert runs_needed_for_bound(0.99) == 1


def test_runs_needed_rejects_bad_targets() -> None:
    for target in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError):
            runs_needed_for_bound(target)


def test_sample_size_worst_case_and_bounds() -> None:
    assert sample_size_for_margin(0.5, 0.05) == 385  # the classic 384.1 -> 385
    assert sample_size_for_margin(0.0, 0.05) == 1
    with pytest.raises(ValueError):
        sample_size_for_margin(0.5, 0.0)


def test_mcnemar_edges() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(6, 15) == mcnemar_exact(15, 6)
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 3)


def test_percentile_and_median_by_hand() -> None:
    xs = [10.0, 1.0, 4.0, 7.0]
    assert median(xs) == 5.5
    assert percentile(xs, 0) == 1.0 and percentile(xs, 100) == 10.0
    assert percentile(xs, 95) == pytest.approx(7 + 3 * 0.85)
    assert percentile([3.0], 95) == 3.0
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile(xs, 101)


def test_kappa_edges() -> None:
    assert cohens_kappa(["a", "b", "a"], ["a", "b", "a"]) == 1.0
    assert math.isnan(cohens_kappa(["pass"] * 10, ["pass"] * 10))
    # One rater constant, the other not: p_e < 1, kappa defined and 0 (no agreement beyond chance).
    assert cohens_kappa(["pass"] * 4, ["pass", "pass", "fail", "pass"]) == 0.0
    # Systematic disagreement is negative.
    assert cohens_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == -1.0
    with pytest.raises(ValueError):
        cohens_kappa([1, 2], [1])
    with pytest.raises(ValueError):
        cohens_kappa([], [])


def test_pass_hat_k_by_hand() -> None:
    # (n trials, c successes) per scenario.
    scenarios = [(5, 5), (5, 4), (5, 3)]
    # k=2: C(5,2)/C(5,2)=1, C(4,2)/C(5,2)=6/10, C(3,2)/C(5,2)=3/10 -> mean 19/30.
    assert pass_hat_k(scenarios, 2) == pytest.approx(19 / 30)
    # k=1 is the plain mean pass rate.
    assert pass_hat_k(scenarios, 1) == pytest.approx((1 + 0.8 + 0.6) / 3)
    # k=5: only the always-passing scenario counts fully.
    assert pass_hat_k(scenarios, 5) == pytest.approx(1 / 3)


def test_pass_at_k_by_hand() -> None:
    # (5,1), k=2: 1 - C(4,2)/C(5,2) = 0.4; (5,0): 0; (5,4): 1 - C(1,2)/10 = 1.
    assert pass_at_k([(5, 1), (5, 0), (5, 4)], 2) == pytest.approx(1.4 / 3)


def test_pass_hat_k_excludes_scenarios_with_too_few_trials() -> None:
    assert pass_hat_k([(5, 5), (2, 0)], 3) == 1.0
    assert pass_at_k([(5, 0), (2, 2)], 3) == 0.0
    with pytest.raises(ValueError, match="at least k=4"):
        pass_hat_k([(3, 3)], 4)
    with pytest.raises(ValueError):
        pass_hat_k([(3, 3)], 0)
    with pytest.raises(ValueError):
        pass_hat_k([(3, 4)], 1)


def test_paired_bootstrap_is_reproducible_and_seeded() -> None:
    assert paired_bootstrap(SEED_A, SEED_B, seed=7) == paired_bootstrap(SEED_A, SEED_B, seed=7)
    rng = random.Random(3)
    a = [rng.random() for _ in range(60)]
    b = [x + rng.gauss(0.1, 0.3) for x in a]
    assert paired_bootstrap(a, b, seed=1) != paired_bootstrap(a, b, seed=2)


def test_paired_bootstrap_degenerate_inputs() -> None:
    same = paired_bootstrap([1, 0, 1], [1, 0, 1], iters=200)
    assert (same.low, same.high) == (0.0, 0.0)
    shifted = paired_bootstrap([0.5, 1.5, 2.5], [1.0, 2.0, 3.0], iters=200)
    assert shifted.low == pytest.approx(0.5) and shifted.high == pytest.approx(0.5)
    with pytest.raises(ValueError):
        paired_bootstrap([1, 0], [1])
    with pytest.raises(ValueError):
        paired_bootstrap([], [])


def test_paired_bootstrap_narrows_with_lower_confidence() -> None:
    wide = paired_bootstrap(SEED_A, SEED_B, confidence=0.99)
    narrow = paired_bootstrap(SEED_A, SEED_B, confidence=0.80)
    assert wide.low < narrow.low and narrow.high < wide.high
    assert narrow.confidence == 0.80


# ---------------------------------------------------------------- randomised checks against scipy/statsmodels


def test_wilson_matches_statsmodels() -> None:
    from statsmodels.stats.proportion import proportion_confint

    rng = random.Random(20240601)
    for _ in range(400):
        n = rng.choice([rng.randint(1, 30), rng.randint(1, 3000)])
        k = rng.choice([0, n, rng.randint(0, n)])
        confidence = rng.choice([0.8, 0.9, 0.95, 0.99])
        low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
        ours = wilson_interval(k, n, confidence)
        assert ours.low == pytest.approx(low, abs=1e-9), (k, n, confidence)
        assert ours.high == pytest.approx(high, abs=1e-9), (k, n, confidence)


def test_z_matches_scipy() -> None:
    from scipy.stats import norm

    for confidence in (0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999):
        assert z_for_confidence(confidence) == pytest.approx(norm.ppf(1 - (1 - confidence) / 2), rel=1e-12)


def test_mcnemar_matches_scipy_and_statsmodels() -> None:
    from scipy.stats import binomtest
    from statsmodels.stats.contingency_tables import mcnemar

    rng = random.Random(11)
    for _ in range(300):
        b, c = rng.randint(0, rng.choice([10, 60, 400])), rng.randint(0, rng.choice([10, 60, 400]))
        ours = mcnemar_exact(b, c)
        if b + c:
            assert ours == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue, rel=1e-9, abs=1e-300)
        table = [[rng.randint(0, 50), b], [c, rng.randint(0, 50)]]
        assert ours == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9, abs=1e-300)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # statsmodels' kappa standard errors on small tables
def test_kappa_matches_statsmodels() -> None:
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    rng = random.Random(5)
    checked = 0
    while checked < 300:
        categories = ["self_care", "gp", "urgent", "emergency", "other"][: rng.randint(2, 5)]
        n = rng.randint(2, 200)
        agree_bias = rng.random()
        a = [rng.choice(categories) for _ in range(n)]
        b = [x if rng.random() < agree_bias else rng.choice(categories) for x in a]
        index = {label: i for i, label in enumerate(categories)}
        table = [[0] * len(categories) for _ in categories]
        for x, y in zip(a, b, strict=True):
            table[index[x]][index[y]] += 1
        ours = cohens_kappa(a, b)
        if math.isnan(ours):
            continue
        assert ours == pytest.approx(sm_kappa(table).kappa, abs=1e-9)
        checked += 1


def test_zero_failure_bound_matches_scipy() -> None:
    from scipy.stats import beta, binom

    rng = random.Random(17)
    for _ in range(300):
        n = rng.randint(1, 20_000)
        confidence = rng.choice([0.8, 0.9, 0.95, 0.99])
        bound = zero_failure_upper_bound(n, confidence)
        # One-sided Clopper-Pearson upper limit for 0 of n.
        assert bound == pytest.approx(beta.ppf(confidence, 1, n), rel=1e-9)
        # At that failure rate, seeing no failure in n runs has probability exactly 1 - confidence.
        assert binom.pmf(0, n, bound) == pytest.approx(1 - confidence, rel=1e-9)


def test_runs_needed_is_the_smallest_sufficient_n() -> None:
    rng = random.Random(23)
    for _ in range(300):
        target = rng.uniform(0.0005, 0.5)
        confidence = rng.choice([0.8, 0.9, 0.95, 0.99])
        n = runs_needed_for_bound(target, confidence)
        assert zero_failure_upper_bound(n, confidence) <= target
        assert n == 1 or zero_failure_upper_bound(n - 1, confidence) > target


def test_sample_size_is_the_smallest_meeting_the_margin() -> None:
    rng = random.Random(29)
    for _ in range(300):
        p = rng.uniform(0.01, 0.99)
        margin = rng.uniform(0.005, 0.2)
        confidence = rng.choice([0.9, 0.95, 0.99])
        n = sample_size_for_margin(p, margin, confidence)
        assert margin_of_error(p, n, confidence) <= margin * (1 + 1e-9)
        if n > 1:
            assert margin_of_error(p, n - 1, confidence) > margin


def test_percentile_matches_numpy() -> None:
    import numpy as np

    rng = random.Random(31)
    for _ in range(300):
        xs = [rng.expovariate(1.0) for _ in range(rng.randint(1, 80))]
        q = rng.choice([0, 5, 50, 90, 95, 99, 100, rng.uniform(0, 100)])
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)), rel=1e-12, abs=1e-15)
        assert median(xs) == pytest.approx(float(np.median(xs)), rel=1e-12)


def test_pass_hat_k_matches_enumeration_of_trial_subsets() -> None:
    rng = random.Random(37)
    for _ in range(200):
        scenarios = []
        trials = []
        for _ in range(rng.randint(1, 6)):
            outcomes = [rng.random() < 0.7 for _ in range(rng.randint(1, 8))]
            trials.append(outcomes)
            scenarios.append((len(outcomes), sum(outcomes)))
        k = rng.randint(1, 8)
        eligible = [t for t in trials if len(t) >= k]
        if not eligible:
            with pytest.raises(ValueError):
                pass_hat_k(scenarios, k)
            continue
        # Definition: over every k-subset of a scenario's trials, how often are all (any) successes?
        all_ok = [sum(all(s) for s in combinations(t, k)) / math.comb(len(t), k) for t in eligible]
        any_ok = [sum(any(s) for s in combinations(t, k)) / math.comb(len(t), k) for t in eligible]
        assert pass_hat_k(scenarios, k) == pytest.approx(sum(all_ok) / len(all_ok), abs=1e-12)
        assert pass_at_k(scenarios, k) == pytest.approx(sum(any_ok) / len(any_ok), abs=1e-12)
        assert pass_hat_k(scenarios, k) <= pass_at_k(scenarios, k) + 1e-12


def test_paired_bootstrap_agrees_with_scipy_bootstrap() -> None:
    import numpy as np
    from scipy.stats import bootstrap

    rng = random.Random(41)
    a = [rng.uniform(1, 5) for _ in range(150)]
    b = [x + rng.gauss(0.2, 0.8) for x in a]
    diffs = np.array(b) - np.array(a)
    ref = bootstrap(
        (diffs,), np.mean, n_resamples=10_000, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    ours = paired_bootstrap(a, b)
    se = float(np.std(diffs, ddof=1) / math.sqrt(len(diffs)))
    # Two independent Monte Carlo runs of the same percentile bootstrap: equal up to resampling noise.
    assert abs(ours.low - ref.low) < 0.1 * se
    assert abs(ours.high - ref.high) < 0.1 * se
    # And the same as the textbook normal interval to within a fraction of a standard error.
    mean = float(np.mean(diffs))
    assert abs(ours.low - (mean - 1.96 * se)) < 0.25 * se
    assert abs(ours.high - (mean + 1.96 * se)) < 0.25 * se


def test_paired_bootstrap_on_seed_matches_scipy_on_differences() -> None:
    import numpy as np
    from scipy.stats import bootstrap

    diffs = np.array(SEED_B) - np.array(SEED_A)
    ref = bootstrap(
        (diffs,), np.mean, n_resamples=10_000, method="percentile", rng=np.random.default_rng(1)
    ).confidence_interval
    ours = paired_bootstrap(SEED_A, SEED_B)
    assert abs(ours.low - ref.low) <= 0.0051
    assert abs(ours.high - ref.high) <= 0.0051
