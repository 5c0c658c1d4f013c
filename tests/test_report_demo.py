"""The report on the project's own triage demo suite: every conversation accounted for, the documented flaw found."""

from __future__ import annotations

import asyncio
from pathlib import Path

from simulator.analysis.rundata import load_run
from simulator.config.loading import load_scenarios
from simulator.config.suite import load_suite
from simulator.engine.runner import RunOptions, run_suite
from simulator.report.html import render_html
from simulator.report.model import ReportOptions, build_report

SUITE = Path(__file__).resolve().parent.parent / "scenarios" / "triage" / "suite.yaml"


def test_triage_demo_report(tmp_path: Path) -> None:
    suite = load_suite(SUITE)
    scenarios = load_scenarios([suite.resolve(p) for p in suite.scenarios.paths])
    asyncio.run(run_suite(suite, scenarios, RunOptions(out=tmp_path / "run", progress=False)))
    report = build_report(load_run(tmp_path / "run"), ReportOptions(target=0.01))
    planned = len(scenarios) * suite.runs
    outcome = report.outcome
    assert outcome is not None
    assert sum(row.total for row in outcome.matrix) + outcome.without_expectation == planned
    # The example bot's documented flaw: it never asks whether chest pain spreads, so a cardiac case is
    # under-triaged, and that high-stakes scenario is reported as a bug.
    assert outcome.under_triage.k >= 1
    assert outcome.critical_sensitivity.k < outcome.critical_sensitivity.n
    bugs = [row for row in report.scenarios if row.bug]
    assert bugs and any("cardiac" in row.tags for row in bugs)
    assert report.findings[0].level == "bug"
    page = render_html(report)
    assert page.count('<details class="conv"') == planned
