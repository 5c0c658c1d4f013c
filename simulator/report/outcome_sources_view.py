"""The outcome-sources section as data (section.py): agreement between the run's outcome sources with the
conversations where they disagree, and conflicting advice; a warning in the summary when sources disagree
(a bot whose record and whose words differ)."""

from __future__ import annotations

__all__: list[str] = []

from simulator.analysis.outcome_agreement import OutcomeAgreement, outcome_agreement
from simulator.plural import plural
from simulator.report.analyses import CORE_FINDINGS, Analysis, register_analysis
from simulator.report.model import Finding, Report
from simulator.report.section import Column, Note, Section, State, Table, number, rate_cell, text
from simulator.stats.rates import RateView

_COUNTS = {
    "last": "the last advice the bot gave counts",
    "most_urgent": "the most urgent level the bot advised anywhere counts",
}


def sources_note(agreement: OutcomeAgreement) -> str:
    counts = f" ({_COUNTS[agreement.counts]})" if agreement.counts in _COUNTS else ""
    total = sum(agreement.mix.values())
    mix = ", ".join(f"{column} {k}" for column, k in agreement.mix.items())
    said = (
        f" Outcomes decided ({plural(total, 'conversation')} with a recorded outcome, expected or not): {mix}."
        if total
        else ""
    )
    agree = f" Agreement: {agreement.unit}." if agreement.pairs else ""
    return f"Outcome sources, in the order they decide: {', '.join(agreement.sources)}{counts}.{said}{agree}"


def sources_section(report: Report, everything: bool = False) -> Section:
    agreement: OutcomeAgreement | None = report.analysis("outcome_sources")
    if agreement is None:
        return Section("outcome-sources", "Outcome sources")
    table = Table(
        [Column("sources"), Column("agree (95% CI)"), Column("one decided", numeric=True),
         Column("neither", numeric=True)],
        title="Agreement between sources",
    )  # fmt: skip
    listed = Table([Column("conversation"), Column("expected"), Column("what each source says")],
                   title="Where the sources disagree")  # fmt: skip
    anchors = {t.id: i for i, t in enumerate(report.transcripts)}
    for pair in agreement.pairs:
        table.add(
            f"{pair.first} vs {pair.second}",
            rate_cell(pair.agree),
            number(pair.one_decided),
            number(pair.neither_decided),
        )
        shown = pair.disagreements if everything else pair.disagreements[:20]
        for d in shown:
            link = f"#t{anchors[d.conversation_id]}" if d.conversation_id in anchors else None
            listed.add(text(d.conversation_id, link=link), d.expected or "–", text(d.text, "warn"))
    blocks: list[Table | Note] = [Note(sources_note(agreement))]
    if agreement.pairs:
        blocks.append(table)
    if listed.rows:
        blocks.append(listed)
    if agreement.conflicting is not None:
        conflicts = Table([Column("conversation"), Column("levels advised, in order"), Column("counted")],
                          title=f"Conflicting advice: {agreement.conflicting.text}")  # fmt: skip
        for c in agreement.conflicts if everything else agreement.conflicts[:20]:
            link = f"#t{anchors[c.conversation_id]}" if c.conversation_id in anchors else None
            conflicts.add(text(c.conversation_id, link=link), " → ".join(c.levels), c.counted)
        blocks.append(conflicts)
    disagree = any(p.agree.k < p.agree.n for p in agreement.pairs)
    state: State | None = "warn" if disagree else None
    return Section("outcome-sources", "Outcome sources", blocks, state)


def sources_findings(agreement: OutcomeAgreement | None) -> list[Finding]:
    """A warning per pair of sources that disagree on some conversation, with the first disagreement."""
    if agreement is None:
        return []
    return [
        Finding(
            level="warning",
            title=(
                f"outcome sources disagree: {pair.first} and {pair.second} differ on "
                f"{pair.agree.n - pair.agree.k} of {plural(pair.agree.n, 'conversation')}"
            ),
            detail=f"{pair.disagreements[0].conversation_id}: {pair.disagreements[0].text}"
            if pair.disagreements
            else "",
        )
        for pair in agreement.pairs
        if pair.agree.k < pair.agree.n
    ]


def agreement_metrics(agreement: OutcomeAgreement) -> dict[str, RateView]:
    """`outcome_agreement` (the first pair of sources) for gates and hazard controls."""
    return {"outcome_agreement": agreement.pairs[0].agree} if agreement.pairs else {}


register_analysis(
    Analysis(
        name="outcome_sources",
        key="outcome_sources",
        annotation=OutcomeAgreement | None,
        order=15,
        build=lambda run, options: outcome_agreement(run),
        findings=lambda report: sources_findings(report.analysis("outcome_sources")),
        findings_order=CORE_FINDINGS + 1,
        draw=sources_section,
        draw_order=25,
        metrics=agreement_metrics,
    )
)
