"""Bootstrap resamples drawn in bulk (simulator/stats/resample.py) are the ones `random.Random.choices` draws
one at a time, to the bit, and leave the Random where the loop left it; so the three bootstraps built on
them (the paired bootstrap, the scenario-clustered one, pass^k's over vignettes) give the intervals they
gave before, checked here against their old loops, kept below as the reference."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from fractions import Fraction
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulator.analysis import tables
from simulator.stats import resample
from simulator.stats.basic import paired_bootstrap
from simulator.stats.clustered import clustered_paired_bootstrap
from tests.support.old_bootstraps import (
    old_clustered_paired_bootstrap,
    old_paired_bootstrap,
    old_pass_hat_k_interval,
)

PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _all(rng: random.Random, n: int, k: int, resamples: int) -> list[list[int]]:
    return [row for rows in resample.draws(rng, n, k, resamples) for row in rows.tolist()]


def _bits(values: Sequence[Any]) -> list[tuple[type, str]]:
    """Each value's type and repr: tells -0.0 from 0.0, 1 from 1.0 and NaN from NaN alike."""
    return [(type(v), repr(v)) for v in values]


def _outcome(fsums: Any, groups: list[list[Any]], rows: Any) -> Any:
    """What `fsum` gives, or the error it raises (inf - inf, a sum past the largest float)."""
    try:
        return _bits(fsums(groups, rows))
    except (OverflowError, ValueError) as error:
        return type(error)


def _random(seed: int, advance: int, gauss: bool) -> random.Random:
    rng = random.Random(seed)
    for _ in range(advance):
        rng.random()
    if gauss:
        rng.gauss()  # leaves a second normal in the state, which the draws must carry through
    return rng


@PROPERTY
@given(
    seed=st.integers(0, 2**64),
    n=st.integers(1, 500),
    k=st.integers(1, 60),
    resamples=st.integers(1, 40),
    advance=st.integers(0, 700),
    gauss=st.booleans(),
    block=st.sampled_from([1, 7, 64, 1 << 18]),
)
def test_the_draws_are_the_choices_of_the_random_and_leave_it_where_they_did(
    seed: int, n: int, k: int, resamples: int, advance: int, gauss: bool, block: int
) -> None:
    looped, bulk = _random(seed, advance, gauss), _random(seed, advance, gauss)
    expected = [looped.choices(range(n), k=k) for _ in range(resamples)]
    with mock.patch.object(resample, "_BLOCK", block):
        assert _all(bulk, n, k, resamples) == expected
    assert bulk.getstate() == looped.getstate()
    assert [bulk.random(), bulk.gauss()] == [looped.random(), looped.gauss()]


@pytest.mark.parametrize(
    ("n", "k", "resamples"), [(1, 1, 1), (2, 3000, 200), (500, 500, 600), (1999, 2000, 3)]
)
def test_large_blocks_draw_the_same(n: int, k: int, resamples: int) -> None:
    looped, bulk = random.Random(n), random.Random(n)
    assert _all(bulk, n, k, resamples) == [looped.choices(range(n), k=k) for _ in range(resamples)]
    assert bulk.getstate() == looped.getstate()


def test_nothing_to_draw_leaves_the_random_alone_and_a_foreign_random_is_refused() -> None:
    rng = random.Random(3)
    before = rng.getstate()
    assert _all(rng, 5, 0, 10) == [] and _all(rng, 5, 4, 0) == [] and _all(rng, 0, 0, 3) == []
    assert rng.getstate() == before
    with pytest.raises(IndexError):
        resample.draws(rng, 0, 2, 3)  # as `choices` on an empty population
    with pytest.raises(TypeError, match=r"random\.Random"):
        resample.draws(random.SystemRandom(), 5, 2, 3)  # its own random(): other numbers than MT19937's

    class Loaded(random.Random):
        def random(self) -> float:
            return 0.0

    with pytest.raises(TypeError, match="Loaded"):
        resample.draws(Loaded(1), 5, 2, 3)


FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)
INTS = st.integers(-3, 3)
ODD = st.sampled_from(
    [math.inf, -math.inf, math.nan, -0.0, 0.0, 2**70, np.float64(0.1), True, Fraction(1, 3)]
)
WHOLE = st.one_of(INTS.map(float), st.sampled_from([-0.0, 2.0**52, -(2.0**40)]))
VALUES = st.one_of(
    st.lists(INTS, min_size=1, max_size=40),
    st.lists(WHOLE, min_size=1, max_size=40),
    st.lists(FLOATS, min_size=1, max_size=40),
    st.lists(st.floats(0, 1), min_size=1, max_size=40),
    st.lists(st.one_of(FLOATS, INTS), min_size=1, max_size=40),
    st.lists(st.one_of(FLOATS, INTS, ODD), min_size=1, max_size=40),
)


@PROPERTY
@given(values=VALUES, seed=st.integers(0, 2**32), k=st.integers(1, 80), resamples=st.integers(1, 30))
def test_sums_are_pythons_sums_to_the_bit(values: list[Any], seed: int, k: int, resamples: int) -> None:
    for rows in resample.draws(random.Random(seed), len(values), k, resamples):
        with np.errstate(all="ignore"):  # numpy scalars among the values warn of inf - inf, either way
            expected = [sum(values[i] for i in row) for row in rows.tolist()]
            got = resample.sums(values, rows)
        assert _bits(got) == _bits(expected)


@pytest.mark.parametrize(
    "values",
    [[-0.0, 0.1], [-0.0, -1.0, 3.0], [-0.0], [0.5, math.inf, -math.inf], [1.0, math.nan], [2.0**53, 1.0]],
)
def test_float_sums_keep_the_sign_of_zero_infinities_and_big_wholes(values: list[float]) -> None:
    rows = np.array([[0, 0, 0], [0, 1, 0], [1, 0, 0], [1, 1, 1]]) % len(values)
    with np.errstate(all="ignore"):
        expected = [sum(values[i] for i in row) for row in rows.tolist()]
    assert _bits(resample.sums(values, rows)) == _bits(expected)


def test_float_sums_follow_this_pythons_sum_where_a_plain_sum_differs() -> None:
    # 1 + 1e100 + 1 - 1e100 is 0.0 summed left to right and 2.0 compensated (Python 3.12 on).
    values = [1.0, 1e100, -1e100]
    rows = np.array([[0, 1, 0, 2], [1, 0, 2, 0], [0, 0, 0, 0]])
    assert resample.sums(values, rows) == [sum(values[i] for i in row) for row in rows.tolist()]
    assert resample.sums(values, rows)[0] == (2.0 if resample._COMPENSATED else 0.0)


# pass^k values (ratios of binomials), plain shares, then anything.
RATIOS = st.tuples(st.integers(0, 60), st.integers(1, 60), st.integers(1, 8)).map(
    lambda t: (
        math.comb(min(t[0], t[1]), t[2]) / math.comb(max(t[0], t[1]), t[2])
        if t[2] <= max(t[0], t[1])
        else 1.0
    )
)
GROUPS = st.lists(
    st.one_of(
        st.lists(RATIOS, max_size=4),
        st.lists(st.floats(0, 1), max_size=4),
        st.lists(st.floats(0, 1e300), max_size=3),
        st.lists(st.one_of(FLOATS, ODD), max_size=3),
    ),
    min_size=1,
    max_size=30,
)


@PROPERTY
@given(groups=GROUPS, seed=st.integers(0, 2**32), resamples=st.integers(1, 30))
def test_fsums_are_fsums_to_the_bit(groups: list[list[Any]], seed: int, resamples: int) -> None:
    for rows in resample.draws(random.Random(seed), len(groups), len(groups), resamples):
        assert _outcome(resample.fsums, groups, rows) == _outcome(
            lambda groups, rows: [math.fsum(v for i in row for v in groups[i]) for row in rows.tolist()],
            groups,
            rows,
        )


@pytest.mark.parametrize(
    "groups",
    [
        [[1.0], [2.0**-53]],  # 1 + 2**-53: half-way, rounds to even (1.0)
        [[1.0 + 2.0**-52], [2.0**-53]],  # half-way again, rounds up to even
        [[1.0], [2.0**-53], [2.0**-1000]],  # just past half-way: rounds up
        [[0.1] * 10, [0.2, 0.3], [1e-300, 1.0]],
        [[], [0.5], []],
    ],
)
def test_fsums_round_as_fsum_at_half_way(groups: list[list[float]]) -> None:
    rows = np.array([list(range(len(groups))), [0] * len(groups), list(reversed(range(len(groups))))])
    expected = [math.fsum(v for i in row for v in groups[i]) for row in rows.tolist()]
    assert _bits(resample.fsums(groups, rows)) == _bits(expected)


