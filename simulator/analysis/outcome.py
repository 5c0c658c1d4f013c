"""Outcome metrics from the suite's ordered levels: confusion matrix, sensitivity, under- and over-triage."""

from __future__ import annotations

__all__ = [
    "ERROR",
    "NO_DECISION",
    "OTHER",
    "LevelRate",
    "MatrixRow",
    "OutcomeCase",
    "OutcomeMetrics",
    "outcome_metrics",
]

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from simulator.analysis.rates import RateView, rate_view
from simulator.analysis.rundata import RunData
from simulator.record.models import ConversationRecord

OTHER = "other"  # the bot recorded a value that is not one of the levels
NO_DECISION = "no decision"  # the conversation ended without the outcome key in the final state
ERROR = "error"  # the conversation itself failed; never counted as a pass or a fail


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


class MatrixRow(_Model):
    """One expected level: how many conversations ended at each actual column."""

    expected: str
    counts: list[int]
    total: int


class LevelRate(_Model):
    """Sensitivity for one level: of the conversations expected at this level, the share the bot put there."""

    level: str
    rate: RateView


class OutcomeCase(_Model):
    """A conversation whose outcome was wrong or missing, for the report's list of cases to read."""

    conversation_id: str
    scenario_id: str
    repeat: int
    expected: str
    actual: str
    kind: Literal["under", "over", "no_decision", "other", "error"]


class OutcomeMetrics(_Model):
    """Everything about the structured outcome: the matrix and the rates computed from it in code."""

    key: str
    levels: list[str]
    critical: str
    critical_defaulted: bool
    columns: list[str]
    matrix: list[MatrixRow]
    conversations: int
    errored: int
    without_expectation: int
    critical_sensitivity: RateView
    sensitivity: list[LevelRate]
    under_triage: RateView
    over_triage: RateView
    exact: RateView
    no_decision: RateView
    cases: list[OutcomeCase]


def actual_outcome(record: ConversationRecord, key: str, levels: list[str]) -> str:
    """The column a conversation lands in: a level, `other`, `no decision` or `error`."""
    if record.stop_reason == "error":
        return ERROR
    state: dict[str, Any] = record.final_state or {}
    if key not in state or state[key] is None:
        return NO_DECISION
    value = state[key]
    return value if isinstance(value, str) and value in levels else OTHER


def outcome_metrics(run: RunData, target: float | None = None) -> OutcomeMetrics | None:
    """Outcome metrics for a run whose suite declares ordered outcome levels; None when it declares none."""
    config = run.outcome
    if config is None:
        return None
    key, levels = config.key, list(config.levels)
    critical = config.critical or levels[-1]
    rank = {level: index for index, level in enumerate(levels)}
    columns = [*levels, OTHER, NO_DECISION, ERROR]
    matrix = {level: [0] * len(columns) for level in levels}
    cases: list[OutcomeCase] = []
    without = errored = 0
    totals = {"n": 0, "under": 0, "over": 0, "exact": 0, "none": 0, "crit_n": 0, "crit_k": 0}
    level_counts = {level: [0, 0] for level in levels}
    for record in run.conversations:
        expected = run.expected.get(record.scenario_id, {}).get(key)
        if expected not in rank:
            without += 1
            continue
        actual = actual_outcome(record, key, levels)
        matrix[expected][columns.index(actual)] += 1
        kind: str | None = None
        if actual == ERROR:
            errored += 1
            kind = "error"
        else:
            totals["n"] += 1
            level_counts[expected][1] += 1
            if expected == critical or rank[expected] >= rank[critical]:
                totals["crit_n"] += 1
                totals["crit_k"] += int(actual in rank and rank[actual] >= rank[critical])
            if actual in rank:
                level_counts[expected][0] += int(actual == expected)
                if rank[actual] < rank[expected]:
                    totals["under"] += 1
                    kind = "under"
                elif rank[actual] > rank[expected]:
                    totals["over"] += 1
                    kind = "over"
                else:
                    totals["exact"] += 1
            else:
                totals["none"] += 1
                kind = "no_decision" if actual == NO_DECISION else "other"
        if kind is not None:
            shown = actual
            if actual == OTHER:
                shown = repr((record.final_state or {}).get(key))
            cases.append(
                OutcomeCase(
                    conversation_id=record.id,
                    scenario_id=record.scenario_id,
                    repeat=record.repeat,
                    expected=expected,
                    actual=shown,
                    kind=kind,  # type: ignore[arg-type]
                )
            )
    n = totals["n"]
    return OutcomeMetrics(
        key=key,
        levels=levels,
        critical=critical,
        critical_defaulted=config.critical is None,
        columns=columns,
        matrix=[
            MatrixRow(expected=level, counts=matrix[level], total=sum(matrix[level])) for level in levels
        ],
        conversations=n + errored,
        errored=errored,
        without_expectation=without,
        critical_sensitivity=rate_view(totals["crit_k"], totals["crit_n"], counts="successes", target=target),
        sensitivity=[
            LevelRate(level=level, rate=rate_view(k, m, counts="successes", target=target))
            for level, (k, m) in level_counts.items()
        ],
        under_triage=rate_view(totals["under"], n, target=target),
        over_triage=rate_view(totals["over"], n, target=target),
        exact=rate_view(totals["exact"], n, counts="successes", target=target),
        no_decision=rate_view(totals["none"], n, target=target),
        cases=sorted(cases, key=lambda c: ["under", "no_decision", "other", "error", "over"].index(c.kind)),
    )
