"""The golden section of a report: item verdicts (pass^k over samples), scorers side by side, the per-intent
table, where a similarity gate and the verdict disagree, and a threshold sweep per similarity metric.

It reads ordinary run records: golden items are the scenarios whose manifest entry has an `item_kind`; the
verdict of a sample is its conversation status (exact match or assertions, written by the code checks) and
the similarity scores are its `metric.*` verdicts, which gate nothing.
"""

from __future__ import annotations

__all__ = [
    "METRICS",
    "SIMILARITY_METRICS",
    "Gate",
    "GoldenSection",
    "golden_items",
    "golden_section",
    "parse_gate",
]

from statistics import fmean
from typing import Literal

from pydantic import Field

from simulator.analysis.rundata import RunData
from simulator.analysis.tables import conversation_status
from simulator.errors import UserError
from simulator.judging.code_checks import final_reply
from simulator.models import ResultModel as _Model
from simulator.record.models import ConversationRecord, Verdict
from simulator.stats.rates import RateView, rate_view

Metric = Literal["token_f1", "rouge_l", "difflib_ratio", "exact_match"]
METRICS: tuple[Metric, ...] = ("token_f1", "rouge_l", "difflib_ratio", "exact_match")
SIMILARITY_METRICS: tuple[Metric, ...] = ("token_f1", "rouge_l", "difflib_ratio")
SWEEP_THRESHOLDS = tuple(round(0.1 * i, 1) for i in range(1, 10))
ItemVerdict = Literal["pass", "fail", "error"]


class Gate(_Model):
    """A similarity gate (metric >= threshold): reported next to the verdict, never used as the verdict."""

    metric: Metric = "token_f1"
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)

    def __str__(self) -> str:
        return f"{self.metric}:{self.threshold:g}"


def parse_gate(text: str) -> Gate:
    """Parse `metric:threshold` (for example `token_f1:0.5`); a bad one is a UserError naming the choices."""
    metric, sep, threshold = text.partition(":")
    metric = metric.strip()
    if metric not in METRICS:
        raise UserError(f"--gate {text!r}: the metric must be one of {', '.join(METRICS)}")
    try:
        value = float(threshold) if sep else 0.5
    except ValueError:
        raise UserError(f"--gate {text!r}: the threshold must be a number between 0 and 1") from None
    if not 0.0 <= value <= 1.0:
        raise UserError(f"--gate {text!r}: the threshold must be between 0 and 1")
    return Gate.model_validate({"metric": metric, "threshold": value})


class GoldenItemResult(_Model):
    """One item over its samples: fail if any sample failed, else error if any errored, else pass; the
    metrics are means over the samples that were scored."""

    item_id: str
    intent: str
    kind: str
    verdict: ItemVerdict
    samples: int
    samples_passed: int
    samples_scored: int
    scores: dict[str, float]  # metric -> mean over scored samples (exact_match: the share matching)
    assertions_passed: bool | None
    failures: list[str]
    evidence: list[str]
    reply: str


class IntentRow(_Model):
    """One stratum: how many items of this intent passed; `all_failed` marks a row of zeros (a bug report)."""

    intent: str
    passed: int
    failed: int
    errors: int
    rate: RateView
    all_failed: bool


class Disagreement(_Model):
    """An item where the similarity gate and the verdict disagree."""

    item_id: str
    intent: str
    score: float
    gate_passed: bool
    verdict: str
    reply: str


class SweepRow(_Model):
    """Share of scored items whose metric reaches `threshold`, per similarity metric."""

    threshold: float
    shares: dict[str, RateView]


class FailedItem(_Model):
    """A failing item with what failed and the quoted evidence."""

    item_id: str
    intent: str
    failures: list[str]
    evidence: list[str]
    samples_passed: int
    samples_scored: int


class GoldenSection(_Model):
    """Everything golden-specific a report shows. Rates count items (pass^k over each item's samples)
    unless named per sample; errored items are left out of every rate and counted in `errors`."""

    items: int
    samples: int
    passed: int
    failed: int
    errors: int
    verdict: RateView
    sample_pass: RateView
    exact_match: RateView
    assertions: RateView
    means: dict[str, float | None]
    gate: Gate
    gate_pass: RateView
    intents: list[IntentRow]
    intents_at_zero: list[str]
    disagreements: list[Disagreement]
    sweep: list[SweepRow]
    failed_items: list[FailedItem]


def _sample_failures(verdicts: list[Verdict]) -> tuple[list[str], list[str]]:
    failed = [v for v in verdicts if v.kind != "metric" and v.result == "fail"]
    return [v.reasoning for v in failed], [e.quote for v in failed for e in v.evidence]


def _assertions(verdicts: list[Verdict]) -> bool | None:
    for v in verdicts:
        if v.criterion_id == "assertions" and v.result in ("pass", "fail"):
            return v.result == "pass"
        if v.criterion_id == "metric.assertions" and v.score is not None:
            return v.score == 1.0
    return None


