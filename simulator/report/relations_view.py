"""The behavioural-relations and held-out sections, registered (report/analyses.py): each relation's
violations and the tuned/held-out gap as data in the JSON report, drawn by the one terminal and the one HTML
renderer; relation violations are metrics gates can name (`directional.red_flags violations`)."""

from __future__ import annotations

__all__ = ["clustered_rate_cell", "relations_view"]

from typing import Any

from simulator.analysis.relations import RelationRow, RelationsSection, ViolatingPair, relations_section
from simulator.analysis.splits import SplitSection, split_section
from simulator.plural import plural
from simulator.report.analyses import Analysis, register_analysis
from simulator.report.model import Report
from simulator.report.section import Cell, Column, Note, Section, Table, number, rate_cell, text
from simulator.stats.rates import RateView, pct

RELATIONS_NOTE = (
    "Each relation is its own test suite, reported apart, never averaged. Invariance/directional: violations "
    "among decided pairs (a variant and its reference variant, same scenario and repeat); mft: failed "
    "conversations of the named scenarios. 95% interval clustered over vignettes; with no violation, "
    "the bound over the vignettes. Undecided pairs (an error, no outcome) are left out."
)


def _clustered(rate: RateView) -> str:
    """`9/10 = 90.0% (59.6%–98.2%)`, or `0/17 = 0.0% (≤16.2%)` when nothing happened: the rate's one
    interval (`RateView.interval`, `shown_bound`), the same the HTML cell and the safety case draw."""
    if rate.rate is None:
        return "n/a (nothing judged)"
    return f"{rate.k}/{rate.n} = {pct(rate.rate)} ({rate.interval_text})"


def clustered_rate_cell(rate: RateView, bad: bool) -> Cell:
    return Cell(_clustered(rate), "fail" if bad else None, rate=rate, value=rate.rate)


def pair_text(row: RelationRow, pair: ViolatingPair) -> str:
    """`suicidal-ideation-07 repeat 0: as written → emergency; speaker=relative-speaks → gp`."""
    if row.kind == "mft":
        return f"{pair.base} repeat {pair.repeat} failed ({pair.variant_id})"
    return (
        f"{pair.base} repeat {pair.repeat}: as written → {pair.reference_outcome}; "
        f"{row.factor}={pair.level} → {pair.variant_outcome}"
    )


def relations_view(report: Report, everything: bool = False) -> Section:
    section: RelationsSection | None = report.analysis("relations")
    if section is None:
        return Section("relations", "Behavioural relations")
    table = Table(
        [Column("relation"), Column("kind"), Column("pass rate", numeric=True), Column("violations (95% CI)"),
         Column("undecided", numeric=True)]
    )  # fmt: skip
    for r in section.rows:
        kind = r.kind + (f" ({r.expect.replace('_', ' ')})" if r.expect else "")
        passed = "n/a" if r.pass_rate is None else pct(r.pass_rate)
        table.add(
            text(r.id),
            kind,
            passed,
            clustered_rate_cell(r.violations, bool(r.violations.k)),
            number(r.undecided),
        )
    blocks: list[Note | Table] = [Note(RELATIONS_NOTE), table]
    violating = [(r, p) for r in section.rows for p in r.violating]
    if violating:
        pairs = Table(
            [Column("violated"), Column("reference transcript"), Column("variant transcript")],
            title="Violating pairs, side by side",
        )
        for r, p in violating:
            pairs.add(
                Cell(f"{r.id}: {pair_text(r, p)}", "fail"), p.reference_transcript, p.variant_transcript
            )
        blocks.append(pairs)
    return Section("relations", "Behavioural relations", blocks)


def split_view(report: Report, everything: bool = False) -> Section:
    section: SplitSection | None = report.analysis("split")
    if section is None:
        return Section("split", "Held-out set")
    state = "sealed" if section.sealed else "unsealed"
    title = (
        f"Tuned set ({plural(section.tuned_scenarios, 'scenario')}) against the {state} held-out set "
        f"({plural(section.held_out_scenarios, 'scenario')})"
    )
    table = Table([Column("metric"), Column("tuned"), Column("held-out"), Column("gap")])
    for r in section.rows:
        table.add(r.metric, rate_cell(r.tuned), rate_cell(r.held_out), Cell("GAP", "fail") if r.gap else "—")
    return Section("split", title, [Note(section.note), table])


def relation_metrics(section: RelationsSection) -> dict[str, Any]:
    """Each relation's violations under its metric name (`directional.red_flags violations`), for gates."""
    return {row.metric: row.violations for row in section.rows}


register_analysis(
    Analysis(
        name="relations",
        key="relations",
        annotation=RelationsSection | None,
        order=70,
        build=lambda run, options: relations_section(run),
        draw=relations_view,
        draw_order=110,
        metrics=relation_metrics,
    )
)
register_analysis(
    Analysis(
        name="split",
        key="split",
        annotation=SplitSection | None,
        order=80,
        build=lambda run, options: split_section(run),
        draw=split_view,
        draw_order=120,
    )
)
