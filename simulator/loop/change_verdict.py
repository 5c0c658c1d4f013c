"""One verdict on a tried change: fixed, improved, no evidence either way, or broke something (docs/loop.md).

Each word rests on a stated test at a stated level (stats/evidence.py, α = 0.05), so a change that does
nothing reads "no evidence" at least 95% of the time:
- **broke something**: some paired metric of `compare` has more conversations flipped to fail than to
  pass beyond chance: the one-sided exact sign test on its flips, Bonferroni over the metrics checked
  (p < α / m). A metric that moved down without reaching that is listed ("moved down, not significant")
  with its flipped conversations, so a triage team still reads it, but it is not a verdict.
- **fixed** / **improved**: the targeted criterion, on the proposal's scenarios, flipped from fail to pass
  more often than back, beyond chance (one-sided exact sign test, p < α); fixed when no failure is left.
- **no evidence**: neither; the line says how many flips a test at α would need (5 one way at 5%).
The sign test is exact for a change that does nothing because the two runs' conversations are independent
draws: each (scenario, repeat) pair is exchangeable. The cost and latency change comes from `cost_latency`.
"""

from __future__ import annotations

__all__ = ["change_verdict", "verdict_word"]

from typing import Literal

from simulator.analysis.compare import PairedMetric, RunComparison
from simulator.analysis.cost import cost_latency, load_prices
from simulator.analysis.rundata import RunData
from simulator.models import StrictModel as _Model
from simulator.plural import plural
from simulator.stats.evidence import ALPHA, sign_test_greater, smallest_significant_flips

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
    p_value: float = 1.0  # one-sided exact sign test on the flips, in the direction it moved


class ChangeVerdict(_Model):
    verdict: Outcome
    criterion_id: str
    scenarios: list[str]
    failures_before: int
    failures_after: int
    fixed_flips: int = 0  # targeted conversations that went from fail to pass
    broken_flips: int = 0  # ... and from pass to fail
    p_value: float = 1.0  # one-sided exact sign test that the target got better
    alpha: float = ALPHA
    worse: list[MetricMove]
    better: list[MetricMove]
    cost: str
    latency: str
    lines: list[str]


def _move(metric: PairedMetric, down: bool, significant: bool) -> MetricMove:
    flips = metric.only_a + metric.only_b
    return MetricMove(
        name=metric.name,
        critical=metric.critical,
        a=metric.a_rate.short,
        b=metric.b_rate.short,
        regressions=metric.only_a,
        improvements=metric.only_b,
        significant=significant,
        clustered_p_value=metric.clustered_p_value,
        regressed=[f.conversation_id for f in metric.flips if f.direction == "regression"],
        p_value=sign_test_greater(metric.only_a if down else metric.only_b, flips),
    )


def moved_down_significantly(regressions: int, improvements: int, metrics: int, alpha: float = ALPHA) -> bool:
    """A metric got worse beyond chance: more flips to fail than to pass, one-sided exact sign test below
    alpha / metrics (Bonferroni over the metrics checked)."""
    flips = regressions + improvements
    return regressions > improvements and sign_test_greater(regressions, flips) < alpha / max(1, metrics)


def verdict_word(
    fixed: int, broken: int, after: int, moves: list[tuple[int, int]], alpha: float = ALPHA
) -> Outcome:
    """The verdict from the targeted criterion's flips (fixed: fail -> pass, broken: pass -> fail), the
    failures left after, and every paired metric's (regressions, improvements): the one rule, tested on
    planted no-op and real changes (tests/test_verdict_words.py)."""
    if any(moved_down_significantly(r, i, len(moves), alpha) for r, i in moves):
        return "broke something"
    if sign_test_greater(fixed, fixed + broken) < alpha:
        return "improved" if after else "fixed"
    return "no evidence"


def _moves(metrics: list[PairedMetric], alpha: float) -> tuple[list[MetricMove], list[MetricMove]]:
    """The metrics that moved down and up; a move down is significant below alpha / m (Bonferroni)."""
    worse, better = [], []
    for m in metrics:
        if m.only_a > m.only_b:
            worse.append(_move(m, True, moved_down_significantly(m.only_a, m.only_b, len(metrics), alpha)))
        elif m.only_b > m.only_a:
            better.append(_move(m, False, False))
    return worse, better


def _target_flips(a: RunData, b: RunData, criterion_id: str, scenarios: list[str]) -> tuple[int, int]:
    """Conversations of the proposal's scenarios judged pass or fail on the target in both runs:
    (fail -> pass, pass -> fail)."""

    def results(run: RunData) -> dict[str, str]:
        return {
            v.conversation_id: v.result
            for v in run.verdicts
            if v.criterion_id == criterion_id and v.scenario_id in scenarios and v.result in ("pass", "fail")
        }

    before, after = results(a), results(b)
    shared = before.keys() & after.keys()
    fixed = sum(before[c] == "fail" and after[c] == "pass" for c in shared)
    broken = sum(before[c] == "pass" and after[c] == "fail" for c in shared)
    return fixed, broken


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
    alpha = ALPHA
    moved_down, better = _moves(comparison.metrics, alpha)
    worse = [m for m in moved_down if m.significant]
    before, after = _failures(a, criterion_id, scenarios), _failures(b, criterion_id, scenarios)
    fixed, broken = _target_flips(a, b, criterion_id, scenarios)
    p = sign_test_greater(fixed, fixed + broken)
    verdict = verdict_word(fixed, broken, after, [(m.only_a, m.only_b) for m in comparison.metrics], alpha)
    cost, latency = cost_change(a, b)
    lines = [
        f"{criterion_id} on {', '.join(scenarios)}: {before} failures before, {after} after "
        f"({fixed} fixed, {broken} broken; one-sided sign test p={p:.3g}, α={alpha:g})"
    ]
    if verdict == "no evidence" and fixed > broken:
        lines.append(
            f"no evidence either way: {fixed} of {fixed + broken} flips went the right way, which chance alone "
            f"gives with p={p:.3g}; at least {smallest_significant_flips(alpha)} flips all one way are needed "
            "at this level (run more repeats)"
        )
    metric_level = alpha / max(1, len(comparison.metrics))
    for m in moved_down:
        label = "WORSE" if m.significant else "moved down, not significant:"
        flips = f"; flipped to fail: {', '.join(m.regressed)}" if m.regressed else ""
        lines.append(
            f"{label} {m.name}: passed {m.a} → {m.b} ({m.regressions} regressions, {m.improvements} improvements; "
            f"one-sided sign test p={m.p_value:.3g} vs {metric_level:.2g} = α/{len(comparison.metrics)}){flips}"
        )
    for m in better:
        lines.append(
            f"better {m.name}: passed {m.a} → {m.b} ({m.regressions} regressions, {m.improvements} improvements; "
            f"one-sided sign test p={m.p_value:.3g})"
        )
    if not worse:
        lines.append(
            f"nothing got significantly worse: {len(comparison.metrics)} paired metrics checked on "
            f"{plural(comparison.matched, 'conversation')}"
        )
    return ChangeVerdict(
        verdict=verdict,
        criterion_id=criterion_id,
        scenarios=scenarios,
        failures_before=before,
        failures_after=after,
        fixed_flips=fixed,
        broken_flips=broken,
        p_value=p,
        alpha=alpha,
        worse=worse,
        better=better,
        cost=cost,
        latency=latency,
        lines=[*lines, cost, latency],
    )
