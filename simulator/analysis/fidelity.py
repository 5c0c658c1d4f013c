"""The simulated-user section of a report: fidelity rates, regenerations, fact provenance, and which bot
failures happened in a conversation whose simulated user also failed fidelity (attribution).

"Mattered": a missed fact mattered when the scenario lists it in `key_facts`; a scenario that lists no key
facts but expects the suite's critical outcome (e.g. emergency) counts every missed fact as mattered, since
any of them may be what the escalation depends on (docs/fidelity.md).
"""

from __future__ import annotations

__all__ = [
    "FailureAttribution",
    "FidelityCheckRow",
    "ProvenanceRow",
    "SimulatedUserSection",
    "simulated_user_section",
]

import dataclasses
from collections import Counter

from simulator.analysis.outcome import outcome_metrics
from simulator.analysis.rundata import RunData
from simulator.analysis.tables import ResultCounts, VerdictCounts, conversation_status
from simulator.models import ResultModel as _Model
from simulator.record.models import ConversationRecord
from simulator.stats.rates import RateView, rate_view

MATTERED_RULE = (
    "a missed fact mattered when the scenario lists it in key_facts; a scenario with no key_facts that "
    "expects the critical outcome counts every missed fact"
)


class CheckCounts(ResultCounts):
    """Fidelity verdicts of one check by result."""


class FidelityCheckRow(_Model):
    """One fidelity check over the run: results, and its failure rate (unit: audited conversations)."""

    id: str
    counts: CheckCounts
    fail_rate: RateView
    unverified_evidence: int


class ProvenanceRow(_Model):
    """Facts of one scenario (or all) over its conversations: elicited, volunteered, missed (fact counts)."""

    scenario_id: str
    conversations: int
    facts: int
    elicited: int
    volunteered: int
    missed: int
    missed_mattered: int
    mattered_facts: list[str]  # the missed facts that mattered, with how often


class FailureAttribution(_Model):
    """A conversation the bot failed, and whether the simulated user also failed fidelity in it."""

    conversation_id: str
    scenario_id: str
    failing_criteria: list[str]
    simulator_faulted: bool
    fidelity_failures: list[str]


class WithWithout(_Model):
    """A bot metric on every conversation and without the simulator-faulted ones."""

    metric: str
    all: RateView
    without_faulted: RateView


class SimulatedUserSection(_Model):
    conversations: int
    audited: int
    faulted: RateView  # conversations with at least one failed fidelity check, of those audited
    checks: list[FidelityCheckRow]
    regenerations: int
    regenerated_conversations: int
    character_breaks: int
    provenance: list[ProvenanceRow]
    provenance_overall: ProvenanceRow | None
    attribution: list[FailureAttribution]
    bot_failures_faulted: int
    with_without: list[WithWithout]
    mattered_rule: str = MATTERED_RULE


def _critical_expected(run: RunData, scenario_id: str) -> bool:
    outcome = run.outcome
    if outcome is None:
        return False
    critical = outcome.critical or outcome.levels[-1]
    return run.expected.get(scenario_id, {}).get(outcome.key) == critical


def _provenance_row(run: RunData, scenario_id: str, records: list[ConversationRecord]) -> ProvenanceRow:
    counts: Counter[str] = Counter()
    mattered: Counter[str] = Counter()
    facts = 0
    for record in records:
        facts += len(record.provenance)
        any_key = any(p.key for p in record.provenance)
        for p in record.provenance:
            counts[p.status] += 1
            if p.status == "missed" and (
                p.key or (not any_key and _critical_expected(run, record.scenario_id))
            ):
                mattered[f"{record.scenario_id}: {p.text}" if scenario_id == "(all)" else p.text] += 1
    return ProvenanceRow(
        scenario_id=scenario_id,
        conversations=len(records),
        facts=facts,
        elicited=counts["elicited"],
        volunteered=counts["volunteered"],
        missed=counts["missed"],
        missed_mattered=sum(mattered.values()),
        mattered_facts=[f"{text} ({n}/{len(records)})" for text, n in sorted(mattered.items())],
    )


