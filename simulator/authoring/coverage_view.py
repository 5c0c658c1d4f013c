"""The coverage map as report sections, drawn by the report's one HTML renderer (`coverage --html`, the
desk's Coverage page): each control's vignettes and need, then the thin cells (or every cell)."""

from __future__ import annotations

__all__ = ["coverage_page", "coverage_sections"]

from simulator.authoring.coverage import CoverageMap
from simulator.report.document_html import document
from simulator.report.draw_html import html_sections
from simulator.report.section import Column, Note, Section, State, Table, number, text


def coverage_sections(coverage: CoverageMap, all_cells: bool = False) -> list[Section]:
    """Two sections: the controls (vignettes in scope, the safety case's status and need), the cells."""
    controls = Table(
        [Column("hazard"), Column("control"), Column("scope"), Column("vignettes", numeric=True),
         Column("safety case"), Column("needs more", numeric=True), Column("not yet run", numeric=True),
         Column("accepted drafts", numeric=True), Column("reviewed by")]
    )  # fmt: skip
    for c in coverage.controls:
        state: State | None = "ok" if c.status == "met" else "fail" if c.status else None
        controls.add(
            text(c.hazard), text(c.control), text(", ".join(c.tags) or "every scenario"), number(len(c.vignettes)),
            text(c.status or "(no run)"), text("" if c.needs_more is None else str(c.needs_more)),
            number(len(c.not_yet_run)), number(c.accepted_drafts), text(", ".join(c.reviewers)), state=state,
        )  # fmt: skip
    shown = coverage.cells if all_cells else coverage.thin
    cells = Table(
        [Column("hazard"), Column("control"), Column("presentation"), Column("persona factor"),
         Column("channel"), Column("vignettes", numeric=True), Column("which")]
    )  # fmt: skip
    for cell in shown:
        cells.add(
            text(cell.hazard), text(cell.control), text(cell.presentation), text(cell.factor), text(cell.channel),
            number(len(cell.vignettes)), text(", ".join(cell.vignettes)),
            state="warn" if len(cell.vignettes) < coverage.thin_below else None,
        )  # fmt: skip
    unit = Note(f"unit: {coverage.unit}")
    title = "Cells" if all_cells else f"Thin cells (fewer than {coverage.thin_below} distinct vignettes)"
    notes = [Note(f"{len(shown)} of {len(coverage.cells)} cells")]
    if coverage.unreached_levels:
        notes.append(
            Note(f"Outcome levels no vignette expects: {', '.join(coverage.unreached_levels)}", "warn")
        )
    return [
        Section("coverage-controls", "Controls", [unit, controls]),
        Section("coverage-cells", title, [*notes, cells]),
    ]


def coverage_page(coverage: CoverageMap, all_cells: bool = False) -> str:
    """The map as a standalone HTML page."""
    meta = f"{coverage.suite} against {coverage.hazard_log} · channel {coverage.channel}"
    if coverage.runs:
        meta += f" · runs {', '.join(coverage.runs)}"
    return document("Coverage", meta, html_sections(coverage_sections(coverage, all_cells)))
