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
    "evaluate_gate",
    "gate_metrics",
    "metric_names",
    "outcome_metric_names",
    "parse_requirement",
]

import re
from collections.abc import Callable, Iterable
from typing import Literal

from pydantic import Field

from simulator.analysis.outcome import outcome_metrics, outcome_source
from simulator.analysis.rundata import RunData
from simulator.analysis.tables import criterion_rows, overall_pass_rate
from simulator.config.suite import OutcomeConfig
from simulator.errors import UserError, did_you_mean, hint_then
from simulator.models import StrictModel as _Model
from simulator.models import empty_list
from simulator.plural import plural
from simulator.report.analyses import all_analyses
from simulator.report.model import ReportOptions
from simulator.stats.basic import zero_failure_upper_bound
from simulator.stats.clustered import decision_bound
from simulator.stats.projection import Observed, repeats_needed, scenarios_needed
from simulator.stats.rates import RateView, pct

Status = Literal["met", "not met", "undecidable"]
EXIT = {"met": 0, "not met": 1, "undecidable": 3}
_SYNTAX = re.compile(
    r"^\s*([^\s<>=]+(?: success| violations)?)\s*(<=|>=|==|<|>)\s*([+-]?[0-9]*\.?[0-9]+)\s*(%?)\s*$"
)
# `fail_rate(no-diagnosis)` is another spelling of `fail_rate:no-diagnosis`.
_CALL = re.compile(r"^\s*([A-Za-z_]+)\(\s*([A-Za-z0-9_.\-]+)\s*\)")


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
    # Extra scenarios that would meet it, projected from the bound that decided: like the observed ones
    # (same rate and spread), or never failing. None when met, or when no number would do.
    more_scenarios: int | None = None
    more_clean_scenarios: int | None = None


class GateResult(_Model):
    run: str
    baseline: str | None
    results: list[RequirementResult]
    exit_code: int
    scenario_set_changed: str = ""
    # What the outcome metrics rest on: the run's outcome sources in order (docs/outcome-sources.md).
    outcome_source: list[str] = Field(default_factory=empty_list)
    # What the run's records lack (an interrupted run, a torn line, conversations without verdicts): the
    # rates leave it out, and the gate says so (`RunData.evidence_gaps`).
    incomplete: list[str] = Field(default_factory=empty_list)


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
        if outcome.red_flag_under_triage is not None:  # conversations without a scenario, held to red flags
            names["red_flag_under_triage"] = _const(outcome.red_flag_under_triage)
    for row in criterion_rows(run):
        names[f"fail_rate:{row.id}"] = _const(row.fail_rate)
    for analysis in all_analyses():  # registered analyses name their own: `redteam success`, relations...
        if analysis.metrics is not None and analysis.build is not None:
            data = analysis.build(run, ReportOptions())
            if data is not None:
                names.update({name: _const(value) for name, value in analysis.metrics(data).items()})
    return names


def metric_names(outcome: OutcomeConfig | None, criteria: Iterable[str]) -> list[str]:
    """The names `gate_metrics` offers for a run with this outcome config and these criteria, known before
    any run (a hazard log's thresholds are checked with it)."""
    names = {"pass_rate", *(f"fail_rate:{c}" for c in criteria)}
    return sorted(names | outcome_metric_names(outcome))


def outcome_metric_names(outcome: OutcomeConfig | None) -> set[str]:
    """The metrics computed from the decided outcome (the final state and its sources), whatever verdicts
    the run holds: a hazard control thresholding one must name the outcome criterion (safety/hazard_check.py)."""
    if outcome is None:
        return set()
    critical = outcome.critical or outcome.levels[-1]
    names = {"critical_sensitivity", f"{critical}_sensitivity", "under_triage", "under_triage_decided"}
    names |= {"over_triage", "no_decision", "exact", *(f"{level}_sensitivity" for level in outcome.levels)}
    if outcome.red_flags:
        names.add("red_flag_under_triage")
    return names


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
        hint = hint_then(did_you_mean(metric, known))
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
    failures = rate.k if rate.counts == "failures" else rate.n - rate.k
    return decision_bound(
        cl.low, cl.high, cl.scenarios, failures, counts=rate.counts, upper=requirement.upper,
        confidence=rate.confidence,
    )  # fmt: skip


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
        return _with_errored(_exactly(requirement, rate, bound), requirement, rate)
    side = "upper" if requirement.upper else "lower"
    seen = f"clustered 95% {side} bound {pct(bound)} ({rate.k}/{rate.n} = {pct(rate.rate)}, {cl.scenarios} {cl.unit})"
    result = RequirementResult(requirement=requirement, status="met", rate=rate, bound=bound, reason=seen)
    if _holds(requirement, bound):
        return _with_errored(result, requirement, rate)
    if not _holds(requirement, rate.rate):
        result.status = "not met"
        result.advice = f"the observed rate {pct(rate.rate)} itself misses it: more runs will not help unless the bot changes"
        return result
    flawless = _best_possible(requirement, max(cl.scenarios, 1))
    few = cl.scenarios < 2 or not _holds(requirement, flawless)
    result.status = "undecidable" if few else "not met"
    _advise(result, requirement, rate, flawless if few else None)
    return _with_errored(result, requirement, rate)


