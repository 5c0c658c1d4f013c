"""Agreement between raters (the judge and each labeller) on labels.jsonl: the numbers the review desk's
calibration page and `simulator calibrate RUN` both show.

Each function works on one pair of raters over the items both labelled, so other meta-evaluations can
reuse them: `latest_labels` (one answer per labeller and item), `rater_labels` (a rater's answers by item),
`pair_agreement` (agreement, Cohen's kappa, macro-F1, false-pass rate).
"""

from __future__ import annotations

__all__ = [
    "JUDGE",
    "CriterionPanel",
    "PairAgreement",
    "Panel",
    "criterion_panel",
    "judge_labels",
    "latest_labels",
    "macro_f1",
    "pair_agreement",
    "panel",
    "rater_labels",
]

import math
from collections.abc import Iterable, Mapping
from itertools import combinations

from pydantic import BaseModel, ConfigDict

from simulator.analysis.rates import RateView, rate_view
from simulator.analysis.stats import cohens_kappa
from simulator.record.models import Label, Verdict

# The name the judge goes by among the raters.
JUDGE = "judge"
_LABELS = ("pass", "fail", "not_applicable")
Item = tuple[str, str]  # (conversation_id, criterion_id)


class PairAgreement(BaseModel):
    """How `rater` agrees with `reference` on the items both labelled (pass, fail or not applicable).

    The false-pass rate comes first: items the reference failed that the rater passed, over the items the
    reference failed (the dangerous direction when the rater is a judge).
    """

    model_config = ConfigDict(extra="forbid")

    reference: str
    rater: str
    compared: int
    false_pass: RateView
    agreement: RateView
    kappa: float | None  # None: not measurable (no items, or one label for everything on both sides)
    macro_f1: float | None  # mean of the F1 for pass and for fail; None when neither side used them

    def cells(self) -> dict[str, str]:
        """The figures as text, in the order shown: the desk's calibration page and the terminal print
        these same strings."""
        return {
            "reference": self.reference,
            "rater": self.rater,
            "false pass": self.false_pass.short,
            "agreement": self.agreement.short,
            "kappa": "n/a" if self.kappa is None else f"{self.kappa:.2f}",
            "macro-F1": "n/a" if self.macro_f1 is None else f"{self.macro_f1:.2f}",
            "compared": str(self.compared),
        }


class CriterionPanel(BaseModel):
    """Every pair of raters on one criterion: the judge against each labeller, then labeller pairs."""

    model_config = ConfigDict(extra="forbid")

    criterion_id: str
    labellers: list[str]
    items: int  # items at least one labeller labelled
    judge: list[PairAgreement]
    between_labellers: list[PairAgreement]


class Panel(BaseModel):
    """Calibration of a run from its labels.jsonl, per criterion."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    labels_file: str
    judge_set: str | None
    labellers: list[str]
    criteria: list[CriterionPanel]


def latest_labels(labels: Iterable[Label]) -> dict[str, dict[Item, Label]]:
    """Each labeller's answer per (conversation, criterion): the last line written wins."""
    out: dict[str, dict[Item, Label]] = {}
    for label in labels:
        out.setdefault(label.labeller, {})[(label.conversation_id, label.criterion_id)] = label
    return out


def rater_labels(answers: Mapping[Item, Label], criterion: str | None = None) -> dict[Item, str]:
    """A labeller's label per item, optionally for one criterion only."""
    return {item: a.label for item, a in answers.items() if criterion is None or item[1] == criterion}


def judge_labels(verdicts: Iterable[Verdict], criterion: str | None = None) -> dict[Item, str]:
    """The judge's label per item; error and not-judged verdicts are not labels and are left out."""
    return {
        (v.conversation_id, v.criterion_id): v.result
        for v in verdicts
        if v.result in _LABELS and (criterion is None or v.criterion_id == criterion)
    }


def _f1(reference: list[str], rater: list[str], label: str) -> float | None:
    true_pos = sum(1 for r, x in zip(reference, rater, strict=True) if r == label and x == label)
    wrong = sum(1 for r, x in zip(reference, rater, strict=True) if (r == label) != (x == label))
    if true_pos == 0 and wrong == 0:
        return None  # neither side used this label: its F1 is undefined, not zero
    return 2 * true_pos / (2 * true_pos + wrong)


def macro_f1(reference: list[str], rater: list[str]) -> float | None:
    """Mean of the F1 for pass and for fail (HealthBench's grader-vs-physician measure); a class neither
    side used is left out of the mean; None when neither was used."""
    scores = [s for s in (_f1(reference, rater, "pass"), _f1(reference, rater, "fail")) if s is not None]
    return sum(scores) / len(scores) if scores else None


def pair_agreement(
    reference_name: str, reference: Mapping[Item, str], rater_name: str, rater: Mapping[Item, str]
) -> PairAgreement:
    """Agreement of `rater` with `reference` on the items both labelled."""
    items = sorted(set(reference) & set(rater))
    ref = [reference[i] for i in items]
    got = [rater[i] for i in items]
    agree = sum(1 for r, x in zip(ref, got, strict=True) if r == x)
    ref_fail = sum(1 for r in ref if r == "fail")
    false_pass = sum(1 for r, x in zip(ref, got, strict=True) if r == "fail" and x == "pass")
    kappa = cohens_kappa(ref, got) if items else math.nan
    return PairAgreement(
        reference=reference_name,
        rater=rater_name,
        compared=len(items),
        false_pass=rate_view(false_pass, ref_fail),
        agreement=rate_view(agree, len(items), counts="successes"),
        kappa=None if math.isnan(kappa) else kappa,
        macro_f1=macro_f1(ref, got),
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