def _item(
    item_id: str, intent: str, kind: str, records: list[ConversationRecord], grouped: dict[str, list[Verdict]]
) -> GoldenItemResult:
    statuses = [conversation_status(r, grouped.get(r.id, [])) for r in records]
    scored = [(r, s) for r, s in zip(records, statuses, strict=True) if s in ("pass", "fail")]
    passed = sum(s == "pass" for _, s in scored)
    verdict: ItemVerdict = (
        "fail" if passed < len(scored) else ("pass" if scored and len(scored) == len(records) else "error")
    )
    scores: dict[str, float] = {}
    for metric in METRICS:
        values = [
            v.score
            for r, _ in scored
            for v in grouped.get(r.id, [])
            if v.criterion_id == f"metric.{metric}" and v.score is not None
        ]
        if values:
            scores[metric] = fmean(values)
    checks = [a for r, _ in scored if (a := _assertions(grouped.get(r.id, []))) is not None]
    shown = next((r for r, s in scored if s == "fail"), scored[0][0] if scored else None)
    failures, evidence = _sample_failures(grouped.get(shown.id, [])) if shown else ([], [])
    return GoldenItemResult(
        item_id=item_id,
        intent=intent,
        kind=kind,
        verdict=verdict,
        samples=len(records),
        samples_passed=passed,
        samples_scored=len(scored),
        scores=scores,
        assertions_passed=all(checks) if checks else None,
        failures=failures,
        evidence=evidence,
        reply=final_reply(scored[0][0]) if scored else "",
    )


def golden_items(run: RunData) -> list[GoldenItemResult]:
    """Every golden item of the run, in the run's order, with its samples combined; [] when none."""
    entries = [e for e in run.manifest.scenarios if e.item_kind is not None]
    by_item: dict[str, list[ConversationRecord]] = {}
    for record in run.conversations:
        by_item.setdefault(record.scenario_id, []).append(record)
    grouped = run.verdicts_by_conversation()
    return [
        _item(e.id, e.intent or "(none)", e.item_kind or "", by_item[e.id], grouped)
        for e in entries
        if e.id in by_item  # an item not run yet (an interrupted run) is counted missing by run health
    ]


def _share(k: int, n: int) -> RateView:
    return rate_view(k, n, counts="successes")


def _intent_rows(items: list[GoldenItemResult]) -> list[IntentRow]:
    rows: list[IntentRow] = []
    for intent in dict.fromkeys(item.intent for item in items):
        group = [item for item in items if item.intent == intent]
        passed = sum(item.verdict == "pass" for item in group)
        failed = sum(item.verdict == "fail" for item in group)
        rows.append(
            IntentRow(
                intent=intent,
                passed=passed,
                failed=failed,
                errors=len(group) - passed - failed,
                rate=_share(passed, passed + failed),
                all_failed=failed > 0 and passed == 0,
            )
        )
    return rows


def _disagreements(scored: list[GoldenItemResult], gate: Gate) -> list[Disagreement]:
    found = []
    for item in scored:
        score = item.scores.get(gate.metric, 0.0)
        gate_passed = score >= gate.threshold
        if gate_passed != (item.verdict == "pass"):
            found.append(
                Disagreement(
                    item_id=item.item_id,
                    intent=item.intent,
                    score=score,
                    gate_passed=gate_passed,
                    verdict=item.verdict,
                    reply=item.reply,
                )
            )
    return found


def _sweep(scored: list[GoldenItemResult]) -> list[SweepRow]:
    return [
        SweepRow(
            threshold=t,
            shares={
                m: _share(sum(item.scores.get(m, 0.0) >= t for item in scored), len(scored))
                for m in SIMILARITY_METRICS
            },
        )
        for t in SWEEP_THRESHOLDS
    ]


def _mean(values: list[float]) -> float | None:
    return fmean(values) if values else None


def golden_section(run: RunData, gate: Gate | None = None) -> GoldenSection | None:
    """The golden section of a run's report; None when the run holds no golden item."""
    items = golden_items(run)
    if not items:
        return None
    gate = gate or Gate()
    scored = [item for item in items if item.verdict != "error"]
    passed = sum(item.verdict == "pass" for item in items)
    checked = [item for item in scored if item.assertions_passed is not None]
    # Similarity and exact match need a reference answer; items without one (a converted tau2 task) are
    # left out of those figures, not counted as misses.
    referenced = [item for item in scored if item.scores]
    intents = _intent_rows(items)
    disagreements = _disagreements(referenced, gate)
    return GoldenSection(
        items=len(items),
        samples=run.runs,
        passed=passed,
        failed=len(scored) - passed,
        errors=len(items) - len(scored),
        verdict=_share(passed, len(scored)),
        sample_pass=_share(sum(i.samples_passed for i in items), sum(i.samples_scored for i in items)),
        exact_match=_share(sum(i.scores.get("exact_match") == 1.0 for i in referenced), len(referenced)),
        assertions=_share(sum(bool(i.assertions_passed) for i in checked), len(checked)),
        means={m: _mean([i.scores[m] for i in scored if m in i.scores]) for m in SIMILARITY_METRICS},
        gate=gate,
        gate_pass=_share(
            sum(i.scores.get(gate.metric, 0.0) >= gate.threshold for i in referenced), len(referenced)
        ),
        intents=intents,
        intents_at_zero=[row.intent for row in intents if row.all_failed],
        disagreements=disagreements,
        sweep=_sweep(referenced),
        failed_items=[
            FailedItem(**i.model_dump(include=set(FailedItem.model_fields)))
            for i in items
            if i.verdict == "fail"
        ],
    )
