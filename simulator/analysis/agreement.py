"""Judge–human agreement, computed once: the figures `simulator calibrate` (CSV or labels.jsonl), the review
desk's calibration page and `simulator meta-eval` all show.

Everything starts from one 3×3 confusion matrix of labels (reference rows × rater columns, in the order
pass, fail, not applicable). The functions work on any stack of such matrices (shape `(..., 3, 3)`), so the
same code gives a point figure and the bootstrap replicates of meta-evaluation.

The not-applicable rule (one rule for every command): **n/a is a label like pass and fail.** An item where
one side says n/a and the other pass or fail is a disagreement: it counts in `compared`, lowers raw agreement
and Cohen's kappa (three categories), and lowers the F1 of the pass or fail class it missed. A judge that
calls a failure "not applicable" has missed it, and leaving such items out would hide exactly that. Macro-F1
is the mean of the F1 for pass and the F1 for fail (n/a has no F1 of its own; a class neither side used is
left out of the mean, as scikit-learn's `f1_score(labels=["pass", "fail"], average="macro",
zero_division=np.nan)` does). Only items without a label on one side (an `error` or `not_judged` verdict,
no verdict at all) are left out, and they are counted.

On top of the matrix: `latest_labels` (record/selection.py: one answer per labeller and item), `rater_labels` (a rater's answers
by item), `pair_agreement` (the desk's and `calibrate RUN`'s row) and `panel` (every pair, per criterion).
"""

from __future__ import annotations

__all__ = [
    "JUDGE",
    "LABELS",
    "CriterionPanel",
    "PairAgreement",
    "Panel",
    "confusion",
    "criterion_panel",
    "false_pass_share",
    "judge_labels",
    "kappa_note",
    "kappa_of",
    "macro_f1",
    "macro_f1_of",
    "pair_agreement",
    "panel",
    "point",
    "rater_labels",
    "rates_of",
]

from collections.abc import Iterable, Mapping
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

from simulator.models import StrictModel
from simulator.record.models import Label, Verdict
from simulator.record.selection import Item, latest_labels
from simulator.stats.interrater import LABELS
from simulator.stats.rates import RateView, rate_view

Array = NDArray[np.float64]
# The name the judge goes by among the raters.
JUDGE = "judge"
PASS, FAIL, NA = 0, 1, 2


def confusion(reference: Iterable[str], rater: Iterable[str]) -> Array:
    """The 3×3 count matrix of paired labels (reference row, rater column); a pair where either side is not
    one of LABELS raises, since callers filter those out (and count them) first."""
    m = np.zeros((3, 3))
    for r, x in zip(reference, rater, strict=True):
        m[LABELS.index(r), LABELS.index(x)] += 1
    return m


def _div(num: Array, den: Array) -> Array:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def kappa_of(m: Array) -> Array:
    """Cohen's kappa over the three labels; NaN when not measurable (no item, or chance agreement is
    perfect: both sides gave one and the same label to everything)."""
    n = m.sum(axis=(-2, -1))
    observed = _div(np.trace(m, axis1=-2, axis2=-1), n)
    chance = _div((m.sum(axis=-1) * m.sum(axis=-2)).sum(axis=-1), n * n)
    return _div(observed - chance, 1 - chance)


PREVALENCE = 0.8  # chance agreement from which a low kappa is explained by the labels' imbalance


def kappa_note(m: Array, reference: str = "the reference", rater: str = "the rater") -> str:
    """Why kappa reads as it does beside a high agreement, or "" when nothing needs saying.

    Kappa is agreement beyond chance, (observed − chance) / (1 − chance). When one side gave a single label
    to every item, chance agreement equals the observed share of that label and kappa is 0 however often the
    two agree (90% agreement, kappa 0.00); when one label dominates (prevalence), chance agreement is high
    and kappa low. Both say the labels cannot show agreement beyond chance, not that the judge is random.
    """
    n = float(m.sum())
    if n == 0:
        return ""
    rows, columns = m.sum(axis=1), m.sum(axis=0)
    chance = float((rows * columns).sum()) / (n * n)
    observed = float(np.trace(m)) / n
    used = [
        (name, [LABELS[i] for i in range(3) if side[i] > 0])
        for name, side in ((reference, rows), (rater, columns))
    ]
    single = [(name, labels[0]) for name, labels in used if len(labels) == 1]
    if len(single) == 2 and single[0][1] == single[1][1]:
        return f"not measurable: both gave every item the same label ({single[0][1]}), so chance agreement is 100%"
    if single:
        name, label = single[0]
        return (
            f"{name} gave one label only ({label}): chance agreement is {chance:.0%}, so kappa cannot credit "
            f"the {observed:.0%} agreement; read the false passes and false fails instead"
        )
    if chance >= PREVALENCE:
        top = LABELS[int(np.argmax(rows + columns))]
        share = float((rows + columns).max()) / (2 * n)
        return (
            f"prevalence: {share:.0%} of the labels are {top}, so chance agreement is {chance:.0%} and kappa "
            f"is low even at {observed:.0%} agreement; read the false passes and false fails"
        )
    return ""


def _f1(m: Array, label: int) -> Array:
    """F1 of one class: 2·TP / (2·TP + FP + FN), where 2·TP + FP + FN is the class's row plus column; NaN
    when neither side used the class."""
    return _div(2 * m[..., label, label], m[..., label, :].sum(axis=-1) + m[..., :, label].sum(axis=-1))


def macro_f1_of(m: Array) -> Array:
    """Mean of the F1 for pass and the F1 for fail, over the classes either side used; NaN when neither."""
    f_pass, f_fail = _f1(m, PASS), _f1(m, FAIL)
    used = (~np.isnan(f_pass)).astype(float) + (~np.isnan(f_fail)).astype(float)
    return _div(np.nan_to_num(f_pass) + np.nan_to_num(f_fail), used)


