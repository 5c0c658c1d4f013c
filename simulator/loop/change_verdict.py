"""One verdict on a tried change: fixed, improved, no evidence, or broke something (docs/loop.md).

It reads `compare`'s paired, scenario-clustered comparison of the baseline run (A) and the run with the
change (B); it computes no test of its own. A metric counts as **worse** when `compare` found it
significantly worse, or when every scenario whose pass rate moved on it moved down (regression flips and no
improvement): with a handful of scenarios a real regression cannot reach significance, and a triage team
must hear of it anyway; each such line says whether the test found it significant. Any worse metric makes
the verdict "broke something", whatever the change fixed. Otherwise the targeted criterion decides, on the
proposal's scenarios: no failure left (there were some) is "fixed", fewer is "improved", else "no evidence".
The cost and latency change comes from `cost_latency` of each run.
"""

from __future__ import annotations

__all__ = ["ChangeVerdict", "MetricMove", "change_verdict", "cost_change"]

from typing import Literal

from simulator.analysis.compare import PairedMetric, RunComparison
from simulator.analysis.cost import cost_latency, load_prices
from simulator.analysis.rundata import RunData
from simulator.models import StrictModel as _Model

Outcome = Literal["fixed", "improved", "no evidence", "broke something"]


class MetricMove(_Model):
    """One metric that moved: the flips in each direction and what the scenario-level test said."""

    name: str
    critical: bool
    a: str
    b: str
    regressions: int
    improvements: int
    significant: bool
    clustered_p_value: float
    regressed: list[str]  # conversation ids that went from pass to fail


class ChangeVerdict(_Model):
    verdict: Outcome
    criterion_id: str
    scenarios: list[str]
    failures_before: int
    failures_after: int
    worse: list[MetricMove]
    better: list[MetricMove]
    cost: str
    latency: str
    lines: list[str]


def _move(metric: PairedMetric) -> MetricMove:
    return MetricMove(
        name=metric.name,
        critical=metric.critical,
        a=metric.a_rate.short,
        b=metric.b_rate.short,
        regressions=metric.only_a,
        improvements=metric.only_b,
        significant=metric.change in ("better", "worse"),
        clustered_p_value=metric.clustered_p_value,
        regressed=[f.conversation_id for f in metric.flips if f.direction == "regression"],
    )


def _is_worse(metric: PairedMetric) -> bool:
    if metric.change == "worse":
        return True
    return metric.only_a > 0 and metric.scenarios_worse > 0 and metric.scenarios_better == 0


def _is_better(metric: PairedMetric) -> bool:
    if metric.change == "better":
        return True
    return metric.only_b > 0 and metric.scenarios_better > 0 and metric.scenarios_worse == 0


def _failures(run: RunData, criterion_id: str, scenarios: list[str]) -> int:
    return sum(
        1
        for v in run.verdicts
        if v.criterion_id == criterion_id and v.scenario_id in scenarios and v.result == "fail"
    )


def _median(values: list[float | None]) -> str:
    return "n/a" if values[0] is None or values[1] is None else f"{values[0]:.3f} s → {values[1]:.3f} s"


def cost_change(a: RunData, b: RunData) -> tuple[str, str]:
    """The change in total cost and in the bot's median reply latency, in words."""
    prices = load_prices()
    ca, cb = cost_latency(a, prices), cost_latency(b, prices)
    if ca.total_cost is None or cb.total_cost is None:
        cost = "cost: not priced (a model has no price in the table)"
    else:
        cost = f"cost: {ca.total_cost:.4f} → {cb.total_cost:.4f} {ca.currency} ({cb.total_cost - ca.total_cost:+.4f})"
    bot = [next((x.median_s for x in c.latency if x.name == "bot reply (per turn)"), None) for c in (ca, cb)]
    return cost, f"bot reply latency (median per turn): {_median(bot)}"


def change_verdict(
    comparison: RunComparison, a: RunData, b: RunData, criterion_id: str, scenarios: list[str]
) -> ChangeVerdict:
    """The verdict on a change meant to fix `criterion_id` on `scenarios`, from the comparison of A and B."""
    worse = [_move(m) for m in comparison.metrics if _is_worse(m)]
    better = [_move(m) for m in comparison.metrics if _is_better(m)]
    before, after = _failures(a, criterion_id, scenarios), _failures(b, criterion_id, scenarios)
    verdict: Outcome
    if worse:
        verdict = "broke something"
    elif before and not after:
        verdict = "fixed"
    elif after < before:
        verdict = "improved"
    else:
        verdict = "no evidence"
    cost, latency = cost_change(a, b)
    lines = [f"{criterion_id} on {', '.join(scenarios)}: {before} failures before, {after} after"]
    for label, moves in (("WORSE", worse), ("better", better)):
        for m in moves:
            strength = (
                f"significant, clustered p={m.clustered_p_value:.3g}" if m.significant else "not significant"
            )
            flips = f"; flipped to fail: {', '.join(m.regressed)}" if label == "WORSE" and m.regressed else ""
            lines.append(
                f"{label} {m.name}: passed {m.a} → {m.b} ({m.regressions} regressions, {m.improvements} improvements; "
                f"{strength}){flips}"
            )
    target = next((m for m in comparison.metrics if m.name == criterion_id), None)
    if target is not None and verdict in ("fixed", "improved") and target.change != "better":
        lines.append(f"not significant on its own: {target.power_note}")
    if not worse:
        lines.append(
            f"nothing got worse: {len(comparison.metrics)} paired metrics checked on {comparison.matched} conversations"
        )
    return ChangeVerdict(
        verdict=verdict,
        criterion_id=criterion_id,
        scenarios=scenarios,
        failures_before=before,
        failures_after=after,
        worse=worse,
        better=better,
        cost=cost,
        latency=latency,
        lines=[*lines, cost, latency],
    )
