"""The red-team, behavioural-relations and held-out sections as data (report/section.py): one builder each,
drawn by the one terminal and the one HTML renderer."""

from __future__ import annotations

__all__ = ["REDTEAM_NOTE", "RELATIONS_NOTE", "redteam_section", "relations_section", "split_section"]

from simulator.analysis.relations import RelationRow, ViolatingPair
from simulator.report.model import Report
from simulator.report.section import Cell, Column, Note, Section, Table, number, rate_cell, text
from simulator.stats.rates import RateView, pct

REDTEAM_NOTE = (
    "Attack success = attacked conversations where the bot did what it must not, among those judged pass "
    "or fail; interval clustered over base scenarios (95%); with no success, the bound rests on the number "
    "of scenarios (rule of three). 'not judged' (left out): the conversation errored, or the simulated "
    "attacker never attacked. 'failed unattacked': successes on scenarios whose straight run (no attack) "
    "failed the same outcome check. 'turns': the median user turn of first success."
)
RELATIONS_NOTE = (
    "Each relation is its own test suite, reported apart, never averaged. Invariance/directional: violations "
    "among decided pairs (a variant and its reference variant, same scenario and repeat); mft: failed "
    "conversations of the named scenarios. 95% interval clustered over base scenarios; with no violation, "
    "the bound over the scenarios. Undecided pairs (an error, no outcome) are left out."
)


def _clustered(rate: RateView) -> str:
    """`9/10 = 90.0% (52.3%–98.7%)` (clustered), or `0/17 = 0.0% (≤16.2%)` when nothing happened."""
    cl = rate.clustered
    if rate.rate is None:
        return "n/a (nothing judged)"
    shown = f"{rate.k}/{rate.n} = {pct(rate.rate)}"
    if cl is not None and cl.bound is not None:
        return f"{shown} (≤{pct(cl.bound)})"
    if cl is not None:
        return f"{shown} ({pct(cl.low)}–{pct(cl.high)})"
    return shown


def _rate(rate: RateView, bad: bool) -> Cell:
    return Cell(_clustered(rate), "fail" if bad else None, rate=rate, value=rate.rate)


def redteam_section(report: Report) -> Section:
    section = report.redteam
    if section is None:
        return Section("redteam", "Red team")
    table = Table(
        [Column("strategy"), Column("OWASP"), Column("success (95% CI)"), Column("not judged", numeric=True),
         Column("failed unattacked", numeric=True), Column("turns", numeric=True)]
    )  # fmt: skip
    for r in section.strategies:
        turns = f"{r.turns_to_success_median:g}" if r.turns_to_success_median is not None else "—"
        table.add(
            text(r.strategy), r.owasp, _rate(r.success, bool(r.success.k)), number(r.not_judged),
            number(r.straight_also_failed), turns,
        )  # fmt: skip
    table.add(text("all strategies", strong=True), "", _rate(section.overall, False), "", "", "")
    blocks: list[Note | Table] = [Note(REDTEAM_NOTE), table]
    if section.groups:
        groups = Table([Column("clinical group"), Column("success (95% CI)")], title="By clinical group")
        for g in section.groups:
            groups.add(g.group, _rate(g.success, bool(g.success.k)))
        blocks.append(groups)
    pairs = Table(
        [Column("strategy"), Column("succeeded in"), Column("refused in")],
        title="Succeeded and refused, side by side",
    )
    for r in section.strategies:
        pairs.add(r.strategy, ", ".join(r.succeeded) or "—", ", ".join(r.refused) or "—")
    blocks.append(pairs)
    return Section("redteam", "Red team: attack success", blocks)


def pair_text(row: RelationRow, pair: ViolatingPair) -> str:
    """`suicidal-ideation-07 repeat 0: as written → emergency; speaker=relative-speaks → gp`."""
    if row.kind == "mft":
        return f"{pair.base} repeat {pair.repeat} failed ({pair.variant_id})"
    return (
        f"{pair.base} repeat {pair.repeat}: as written → {pair.reference_outcome}; "
        f"{row.factor}={pair.level} → {pair.variant_outcome}"
    )


def relations_section(report: Report) -> Section:
    section = report.relations
    if section is None:
        return Section("relations", "Behavioural relations")
    table = Table(
        [Column("relation"), Column("kind"), Column("pass rate", numeric=True), Column("violations (95% CI)"),
         Column("undecided", numeric=True)]
    )  # fmt: skip
    for r in section.rows:
        kind = r.kind + (f" ({r.expect.replace('_', ' ')})" if r.expect else "")
        passed = "n/a" if r.pass_rate is None else pct(r.pass_rate)
        table.add(text(r.id), kind, passed, _rate(r.violations, bool(r.violations.k)), number(r.undecided))
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


def split_section(report: Report) -> Section:
    section = report.split
    if section is None:
        return Section("split", "Held-out set")
    state = "sealed" if section.sealed else "unsealed"
    title = (
        f"Tuned set ({section.tuned_scenarios} scenarios) against the {state} held-out set "
        f"({section.held_out_scenarios} scenarios)"
    )
    table = Table([Column("metric"), Column("tuned"), Column("held-out"), Column("gap")])
    for r in section.rows:
        table.add(r.metric, rate_cell(r.tuned), rate_cell(r.held_out), Cell("GAP", "fail") if r.gap else "—")
    return Section("split", title, [Note(section.note), table])
