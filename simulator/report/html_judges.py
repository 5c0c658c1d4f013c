"""The judge-quality and rubric-points section of the HTML report (escaped like every other string)."""

from __future__ import annotations

__all__ = ["judges_section"]

from simulator.analysis.rates import pct
from simulator.report.html_parts import e, rate_cell
from simulator.report.model import Report


def _row(*cells: str) -> str:
    """A table row; a cell that is already a `<td>` (a rate with its interval plot) is kept as it is."""
    return "<tr>" + "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells) + "</tr>"


def _table(head: tuple[str, ...], rows: list[str]) -> str:
    return "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>"


def _parts(report: Report) -> list[str]:
    parts = []
    quality = report.judge_quality
    if quality is not None and quality.stability:
        rows = [
            _row(e(r.criterion_id), e(r.judge_model), str(r.samples), rate_cell(r.flips), str(r.undecided),
                 "UNSTABLE" if r.unstable else "")
            for r in quality.stability
        ]  # fmt: skip
        parts.append(
            "<h3>Stability (the same conversation judged several times)</h3>"
            + _table(("criterion", "judge model", "samples", "flip rate", "ties → error", ""), rows)
        )
    if quality is not None and quality.jury:
        rows = [
            _row(e(r.criterion_id), e(r.rule or ""), e(", ".join(r.models)), rate_cell(r.agreement),
                 "n/a" if r.fleiss_kappa is None else f"{r.fleiss_kappa:.2f}",
                 e("; ".join(f"{d.conversation_id} → {d.verdict}" for d in r.disagreements[:10])))
            for r in quality.jury
        ]  # fmt: skip
        parts.append(
            "<h3>Jury agreement</h3>"
            + _table(("criterion", "rule", "models", "all agree", "Fleiss' kappa", "disagreements"), rows)
        )
    if quality is not None and quality.corrected_rates:
        rows = [
            _row(e(r.criterion_id), f"{r.raw_k}/{r.raw_n} {pct(r.raw)}", pct(r.sensitivity), pct(r.specificity),
                 str(r.labelled),
                 "n/a" if r.corrected is None else f"{pct(r.corrected)} ({pct(r.low)}–{pct(r.high)})", e(r.note))
            for r in quality.corrected_rates
        ]  # fmt: skip
        parts.append(
            "<h3>Failure rates corrected for the judge's sensitivity and specificity (Rogan–Gladen)</h3>"
            + _table(("criterion", "raw", "Se", "Sp", "labelled", "corrected (95% CI)", "note"), rows)
        )
    if report.points is not None:
        views = {"overall": report.points.overall}
        views |= {f"tag {t}": v for t, v in report.points.by_tag.items()}
        views |= {f"category {c}": v for c, v in report.points.by_category.items()}
        rows = [_row(e(name), e(view.short)) for name, view in views.items()]
        parts.append(
            "<h3>Rubric points (earned / maximum, per conversation)</h3>"
            + _table(("group", "mean score (95% CI)"), rows)
        )
    return parts


def judges_section(report: Report) -> str:
    """The section, or '' when the report has no samples, jury, labels or points."""
    parts = _parts(report)
    if not parts:
        return ""
    return '<section id="judges"><h2>Judges</h2>' + "".join(parts) + "</section>"
