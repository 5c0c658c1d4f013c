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

from simulator.metrics.cost import CostLatency, cost_latency, load_prices
from simulator.metrics.data import RunData, load_run
from simulator.metrics.health import RunHealth, run_health
from simulator.metrics.outcome import OutcomeMetrics, outcome_metrics
from simulator.metrics.rates import RateView, rate_view
from simulator.metrics.tables import (
    CriterionRow,
    PassHatK,
    ScenarioRow,
    TagRow,
    criterion_rows,
    pass_hat_k_table,
    scenario_rows,
    tag_rows,
)
