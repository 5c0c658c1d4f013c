"""The run report's sections in order, as data: both the terminal and the HTML report draw this list, the
summary (findings and critical rates) first."""

from __future__ import annotations

__all__ = ["report_sections"]

from simulator.report.adversarial_views import redteam_section, relations_section, split_section
from simulator.report.golden_view import golden_section
from simulator.report.length_view import length_section
from simulator.report.model import Report
from simulator.report.section import Section
from simulator.report.sections_run import (
    cost_section,
    criteria_section,
    health_section,
    outcome_section,
    scenarios_section,
)
from simulator.report.sections_stats import judges_section, stats_section
from simulator.report.simulator_views import factors_section, simulated_user_section
from simulator.report.simulators_view import simulators_section
from simulator.report.summary_view import summary_section
from simulator.voice.section import voice_section  # voice-kind

OMISSIONS_NOTE = (
    "Criteria of category 'omission': questions the bot needed to ask. Failure rates count pass and fail "
    "verdicts only."
)
CRITERIA_NOTE = (
    "Every criterion: code checks, LLM judges and metrics. Errors and not-applicable verdicts are counted "
    "apart, never as pass or fail."
)


def report_sections(report: Report, everything: bool = False) -> list[Section]:
    """Summary, golden items, outcome, omissions, criteria, scenarios, numbers that hold up, simulated user,
    factors, run health, cost, judges; an empty section is drawn as nothing. `everything` keeps the rows
    the Scenarios and Tag tables otherwise collapse into one line (all passing alike)."""
    return [
        summary_section(report),
        golden_section(report.golden),
        outcome_section(report),
        criteria_section("omissions", "Errors of omission", OMISSIONS_NOTE, report.omissions),
        criteria_section("criteria", "Criteria", CRITERIA_NOTE, report.criteria),
        scenarios_section(report, everything),
        stats_section(report),
        simulated_user_section(report),
        simulators_section(report),
        factors_section(report),
        redteam_section(report),
        relations_section(report),
        split_section(report),
        health_section(report),
        cost_section(report),
        judges_section(report),
        length_section(report),
        voice_section(report),  # voice-kind
    ]
