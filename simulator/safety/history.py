"""The trend: key rates and each hazard's bound across runs of one suite, in time order, with the paired test.

"We know how often this goes wrong, and it's going down" needs three things this module keeps: every
point's interval (scenario-clustered, as everywhere), the scenario set per point (its ids and file hashes:
a changed set starts a new series and is never silently joined to the old one), and between consecutive
runs on the same scenario set the paired, clustered test of `simulator compare` (analysis/compare.py).
"""

from __future__ import annotations

__all__ = ["History", "HistoryPoint", "build_history", "build_history_loaded"]

import hashlib
from pathlib import Path

from pydantic import Field

from simulator.analysis.compare import compare_loaded
from simulator.analysis.outcome import outcome_source
from simulator.analysis.rundata import RunData, load_run
from simulator.errors import UserError
from simulator.models import ResultModel as _Model
from simulator.models import empty_list
from simulator.report.gate import gate_metrics
from simulator.safety.case import build_safety_case
from simulator.safety.harm import harm_weighted
from simulator.safety.hazards import HazardLog
from simulator.stats.rates import RateView

# The key rates, in the order shown; a run without outcome levels has only the pass rate.
HISTORY_METRICS = ["pass_rate", "under_triage", "critical_sensitivity", "over_triage"]
TESTS = ("conversation passes", "outcome: not under-triaged")


class HazardPoint(_Model):
    """One hazard in one run: its largest bounded rate of harm per conversation, and its state."""

    bound: float | None
    state: str


class HistoryPoint(_Model):
    run_id: str
    created_at: str
    suite_hash: str | None
    scenario_set: str
    series: int
    changed: str
    conversations: int
    rates: dict[str, RateView]
    harm_per_1000: float | None = None
    harm_low: float | None = None
    harm_high: float | None = None
    hazards: dict[str, HazardPoint] = Field(default={})
    # The release of the bot tested (config/bot_identity.py), and who signed a safety case of this run.
    bot_version: str | None = None
    signed: list[str] = Field(default=[])
    # What the run's outcome rates rest on: its outcome sources in order (docs/outcome-sources.md).
    outcome_source: list[str] = Field(default_factory=empty_list)


class PairedTest(_Model):
    name: str
    pairs: int
    regressions: int
    improvements: int
    scenarios_worse: int
    scenarios_better: int
    clustered_p_value: float
    change: str


class HistoryStep(_Model):
    """From one run to the next: the paired test when they share a scenario set, else why not."""

    a: str
    b: str
    comparable: bool
    reason: str
    tests: list[PairedTest]


class History(_Model):
    suite: str
    metrics: list[str]
    points: list[HistoryPoint]
    steps: list[HistoryStep]


def _scenario_set(run: RunData) -> str:
    """A hash of the scenario ids and their file hashes: the unit of comparability."""
    entries = sorted((s.id, s.sha256 or "") for s in run.manifest.scenarios)
    if not entries:
        entries = [(s, "") for s in sorted(set(run.scenario_order))]
    text = "\n".join(f"{i} {h}" for i, h in entries)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _set_change(a: RunData, b: RunData) -> str:
    old = {s.id: s.sha256 for s in a.manifest.scenarios} or dict.fromkeys(a.scenario_order)
    new = {s.id: s.sha256 for s in b.manifest.scenarios} or dict.fromkeys(b.scenario_order)
    added, removed = sorted(set(new) - set(old)), sorted(set(old) - set(new))
    edited = sorted(i for i in set(old) & set(new) if old[i] != new[i])
    parts = [
        f"{label}: {', '.join(ids)}"
        for label, ids in (("added", added), ("removed", removed), ("edited", edited))
        if ids
    ]
    return "scenario set changed (" + "; ".join(parts) + ")" if parts else ""


