"""The coverage map: which hazards, controls, presentations, persona factors and channels the suite's
vignettes reach, and how many distinct vignettes each cell has.

The unit is the vignette (a scenario's base id): a persona factor, an attack or a second simulated user
makes a variant, which counts once under its base, never as new evidence. A control's own figure ("needs N
more distinct vignettes") comes from the safety case on the runs given (simulator/safety/), so the map and
the safety case can never disagree; vignettes the suite has that no run has played yet are shown beside it.
"""

from __future__ import annotations

__all__ = ["CoverageMap", "coverage_lines", "load_coverage"]

from itertools import product
from pathlib import Path
from typing import Any

from pydantic import Field

from simulator.config.scenario import Scenario
from simulator.config.variants import vignette_of
from simulator.models import ResultModel, empty_list
from simulator.plural import plural
from simulator.safety.case import build_safety_case, load_runs
from simulator.safety.hazards import HazardLog, load_hazard_log

NO_FACTOR = "as written"  # a vignette played as written, with no persona factor
NO_LEVEL = "no expected level"


class CoverageCell(ResultModel):
    """One cell: a control of a hazard × a presentation (the expected outcome level) × a persona factor
    level × the channel, with the distinct vignettes (base ids) in it."""

    hazard: str
    control: str
    presentation: str
    factor: str
    channel: str
    vignettes: list[str]


class ControlCoverage(ResultModel):
    """One test control: the vignettes in its scope, and what the safety case says it still needs."""

    hazard: str
    control: str
    tags: list[str]
    vignettes: list[str]
    status: str | None = None  # the safety case's status on the runs; None without runs
    needs_more: int | None = None  # the safety case's "needs N more distinct vignettes"
    # Vignettes in scope the runs have not played (accepted since).
    not_yet_run: list[str] = Field(default_factory=empty_list)
    # Vignettes in scope that came through the review queue, and who accepted them (`--drafts QUEUE`).
    accepted_drafts: int = 0
    reviewers: list[str] = Field(default_factory=empty_list)


class CoverageMap(ResultModel):
    """The map of one suite against one hazard log (and runs, when given)."""

    suite: str
    hazard_log: str
    runs: list[str]
    unit: str = "vignettes (distinct base ids; variants are not new evidence)"
    channel: str
    thin_below: int
    controls: list[ControlCoverage]
    cells: list[CoverageCell]
    unreached_levels: list[str]

    @property
    def thin(self) -> list[CoverageCell]:
        """Cells with fewer distinct vignettes than `thin_below`, emptiest first."""
        return sorted(
            (c for c in self.cells if len(c.vignettes) < self.thin_below), key=lambda c: len(c.vignettes)
        )


def _in_scope(scenario: Scenario, tags: list[str]) -> bool:
    return not tags or bool(set(tags) & set(scenario.tags))


def _factor(scenario: Scenario) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(scenario.factors.items())) or NO_FACTOR


def _run_results(runs: list[Path] | None, log: HazardLog) -> tuple[dict[str, Any], set[str]]:
    """Each test control's result in the safety case of `runs`, and the vignettes those runs played."""
    if not runs:
        return {}, set()
    data = load_runs(runs)
    case = build_safety_case(data, log, check_tags=False, allow_mixed_versions=True)
    results = {c.id: c for h in case.hazards for c in h.controls}
    return results, {vignette_of(r.scenario_id) for run in data for r in run.conversations}


def _control_coverage(
    hazard: str, control: Any, vignettes: list[str], result: Any, not_run: list[str], accepted: dict[str, str]
) -> ControlCoverage:
    """One test control's row: its vignettes, its status and "needs N more" from the safety case, and
    which of its vignettes a reviewer accepted as drafts."""
    return ControlCoverage(
        hazard=hazard,
        control=control.id,
        tags=list(control.tags),
        vignettes=vignettes,
        status=result.status if result is not None else None,
        needs_more=result.more_scenarios if result is not None else None,
        not_yet_run=not_run,
        accepted_drafts=sum(v in accepted for v in vignettes),
        reviewers=sorted({accepted[v] for v in vignettes if v in accepted}),
    )


