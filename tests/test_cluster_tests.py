"""compare-populations with scenarios as the unit: each row's interval and p are one test, repeats of a
simulated scenario are one user, and the footer never contradicts an interval (issue 31, item 9)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simulator.analysis.populations import compare_populations
from simulator.cli import main
from simulator.stats.cluster_tests import clustered_rate_difference, permutation_p
from simulator.stats.twosample import ks_statistic, ks_two_sample
from tests.synthetic import synthetic_outcome_run

COUNTS = [
    ([(3, 3)] + [(0, 3)] * 21, [(1, 1)] + [(0, 1)] * 9),  # the demo's shape: 3/66 against 1/10
    ([(3, 3)] + [(0, 3)] * 21, [(1, 1)] * 2 + [(0, 1)] * 8),
    ([(1, 3)] * 20, [(1, 1)] * 9 + [(0, 1)]),
    ([(0, 2)] * 30, [(1, 1)] * 5 + [(0, 1)] * 25),
    ([(2, 2)] * 10 + [(0, 2)] * 10, [(1, 1)] * 10 + [(0, 1)] * 10),
    ([(5, 5)] * 12, [(0, 1)] * 12),
    ([(1, 4), (2, 4), (0, 4), (4, 4)], [(3, 5), (1, 5)]),
]


@pytest.mark.parametrize(("sim", "real"), COUNTS)
@pytest.mark.parametrize("confidence", [0.95, 0.9])
def test_the_interval_excludes_zero_exactly_when_its_own_p_is_below_alpha(
    sim: list[tuple[int, int]], real: list[tuple[int, int]], confidence: float
) -> None:
    low, high, p = clustered_rate_difference(sim, real, confidence)
    assert low <= high and 0.0 < p <= 1.0
    assert (low > 0 or high < 0) == (p < 1 - confidence)


# Scenarios that are all-or-nothing in their repeats (a deterministic bot): they can be copied exactly.
COPYABLE = [(sim, real) for sim, real in COUNTS if all(k in (0, n) for k, n in sim)]


@pytest.mark.parametrize(("sim", "real"), COPYABLE)
def test_copies_of_a_deterministic_scenario_are_one_user_not_several(
    sim: list[tuple[int, int]], real: list[tuple[int, int]]
) -> None:
    """Five copies of every all-or-nothing simulated scenario say what one does: the same interval and p."""
    assert len(COPYABLE) >= 4
    once = [(int(k > 0), 1) for k, _ in sim]
    fives = [(5 * k, 5 * n) for k, n in once]
    assert clustered_rate_difference(fives, real) == pytest.approx(clustered_rate_difference(once, real))


def test_the_permutation_test_moves_whole_scenarios() -> None:
    """Ten copies of 8 simulated users' values: the naive KS p is tiny, the scenario permutation p is not."""
    sim_users = [[3.0], [4.0], [5.0], [6.0], [7.0], [8.0], [5.0], [6.0]]
    real_users = [[2.0], [3.0], [4.0], [5.0], [4.0], [3.0], [5.0], [4.0]]
    copies = [c * 10 for c in sim_users]
    flat = [v for c in copies for v in c]
    naive = ks_two_sample(flat, [v for c in real_users for v in c])[1]
    once = ks_two_sample([v for c in sim_users for v in c], [v for c in real_users for v in c])[1]
    clustered = permutation_p(copies, real_users, ks_statistic, 2000)
    assert naive < 0.05 < once and clustered > 0.05
    assert permutation_p(copies, real_users, ks_statistic, 2000) == clustered  # seeded


def _pct(text: str) -> tuple[float, float]:
    low, high = re.findall(r"CI ([+-][0-9.]+)% to ([+-][0-9.]+)%", text)[0]
    return float(low), float(high)


@pytest.mark.parametrize(("sim_fail", "real_fail"), [(1, 2), (1, 6), (0, 5), (4, 0)])
def test_no_row_or_footer_contradicts_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sim_fail: int, real_fail: int
) -> None:
    """Simulated: 20 scenarios × 3 repeats (sim_fail scenarios always failing); real: 20 users."""
    sim_plan: dict[str, list[bool | str | None]] = {f"s{i:02}": [i >= sim_fail] * 3 for i in range(20)}
    real_plan: dict[str, list[bool | str | None]] = {f"u{i:02}": [i >= real_fail] for i in range(20)}
    sim = synthetic_outcome_run(tmp_path / "sim", sim_plan)
    real = synthetic_outcome_run(tmp_path / "real", real_plan)
    result = compare_populations(sim, real)
    for row in result.rows:
        if row.kind == "rate" and row.n_simulated and row.n_real:
            low, high = _pct(row.difference)
            assert (low > 0 or high < 0) == (row.p < result.alpha) or abs(row.p - result.alpha) < 1e-3
            assert row.test.startswith("Newcombe difference, vignette-clustered")
        if row.kind == "distribution":  # one test per row: its statistic with its own p
            assert row.difference.startswith("KS D") and "Mann" not in row.difference
    failure = next(r for r in result.rows if r.measure == "failure rate: outcome.triage_level")
    assert failure.n_simulated == 60 and "over 20 vignettes" in failure.simulated
    assert main(["compare-populations", str(sim), str(real)]) == 0
    out = capsys.readouterr().out
    differs = [r.measure for r in result.rows if r.p < result.alpha]
    assert ("no measure differs" in out) == (not differs)
    assert "scenarios are the unit" in out
