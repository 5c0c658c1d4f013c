"""Metrics of a run: outcome rates, per-criterion/scenario/tag tables, run health, cost and latency."""

from __future__ import annotations

__all__ = [
    "CostLatency",
    "CriterionRow",
    "OutcomeMetrics",
    "PassHatK",
    "RateView",
    "RunData",
    "RunHealth",
    "ScenarioRow",
    "TagRow",
    "cost_latency",
    "criterion_rows",
    "load_prices",
    "load_run",
    "outcome_metrics",
    "pass_hat_k_table",
    "rate_view",
    "run_health",
    "scenario_rows",
    "tag_rows",
]

from simulator.analysis.cost import CostLatency, cost_latency, load_prices
from simulator.analysis.health import RunHealth, run_health
from simulator.analysis.outcome import OutcomeMetrics, outcome_metrics
from simulator.analysis.rates import RateView, rate_view
from simulator.analysis.rundata import RunData, load_run
from simulator.analysis.tables import (
    CriterionRow,
    PassHatK,
    ScenarioRow,
    TagRow,
    criterion_rows,
    pass_hat_k_table,
    scenario_rows,
    tag_rows,
)
