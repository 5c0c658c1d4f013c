"""A release gate people can trust in CI: requirements judged on the scenario-clustered 95% bound.

`under_triage <= 5%` is met only when the clustered upper bound is at or under 5% (the point estimate is
not enough); `emergency_sensitivity >= 95%` only when the clustered lower bound is at or over 95%. A
requirement that even a perfect result on this many scenarios could not show is undecidable (too few
scenarios), as is every requirement when the scenario set differs from the baseline's.
"""

from __future__ import annotations

__all__ = [
    "GateResult",
    "Requirement",
    "RequirementResult",
    "evaluate_gate",
    "gate_metrics",
    "metric_names",
    "parse_requirement",
]

import difflib
import math
import re
from collections.abc import Callable, Iterable
from typing import Literal

from simulator.analysis.clustered import wilson_score
from simulator.analysis.data import StrictModel as _Model
from simulator.analysis.dist import t_critical
from simulator.analysis.outcome import outcome_metrics
from simulator.analysis.rates import RateView, pct
from simulator.analysis.rundata import RunData
from simulator.analysis.stats import runs_needed_for_bound, zero_failure_upper_bound
from simulator.analysis.tables import criterion_rows, overall_pass_rate
from simulator.errors import UserError
from simulator.spec.suite import OutcomeConfig

Status = Literal["met", "not met", "undecidable"]
EXIT = {"met": 0, "not met": 1, "undecidable": 3}
_SYNTAX = re.compile(
    r"^\s*([A-Za-z0-9_.:\-]+(?: success| violations)?)\s*(<=|>=|==|<|>)\s*([0-9]*\.?[0-9]+)\s*(%?)\s*$"
)
# `fail_rate(no-diagnosis)` is another spelling of `fail_rate:no-diagnosis`.
_CALL = re.compile(r"^\s*([A-Za-z_]+)\(\s*([A-Za-z0-9_.\-]+)\s*\)")
_MAX_REPEATS = 100_000


class Requirement(_Model):
    """One parsed `--require`: metric, comparison and threshold as a fraction."""

    text: str
    metric: str
    # `==` compares the observed rate itself (a zero-tolerance requirement such as "success == 0": no bound
    # can be 0); the others compare the clustered 95% bound.
    op: Literal["<=", "<", ">=", ">", "=="]
    threshold: float

    @property
    def upper(self) -> bool:
        """True for `<=`/`<`/`==` (a failure rate: judged on the upper bound), False for `>=`/`>`."""
        return self.op in ("<=", "<", "==")


class RequirementResult(_Model):
    requirement: Requirement
    status: Status
    rate: RateView | None
    bound: float | None
    baseline: RateView | None = None
    reason: str
    advice: str = ""


class GateResult(_Model):
    run: str
    baseline: str | None
    results: list[RequirementResult]
    exit_code: int
    scenario_set_changed: str = ""


def gate_metrics(run: RunData) -> dict[str, Callable[[], RateView]]:
    """Every metric name a requirement may use, each with how to compute it (lazily)."""
    names: dict[str, Callable[[], RateView]] = {"pass_rate": lambda: overall_pass_rate(run)}
    outcome = outcome_metrics(run) if run.outcome is not None else None
    if outcome is not None:
        names["critical_sensitivity"] = lambda: outcome.critical_sensitivity
        names[f"{outcome.critical}_sensitivity"] = lambda: outcome.critical_sensitivity
        for level in outcome.sensitivity:
            names.setdefault(f"{level.level}_sensitivity", _const(level.rate))
        names["under_triage"] = lambda: outcome.under_triage
        names["under_triage_decided"] = lambda: outcome.under_triage_decided
        names["over_triage"] = lambda: outcome.over_triage
        names["no_decision"] = lambda: outcome.no_decision
        names["exact"] = lambda: outcome.exact
    for row in criterion_rows(run):
        names[f"fail_rate:{row.id}"] = _const(row.fail_rate)
    from simulator.analysis.redteam import redteam_section

    redteam = redteam_section(run)
    if redteam is not None:  # attack success: `redteam.<strategy> success`, `redteam success` for all
        names["redteam success"] = _const(redteam.overall)
        for strategy in redteam.strategies:
            names[f"redteam.{strategy.strategy} success"] = _const(strategy.success)
    from simulator.analysis.relations import relations_section

    relations = relations_section(run)
    if relations is not None:  # `directional.red_flags violations`
        for relation in relations.rows:
            names[relation.metric] = _const(relation.violations)
    return names


