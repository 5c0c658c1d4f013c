"""The length-and-verdict section as data (section.py): per LLM-judged criterion, whether passing goes with
the length of the bot's replies (analysis/length_bias.py), and a finding when it clearly does."""

from __future__ import annotations

__all__ = ["LENGTH_NOTE", "length_findings", "length_section"]

from simulator.analysis.length_bias import CriterionLength, criterion_length_bias
from simulator.report.analyses import CORE_FINDINGS, Analysis, register_analysis
from simulator.report.model import Finding, Report
from simulator.report.section import Column, Note, Section, State, Table, text

LENGTH_NOTE = (
    "Judge length control: per LLM-judged criterion, Pearson's r between the characters of the bot's "
    "messages and the verdict (pass 1, fail 0; unit judged conversations, errors, not applicable and not "
    "judged left out), p from Fisher's z. Flagged when |r| ≥ 0.3 with p < 0.05 over at least 8 verdicts. "
    "A correlation is a prompt to look, not proof of bias: longer replies may really be better. Check "
    "with human labels, or with pairs of similar length (simulator judge-pairwise prints the "
    "length-controlled win rate)."
)


def _chars(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def length_section(report: Report, everything: bool = False) -> Section:
    rows: list[CriterionLength] = report.analysis("length_bias")
    if not rows:
        return Section("length", "Judges and length")
    table = Table(
        [Column("criterion"), Column("mean chars, passed", numeric=True),
         Column("mean chars, failed", numeric=True), Column("length vs pass"), Column("reading")]
    )  # fmt: skip
    for r in rows:
        follows = r.correlation.follows_length
        direction = "longer passes" if (r.correlation.r or 0) > 0 else "shorter passes"
        reading = text(f"verdict follows length: {direction}", "warn") if follows else text("no clear link")
        table.add(r.criterion_id, _chars(r.pass_length), _chars(r.fail_length), r.correlation.text, reading)
    state: State | None = "warn" if any(r.correlation.follows_length for r in rows) else None
    return Section("length", "Judges and length", [Note(LENGTH_NOTE), table], state)


def length_findings(rows: list[CriterionLength]) -> list[Finding]:
    """One warning per criterion whose verdicts clearly follow the bot's reply length."""
    return [
        Finding(
            level="warning",
            title=f"{r.criterion_id}: the judge's verdicts follow the bot's reply length ({r.correlation.text})",
            detail="check with human labels or length-matched pairs before trusting its rate",
        )
        for r in rows
        if r.correlation.follows_length
    ]


register_analysis(
    Analysis(
        name="length_bias",
        key="length_bias",
        annotation=list[CriterionLength],
        default=[],
        order=100,
        build=lambda run, options: criterion_length_bias(run.conversations, run.verdicts),
        findings=lambda report: length_findings(report.analysis("length_bias")),
        findings_order=CORE_FINDINGS + 11,
        draw=length_section,
        draw_order=160,
    )
)