def _with_errored(result: RequirementResult, requirement: Requirement, rate: RateView) -> RequirementResult:
    """Errored conversations are never passes or fails, and never silent: the reason counts them, and a
    "met" that the errored could flip (`RateView.errors_could_move`, and had they all gone against the
    requirement the rate itself would miss it) is undecidable until they are rerun."""
    if not rate.errored:
        return result
    result.reason += f"; {rate.errored} errored left out"
    span = rate.missing_range
    if result.status != "met" or span is None or not rate.errors_could_move:
        return result
    worst = span[1] if requirement.upper else span[0]
    if _holds(requirement, worst):
        return result
    result.status = "undecidable"
    result.reason += f", which could flip it: {rate.moved}"
    result.advice = (
        f"had the {rate.errored} errored all gone against it the rate would be {pct(worst)}: fix the errors "
        "and rerun them (simulator run --resume RUN --retry-errors)"
    )
    return result


def _advise(
    result: RequirementResult, requirement: Requirement, rate: RateView, flawless: float | None
) -> None:
    """What would decide it, from the bound that decided (stats/projection.py), each figure with the
    assumption it rests on: new scenarios like these, new scenarios that never fail, more repeats."""
    cl = rate.clustered
    assert cl is not None and rate.rate is not None
    obs = Observed.of(rate.per_scenario, rate.counts, requirement.upper, rate.confidence)

    def meets(value: float) -> bool:
        return _holds(requirement, value)

    alike = scenarios_needed(obs, meets, "alike") if rate.per_scenario else None
    clean = scenarios_needed(obs, meets, "clean") if rate.per_scenario else None
    failures = rate.k if rate.counts == "failures" else rate.n - rate.k
    result.more_scenarios, result.more_clean_scenarios = alike, clean
    g, unit, one = cl.scenarios, cl.unit, cl.unit.removesuffix("s")  # vignettes (users, in live traffic)
    lead = f"even a flawless result on {g} {unit} gives a bound of {pct(flawless)}: " if flawless else ""
    if failures == 0:  # both assumptions agree: nothing failed, nothing new fails
        if clean is None:
            result.advice = lead + f"no feasible number of {unit} would show it"
        else:
            result.advice = (
                f"{lead}it needs at least {g + clean} distinct {unit} ({clean} more) with no failures; "
                "more repeats cannot help"
            )
        return
    parts = []
    if alike is not None:
        parts.append(
            f"about {g + alike} {unit} ({alike} more) if the new ones behave like these "
            f"(rate {pct(rate.rate)}, the same spread between {unit})"
        )
    if clean is not None:
        # Reading item 13: the optimistic projection is named as the best case, after the observed-rate one.
        parts.append(f"at best {g + clean} {unit} ({clean} more), and only if none of the new ones fails")
    repeats = repeats_needed(obs, cl.icc, meets) if rate.per_scenario else None
    if repeats is not None:
        parts.append(
            f"about {plural(repeats, 'repeat')} per {one} if repeats correlate as observed (ICC {cl.icc:.2f})"
        )
    if not parts:
        result.advice = lead + f"no feasible number of {unit} at this rate would show it"
        return
    result.advice = lead + "would be met with " + ", or ".join(parts)
    if repeats is None and cl.icc is not None:
        result.advice += f"; more repeats alone cannot do it ({one} correlation ICC {cl.icc:.2f})"


def _exactly(requirement: Requirement, rate: RateView, bound: float) -> RequirementResult:
    """`METRIC == VALUE`: the observed rate itself; the clustered bound is shown beside it, never hidden."""
    cl = rate.clustered
    assert cl is not None and rate.rate is not None
    seen = (
        f"observed {rate.k}/{rate.n} = {pct(rate.rate)}; clustered 95% upper bound {pct(bound)} "
        f"({cl.scenarios} {cl.unit})"
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


def _on_incomplete_records(result: RequirementResult, run: RunData) -> None:
    """A "met" resting on a run that lacks conversations or verdicts it planned is undecidable (exit 3), as
    the safety case's control is not demonstrable: what is missing could flip it, and a gate never passes a
    release on evidence it did not see. A "not met" stays: the gate fails on what it saw."""
    result.status = "undecidable"
    result.reason += "; the run's records are incomplete (listed above), and what is missing could flip it"
    result.advice = (
        f"finish the run (simulator run --resume {run.path}; verdicts lost: simulator judge {run.path}), "
        "then gate it again"
    )


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
    gaps = run.evidence_gaps()
    results = []
    for requirement in requirements:
        result = evaluate(requirement, metrics[requirement.metric]())
        if requirement.metric in base_metrics:
            result.baseline = base_metrics[requirement.metric]()
        if changed:
            result.status, result.advice = "undecidable", changed
        elif gaps and result.status == "met":
            _on_incomplete_records(result, run)
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
        outcome_source=outcome_source(run),
        incomplete=gaps + (baseline.evidence_gaps() if baseline is not None else []),
    )
