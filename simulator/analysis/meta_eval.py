"""Meta-evaluation: the judge against several human labellers, and the labellers against each other.

Labels live in the run folder's `labels.jsonl` (one line per labeller, conversation and criterion; the
latest line of a labeller wins). For each criterion and each criterion category, the judge is compared
with every labeller (macro-F1: the mean of the F1 for pass and the F1 for fail; Cohen's kappa; the
false-pass rate, i.e. the share of the labeller's fails the judge passed), and every labeller with every
other one: the human baseline. The judge's percentile among the labellers ranks its mean macro-F1 against
the labellers' (each scored against the others). The figures are analysis/agreement.py's, with its one
n/a rule (n/a is a label; items without a judge label are left out and counted). Every figure has a 95% interval from a bootstrap over conversations clustered
by scenario (the same replicates for every pair, so the percentile's interval is coherent).
"""

from __future__ import annotations

__all__ = [
    "MetaEvaluation",
    "MetaGroup",
    "PairEstimates",
    "consensus",
    "meta_evaluate",
]

from collections import Counter
from typing import Literal

import numpy as np

from simulator.analysis.agreement import FAIL, PASS, false_pass_share, kappa_note, kappa_of, macro_f1_of
from simulator.analysis.rundata import RunData, short_hash
from simulator.errors import UserError
from simulator.models import ResultModel as _Model
from simulator.record.models import Verdict
from simulator.record.selection import Item, by_item, labels_by_item
from simulator.stats.interrater import BOOTSTRAP, Array, Estimate, PairCounts, cluster_weights, estimate

JUDGE = "judge"


class PairEstimates(_Model):
    """A rater (the judge or a labeller) against a reference labeller, on items both labelled (pass, fail or
    not applicable: analysis/agreement.py's rule); `left_out` counts the items without a judge label."""

    rater: str
    reference: str
    compared: int
    left_out: int
    macro_f1: Estimate
    kappa: Estimate
    false_pass: Estimate  # share of the reference's fails the rater passed
    false_passes: int
    reference_fails: int
    kappa_note: str = ""  # why kappa is low or n/a beside the agreement (analysis/agreement.kappa_note)


class MetaGroup(_Model):
    """One criterion (or one category): the judge against each labeller, the human baseline, the percentile."""

    kind: Literal["criterion", "category"]
    name: str
    severity: str | None
    labellers: list[str]
    items: int  # labelled items with a judge verdict
    judge: list[PairEstimates]
    humans: list[PairEstimates]
    judge_macro_f1: Estimate  # mean over labellers
    human_macro_f1: Estimate  # mean over ordered labeller pairs
    judge_percentile: Estimate  # share of labellers the judge beats (ties half); needs two labellers
    labeller_scores: dict[str, float | None]


class MetaEvaluation(_Model):
    run_id: str
    judge_set: str
    labellers: list[str]
    replicates: int
    criteria: list[MetaGroup]
    categories: list[MetaGroup]
    unknown_conversations: list[str]


def consensus(by_labeller: dict[str, str]) -> str | None:
    """The majority label of one item; None on a tie."""
    ranked = Counter(by_labeller.values()).most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def _pair(
    rater: str, reference: str, items: dict[Item, dict[str, str]], cluster: dict[Item, str],
    clusters: list[str], weights: Array,
) -> tuple[PairEstimates, Array]:  # fmt: skip
    counts = PairCounts()
    for item, raters in items.items():
        if rater in raters and reference in raters:
            counts.add(cluster[item], raters[reference], raters[rater])
    total, reps = counts.total(), counts.replicates(weights, clusters)
    row = PairEstimates(
        rater=rater,
        reference=reference,
        compared=int(total.sum()),
        left_out=counts.left_out,
        macro_f1=estimate(float(macro_f1_of(total)), macro_f1_of(reps)),
        kappa=estimate(float(kappa_of(total)), kappa_of(reps)),
        false_pass=estimate(float(false_pass_share(total)), false_pass_share(reps)),
        false_passes=int(total[FAIL, PASS]),
        reference_fails=int(total[FAIL].sum()),
        kappa_note=kappa_note(total, reference, rater),
    )
    return row, macro_f1_of(reps)


def _mean(rows: list[PairEstimates], reps: list[Array]) -> Estimate:
    points = [r.macro_f1.value for r in rows if r.macro_f1.value is not None]
    if not points:
        return Estimate(value=None)
    return estimate(float(np.mean(points)), _row_mean(reps))


def _row_mean(reps: list[Array]) -> Array:
    """Per replicate, the mean of the pairs' values that are defined (NaN when none is)."""
    stacked = np.vstack(reps)
    counted = (~np.isnan(stacked)).sum(axis=0)
    return np.where(counted > 0, np.nansum(stacked, axis=0) / np.maximum(counted, 1), np.nan)