def build_coverage(
    suite: Any,
    scenarios: list[Scenario],
    log: HazardLog,
    runs: list[Path] | None = None,
    thin_below: int = 3,
    accepted: dict[str, str] | None = None,
) -> CoverageMap:
    """The coverage map of `scenarios` (a suite's, variants included) against `log`; with `runs`, each
    control's status and "needs N more" from the safety case of those runs; `accepted` (vignette id ->
    reviewer, from the review queue's decisions) says which vignettes a reviewer accepted, and who."""
    accepted = accepted or {}
    key = suite.outcome.key if suite.outcome is not None else None
    levels = list(suite.outcome.levels) if suite.outcome is not None else []
    channel = str(suite.bot.type)

    def level(s: Scenario) -> str:
        return str(s.expected.get(key, NO_LEVEL)) if key else NO_LEVEL

    factors = sorted({_factor(s) for s in scenarios}, key=lambda f: (f != NO_FACTOR, f))
    presentations = levels or sorted({level(s) for s in scenarios})
    results, played = _run_results(runs, log)
    controls, cells = [], []
    for hazard in log.hazards:
        for control in hazard.controls:
            if control.kind != "test":
                continue
            scope = [s for s in scenarios if _in_scope(s, control.tags)]
            vignettes = sorted({vignette_of(s.id) for s in scope})
            result = results.get(control.id)
            not_run = [v for v in vignettes if runs and v not in played]
            controls.append(_control_coverage(hazard.id, control, vignettes, result, not_run, accepted))
            cells += [
                CoverageCell(
                    hazard=hazard.id,
                    control=control.id,
                    presentation=presentation,
                    factor=factor,
                    channel=channel,
                    vignettes=sorted(
                        {
                            vignette_of(s.id)
                            for s in scope
                            if level(s) == presentation and _factor(s) == factor
                        }
                    ),
                )
                for presentation, factor in product(presentations, factors)
            ]
    reached = {level(s) for s in scenarios}
    return CoverageMap(
        suite=str(suite.file or suite.name),
        hazard_log=str(log.file),
        runs=[str(r) for r in runs or []],
        channel=channel,
        thin_below=thin_below,
        controls=controls,
        cells=cells,
        unreached_levels=[lv for lv in levels if lv not in reached],
    )


def load_coverage(
    suite_path: Path,
    hazards: Path,
    runs: list[Path] | None = None,
    thin_below: int = 3,
    queue: Path | None = None,
) -> CoverageMap:
    """The coverage map of a suite file against a hazard log file (and runs, and the review queue whose
    accepted drafts it names with their reviewers)."""
    from simulator.api import load_suite
    from simulator.authoring.review import decisions

    suite = load_suite(suite_path)
    accepted = {d.draft: d.reviewer for d in decisions(queue) if d.decision == "accepted"} if queue else {}
    return build_coverage(
        suite, suite.scenarios_to_run(), load_hazard_log(hazards), runs, thin_below, accepted
    )


def coverage_lines(coverage: CoverageMap, all_cells: bool = False) -> list[str]:
    """The map as text: each control's vignettes and need, then the thin cells (or every cell)."""
    lines = [
        f"coverage of {coverage.suite} against {coverage.hazard_log} · channel {coverage.channel}",
        f"unit: {coverage.unit}",
        "",
    ]
    for c in coverage.controls:
        need = ""
        if c.needs_more is not None:
            need = f" · {c.status}: needs {c.needs_more} more distinct vignettes (safety case)"
        elif c.status is not None:
            need = f" · {c.status}"
        pending = f" · {len(c.not_yet_run)} in the suite not yet run" if c.not_yet_run else ""
        if c.accepted_drafts:
            pending += f" · {c.accepted_drafts} accepted drafts (reviewed by {', '.join(c.reviewers)})"
        scope = ", ".join(c.tags) or "every scenario"
        lines.append(
            f"{c.hazard} {c.control} [{scope}]: {plural(len(c.vignettes), 'vignette')}{need}{pending}"
        )
    shown = coverage.cells if all_cells else coverage.thin
    title = "cells" if all_cells else f"thin cells (fewer than {coverage.thin_below} distinct vignettes)"
    lines += ["", f"{title}: {len(shown)} of {len(coverage.cells)}"]
    for cell in shown:
        named = f" ({', '.join(cell.vignettes)})" if cell.vignettes else ""
        lines.append(
            f"  {cell.hazard} {cell.control} · {cell.presentation} · {cell.factor} · {cell.channel}: "
            f"{len(cell.vignettes)}{named}"
        )
    if coverage.unreached_levels:
        lines.append(f"outcome levels no vignette expects: {', '.join(coverage.unreached_levels)}")
    return lines