def false_pass_share(m: Array) -> Array:
    """Share of the reference's fails the rater passed: the dangerous direction when the rater is a judge."""
    return _div(m[..., FAIL, PASS], m[..., FAIL, :].sum(axis=-1))


def point(value: Array | float) -> float | None:
    """A figure as a plain float, None when it is not measurable (NaN)."""
    number = float(value)
    return None if np.isnan(number) else number


def macro_f1(reference: list[str], rater: list[str]) -> float | None:
    """Macro-F1 of two label lists (see `macro_f1_of`)."""
    return point(macro_f1_of(confusion(reference, rater)))


class PairAgreement(StrictModel):
    """How `rater` agrees with `reference` on the items both labelled (pass, fail or not applicable).

    The false-pass rate comes first: items the reference failed that the rater passed, over the items the
    reference failed (the dangerous direction when the rater is a judge).
    """

    reference: str
    rater: str
    compared: int
    false_pass: RateView
    agreement: RateView
    kappa: float | None  # None: not measurable (no items, or one label for everything on both sides)
    macro_f1: float | None  # mean of the F1 for pass and for fail; None when neither side used them
    kappa_note: str = ""  # why kappa is low or n/a beside the agreement (one class only, prevalence)

    def cells(self) -> dict[str, str]:
        """The figures as text, in the order shown: the desk's calibration page and the terminal print
        these same strings."""
        return {
            "reference": self.reference,
            "rater": self.rater,
            "false pass": self.false_pass.short,
            "agreement": self.agreement.short,
            "kappa": ("n/a" if self.kappa is None else f"{self.kappa:.2f}")
            + (f" ({self.kappa_note})" if self.kappa_note else ""),
            "macro-F1": "n/a" if self.macro_f1 is None else f"{self.macro_f1:.2f}",
            "compared": str(self.compared),
        }


class CriterionPanel(StrictModel):
    """Every pair of raters on one criterion: the judge against each labeller, then labeller pairs."""

    criterion_id: str
    labellers: list[str]
    items: int  # items at least one labeller labelled
    judge: list[PairAgreement]
    between_labellers: list[PairAgreement]


class Panel(StrictModel):
    """Calibration of a run from its labels.jsonl, per criterion."""

    run_id: str
    labels_file: str
    judge_set: str | None
    labellers: list[str]
    criteria: list[CriterionPanel]


def rates_of(m: Array) -> dict[str, RateView]:
    """The counted figures of one matrix: false passes (over the reference's fails), false fails (over its
    passes) and raw agreement (over the items compared)."""
    return {
        "false_pass": rate_view(int(m[FAIL, PASS]), int(m[FAIL].sum())),
        "false_fail": rate_view(int(m[PASS, FAIL]), int(m[PASS].sum())),
        "agreement": rate_view(int(np.trace(m)), int(m.sum()), counts="successes"),
    }


def rater_labels(answers: Mapping[Item, Label], criterion: str | None = None) -> dict[Item, str]:
    """A labeller's label per item, optionally for one criterion only."""
    return {item: a.label for item, a in answers.items() if criterion is None or item[1] == criterion}


def judge_labels(verdicts: Iterable[Verdict], criterion: str | None = None) -> dict[Item, str]:
    """The judge's label per item; error and not-judged verdicts are not labels and are left out."""
    return {
        (v.conversation_id, v.criterion_id): v.result
        for v in verdicts
        if v.result in LABELS and (criterion is None or v.criterion_id == criterion)
    }


def pair_agreement(
    reference_name: str, reference: Mapping[Item, str], rater_name: str, rater: Mapping[Item, str]
) -> PairAgreement:
    """Agreement of `rater` with `reference` on the items both labelled."""
    items = sorted(set(reference) & set(rater))
    m = confusion([reference[i] for i in items], [rater[i] for i in items])
    rates = rates_of(m)
    return PairAgreement(
        reference=reference_name,
        rater=rater_name,
        compared=len(items),
        false_pass=rates["false_pass"],
        agreement=rates["agreement"],
        kappa=point(kappa_of(m)),
        macro_f1=point(macro_f1_of(m)),
        kappa_note=kappa_note(m, reference_name, rater_name),
    )


def criterion_panel(
    criterion: str, answers: Mapping[str, Mapping[Item, Label]], verdicts: Iterable[Verdict]
) -> CriterionPanel:
    """The judge against each labeller (the labeller is the reference), then each pair of labellers."""
    by_labeller = {name: rater_labels(a, criterion) for name, a in sorted(answers.items())}
    by_labeller = {name: labels for name, labels in by_labeller.items() if labels}
    judge = judge_labels(verdicts, criterion)
    return CriterionPanel(
        criterion_id=criterion,
        labellers=list(by_labeller),
        items=len(set().union(*by_labeller.values())) if by_labeller else 0,
        judge=[pair_agreement(name, labels, JUDGE, judge) for name, labels in by_labeller.items()],
        between_labellers=[
            pair_agreement(a, by_labeller[a], b, by_labeller[b]) for a, b in combinations(by_labeller, 2)
        ],
    )


def panel(
    run_id: str, labels_file: str, judge_set: str | None, labels: Iterable[Label], verdicts: list[Verdict]
) -> Panel:
    """Every criterion any labeller labelled, in id order."""
    answers = latest_labels(labels)
    criteria = sorted({item[1] for a in answers.values() for item in a})
    return Panel(
        run_id=run_id,
        labels_file=labels_file,
        judge_set=judge_set,
        labellers=sorted(answers),
        criteria=[criterion_panel(c, answers, verdicts) for c in criteria],
    )
