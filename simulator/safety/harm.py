"""Harm-weighted triage error: expected harm per 1,000 conversations from the suite's weight per confusion cell.

An emergency sent to self-care is worse than one sent to the GP; unweighted under-triage counts both the
same. The suite's `outcome.harm_weights` gives each wrong cell (expected level -> actual level) a weight;
a conversation's harm is its cell's weight, and the expected harm is their mean (unit: conversations, errors
left out and counted). A conversation that ended with no usable decision (`no decision`, or a value that is
not a level) weighs as the lowest level unless the suite names that cell, as under-triage counts it.

The interval treats scenarios as the unit, like every rate here (stats/clustered.py): the cluster-robust
variance of a ratio mean, Var = G/(G-1) · Σ_g (H_g − m·n_g)² / N², with Student's t on G−1 degrees of
freedom. When every conversation weighs the same (no spread to measure) the worst case is assumed: the
share of harmful conversations gets the scenario-level bound (rule of three over G scenarios when none was
harmful) and each harmful one the largest weight.
"""

from __future__ import annotations

__all__ = ["HarmWeighted", "harm_weighted"]

import math

from simulator.analysis.outcome import ERROR, NO_DECISION, OTHER, actual_outcome, outcome_metrics
from simulator.analysis.rundata import RunData
from simulator.config.variants import vignette_of
from simulator.models import ResultModel as _Model
from simulator.plural import plural
from simulator.stats.basic import z_for_confidence
from simulator.stats.clustered import clustered_zero_failure_bound, wilson_score
from simulator.stats.dist import t_critical
from simulator.stats.rates import RateView

PER = 1000


class HarmCell(_Model):
    """One weighted cell of the confusion matrix and how many conversations landed in it."""

    expected: str
    actual: str
    weight: float
    conversations: int


class HarmWeighted(_Model):
    """Expected harm per 1,000 conversations with its scenario-clustered 95% interval, and the plain rates."""

    declared: bool
    conversations: int
    errored: int
    without_expectation: int
    scenarios: int
    total_harm: float
    per_1000: float | None
    low_per_1000: float | None
    high_per_1000: float | None
    method: str
    cells: list[HarmCell]
    unweighted: dict[str, RateView]


def _weight(weights: dict[str, dict[str, float]], expected: str, actual: str, lowest: str) -> float:
    row = weights.get(expected, {})
    if actual in row:
        return row[actual]
    if actual in (NO_DECISION, OTHER):
        return row.get(lowest, 0.0) if expected != lowest else 0.0
    return 0.0


def _interval(per_scenario: list[tuple[float, int]], biggest: float) -> tuple[float, float, str]:
    """(low, high) of the mean harm per conversation, and the method used."""
    g = len(per_scenario)
    total_n = sum(n for _, n in per_scenario)
    mean = sum(h for h, _ in per_scenario) / total_n
    robust = 0.0
    if g >= 2:
        robust = g / (g - 1) * math.fsum((h - mean * n) ** 2 for h, n in per_scenario) / total_n**2
    if robust > 0.0:
        # On the log scale (delta method): harm was seen, so the interval never reaches 0 (reading item 12);
        # it widens upward when the harm sits in few vignettes.
        spread = t_critical(0.95, g - 1) * math.sqrt(robust) / mean
        return (
            mean * math.exp(-spread),
            mean * math.exp(spread),
            f"cluster-robust on the log scale, t with {g - 1} df over {plural(g, 'vignette')}",
        )
    if biggest <= 0.0:
        return 0.0, 0.0, "no cell has a weight"
    if mean == 0.0:
        bound = clustered_zero_failure_bound(g)
        return (
            0.0,
            biggest * bound,
            f"no harmful conversation: rule-of-three bound over {plural(g, 'vignette')}",
        )
    low, high = wilson_score(mean / biggest, float(g), z_for_confidence(0.95))
    return (
        low * biggest,
        high * biggest,
        f"no spread to measure: Wilson over {plural(g, 'vignette')}, largest weight",
    )


def harm_weighted(run: RunData) -> HarmWeighted | None:
    """The harm-weighted error of a run whose suite declares outcome levels; None when it declares none."""
    config = run.outcome
    metrics = outcome_metrics(run)
    if config is None or metrics is None:
        return None
    levels, weights = list(config.levels), config.harm_weights
    counts: dict[tuple[str, str], int] = {}
    by_scenario: dict[str, list[float]] = {}
    errored = without = 0
    for record in run.conversations:
        expected = run.expected.get(record.scenario_id, {}).get(config.key)
        if expected not in levels:
            without += 1
            continue
        actual = actual_outcome(run, record)
        if actual == ERROR:
            errored += 1
            continue
        weight = _weight(weights, expected, actual, levels[0])
        counts[(expected, actual)] = counts.get((expected, actual), 0) + 1
        cell = by_scenario.setdefault(vignette_of(record.scenario_id), [0.0, 0])
        cell[0] += weight
        cell[1] += 1
    pairs = [(h, int(n)) for h, n in by_scenario.values()]
    n = sum(k for _, k in pairs)
    biggest = max((w for row in weights.values() for w in row.values()), default=0.0)
    cells = [
        HarmCell(expected=e, actual=a, weight=_weight(weights, e, a, levels[0]), conversations=k)
        for (e, a), k in sorted(counts.items(), key=lambda x: (-levels.index(x[0][0]), x[0][1]))
        if e != a
    ]
    total = math.fsum(h for h, _ in pairs)
    if n:
        low, high, method = _interval(pairs, biggest)
        point: float | None = total / n * PER
        low_k, high_k = round(low * PER, 6), round(high * PER, 6)
    else:
        point, low_k, high_k, method = None, None, None, "no conversation with an expected level"
    return HarmWeighted(
        declared=bool(weights),
        conversations=n,
        errored=errored,
        without_expectation=without,
        scenarios=len(pairs),
        total_harm=total,
        per_1000=None if point is None else round(point, 6),
        low_per_1000=low_k,
        high_per_1000=high_k,
        method=method,
        cells=cells,
        unweighted={
            "under_triage": metrics.under_triage,
            "over_triage": metrics.over_triage,
            "exact": metrics.exact,
            "no_decision": metrics.no_decision,
        },
    )
