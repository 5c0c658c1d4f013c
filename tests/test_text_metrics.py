"""Text metrics: SQuAD normalisation, exact match, token F1, ROUGE-L and difflib ratio, worked by hand."""

from __future__ import annotations

import random
from difflib import SequenceMatcher

import pytest

from simulator.judging.text_metrics import (
    _lcs_length,
    difflib_ratio,
    exact_match,
    normalize,
    rouge_l,
    token_f1,
    tokens,
)


def test_normalize_lowercases_strips_punctuation_and_articles() -> None:
    assert normalize("The  Parcel, KP-1005, is OUT for delivery!") == "parcel kp1005 is out for delivery"
    assert normalize("An apple a day\tkeeps   the doctor away.") == "apple day keeps doctor away"
    # Only whole-word articles go: "theatre", "Anna" and "any" stay.
    assert normalize("The theatre, Anna and any other") == "theatre anna and any other"
    assert tokens("") == []


def test_exact_match_accepts_any_reference() -> None:
    assert exact_match("Out for delivery.", "out for delivery")
    assert exact_match("the parcel was delivered", ["in transit", "Parcel was delivered!"])
    assert not exact_match("The current status of KP-1005 is: out for delivery.", "out for delivery")
    assert not exact_match("in transit", [])


def test_token_f1_of_the_seed_readback_is_0_545() -> None:
    # 8 tokens (current status of kp1005 is out for delivery) against 3, all 3 shared:
    # precision 3/8, recall 1, F1 = 2 * 3/8 / (11/8) = 6/11.
    score = token_f1("The current status of KP-1005 is: out for delivery.", "out for delivery")
    assert score == pytest.approx(6 / 11)
    assert round(score, 2) == 0.55


def test_token_f1_hand_computed() -> None:
    # pred: cat sat on mat (4), ref: cat on mat (3), common 3 -> P 3/4, R 1 -> F1 6/7.
    assert token_f1("The cat sat on the mat.", "A cat on a mat") == pytest.approx(6 / 7)
    # Bags, not sets: x x y vs x y y share one x and one y -> P = R = 2/3.
    assert token_f1("x x y", "x y y") == pytest.approx(2 / 3)
    assert token_f1("nothing shared", "entirely different") == 0.0
    # Seed's delivery-date answer: 12 tokens vs 5, sharing for, kp1001, 20260915 -> 2*(3/12)(3/5)/(3/12+3/5).
    seed = token_f1(
        "Thanks for asking. KP-1001 should reach you on 2026-09-15, barring any delays.",
        "Expected delivery for KP-1001: 2026-09-15.",
    )
    assert seed == pytest.approx(2 * 0.25 * 0.6 / 0.85)
    assert round(seed, 2) == 0.35


def test_token_f1_and_rouge_l_on_empty_text() -> None:
    assert token_f1("", "") == 1.0
    assert token_f1("!!!", "the") == 1.0  # both normalise to nothing
    assert token_f1("", "in transit") == 0.0
    assert rouge_l("in transit", "") == 0.0
    assert rouge_l("", "") == 1.0


def test_rouge_l_hand_computed_lin_example() -> None:
    # Lin (2004) 3.1: reference "police killed the gunman" ("the" is dropped by normalisation).
    reference = "police killed the gunman"
    # "police kill the gunman": LCS police, gunman = 2 of 3 -> R = P = 2/3.
    assert rouge_l("police kill the gunman", reference) == pytest.approx(2 / 3)
    # "the gunman kill police": LCS 1 -> 1/3, although its bag of words scores as well as the line above.
    assert rouge_l("the gunman kill police", reference) == pytest.approx(1 / 3)
    assert token_f1("the gunman kill police", reference) == pytest.approx(2 / 3)
    assert rouge_l("police killed the gunman", reference) == 1.0


def test_rouge_l_beta_weights_recall() -> None:
    # pred w x y z, ref w y: LCS 2 -> R 1, P 1/2.
    assert rouge_l("w x y z", "w y") == pytest.approx(2 / 3)
    assert rouge_l("w x y z", "w y", beta=2.0) == pytest.approx((5 * 1 * 0.5) / (1 + 4 * 0.5))


def _lcs_full_table(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, 1):
        for j, y in enumerate(b, 1):
            table[i][j] = table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def test_one_row_lcs_matches_the_full_table() -> None:
    rng = random.Random(7)
    for _ in range(200):
        a = [rng.choice("abcd") for _ in range(rng.randint(0, 12))]
        b = [rng.choice("abcd") for _ in range(rng.randint(0, 12))]
        assert _lcs_length(a, b) == _lcs_full_table(a, b) == _lcs_length(b, a)


def test_difflib_ratio_is_2m_over_t_without_autojunk() -> None:
    assert difflib_ratio("abcd", "bcde") == pytest.approx(2 * 3 / 8)
    assert difflib_ratio("same", "same") == 1.0
    # Past 200 characters autojunk would treat spaces and common letters as junk and change the score.
    a = "the parcel is in transit and will arrive soon, " * 5
    b = "the parcel was delivered to the neighbour today, " * 5
    assert difflib_ratio(a, b) == SequenceMatcher(None, a, b, autojunk=False).ratio()
    assert difflib_ratio(a, b) > SequenceMatcher(None, a, b).ratio() + 0.3