def _group(
    kind: Literal["criterion", "category"], name: str, severity: str | None,
    items: dict[Item, dict[str, str]], replicates: int, seed: int,
) -> MetaGroup:  # fmt: skip
    cluster = {item: item[0].rsplit("#", 1)[0] for item in items}
    clusters = sorted(set(cluster.values()))
    weights = cluster_weights(len(clusters), replicates, seed)
    labellers = sorted({r for raters in items.values() for r in raters} - {JUDGE})
    judge_rows, judge_reps = [], []
    for reference in labellers:
        row, reps = _pair(JUDGE, reference, items, cluster, clusters, weights)
        judge_rows.append(row)
        judge_reps.append(reps)
    human_rows: list[PairEstimates] = []
    scores: dict[str, float | None] = {}
    score_reps: dict[str, Array] = {}
    all_reps: list[Array] = []
    for rater in labellers:
        rows, reps_of = [], []
        for reference in labellers:
            if reference != rater:
                row, reps = _pair(rater, reference, items, cluster, clusters, weights)
                rows.append(row)
                reps_of.append(reps)
        human_rows += rows
        all_reps += reps_of
        score = _mean(rows, reps_of) if rows else Estimate(value=None)
        scores[rater] = score.value
        if reps_of:
            score_reps[rater] = _row_mean(reps_of)
    judge_mean = _mean(judge_rows, judge_reps)
    percentile = _percentile(judge_mean, judge_reps, scores, score_reps)
    return MetaGroup(
        kind=kind, name=name, severity=severity, labellers=labellers,
        items=sum(1 for raters in items.values() if JUDGE in raters and len(raters) > 1),
        judge=judge_rows, humans=human_rows, judge_macro_f1=judge_mean,
        human_macro_f1=_mean(human_rows, all_reps), judge_percentile=percentile, labeller_scores=scores,
    )  # fmt: skip


def _percentile(
    judge: Estimate, judge_reps: list[Array], scores: dict[str, float | None], score_reps: dict[str, Array]
) -> Estimate:
    known = {name: s for name, s in scores.items() if s is not None}
    if judge.value is None or len(known) < 2:
        return Estimate(value=None)
    point = sum((s < judge.value) + 0.5 * (s == judge.value) for s in known.values()) / len(known)
    with np.errstate(invalid="ignore"):
        j = _row_mean(judge_reps)
        others = np.vstack([score_reps[name] for name in known])
        reps = ((others < j) + 0.5 * (others == j)).mean(axis=0)
        reps = np.where(np.isnan(j) | np.isnan(others).any(axis=0), np.nan, reps)
    return estimate(float(point), reps)


def meta_evaluate(run: RunData, replicates: int = BOOTSTRAP, seed: int = 0) -> MetaEvaluation:
    """Judge against labellers and labellers against each other, per criterion and per category."""
    labels = labels_by_item(run.labels)
    if not labels:
        raise UserError(
            f"{run.path}: no labels yet (labels.jsonl); add some with the review desk or "
            "`simulator labels import RUN FILE --labeller NAME`"
        )
    verdicts: dict[Item, Verdict] = by_item(run.verdicts)
    known = {r.id for r in run.conversations}
    unknown = sorted({c for c, _ in labels if c not in known})
    items: dict[Item, dict[str, str]] = {}
    for item, by_labeller in labels.items():
        if item[0] not in known:
            continue
        raters = dict(by_labeller)
        if item in verdicts:
            raters[JUDGE] = verdicts[item].result
        items[item] = raters
    severity = {c.id: c.severity for c in (run.manifest.judge_set.criteria if run.manifest.judge_set else [])}
    category = {item: v.category or "general" for item, v in verdicts.items()}
    criteria = [
        _group(
            "criterion", c, severity.get(c), {i: r for i, r in items.items() if i[1] == c}, replicates, seed
        )
        for c in sorted({i[1] for i in items})
    ]
    criteria.sort(key=_danger_first)
    categories = [
        _group(
            "category", g, None, {i: r for i, r in items.items() if category.get(i) == g}, replicates, seed
        )
        for g in sorted({category[i] for i in items if i in category})
    ]
    return MetaEvaluation(
        run_id=run.manifest.run_id,
        judge_set=short_hash(run.judge_set),
        labellers=sorted({name for raters in labels.values() for name in raters}),
        replicates=replicates,
        criteria=criteria,
        categories=categories,
        unknown_conversations=unknown,
    )


def _danger_first(group: MetaGroup) -> tuple[int, int, str]:
    """Critical criteria whose judge passed something a labeller failed come first."""
    false_passes = sum(row.false_passes for row in group.judge)
    return (0 if group.severity == "critical" and false_passes else 1, -false_passes, group.name)
