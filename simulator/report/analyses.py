"""The report's analyses, registered: a new statistic is one registration, never an edit of the report model.

An analysis is one piece of a run's report. It may compute data from the run (`build`, its field `key` in the
JSON report, typed by `annotation`), add headlines to the summary (`findings`), be drawn as a section by the
one terminal and the one HTML renderer (`draw`), and name metrics a gate or a hazard control can test
(`metrics`). The built-in analyses register where they are defined; the modules that define them are listed
in `BUILTIN_MODULES` and imported the first time a report is built, so `simulator --help` imports none.

Order is explicit, so the JSON report, the summary and the page never depend on import order: `order` places
the field in the JSON (after the core fields of `Report`), `findings_order` the headlines among the core
ones (which sit at 100), `draw_order` the section on the page.
"""

from __future__ import annotations

__all__ = [
    "CORE_FINDINGS",
    "Analysis",
    "all_analyses",
    "data_analyses",
    "drawn_analyses",
    "register_analysis",
]

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from simulator.registry import Registry

if TYPE_CHECKING:
    from simulator.analysis.rundata import RunData
    from simulator.report.section import Section

# The report model (report/model.py) imports this registry, so it is named here, not imported: `Report` is
# the report being built or drawn, `Finding` one headline, `ReportOptions` what the user chose.
Report = Any
Finding = Any
ReportOptions = Any

# Where the built-in analyses register themselves: the core report's, then the feature slices'.
BUILTIN_MODULES: tuple[str, ...] = (
    "simulator.report.sections_run",
    "simulator.report.bot_faults_view",
    "simulator.report.sections_stats",
    "simulator.report.summary_view",
    "simulator.report.severity",
    "simulator.report.simulator_views",
    "simulator.report.simulators_view",
    "simulator.report.length_view",
    "simulator.report.relations_view",
    "simulator.report.golden_view",
    "simulator.report.outcome_sources_view",
    "simulator.redteam.view",
    "simulator.voice.section",
)

CORE_FINDINGS = 100  # the findings_order of the core headlines (bugs, outcome, flaky, health, run warnings)


@dataclass(frozen=True)
class Analysis:
    """One registered piece of the report (see the module's docstring)."""

    name: str
    key: str | None = None  # its field in the JSON report; None: drawn only, from the core fields
    annotation: Any = None  # the type of its data, for the JSON schema (e.g. `RedTeamSection | None`)
    default: Any = None  # its value when `build` finds nothing (None, or [] for a list)
    order: int = 0
    build: Callable[[RunData, ReportOptions], Any] | None = None
    # Rewrites the core headlines it has something to say about (several simulators annotate a bug line).
    annotate: Callable[[list[Finding], Report], list[Finding]] | None = None
    findings: Callable[[Report], list[Finding]] | None = None
    findings_order: int = CORE_FINDINGS
    draw: Callable[[Report, bool], Section] | None = None  # (report, every row): the section, drawn
    draw_order: int = 0
    # Metrics a gate or a hazard control may name, from this analysis's data: name -> (k, n, clustered rate).
    metrics: Callable[[Any], dict[str, Any]] | None = None


ANALYSES: Registry[Analysis] = Registry(
    "report analysis", builtins=BUILTIN_MODULES, group="simulator.analyses"
)


def register_analysis(analysis: Analysis) -> Analysis:
    """Register `analysis` under its name (once: another module taking the name is a mistake)."""
    return ANALYSES.register(analysis.name, analysis, str(sys._getframe(1).f_globals.get("__name__", "?")))


def all_analyses() -> list[Analysis]:
    """Every registered analysis (the built-in modules imported on the first call)."""
    return ANALYSES.kinds()


def data_analyses() -> list[Analysis]:
    """The analyses that carry data, in their JSON order; ties by key, so the order (and the report's JSON
    schema) never depends on which module happened to register first."""
    return sorted((a for a in all_analyses() if a.key is not None), key=lambda a: (a.order, a.key or ""))


def drawn_analyses() -> list[Analysis]:
    """The analyses drawn as sections, in page order."""
    return sorted((a for a in all_analyses() if a.draw is not None), key=lambda a: (a.draw_order, a.name))
