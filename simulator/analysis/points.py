"""Signed rubric points (HealthBench): a conversation's score is the points it earned over the most it could.

Each points criterion describes a behaviour; when the judge finds it met, its points are earned (negative
points are subtracted). Score = earned / (sum of the positive points of the criteria that applied),
clipped to [0, 1]. A conversation with an errored or unjudged points criterion has no score (left out,
counted); one where no positive criterion applied has none either. Means come with a 95% interval from a
bootstrap over conversations clustered by scenario.
"""

from __future__ import annotations

__all__ = ["PointsSummary", "conversation_score", "points_summary"]

from collections.abc import Sequence

import numpy as np

from simulator.analysis.rundata import RunData
from simulator.models import ResultModel as _Model
from simulator.plural import plural
from simulator.record.models import Verdict
from simulator.stats.interrater import BOOTSTRAP, cluster_weights, percentile_bounds


class ScoreView(_Model):
    """A mean score over conversations with its interval; `left_out` had no score (errors, nothing applied)."""

    mean: float | None
    low: float | None
    high: float | None
    conversations: int
    left_out: int

    @property
    def short(self) -> str:
        if self.mean is None:
            return f"n/a (0 scored, {self.left_out} left out)"
        return (
            f"{self.mean:.3f} ({self.low:.3f}–{self.high:.3f}), {plural(self.conversations, 'conversation')}"
            + (f", {self.left_out} left out" if self.left_out else "")
        )


class PointsSummary(_Model):
    """Mean score overall, by scenario tag and by criterion category (unit: conversations)."""

    overall: ScoreView
    by_tag: dict[str, ScoreView]
    by_category: dict[str, ScoreView]


def conversation_score(verdicts: Sequence[Verdict]) -> float | None:
    """Earned over the maximum positive points of the applicable criteria, clipped to [0, 1]; None when a
    points verdict is an error or not judged, or when no positive criterion applied."""
    scored = [v for v in verdicts if v.points is not None]
    if any(v.result in ("error", "not_judged") for v in scored):
        return None
    applied = [v for v in scored if v.met is not None]
    best = sum(v.points for v in applied if v.points and v.points > 0)
    if best <= 0:
        return None
    earned = sum(v.points for v in applied if v.met and v.points)
    return min(1.0, max(0.0, earned / best))


def _score_view(scores: list[tuple[str, float | None]], replicates: int, seed: int) -> ScoreView:
    kept = [(cluster, s) for cluster, s in scores if s is not None]
    left_out = len(scores) - len(kept)
    if not kept:
        return ScoreView(mean=None, low=None, high=None, conversations=0, left_out=left_out)
    clusters = sorted({c for c, _ in kept})
    index = {c: i for i, c in enumerate(clusters)}
    sums, counts = np.zeros(len(clusters)), np.zeros(len(clusters))
    for cluster, score in kept:
        sums[index[cluster]] += score
        counts[index[cluster]] += 1
    weights = cluster_weights(len(clusters), replicates, seed)
    means = (weights @ sums) / np.maximum(weights @ counts, 1)
    low, high = percentile_bounds(means)
    mean = float(sums.sum() / counts.sum())
    return ScoreView(mean=mean, low=low, high=high, conversations=len(kept), left_out=left_out)


def points_summary(run: RunData, replicates: int = BOOTSTRAP, seed: int = 0) -> PointsSummary | None:
    """Scores of the run's conversations, or None when no criterion has points."""
    grouped = run.verdicts_by_conversation()
    if not any(v.points is not None for v in run.verdicts):
        return None
    finished = [r for r in run.conversations if r.stop_reason != "error"]
    overall = [(r.scenario_id, conversation_score(grouped.get(r.id, []))) for r in finished]
    tags = sorted({t for r in finished for t in r.tags})
    by_tag = {
        tag: _score_view(
            [(c, s) for (c, s), r in zip(overall, finished, strict=True) if tag in r.tags], replicates, seed
        )
        for tag in tags
    }
    categories = sorted({v.category or "general" for v in run.verdicts if v.points is not None})
    by_category = {}
    for category in categories:
        scores = [
            (
                r.scenario_id,
                conversation_score(
                    [v for v in grouped.get(r.id, []) if (v.category or "general") == category]
                ),
            )
            for r in finished
        ]
        by_category[category] = _score_view(scores, replicates, seed)
    return PointsSummary(
        overall=_score_view(overall, replicates, seed), by_tag=by_tag, by_category=by_category
    )
