"""The simulated-user and persona-factor sections as data (section.py), drawn by both renderers."""

from __future__ import annotations

__all__ = ["factors_section", "simulated_user_section"]

from simulator.plural import plural
from simulator.report.analyses import Analysis, register_analysis
from simulator.report.model import Report
from simulator.report.section import (
    COUNT_COLUMNS,
    Column,
    Note,
    Section,
    Table,
    count_cells,
    number,
    rate_cell,
    text,
)
from simulator.stats.effects import OddsRatio
from simulator.stats.rates import RateView

TERMINAL_ROWS = 20  # provenance rows the terminal shows (most missed facts that mattered first)
FIDELITY_NOTE = (
    "Checks of the simulated user, not the bot (unit: audited conversations; not-judged and errors left "
    "out). A bot failure in a conversation whose simulated user also failed fidelity may be the "
    "simulator's fault."
)
FACTORS_NOTE = (
    "Odds ratios vs each factor's reference level (first listed), Mantel–Haenszel stratified by base "
    "scenario, 95% CI. Above 1: the event is more likely at that level. Fail: unit judged conversations; "
    "under-triage: unit conversations with an expected level and no error."
)


def _short(value: RateView | None) -> str:
    return "–" if value is None else value.short


def _or(value: OddsRatio | None) -> str:
    return "reference" if value is None else value.text


def _provenance(report: Report) -> list[Table | Note]:
    section = report.simulated_user
    if section is None or section.provenance_overall is None:
        return []
    facts = Table(
        [Column("scenario"), *(Column(n, numeric=True) for n in
         ("runs", "facts", "elicited", "volunteered", "missed", "missed that mattered"))],
        title="Fact provenance", fold_after=TERMINAL_ROWS + 1,
    )  # fmt: skip
    ranked = sorted(section.provenance, key=lambda p: -p.missed_mattered)
    for p in [section.provenance_overall, *ranked]:
        facts.add(
            text(p.scenario_id, strong=p is section.provenance_overall), number(p.conversations), number(p.facts),
            number(p.elicited), number(p.volunteered), number(p.missed),
            number(p.missed_mattered, state="fail" if p.missed_mattered else None),
        )  # fmt: skip
    mattered = Table(
        [Column("scenario"), Column("missed fact that mattered (times)")], fold_after=TERMINAL_ROWS
    )
    for p in ranked:
        for fact in p.mattered_facts:
            mattered.add(p.scenario_id, fact)
    return [Note(section.mattered_rule), facts, *([mattered] if mattered.rows else [])]


def simulated_user_section(report: Report) -> Section:
    """Fidelity checks, fact provenance, and the bot's failures with and without simulator-faulted ones."""
    section = report.simulated_user
    if section is None:
        return Section("simulated-user", "Simulated user")
    checks = Table(
        [Column("check"), *COUNT_COLUMNS, Column("fail rate (95% CI)"), Column("unverified", numeric=True)]
    )
    for r in section.checks:
        checks.add(r.id, *count_cells(r.counts), rate_cell(r.fail_rate), number(r.unverified_evidence))
    blame = Table(
        [Column("failed conversation"), Column("failing bot criteria"), Column("simulator also failed")],
        title="Bot failures and the simulator",
    )
    for a in section.attribution:
        faulted = (
            text(f"yes: {', '.join(a.fidelity_failures)}", "warn") if a.simulator_faulted else text("no")
        )
        blame.add(a.conversation_id, ", ".join(a.failing_criteria), faulted)
    both = Table([Column("bot metric"), Column("all conversations"), Column("without simulator-faulted")])
    for w in section.with_without:
        both.add(w.metric, rate_cell(w.all), rate_cell(w.without_faulted))
    summary = Note(
        f"fidelity failed in {section.faulted.short} audited conversations · regenerated "
        f"{plural(section.regenerated_conversations, 'conversation')} ({section.regenerations} regenerations) · "
        f"character breaks {section.character_breaks}"
    )
    blocks: list[Table | Note] = [Note(FIDELITY_NOTE), summary, checks, *_provenance(report)]
    blocks += [*([blame] if blame.rows else []), both]
    return Section("simulated-user", "Simulated user", blocks, "warn" if section.faulted.k else None)


def factors_section(report: Report) -> Section:
    """Per factor level: failures, under-triage and critical sensitivity, with odds ratios."""
    section = report.factors
    if section is None:
        return Section("factors", "Persona factors")
    table = Table(
        [Column("factor"), Column("level"), Column("runs", numeric=True), Column("failed"), Column("OR failed"),
         Column("under-triage"), Column("OR under-triage"), Column("critical sens.")]
    )  # fmt: skip
    for r in section.rows:
        table.add(
            r.factor, r.level, number(r.conversations), rate_cell(r.failed), _or(r.failed_or),
            _short(r.under_triage), _or(r.under_triage_or), _short(r.critical_sensitivity),
        )  # fmt: skip
    design = (
        f"{section.design} design: {section.base_scenarios} base scenarios × "
        + " × ".join(f"{f} ({len(levels)})" for f, levels in section.factors.items())
        + f" → {plural(section.variants, 'variant')}"
    )
    return Section("factors", "Persona factors", [Note(FACTORS_NOTE), Note(design), table])


register_analysis(
    Analysis(
        name="simulated_user", draw=lambda report, everything: simulated_user_section(report), draw_order=70
    )
)
register_analysis(
    Analysis(name="factors", draw=lambda report, everything: factors_section(report), draw_order=90)
)