def _without(run: RunData, faulted: set[str]) -> RunData:
    keep = [r for r in run.conversations if r.id not in faulted]
    verdicts = [v for v in run.verdicts if v.conversation_id not in faulted]
    return dataclasses.replace(run, conversations=keep, verdicts=verdicts)


def _pass_rate(run: RunData) -> RateView:
    grouped = run.verdicts_by_conversation()
    statuses = [conversation_status(r, grouped.get(r.id, [])) for r in run.conversations]
    failed = statuses.count("fail")
    return rate_view(failed, failed + statuses.count("pass"))


def _with_without(run: RunData, faulted: set[str]) -> list[WithWithout]:
    clean = _without(run, faulted)
    rows = [
        WithWithout(metric="conversations failed", all=_pass_rate(run), without_faulted=_pass_rate(clean))
    ]
    every, kept = outcome_metrics(run), outcome_metrics(clean)
    if every is not None and kept is not None:
        rows += [
            WithWithout(
                metric=f"{every.critical} sensitivity",
                all=every.critical_sensitivity,
                without_faulted=kept.critical_sensitivity,
            ),
            WithWithout(metric="under-triage", all=every.under_triage, without_faulted=kept.under_triage),
        ]
    return rows


def simulated_user_section(run: RunData) -> SimulatedUserSection | None:
    """The section, or None when the run has no fidelity verdicts and no provenance (an older run)."""
    if not run.fidelity and not any(r.provenance for r in run.conversations):
        return None
    by_check: dict[str, VerdictCounts] = {}
    unverified: Counter[str] = Counter()
    failures: dict[str, list[str]] = {}
    decided: set[str] = set()
    for v in run.fidelity:
        by_check.setdefault(v.criterion_id, VerdictCounts()).add(v.result)
        unverified[v.criterion_id] += int(v.evidence_verified is False)
        if v.result in ("pass", "fail"):
            decided.add(v.conversation_id)
        if v.result == "fail":
            failures.setdefault(v.conversation_id, []).append(v.criterion_id)
    checks = [
        FidelityCheckRow(
            id=c,
            counts=CheckCounts.model_validate(n.model_dump(exclude={"total"})),
            fail_rate=n.fail_rate(),
            unverified_evidence=unverified[c],
        )
        for c, n in sorted(by_check.items())
    ]
    grouped = run.verdicts_by_conversation()
    attribution = []
    for record in run.conversations:
        mine = grouped.get(record.id, [])
        if conversation_status(record, mine) != "fail":
            continue
        failing = sorted(v.criterion_id for v in mine if v.result == "fail" and v.kind != "metric")
        faults = sorted(failures.get(record.id, []))
        attribution.append(
            FailureAttribution(
                conversation_id=record.id,
                scenario_id=record.scenario_id,
                failing_criteria=failing,
                simulator_faulted=bool(faults),
                fidelity_failures=faults,
            )
        )
    by_scenario: dict[str, list[ConversationRecord]] = {}
    for record in run.conversations:
        if record.provenance:
            by_scenario.setdefault(record.scenario_id, []).append(record)
    provenance = [_provenance_row(run, s, rs) for s, rs in by_scenario.items()]
    every = [r for rs in by_scenario.values() for r in rs]
    return SimulatedUserSection(
        conversations=len(run.conversations),
        audited=len(decided),
        faulted=rate_view(len(failures), len(decided)),
        checks=checks,
        regenerations=sum(len(r.fidelity_regenerations) for r in run.conversations),
        regenerated_conversations=sum(bool(r.fidelity_regenerations) for r in run.conversations),
        character_breaks=sum(len(r.character_breaks) for r in run.conversations),
        provenance=provenance,
        provenance_overall=_provenance_row(run, "(all)", every) if every else None,
        attribution=attribution,
        bot_failures_faulted=sum(a.simulator_faulted for a in attribution),
        with_without=_with_without(run, set(failures)),
    )
