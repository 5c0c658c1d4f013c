"""The headline rates every renderer shows with their scenario-clustered interval and errored-case bounds."""

from __future__ import annotations

__all__ = ["headline_rates"]

from typing import TYPE_CHECKING

from simulator.stats.rates import RateView

if TYPE_CHECKING:  # model.py builds its missing-data warning from these rates
    from simulator.report.model import Report


def headline_rates(report: Report) -> list[tuple[str, RateView]]:
    """The rates that pool repeats of scenarios: outcome rates, overall pass rate, criterion failure rates."""
    rows: list[tuple[str, RateView]] = []
    outcome = report.outcome
    if outcome is not None:
        rows += [
            (f"{outcome.critical} sensitivity", outcome.critical_sensitivity),
            ("under-triage incl. no decision", outcome.under_triage),
            ("over-triage", outcome.over_triage),
            ("no decision", outcome.no_decision),
        ]
    rows.append(("pass rate (conversations)", report.overall))
    rows += [(f"{row.id} failure rate", row.fail_rate) for row in report.criteria if row.fail_rate.n]
    return rows
