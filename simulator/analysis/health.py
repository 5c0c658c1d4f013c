"""Run health: how conversations ended, character breaks, re-runs, errors, and evidence that was not found."""

from __future__ import annotations

__all__ = ["ErrorRow", "RunHealth", "StopReasonRow", "UnverifiedRow", "run_health"]

from collections import Counter
from typing import get_args

from simulator.analysis.rundata import RunData
from simulator.models import ResultModel as _Model
from simulator.record.models import StopReason
from simulator.stats.rates import RateView, rate_view


class StopReasonRow(_Model):
    """How many conversations ended for one reason."""

    reason: str
    rate: RateView


class ErrorRow(_Model):
    """One errored conversation or judge: where, which kind, what it said."""

    conversation_id: str
    criterion_id: str | None = None
    source: str
    kind: str
    message: str


class UnverifiedRow(_Model):
    """A pass or fail whose quoted evidence was not found in the transcript (or that quoted nothing)."""

    conversation_id: str
    criterion_id: str
    result: str
    quotes: list[str]


class RunHealth(_Model):
    """Can the run's numbers be trusted: endings, breaks, re-runs, errors, unverified evidence."""

    status: str
    planned: int
    finished: int
    missing: int
    stop_reasons: list[StopReasonRow]
    turn_limit: RateView
    turn_limit_finding: bool
    turn_limit_threshold: float
    character_breaks: int
    conversations_with_breaks: int
    gave_up_on_breaks: int
    retried: list[str]
    conversation_errors: RateView
    errors: list[ErrorRow]
    judge_errors: RateView
    judge_error_rows: list[ErrorRow]
    not_judged: int
    unverified: RateView
    unverified_rows: list[UnverifiedRow]


def run_health(run: RunData, turn_limit_threshold: float = 0.2) -> RunHealth:
    """Health of one run; a turn-limit share above `turn_limit_threshold` becomes a finding."""
    records = run.conversations
    n = len(records)
    reasons = Counter(r.stop_reason for r in records)
    order = [*get_args(StopReason), *sorted(set(reasons) - set(get_args(StopReason)))]
    stop_rows = [
        StopReasonRow(reason=reason, rate=rate_view(reasons[reason], n, share=True)) for reason in order
    ]
    turn_limit = rate_view(reasons["max_turns"], n)
    errors = [
        ErrorRow(conversation_id=r.id, source=r.error.source, kind=r.error.kind, message=r.error.message)
        for r in records
        if r.error is not None
    ]
    judged = [v for v in run.verdicts if v.kind == "llm"]
    judge_errors = [
        ErrorRow(
            conversation_id=v.conversation_id,
            criterion_id=v.criterion_id,
            source=v.error.source if v.error else "judge",
            kind=v.error.kind if v.error else "error",
            message=v.error.message if v.error else v.reasoning,
        )
        for v in run.verdicts
        if v.result == "error" and not (v.kind == "code" and v.error is None)
    ]
    checked = [v for v in run.verdicts if v.evidence_verified is not None]
    unverified = [v for v in checked if v.evidence_verified is False]
    planned = run.manifest.planned or n
    return RunHealth(
        status=run.manifest.status,
        planned=planned,
        finished=n,
        missing=max(0, planned - n),
        stop_reasons=stop_rows,
        turn_limit=turn_limit,
        turn_limit_finding=n > 0 and reasons["max_turns"] / n > turn_limit_threshold,
        turn_limit_threshold=turn_limit_threshold,
        character_breaks=sum(len(r.character_breaks) for r in records),
        conversations_with_breaks=sum(1 for r in records if r.character_breaks),
        gave_up_on_breaks=sum(
            1 for r in records if r.error is not None and r.error.kind == "character_break"
        ),
        retried=sorted(cid for cid, count in run.attempts.items() if count > 1),
        conversation_errors=rate_view(len(errors), n),
        errors=errors,
        judge_errors=rate_view(sum(1 for v in judged if v.result == "error"), len(judged)),
        judge_error_rows=judge_errors,
        not_judged=sum(1 for v in run.verdicts if v.result == "not_judged"),
        unverified=rate_view(len(unverified), len(checked)),
        unverified_rows=[
            UnverifiedRow(
                conversation_id=v.conversation_id,
                criterion_id=v.criterion_id,
                result=v.result,
                quotes=[e.quote for e in v.evidence if not e.found],
            )
            for v in unverified
        ],
    )
