"""Planted truth for the verdict words: each label's false-alarm rate on a planted null (≤ 5% at the stated
level, over 400 seeds) and its power on a planted real effect. The decisions are the engine's own functions
(`verdict_word`, `pair_tests` + `induced_by`, `fact_outcome_p`), fed planted counts; bench/verdict_words.py
runs the same through the engine."""

from __future__ import annotations

import random

from simulator.loop.change_verdict import verdict_word
from simulator.stats.evidence import ALPHA, fisher_greater, sign_test_greater, smallest_significant_flips
from tests.support.planted_verdicts import METRICS, flaky, induced_labels, planted_try, simulated

SEEDS = 400


def test_the_exact_tests_match_a_hand_calculation() -> None:
    assert sign_test_greater(3, 3) == 1 / 8 and sign_test_greater(0, 0) == 1.0
    assert sign_test_greater(4, 5) == 6 / 32
    assert smallest_significant_flips(0.05) == 5
    # [[3, 0], [0, 3]]: all three events in the first row, 1 / C(6, 3).
    assert fisher_greater(3, 0, 0, 3) == 1 / 20
    assert fisher_greater(0, 3, 3, 0) == 1.0


def _try(rng: random.Random, before: list[float], after: list[float], repeats: int) -> str:
    planted = planted_try(rng, before, after, repeats)
    return verdict_word(planted.fixed, planted.broken, planted.failures_after, planted.moves)


def test_a_change_that_does_nothing_reads_no_evidence() -> None:
    rng = random.Random(1)
    words = [_try(rng, [0.5, 0.3], [0.5, 0.3], 3) for _ in range(SEEDS)]
    false_alarms = sum(w != "no evidence" for w in words) / SEEDS
    assert false_alarms <= ALPHA, f"no-op changes read IMPROVED/FIXED/BROKE in {false_alarms:.1%}"


def test_a_real_fix_reads_fixed_or_improved() -> None:
    rng = random.Random(2)
    words = [_try(rng, [0.9, 0.9], [0.0, 0.05], 5) for _ in range(SEEDS)]
    power = sum(w in ("fixed", "improved") for w in words) / SEEDS
    assert power >= 0.9, f"a real fix read FIXED or IMPROVED in only {power:.1%}"


def test_a_real_break_reads_broke_something() -> None:
    rng = random.Random(3)
    hits = 0
    for _ in range(SEEDS):
        moves = [(0, 0)] * (METRICS - 1) + [(sum(rng.random() < 0.95 for _ in range(10)), 0)]
        hits += verdict_word(0, 0, 0, moves) == "broke something"
    assert hits / SEEDS >= 0.9


def test_an_intermittent_bot_flaw_is_not_called_simulator_induced() -> None:
    # The planted case: the bot fails 30% of the time under every simulator, 22 vignettes.
    rng = random.Random(4)
    labelled = seen = 0
    for _ in range(SEEDS):
        got, one = induced_labels(
            simulated(rng, {"offline": 0.3, "denier": 0.3}, 22, 1), ["offline", "denier"]
        )
        labelled, seen = labelled + got, seen + one
    assert seen > SEEDS  # the old rule would have labelled every one of these
    assert labelled / (22 * SEEDS) <= ALPHA


def test_a_simulator_that_makes_the_bot_fail_is_found() -> None:
    rng = random.Random(5)
    found = 0
    for _ in range(SEEDS):
        got, one = induced_labels(
            simulated(rng, {"offline": 0.0, "denier": 0.5}, 22, 1), ["offline", "denier"]
        )
        found += got == one and one > 0
    assert found / SEEDS >= 0.9


def test_a_flaky_bot_that_meets_a_chatty_user_is_not_called_a_flaky_simulation() -> None:
    # The bot fails half the time whatever the user says; the user volunteers the fact half the time.
    rng = random.Random(6)
    called = sum((p := flaky(rng, 0.5, 0.5, 0.5, 6)) is not None and p < ALPHA for _ in range(SEEDS))
    assert called / SEEDS <= ALPHA


def test_a_user_who_withholds_the_fact_is_called_a_flaky_simulation() -> None:
    rng = random.Random(7)
    called = sum((p := flaky(rng, 0.5, 0.95, 0.0, 12)) is not None and p < ALPHA for _ in range(SEEDS))
    assert called / SEEDS >= 0.8
