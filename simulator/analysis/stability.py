"""Judge stability (A/A: the same item judged several times) and jury agreement, from a run's samples.

Stability: for each criterion and judge model, an item (conversation) flipped when its samples gave more
than one result (pass, fail, not_applicable; error samples are left out). The flip rate is over items with
at least two usable samples, with a Wilson interval. A criterion whose flip rate reaches `UNSTABLE` is
flagged: its rubric is probably vague (docs/judges.md). Jury: each model's answer on an item is the majority
of its samples; Fleiss' kappa over the items every model answered, and the items where models disagree.
"""

from __future__ import annotations

__all__ = ["UNSTABLE", "JuryDisagreement", "JuryRow", "StabilityRow", "jury_rows", "stability_rows"]

from collections import Counter
from collections.abc import Sequence

from simulator.judging.aggregate import combine_results
from simulator.models import ResultModel as _Model
from simulator.record.models import Verdict, VerdictResult
from simulator.record.selection import by_item as verdicts_by_item
from simulator.stats.interrater import fleiss_kappa
from simulator.stats.rates import RateView, rate_view

UNSTABLE = 0.10  # a flip rate at or above this flags the criterion
CATEGORIES: tuple[VerdictResult, ...] = ("pass", "fail", "not_applicable")
MAX_LISTED = 50


class StabilityRow(_Model):
    """One criterion and judge model: how often its samples of one item disagreed (unit: conversations)."""

    criterion_id: str
    judge_model: str
    samples: int  # most samples seen per item
    flips: RateView  # items whose samples disagreed, of items with at least two usable samples
    undecided: int  # items whose samples tied: recorded as error, never as a pass
    unstable: bool


class JuryDisagreement(_Model):
    conversation_id: str
    answers: dict[str, str]  # judge model -> its (majority) answer
    verdict: str


class JuryRow(_Model):
    """One criterion judged by a jury: agreement between its models and the items they disagreed on."""

    criterion_id: str
    models: list[str]
    rule: str | None
    items: int  # items every model answered (no error)
    agreement: RateView  # items where every model gave the same answer
    fleiss_kappa: float | None
    disagreements: list[JuryDisagreement]
    more_disagreements: int = 0


def _grouped(samples: Sequence[Verdict]) -> dict[tuple[str, str], dict[str, list[VerdictResult]]]:
    """(criterion, model) -> conversation -> sample results."""
    grouped: dict[tuple[str, str], dict[str, list[VerdictResult]]] = {}
    for v in samples:
        key = (v.criterion_id, v.judge_model or "")
        grouped.setdefault(key, {}).setdefault(v.conversation_id, []).append(v.result)
    return grouped


def stability_rows(samples: Sequence[Verdict], threshold: float = UNSTABLE) -> list[StabilityRow]:
    """Flip rate per criterion and judge model, for criteria judged more than once per item."""
    rows = []
    for (criterion, model), items in sorted(_grouped(samples).items()):
        most = max(len(r) for r in items.values())
        if most < 2:
            continue  # a jury with one sample per model: no repeat, nothing to measure
        usable = [[r for r in results if r != "error"] for results in items.values()]
        usable = [r for r in usable if len(r) >= 2]
        flipped = sum(len(set(r)) > 1 for r in usable)
        undecided = sum(combine_results(r, "majority") == "error" for r in items.values())
        flips = rate_view(flipped, len(usable))
        rows.append(
            StabilityRow(
                criterion_id=criterion,
                judge_model=model,
                samples=most,
                flips=flips,
                undecided=undecided,
                unstable=flips.rate is not None and flips.rate >= threshold,
            )
        )
    return rows


def jury_rows(samples: Sequence[Verdict], verdicts: Sequence[Verdict]) -> list[JuryRow]:
    """Agreement between judge models, per criterion judged by more than one model."""
    finals = verdicts_by_item(v for v in verdicts if v.aggregate is not None)
    answers: dict[str, dict[str, dict[str, VerdictResult]]] = {}
    for (criterion, model), items in _grouped(samples).items():
        for conversation, results in items.items():
            answer = combine_results(results, "majority")
            answers.setdefault(criterion, {}).setdefault(conversation, {})[model] = answer
    rows = []
    for criterion, by_item in sorted(answers.items()):
        models = sorted({m for per_model in by_item.values() for m in per_model})
        if len(models) < 2:
            continue
        complete = {c: a for c, a in by_item.items() if len(a) == len(models) and "error" not in a.values()}
        table = [[Counter(a.values())[k] for k in CATEGORIES] for a in complete.values()]
        split = sorted(c for c, a in complete.items() if len(set(a.values())) > 1)
        rule = next((finals[(c, criterion)].aggregate for c in by_item if (c, criterion) in finals), None)
        listed = [
            JuryDisagreement(
                conversation_id=c,
                answers=dict(sorted(complete[c].items())),
                verdict=finals[(c, criterion)].result if (c, criterion) in finals else "",
            )
            for c in split[:MAX_LISTED]
        ]
        rows.append(
            JuryRow(
                criterion_id=criterion,
                models=models,
                rule=rule,
                items=len(complete),
                agreement=rate_view(len(complete) - len(split), len(complete), counts="successes"),
                fleiss_kappa=fleiss_kappa(table) if table else None,
                disagreements=listed,
                more_disagreements=max(0, len(split) - MAX_LISTED),
            )
        )
    return rows