def _hazards(run: RunData, log: HazardLog | None) -> dict[str, HazardPoint]:
    if log is None:
        return {}
    case = build_safety_case([run], log, check_tags=False)
    out = {}
    for hazard in case.hazards:
        bounds = [
            c.bound if c.bound_side == "upper" else 1.0 - c.bound
            for c in hazard.controls
            if c.bound is not None
        ]
        out[hazard.id] = HazardPoint(bound=max(bounds) if bounds else None, state=hazard.state)
    return out


def _point(run: RunData, series: int, changed: str, log: HazardLog | None) -> HistoryPoint:
    metrics = gate_metrics(run)
    harm = harm_weighted(run)
    return HistoryPoint(
        run_id=run.manifest.run_id,
        created_at=run.manifest.created_at.isoformat(timespec="seconds"),
        suite_hash=run.manifest.suite_hash,
        scenario_set=_scenario_set(run),
        series=series,
        changed=changed,
        conversations=len(run.conversations),
        rates={name: metrics[name]() for name in HISTORY_METRICS if name in metrics},
        harm_per_1000=harm.per_1000 if harm and harm.declared else None,
        harm_low=harm.low_per_1000 if harm and harm.declared else None,
        harm_high=harm.high_per_1000 if harm and harm.declared else None,
        hazards=_hazards(run, log),
        bot_version=run.manifest.bot_identity.version if run.manifest.bot_identity else None,
        outcome_source=outcome_source(run),
    )


def _step(a: RunData, b: RunData, changed: str) -> HistoryStep:
    ids = (a.manifest.run_id, b.manifest.run_id)
    if changed:
        return HistoryStep(a=ids[0], b=ids[1], comparable=False, reason=f"not compared: {changed}", tests=[])
    comparison = compare_loaded(a, b)
    tests = [
        PairedTest(
            name=m.name,
            pairs=m.pairs,
            regressions=m.only_a,
            improvements=m.only_b,
            scenarios_worse=m.scenarios_worse,
            scenarios_better=m.scenarios_better,
            clustered_p_value=m.clustered_p_value,
            change=m.change,
        )
        for m in comparison.metrics
        if m.name in TESTS or m.name.endswith(" escalated")
    ]
    reason = "same scenario set"
    sources = [", ".join(outcome_source(run)) for run in (a, b)]
    if sources[0] != sources[1]:
        reason += (
            f"; outcome read from {sources[0]}, then {sources[1]}: a change may be the reading, not the bot"
        )
    return HistoryStep(a=ids[0], b=ids[1], comparable=True, reason=reason, tests=tests)


def build_history_loaded(runs: list[RunData], log: HazardLog | None = None) -> History:
    """The history of runs already loaded (any order): sorted by creation time, one series per scenario set."""
    if not runs:
        raise UserError("name at least one run folder: simulator history runs/<id> runs/<id> ...")
    ordered = sorted(runs, key=lambda r: (r.manifest.created_at, r.manifest.run_id))
    suites = sorted({r.manifest.suite.name for r in ordered if r.manifest.suite is not None})
    points, steps, series = [], [], 1
    for index, run in enumerate(ordered):
        changed = ""
        if index:
            previous = ordered[index - 1]
            changed = _set_change(previous, run)
            series += int(bool(changed))
            steps.append(_step(previous, run, changed))
        points.append(_point(run, series, changed, log))
    metrics = [m for m in HISTORY_METRICS if any(m in p.rates for p in points)]
    return History(suite=", ".join(suites) or "(unnamed)", metrics=metrics, points=points, steps=steps)


def mark_signed(history: History, signoffs: list[tuple[list[str], str]]) -> History:
    """Each point with who signed a safety case of its run: (runs, "name: decision") per sign-off."""
    for point in history.points:
        point.signed = [who for runs, who in signoffs if point.run_id in runs]
    return history


def build_history(paths: list[Path], log: HazardLog | None = None) -> History:
    """`simulator history RUN...`: load each run folder (read only) and build the history."""
    return build_history_loaded([load_run(path) for path in paths], log)