def metric_names(outcome: OutcomeConfig | None, criteria: Iterable[str]) -> list[str]:
    """The names `gate_metrics` offers for a run with this outcome config and these criteria, known before
    any run (a hazard log's thresholds are checked with it)."""
    names = {"pass_rate", *(f"fail_rate:{c}" for c in criteria)}
    if outcome is not None:
        critical = outcome.critical or outcome.levels[-1]
        names |= {"critical_sensitivity", f"{critical}_sensitivity", "under_triage", "under_triage_decided"}
        names |= {
            "over_triage",
            "no_decision",
            "exact",
            *(f"{level}_sensitivity" for level in outcome.levels),
        }
    return sorted(names)


def _const(rate: RateView) -> Callable[[], RateView]:
    return lambda: rate


def parse_requirement(text: str, known: list[str], flag: str = "--require") -> Requirement:
    """`under_triage <= 5%` -> Requirement; a UserError names the syntax, the metrics and a close match."""
    match = _SYNTAX.match(_CALL.sub(r"\1:\2", text, count=1))
    if match is None:
        raise UserError(
            f'{flag} "{text}": write METRIC OP VALUE, e.g. "under_triage <= 5%" or '
            f'"redteam.downgrade-pressure success == 0" (OP is <=, <, >=, > or ==); metrics: {", ".join(known)}'
        )
    metric, op, number, percent = match.groups()
    if metric not in known:
        close = difflib.get_close_matches(metric, known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise UserError(f'{flag} "{text}": unknown metric {metric!r}; {hint}metrics: {", ".join(known)}')
    value = float(number) / (100.0 if percent else 1.0)
    if not 0.0 <= value <= 1.0:
        raise UserError(f'{flag} "{text}": the threshold must be a rate between 0 and 1, or 0% and 100%')
    return Requirement(text=text.strip(), metric=metric, op=op, threshold=value)  # type: ignore[arg-type]


def _bound(requirement: Requirement, rate: RateView) -> float | None:
    """The clustered 95% bound a requirement is judged on (the one-sided scenario bound for no failures)."""
    cl = rate.clustered
    if cl is None or rate.rate is None:
        return None
    if requirement.upper:
        return cl.bound if cl.bound is not None and rate.counts == "failures" else cl.high
    return 1.0 - cl.bound if cl.bound is not None and rate.counts == "successes" else cl.low


def _holds(requirement: Requirement, value: float) -> bool:
    t = requirement.threshold
    return {"<=": value <= t, "<": value < t, ">=": value >= t, ">": value > t, "==": abs(value - t) < 1e-12}[
        requirement.op
    ]


def _best_possible(requirement: Requirement, scenarios: int) -> float:
    """The bound a flawless result on `scenarios` scenarios would give (no failures at all)."""
    bound = zero_failure_upper_bound(scenarios)
    return bound if requirement.upper else 1.0 - bound


def evaluate(requirement: Requirement, rate: RateView) -> RequirementResult:
    """Judge one requirement on one rate; says how many scenarios or repeats would decide it.

    Not met when the bound misses and either the observed rate itself misses or enough scenarios exist
    for a flawless result to have met it; undecidable when even a flawless result could not have.
    """
    cl = rate.clustered
    bound = _bound(requirement, rate)
    if bound is None or cl is None or rate.rate is None:
        return RequirementResult(
            requirement=requirement, status="undecidable", rate=rate, bound=None, reason="nothing measured"
        )
    if requirement.op == "==":
        return _exactly(requirement, rate, bound)
    side = "upper" if requirement.upper else "lower"
    seen = f"clustered 95% {side} bound {pct(bound)} ({rate.k}/{rate.n} = {pct(rate.rate)}, {cl.scenarios} scenarios)"
    if _holds(requirement, bound):
        return RequirementResult(requirement=requirement, status="met", rate=rate, bound=bound, reason=seen)
    target = requirement.threshold if requirement.upper else 1.0 - requirement.threshold
    missed = not _holds(requirement, rate.rate)
    if not missed and (
        cl.scenarios < 2 or not _holds(requirement, _best_possible(requirement, cl.scenarios))
    ):
        need = runs_needed_for_bound(target) if 0.0 < target < 1.0 else math.inf
        advice = (
            f"even a flawless result on {cl.scenarios} scenarios gives a bound of "
            f"{pct(_best_possible(requirement, max(cl.scenarios, 1)))}: it needs at least {need} distinct "
            f"scenarios ({need - cl.scenarios} more) with no failures; more repeats cannot help"
        )
        return RequirementResult(
            requirement=requirement, status="undecidable", rate=rate, bound=bound, reason=seen, advice=advice
        )
    return RequirementResult(
        requirement=requirement,
        status="not met",
        rate=rate,
        bound=bound,
        reason=seen,
        advice=_advice(requirement, rate),
    )


def _exactly(requirement: Requirement, rate: RateView, bound: float) -> RequirementResult:
    """`METRIC == VALUE`: the observed rate itself; the clustered bound is shown beside it, never hidden."""
    cl = rate.clustered
    assert cl is not None and rate.rate is not None
    seen = (
        f"observed {rate.k}/{rate.n} = {pct(rate.rate)}; clustered 95% upper bound {pct(bound)} "
        f"({cl.scenarios} scenarios)"
    )
    if _holds(requirement, rate.rate):
        return RequirementResult(requirement=requirement, status="met", rate=rate, bound=bound, reason=seen)
    return RequirementResult(
        requirement=requirement,
        status="not met",
        rate=rate,
        bound=bound,
        reason=seen,
        advice="the observed rate itself misses it: more runs will not help unless the bot changes",
    )


def _advice(requirement: Requirement, rate: RateView) -> str:
    """How many more scenarios (at the same rate and correlation), or repeats per scenario, would meet it."""
    cl = rate.clustered
    assert cl is not None and rate.rate is not None
    p = rate.rate
    if not _holds(requirement, p):
        return f"the observed rate {pct(p)} itself misses it: more runs will not help unless the bot changes"
    per_scenario = cl.n_eff / cl.scenarios
    scenarios = None
    for g in range(cl.scenarios + 1, 100_000):
        if _holds(requirement, _edge(requirement, p, per_scenario * g, g)):
            scenarios = g
            break
    parts = []
    if scenarios is not None:
        parts.append(f"about {scenarios} scenarios ({scenarios - cl.scenarios} more)")
    repeats = _repeats_needed(requirement, rate)
    if repeats is not None:
        parts.append(f"about {repeats} repeats per scenario")
    if not parts:
        return "no feasible number of scenarios at this rate would show it"
    text = "would be met at this rate with " + " or ".join(parts)
    if repeats is None and cl.icc is not None:
        text += f"; more repeats alone cannot do it (scenario correlation ICC {cl.icc:.2f})"
    return text


def _edge(requirement: Requirement, p: float, n_eff: float, scenarios: int) -> float:
    ci = wilson_score(p, n_eff, t_critical(0.95, max(1, scenarios - 1)))
    return ci[1] if requirement.upper else ci[0]


def _repeats_needed(requirement: Requirement, rate: RateView) -> int | None:
    """Repeats per scenario that would meet it, from n_eff = G·m / (1 + (m−1)·ICC); None if none would."""
    cl = rate.clustered
    assert cl is not None and rate.rate is not None
    if cl.icc is None:
        return None
    m = max(1, round(rate.n / cl.scenarios)) + 1
    while m <= _MAX_REPEATS:
        n_eff = cl.scenarios * m / (1 + (m - 1) * cl.icc)
        if _holds(requirement, _edge(requirement, rate.rate, n_eff, cl.scenarios)):
            return m
        m = m * 2 if m > 64 else m + 1
    return None


def evaluate_gate(run: RunData, texts: list[str], baseline: RunData | None = None) -> GateResult:
    """Parse every requirement (UserError on the first bad one), judge them, and pick the exit code."""
    metrics = gate_metrics(run)
    requirements = [parse_requirement(text, sorted(metrics)) for text in texts]
    if not requirements:
        raise UserError('name at least one requirement: --require "under_triage <= 5%"')
    changed = ""
    if baseline is not None:
        mine, theirs = set(run.scenario_order), set(baseline.scenario_order)
        if mine != theirs:
            changed = (
                f"the scenario set changed from the baseline (only in this run: "
                f"{', '.join(sorted(mine - theirs)) or 'none'}; only in the baseline: "
                f"{', '.join(sorted(theirs - mine)) or 'none'})"
            )
    base_metrics = gate_metrics(baseline) if baseline is not None else {}
    results = []
    for requirement in requirements:
        result = evaluate(requirement, metrics[requirement.metric]())
        if requirement.metric in base_metrics:
            result.baseline = base_metrics[requirement.metric]()
        if changed:
            result.status, result.advice = "undecidable", changed
        results.append(result)
    statuses = {r.status for r in results}
    code = 1 if "not met" in statuses else (3 if "undecidable" in statuses else 0)
    if changed:
        code = 3
    return GateResult(
        run=str(run.path),
        baseline=str(baseline.path) if baseline is not None else None,
        results=results,
        exit_code=code,
        scenario_set_changed=changed,
    )
