"""The run report's sections in page order, as data: both the terminal and the HTML report draw this list,
the summary (findings and critical rates) first. Each section is a registered analysis (report/analyses.py)."""

from __future__ import annotations

__all__ = ["report_sections"]

from simulator.report.analyses import drawn_analyses
from simulator.report.model import Report
from simulator.report.section import Section


def report_sections(report: Report, everything: bool = False) -> list[Section]:
    """Every registered section, drawn from `report`; an empty section is drawn as nothing. `everything`
    keeps the rows the Scenarios and Tag tables otherwise collapse into one line (all passing alike)."""
    return [analysis.draw(report, everything) for analysis in drawn_analyses() if analysis.draw is not None]
