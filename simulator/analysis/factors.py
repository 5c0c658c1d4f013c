"""Per factor level: the critical metrics and the effect of the level against the factor's reference
level, as a Mantel–Haenszel odds ratio stratified by base scenario (stats/effects.py).

Two events per conversation: the conversation failed (any gating verdict failed), and under-triage (the
bot's outcome was below the expected level; conversations that errored or have no expectation left out).
An odds ratio above 1 means the event is more likely at that level than at the reference.
"""

from __future__ import annotations

__all__ = ["FactorsSection", "factors_section"]

import dataclasses

from simulator.analysis.outcome import ERROR, actual_outcome, outcome_metrics
from simulator.analysis.rundata import RunData
from simulator.analysis.tables import conversation_status
from simulator.models import ResultModel as _Model
from simulator.record.models import ConversationRecord
from simulator.stats.effects import OddsRatio, mantel_haenszel
from simulator.stats.rates import RateView, rate_view


class FactorLevelRow(_Model):
    factor: str
    level: str
    reference: bool
    conversations: int
    failed: RateView  # unit: judged conversations (errors and not-judged left out)
    under_triage: RateView | None
    critical_sensitivity: RateView | None
    failed_or: OddsRatio | None  # vs the reference level, stratified by base scenario
    under_triage_or: OddsRatio | None


class FactorsSection(_Model):
    design: str
    factors: dict[str, list[str]]
    base_scenarios: int
    variants: int
    rows: list[FactorLevelRow]


def _events(run: RunData) -> tuple[dict[str, bool], dict[str, bool]]:
    """Per conversation: failed (judged ones only) and under-triaged (decided ones with an expectation)."""
    grouped = run.verdicts_by_conversation()
    failed: dict[str, bool] = {}
    under: dict[str, bool] = {}
    for record in run.conversations:
        status = conversation_status(record, grouped.get(record.id, []))
        if status in ("pass", "fail"):
            failed[record.id] = status == "fail"
        outcome = run.outcome
        if outcome is None:
            continue
        expected = run.expected.get(record.scenario_id, {}).get(outcome.key)
        actual = actual_outcome(run, record)
        if expected in outcome.levels and actual != ERROR:
            rank = {level: i for i, level in enumerate(outcome.levels)}
            under[record.id] = actual in rank and rank[actual] < rank[expected]
    return failed, under


def _odds_ratio(
    records: list[ConversationRecord],
    event: dict[str, bool],
    levels: dict[str, dict[str, str]],
    bases: dict[str, str],
    factor: str,
    level: str,
    reference: str,
) -> OddsRatio:
    strata: dict[str, list[list[int]]] = {}
    for record in records:
        if record.id not in event:
            continue
        mine = levels[record.scenario_id].get(factor)
        if mine not in (level, reference):
            continue
        table = strata.setdefault(bases[record.scenario_id], [[0, 0], [0, 0]])
        table[0 if mine == level else 1][0 if event[record.id] else 1] += 1
    tables = [((t[0][0], t[0][1]), (t[1][0], t[1][1])) for t in strata.values()]
    return mantel_haenszel(tables)


def factors_section(run: RunData) -> FactorsSection | None:
    """The factor table of a factorial run, or None when no scenario of the run has factor levels."""
    entries = {e.id: e for e in run.manifest.scenarios if e.factors}
    if not entries:
        return None
    levels = {sid: e.factors for sid, e in entries.items()}
    bases = {sid: e.base or sid for sid, e in entries.items()}
    suite = run.manifest.suite
    order: dict[str, list[str]] = {}
    for entry in entries.values():
        for factor, level in entry.factors.items():
            seen = order.setdefault(factor, [])
            if level not in seen:
                seen.append(level)
    if suite is not None and suite.factors:
        from simulator.config.factors import level_names

        order = {f: level_names(e) for f, e in suite.factors.items() if f in order}
    records = [r for r in run.conversations if r.scenario_id in entries]
    failed, under = _events(run)
    rows = []
    for factor, names in order.items():
        reference = names[0]
        for level in names:
            mine = [r for r in records if levels[r.scenario_id].get(factor) == level]
            ids = {r.id for r in mine}
            subset = dataclasses.replace(
                run, conversations=mine, verdicts=[v for v in run.verdicts if v.conversation_id in ids]
            )
            metrics = outcome_metrics(subset)
            k = sum(failed[i] for i in ids if i in failed)
            is_ref = level == reference
            rows.append(
                FactorLevelRow(
                    factor=factor,
                    level=level,
                    reference=is_ref,
                    conversations=len(mine),
                    failed=rate_view(k, sum(1 for i in ids if i in failed)),
                    under_triage=metrics.under_triage if metrics else None,
                    critical_sensitivity=metrics.critical_sensitivity if metrics else None,
                    failed_or=None
                    if is_ref
                    else _odds_ratio(records, failed, levels, bases, factor, level, reference),
                    under_triage_or=None
                    if is_ref or run.outcome is None
                    else _odds_ratio(records, under, levels, bases, factor, level, reference),
                )
            )
    return FactorsSection(
        design=suite.factor_design if suite is not None else "full",
        factors=order,
        base_scenarios=len(set(bases.values())),
        variants=len(entries),
        rows=rows,
    )
