"""Failure rates corrected for the judge's measured sensitivity and specificity (Rogan–Gladen).

A lenient judge that passes some real failures makes the raw failure rate too low. With labels for some
items, the judge's sensitivity (Se: share of the reference's fails it fails) and specificity (Sp: share of
the reference's passes it passes) are measured, and the true failure rate is estimated as
`(raw + Sp - 1) / (Se + Sp - 1)`, clipped to [0, 1]. The reference of an item is the majority of its
labellers (ties left out). The interval is a bootstrap that carries both uncertainties: each replicate
resamples the run's items and, independently, the labelled items, both clustered by scenario. When
`Se + Sp - 1 <= 0` the judge is no better than chance and nothing can be corrected.
"""

from __future__ import annotations

__all__ = ["CorrectedRate", "corrected_rate", "rogan_gladen", "run_corrected_rates"]

from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import NDArray

from simulator.analysis.meta_eval import consensus
from simulator.analysis.rundata import RunData
from simulator.models import ResultModel
from simulator.record.selection import labels_by_item
from simulator.stats.interrater import BOOTSTRAP, cluster_weights, percentile_bounds


class CorrectedRate(ResultModel):
    """One criterion's raw failure rate (unit: conversations, errors and n/a left out) and the corrected one."""

    criterion_id: str
    raw: float | None
    raw_k: int
    raw_n: int
    sensitivity: float | None
    specificity: float | None
    labelled: int  # items with a reference label and a pass / fail verdict
    corrected: float | None
    low: float | None
    high: float | None
    note: str = ""


def rogan_gladen(raw: float, sensitivity: float, specificity: float) -> float | None:
    """The true rate behind an observed `raw` rate; None when Se + Sp - 1 <= 0."""
    youden = sensitivity + specificity - 1
    if youden <= 0:
        return None
    return float(min(1.0, max(0.0, (raw + specificity - 1) / youden)))


def _per_cluster(items: Sequence[tuple[Hashable, Sequence[bool]]], width: int) -> NDArray[np.float64]:
    clusters = sorted({c for c, _ in items}, key=str)
    index = {c: i for i, c in enumerate(clusters)}
    out = np.zeros((len(clusters), width))
    for cluster, flags in items:
        out[index[cluster]] += np.asarray(flags, dtype=float)
    return out


def corrected_rate(
    criterion_id: str,
    observed: Sequence[tuple[Hashable, bool]],
    labelled: Sequence[tuple[Hashable, bool, bool]],
    replicates: int = BOOTSTRAP,
    seed: int = 0,
) -> CorrectedRate:
    """`observed`: (scenario, judge failed) for every judged item; `labelled`: (scenario, reference failed,
    judge failed) for the labelled ones. Returns raw and corrected rates with a bootstrap interval."""
    k, n = sum(f for _, f in observed), len(observed)
    # Per cluster: items, judge fails | labelled: ref fail & judge fail, ref fail, ref pass & judge pass, ref pass
    obs = _per_cluster([(c, (True, f)) for c, f in observed], 2)
    lab = _per_cluster([(c, (r and j, r, (not r) and (not j), not r)) for c, r, j in labelled], 4)
    base = CorrectedRate(
        criterion_id=criterion_id, raw=k / n if n else None, raw_k=k, raw_n=n, sensitivity=None,
        specificity=None, labelled=len(labelled), corrected=None, low=None, high=None,
    )  # fmt: skip
    totals = lab.sum(axis=0)
    if not n or totals[1] == 0 or totals[3] == 0:
        base.note = "needs labelled fails and labelled passes to measure sensitivity and specificity"
        return base
    se, sp = totals[0] / totals[1], totals[2] / totals[3]
    base.sensitivity, base.specificity = float(se), float(sp)
    base.corrected = rogan_gladen(k / n, se, sp)
    if base.corrected is None:
        base.note = "the judge is no better than chance here (Se + Sp - 1 <= 0): no correction"
        return base
    w_obs = cluster_weights(len(obs), replicates, seed) @ obs
    w_lab = cluster_weights(len(lab), replicates, seed + 1) @ lab
    with np.errstate(divide="ignore", invalid="ignore"):
        raw_r = w_obs[:, 1] / w_obs[:, 0]
        se_r, sp_r = w_lab[:, 0] / w_lab[:, 1], w_lab[:, 2] / w_lab[:, 3]
        youden = se_r + sp_r - 1
        true_r = np.clip((raw_r + sp_r - 1) / youden, 0.0, 1.0)
    good = true_r[np.isfinite(true_r) & (youden > 0)]
    dropped = replicates - good.size
    if good.size:
        base.low, base.high = percentile_bounds(good)
    if dropped:
        base.note = f"{dropped} of {replicates} bootstrap replicates had no usable Se/Sp and were left out"
    return base


def run_corrected_rates(run: RunData, replicates: int = BOOTSTRAP, seed: int = 0) -> list[CorrectedRate]:
    """For every LLM criterion with labels in the run folder: its raw and corrected failure rates."""
    labels = labels_by_item(run.labels)
    if not labels:
        return []
    labelled_criteria = {criterion for _, criterion in labels}
    out = []
    for criterion in sorted(labelled_criteria):
        verdicts = [
            v
            for v in run.verdicts
            if v.criterion_id == criterion and v.kind == "llm" and v.result in ("pass", "fail")
        ]
        if not verdicts:
            continue
        observed = [(v.scenario_id, v.result == "fail") for v in verdicts]
        labelled = []
        for v in verdicts:
            reference = consensus(labels.get((v.conversation_id, criterion), {}))
            if reference in ("pass", "fail"):
                labelled.append((v.scenario_id, reference == "fail", v.result == "fail"))
        out.append(corrected_rate(criterion, observed, labelled, replicates, seed))
    return out