def _scores(seed: int, n: int, kind: str) -> tuple[list[Any], list[Any]]:
    rng = random.Random(seed)
    draw = {
        "verdicts": lambda: rng.randint(0, 1),
        "judge scores": lambda: rng.choice([1, 2, 3, 4, 5]) / 5,
        "costs": lambda: rng.lognormvariate(-6, 2),
        "mixed": lambda: rng.choice([0, 1, 0.5, 0.25]),
        "numpy": lambda: np.float64(rng.random()),
        "fractions": lambda: Fraction(rng.randint(0, 9), 7),
    }[kind]
    return [draw() for _ in range(n)], [draw() for _ in range(n)]


@pytest.mark.parametrize("kind", ["verdicts", "judge scores", "costs", "mixed", "numpy", "fractions"])
@pytest.mark.parametrize(
    ("n", "iters", "seed", "confidence"), [(1, 50, 0, 0.95), (7, 400, 3, 0.9), (120, 300, 11, 0.99)]
)
def test_paired_bootstrap_gives_the_interval_it_gave(
    kind: str, n: int, iters: int, seed: int, confidence: float
) -> None:
    a, b = _scores(seed + n, n, kind)
    expected = old_paired_bootstrap(a, b, iters, seed, confidence)
    # Verdicts, scores and costs are summed by numpy; a mix of ints and floats, numpy scalars and
    # Fractions by Python's `sum` over the same draws.
    slow = mock.patch.object(resample, "_slow_sums", side_effect=AssertionError("summed by Python"))
    with slow if kind in ("verdicts", "judge scores", "costs") else mock.patch.object(resample, "_BLOCK", 64):
        got = paired_bootstrap(a, b, iters=iters, seed=seed, confidence=confidence)
    assert repr(got) == repr(expected)


@pytest.mark.parametrize(
    ("shape", "iters", "seed", "confidence"),
    [
        ([1, 1], 200, 0, 0.95),
        ([3, 3, 3, 3, 3, 3], 500, 1, 0.95),
        ([1, 5, 0, 2, 9, 4, 4, 1] * 8, 300, 7, 0.9),
        ([2] * 300, 60, 5, 0.8),
    ],
)
def test_clustered_paired_bootstrap_gives_the_interval_it_gave(
    shape: list[int], iters: int, seed: int, confidence: float
) -> None:
    rng = random.Random(len(shape) + seed)
    by_scenario = [[rng.choice([-1, 0, 0, 1]) for _ in range(size)] for size in shape]
    expected = old_clustered_paired_bootstrap(by_scenario, iters, seed, confidence)
    with mock.patch.object(resample, "_slow_sums", side_effect=AssertionError("summed by Python")):
        got = clustered_paired_bootstrap(by_scenario, iters=iters, seed=seed, confidence=confidence)
    assert repr(got) == repr(expected)


@pytest.mark.parametrize(("vignettes", "iters"), [(1, 30), (4, 2000), (40, 300), (300, 50)])
def test_pass_hat_k_intervals_are_the_ones_they_were(vignettes: int, iters: int) -> None:
    # pass^k values C(c, k) / C(n, k), one or more variants a vignette; the Random runs on from k to k.
    rng = random.Random(vignettes)
    groups = []
    for _ in range(vignettes):
        n, k = rng.randint(4, 40), rng.choice([1, 2, 4])
        groups.append(
            [math.comb(rng.randint(0, n), k) / math.comb(n, k) for _ in range(rng.choice([1, 1, 3]))]
        )
    looped, bulk = random.Random(9), random.Random(9)
    slow = [
        mock.patch.object(resample, name, side_effect=AssertionError("summed by Python"))
        for name in ("_slow_sums", "_slow_fsums")
    ]
    for _ in range(2):  # two k in a row share the Random
        expected = old_pass_hat_k_interval(looped, groups, iters)
        with slow[0], slow[1]:
            assert repr(tables._interval(tables._resampled_means(bulk, groups, iters))) == repr(expected)
        assert bulk.getstate() == looped.getstate()
