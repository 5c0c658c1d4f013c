"""The judge-quality and points sections of the terminal report."""

from __future__ import annotations

__all__ = ["render_judge_sections"]

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simulator.analysis.rates import pct
from simulator.report.model import Report
from simulator.report.table_print import print_table

SHOWN = 5  # jury disagreements printed per criterion


def _stability(console: Console, report: Report) -> None:
    quality = report.judge_quality
    if quality is None or not quality.stability:
        return
    table = Table(
        "criterion", "judge model", "samples", "flip rate (conversations)", "ties → error", "",
        title="Judge stability (A/A: the same conversation judged several times)",
    )  # fmt: skip
    for row in quality.stability:
        flag = "[yellow]UNSTABLE[/]" if row.unstable else ""
        table.add_row(
            escape(row.criterion_id), escape(row.judge_model), str(row.samples),
            escape(row.flips.short), str(row.undecided), flag,
        )  # fmt: skip
    _print_table(console, table)


def _jury(console: Console, report: Report) -> None:
    quality = report.judge_quality
    if quality is None or not quality.jury:
        return
    table = Table("criterion", "rule", "models", "all agree", "Fleiss' kappa", title="Jury agreement")
    for row in quality.jury:
        kappa = "n/a" if row.fleiss_kappa is None else f"{row.fleiss_kappa:.2f}"
        table.add_row(
            escape(row.criterion_id), row.rule or "", escape(", ".join(row.models)),
            escape(row.agreement.short), kappa,
        )  # fmt: skip
    _print_table(console, table)
    for row in quality.jury:
        for d in row.disagreements[:SHOWN]:
            said = ", ".join(f"{m}: {a}" for m, a in d.answers.items())
            console.print(
                f"  {escape(row.criterion_id)} {escape(d.conversation_id)}: {escape(said)} → {d.verdict}"
            )
        if row.more_disagreements:
            console.print(
                f"  … and {row.more_disagreements} more disagreements on {escape(row.criterion_id)}"
            )


def _corrected(console: Console, report: Report) -> None:
    quality = report.judge_quality
    if quality is None or not quality.corrected_rates:
        return
    table = Table(
        "criterion", "raw failure rate", "Se", "Sp", "labelled", "corrected (Rogan–Gladen, 95% CI)", "note",
        title="Failure rates corrected for the judge's measured sensitivity and specificity",
    )  # fmt: skip
    for r in quality.corrected_rates:
        interval = f" ({pct(r.low)}–{pct(r.high)})" if r.low is not None else ""
        table.add_row(
            escape(r.criterion_id), f"{r.raw_k}/{r.raw_n} {pct(r.raw)}", pct(r.sensitivity), pct(r.specificity),
            str(r.labelled), (pct(r.corrected) + interval) if r.corrected is not None else "n/a", escape(r.note),
        )  # fmt: skip
    _print_table(console, table)


def _points(console: Console, report: Report) -> None:
    points = report.points
    if points is None:
        return
    table = Table(
        "group", "mean score (95% CI)", title="Rubric points: earned / maximum positive, per conversation"
    )
    table.add_row("overall", escape(points.overall.short))
    for tag, view in points.by_tag.items():
        table.add_row(f"tag {escape(tag)}", escape(view.short))
    for category, view in points.by_category.items():
        table.add_row(f"category {escape(category)}", escape(view.short))
    _print_table(console, table)


def render_judge_sections(console: Console, report: Report) -> None:
    """Stability, jury, corrected rates and points, each only when the report has it."""
    _stability(console, report)
    _jury(console, report)
    _corrected(console, report)
    _points(console, report)


def _print_table(console: Console, table: Table) -> None:
    """The report's table printer: nothing cut at 80 columns."""
    print_table(console, table)
