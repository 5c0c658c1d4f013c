"""Behavioural relations checked on a run: violation rates with scenario-clustered intervals, and the pairs.

The unit of an invariance or directional relation is the pair: a variant (one factor at a non-reference
level) and the reference variant of the same base scenario, under the same repeat index. A pair is
undecided, and left out of the rate, when either conversation errored or recorded no outcome level. The
interval is clustered over base scenarios. An mft relation's unit is the conversation of a named scenario;
errored and unjudged conversations are left out likewise.
"""

from __future__ import annotations

__all__ = ["RelationRow", "RelationsSection", "ViolatingPair", "relations_section"]

from collections import defaultdict
from typing import Any

from pydantic import Field

from simulator.analysis.outcome import actual_outcome
from simulator.analysis.rundata import RunData
from simulator.analysis.tables import conversation_status
from simulator.config.factors import level_names
from simulator.config.relations import Relation
from simulator.config.simulators import SIMULATOR_FACTOR, simulator_models
from simulator.config.variants import variant_id, vignette_of
from simulator.models import StrictModel as _Model
from simulator.record.models import ConversationRecord
from simulator.record.transcript import render_transcript
from simulator.stats.rates import RateView, rate_view

SHOWN = 20  # violating pairs listed per relation


class ViolatingPair(_Model):
    base: str
    level: str  # the factor level of the variant ("" for mft)
    repeat: int
    reference_id: str  # conversation ids: the reference's, and the variant's
    variant_id: str
    reference_outcome: Any = None
    variant_outcome: Any = None
    # Both transcripts as plain text (record/transcript.render_transcript), to read side by side.
    reference_transcript: str = ""
    variant_transcript: str = ""


class RelationRow(_Model):
    id: str
    kind: str
    metric: str
    description: str = ""
    factor: str | None = None
    expect: str | None = None
    # Violations among decided pairs (mft: failed conversations among judged ones).
    violations: RateView
    undecided: int = 0
    violating: list[ViolatingPair] = Field(default=[])

    @property
    def pass_rate(self) -> float | None:
        return None if self.violations.rate is None else 1.0 - self.violations.rate


class RelationsSection(_Model):
    unit: str = (
        "invariance/directional: pairs of a variant and its reference variant (same base scenario, same "
        "repeat); mft: conversations of the named scenarios. Undecided pairs (an errored conversation or no "
        "outcome) and unjudged conversations are left out; intervals clustered over vignettes."
    )
    rows: list[RelationRow]


def _outcome(run: RunData, record: ConversationRecord | None, levels: list[str]) -> Any:
    """The conversation's outcome level, or None when it cannot be compared (missing, errored, unknown)."""
    if record is None:
        return None
    value = actual_outcome(run, record)
    return value if value in levels else None


def _violates(relation: Relation, reference: str, variant: str, levels: list[str]) -> bool:
    if relation.kind == "invariance":
        return reference != variant
    if relation.expect == "not_lower":
        return levels.index(variant) < levels.index(reference)
    return levels.index(variant) > levels.index(reference)


def _references(factors: dict[str, list[Any]], simulators: list[str]) -> list[dict[str, str]]:
    """Each factor's reference level, once per simulated user when there are several: a pair is compared
    under the same simulator (config/simulators.py)."""
    references = {name: level_names(entries)[0] for name, entries in factors.items()}
    return [{**references, SIMULATOR_FACTOR: s} for s in simulators] or [references]


def _pairwise(
    run: RunData,
    relation: Relation,
    factors: dict[str, list[Any]],
    key: str,
    levels: list[str],
    simulators: list[str],
) -> RelationRow:
    assert relation.factor is not None
    by_id = {(r.scenario_id, r.repeat): r for r in run.conversations}
    bases = sorted({vignette_of(r.scenario_id) for r in run.conversations})
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    undecided, violating = 0, list[ViolatingPair]()
    pairs = [
        (base, references, level)
        for base in bases
        for references in _references(factors, simulators)
        for level in level_names(factors[relation.factor])[1:]
    ]
    for base, references, level in pairs:
        reference_id = variant_id(base, references)
        variant = variant_id(base, {**references, relation.factor: level})
        repeats = sorted({rep for (sid, rep) in by_id if sid == variant})
        for repeat in repeats:
            ref, var = by_id.get((reference_id, repeat)), by_id.get((variant, repeat))
            a, b = _outcome(run, ref, levels), _outcome(run, var, levels)
            if a is None or b is None or ref is None or var is None:
                undecided += 1
                continue
            bad = _violates(relation, a, b, levels)
            cells[base][0] += int(bad)
            cells[base][1] += 1
            if bad and len(violating) < SHOWN:
                violating.append(
                    ViolatingPair(
                        base=base,
                        level=level,
                        repeat=repeat,
                        reference_id=ref.id,
                        variant_id=var.id,
                        reference_outcome=a,
                        variant_outcome=b,
                        reference_transcript=render_transcript(ref.turns),
                        variant_transcript=render_transcript(var.turns),
                    )
                )
    return _row(relation, cells, undecided, violating)


def _mft(
    run: RunData, relation: Relation, factors: dict[str, list[Any]], simulators: list[str]
) -> RelationRow:
    plain_ids = [variant_id("", references) for references in _references(factors, simulators)]
    verdicts_of: dict[str, list[Any]] = defaultdict(list)
    for verdict in run.verdicts:
        verdicts_of[verdict.conversation_id].append(verdict)
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    undecided, violating = 0, list[ViolatingPair]()
    for record in run.conversations:
        base = vignette_of(record.scenario_id)
        plain = record.scenario_id[len(base) :] in plain_ids
        named = base in relation.scenarios or any(tag in record.tags for tag in relation.tags)
        if not (plain and named):
            continue
        status = conversation_status(record, verdicts_of[record.id])
        if status not in ("pass", "fail"):
            undecided += 1
            continue
        cells[base][0] += int(status == "fail")
        cells[base][1] += 1
        if status == "fail" and len(violating) < SHOWN:
            violating.append(
                ViolatingPair(
                    base=base,
                    level="",
                    repeat=record.repeat,
                    reference_id=record.id,
                    variant_id=record.id,
                    variant_transcript=render_transcript(record.turns),
                )
            )
    return _row(relation, cells, undecided, violating)


def _row(
    relation: Relation, cells: dict[str, list[int]], undecided: int, violating: list[ViolatingPair]
) -> RelationRow:
    """A relation's row: violations among decided units, clustered over the base scenarios in `cells`."""
    k, n = sum(c[0] for c in cells.values()), sum(c[1] for c in cells.values())
    return RelationRow(
        id=relation.id,
        kind=relation.kind,
        metric=relation.metric,
        description=relation.description,
        factor=relation.factor,
        expect=relation.expect,
        undecided=undecided,
        violating=violating,
        violations=rate_view(k, n, per_scenario=[(a, b) for a, b in cells.values()]),
    )


def relations_section(run: RunData) -> RelationsSection | None:
    """The relations of the run's suite checked on its conversations, or None when it declares none."""
    suite = run.manifest.suite
    if suite is None or not getattr(suite, "relations", None):
        return None
    outcome = suite.outcome
    rows = []
    simulators = list(simulator_models(suite))
    for relation in suite.relations:
        if relation.kind == "mft":
            rows.append(_mft(run, relation, suite.factors, simulators))
        elif outcome is not None and relation.factor in suite.factors:
            levels = list(outcome.levels)
            rows.append(_pairwise(run, relation, suite.factors, outcome.key, levels, simulators))
    return RelationsSection(rows=rows)
