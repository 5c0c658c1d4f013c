"""Planted truth for the verdict words, shared by tests/test_verdict_words.py (400 seeds, asserted) and
bench/verdict_words.py (2,000 seeds, printed beside the rules they replaced): the same draws, so the bench's
figures and the tests' thresholds speak of one experiment."""

from __future__ import annotations

import random
from dataclasses import dataclass

from simulator.analysis.simulators import induced_by, pair_tests
from simulator.analysis.variance import fact_outcome_p
from simulator.record.models import FactProvenance
from tests.test_report_support import record

METRICS = 6  # paired metrics compare checks besides the target


@dataclass(frozen=True)
class PlantedTry:
    """One planted `try`'s counts: the proposal's fixed and broken pairs, its failures in A and in B, and
    each other metric's (regressions, improvements)."""

    fixed: int
    broken: int
    failures_before: int
    failures_after: int
    moves: list[tuple[int, int]]


def planted_try(rng: random.Random, before: list[float], after: list[float], repeats: int) -> PlantedTry:
    """Each vignette of the proposal fails with `before[v]` in A and `after[v]` in B, and METRICS other
    metrics, unchanged, fail with a vignette-specific rate in both runs."""
    fixed = broken = failures_before = failures_after = 0
    for p_a, p_b in zip(before, after, strict=True):
        for _ in range(repeats):
            a, b = rng.random() < p_a, rng.random() < p_b
            fixed += a and not b
            broken += b and not a
            failures_before += a
            failures_after += b
    moves = []
    for _ in range(METRICS):
        regressions = improvements = 0
        for _ in range(22):
            p = rng.choice([0.0, 0.0, 0.1, 0.3, 0.5])
            for _ in range(repeats):
                a, b = rng.random() < p, rng.random() < p
                regressions += b and not a
                improvements += a and not b
        moves.append((regressions, improvements))
    return PlantedTry(fixed, broken, failures_before, failures_after, moves)


def simulated(
    rng: random.Random, fail: dict[str, float], vignettes: int, repeats: int
) -> dict[tuple[str, int], dict[str, bool]]:
    """Each (vignette, repeat)'s failure under each simulator, failing with that simulator's rate."""
    return {
        (f"v{v:02d}", r): {level: rng.random() < p for level, p in fail.items()}
        for v in range(vignettes)
        for r in range(repeats)
    }


def induced_labels(by_pair: dict[tuple[str, int], dict[str, bool]], levels: list[str]) -> tuple[int, int]:
    """(scenarios labelled likely simulator-induced, scenarios failing under one simulator only)."""
    tests = pair_tests(by_pair, levels)
    under: dict[str, set[str]] = {}
    for (scenario, _), fails in by_pair.items():
        under.setdefault(scenario, set()).update(level for level, failed in fails.items() if failed)
    one = [next(iter(u)) for u in under.values() if len(u) == 1]
    return sum(induced_by(level, levels, tests) is not None for level in one), len(one)


def flaky(
    rng: random.Random, told_p: float, fail_if_missed: float, fail_if_told: float, repeats: int
) -> float | None:
    """The flaky-simulation p-value of `repeats` conversations: the user tells the fact with `told_p`, the
    bot fails with `fail_if_told` or `fail_if_missed`."""
    failing, passing = [], []
    for r in range(repeats):
        told = rng.random() < told_p
        failed = rng.random() < (fail_if_told if told else fail_if_missed)
        provenance = FactProvenance(
            fact=0, text="pain spreads to the arm", status="volunteered" if told else "missed"
        )
        (failing if failed else passing).append(record("s", r, provenance=[provenance]))
    return fact_outcome_p(failing, passing)
