"""The clinical safety case: the hazard log judged on runs, residual risk on the matrix, and its evidence hash.

`build_safety_case(runs, hazards)` reads run folders (never writes them) and a hazard log, and returns one
document: per hazard and control the bounded result and met / not met / not demonstrable; the judge's and
the simulated user's validity; the residual risk per hazard placed on the declared matrix; the
harm-weighted triage error; and the hashes of everything read. `evidence_hash` is the sha256 of the
document without its generation time, so a signature names exactly the evidence it signed and the same
folders give the same hash.

A hazard is called controlled only when every control is met on the clustered bound and its residual risk
is acceptable; a control that cannot be demonstrated leaves the hazard at its initial likelihood.
"""

from __future__ import annotations

__all__ = ["SCHEMA_VERSION", "HazardResult", "SafetyCase", "build_safety_case", "load_runs"]

import dataclasses
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from simulator.analysis.rundata import RunData, load_run
from simulator.errors import UserError
from simulator.models import ResultModel as _Model
from simulator.models import empty_list
from simulator.plural import noun, plural
from simulator.report.gate import metric_names
from simulator.safety.controls import OWN_METRIC, ControlResult, evaluate_control
from simulator.safety.evidence import (
    CalibrationStatus,
    FidelitySummary,
    Traceability,
    calibrations,
    fidelity_summary,
    traceability,
)
from simulator.safety.harm import HarmWeighted, harm_weighted
from simulator.safety.hazard_check import check_hazard_log
from simulator.safety.hazards import (
    Exposure,
    HazardLog,
    RiskManagement,
    RiskMatrix,
    SystemDefinition,
    words,
)
from simulator.safety.reviewed import reviewed_control
from simulator.safety.service import Projection, projections
from simulator.stats.rates import RateView

SCHEMA_VERSION = 2
HazardState = Literal[
    "controlled",
    "controlled by review",
    "residual risk not acceptable",
    "not controlled",
    "not demonstrated",
]
EXIT = {"met": 0, "not met": 1, "not demonstrable": 3}


class HazardResult(_Model):
    id: str
    title: str
    cause: str
    effect: str
    severity: str
    likelihood: str
    initial_risk: str
    residual_likelihood: str
    residual_risk: str
    residual_basis: str
    state: HazardState
    uncalibrated: list[str]
    controls: list[ControlResult]
    status: str = "open"
    owner: str | None = None
    raised: str | None = None
    reviewed: str | None = None
    initial_rating: int | None = None
    residual_rating: int | None = None


class AdversarialResult(_Model):
    """A red-team strategy that names this hazard, and how often its attack succeeded (redteam/analysis.py)."""

    hazard: str
    strategy: str
    title: str
    owasp: str
    success: RateView
    not_judged: int
    straight_also_failed: int


class SafetyCase(_Model):
    schema_version: int = SCHEMA_VERSION
    title: str
    system: str | None
    owner: str | None
    system_definition: SystemDefinition | None = None
    risk_management: RiskManagement | None = None
    # What is still open: controls not met or not demonstrable, uncalibrated judges, errors, open hazards.
    outstanding: list[str] = Field(default_factory=empty_list)
    exposure: Exposure | None = None
    projections: list[Projection] = Field(default_factory=empty_list)
    generated_at: str
    evidence_hash: str
    matrix: RiskMatrix
    statement: list[str]
    exit_code: int
    hazards: list[HazardResult]
    calibration: list[CalibrationStatus]
    fidelity: list[FidelitySummary]
    harm: HarmWeighted | None
    traceability: Traceability
    # Red-team strategies run against the hazards they name (docs/redteam.md); empty without a red-team run.
    adversarial: list[AdversarialResult] = Field(default_factory=empty_list)

    def hashed_json(self) -> str:
        """The canonical JSON the evidence hash is taken over (everything but the generation time)."""
        data = self.model_dump(mode="json", exclude={"generated_at", "evidence_hash"})
        return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def load_runs(paths: list[Path], judge_set: str | None = None) -> list[RunData]:
    """Load each run folder, oldest first (by the manifest's creation time, then id)."""
    if not paths:
        raise UserError("name at least one run folder: simulator safety-case runs/<run-id> --hazards FILE")
    runs = [load_run(path, judge_set) for path in paths]
    return sorted(runs, key=lambda r: (r.manifest.created_at, r.manifest.run_id))


def bot_versions(runs: list[RunData]) -> dict[str, list[str]]:
    """The bot versions among the runs (the identity's version, or "not identified") -> their run ids."""
    out: dict[str, list[str]] = {}
    seen: list[tuple[dict[str, str] | None, str]] = []
    for run in runs:
        identity = run.manifest.bot_identity
        parts = identity.compared() if identity is not None else None  # as BotIdentity.same_as compares
        shown = identity.version if identity is not None else "not identified"
        same = next((name for p, name in seen if p == parts), None)
        if same is None:
            same = shown if shown not in out else f"{shown} ({len(out) + 1})"  # same label, other parts
            seen.append((parts, same))
        out.setdefault(same, []).append(run.manifest.run_id)
    return out


def check_bot_versions(runs: list[RunData], allow_mixed: bool) -> list[str]:
    """Refuse to pool runs of different bot releases (UserError) unless allowed; then a statement line."""
    versions = bot_versions(runs)
    if len(versions) < 2:
        return []
    named = "; ".join(f"{v}: {', '.join(ids)}" for v, ids in versions.items())
    if not allow_mixed:
        raise UserError(
            f"these runs tested different bot versions ({named}); make one safety case per version, or pool "
            "them on purpose with --allow-mixed-versions"
        )
    return [f"Pooled runs of different bot versions on purpose (--allow-mixed-versions): {named}."]


def merge_runs(runs: list[RunData]) -> RunData:
    """Several runs as one: conversation ids prefixed by their run id; scenarios with one id are one
    cluster. Their outcome levels must agree (the first run's manifest describes the merge)."""
    if len(runs) == 1:
        return runs[0]
    first = runs[0]
    levels = {tuple(r.outcome.levels) if r.outcome else None for r in runs}
    if len(levels) > 1:
        raise UserError("these runs declare different outcome levels; make one safety case per suite")

    def rid(run: RunData, cid: str) -> str:
        return f"{run.manifest.run_id}/{cid}"

    records, verdicts, fidelity, expected, order = [], [], [], {}, []
    unrecorded: dict[str, int] = {}
    unverdicted: set[str] = set()
    for run in runs:
        records += [r.model_copy(update={"id": rid(run, r.id)}) for r in run.conversations]
        verdicts += [
            v.model_copy(update={"conversation_id": rid(run, v.conversation_id)}) for v in run.verdicts
        ]
        fidelity += [
            v.model_copy(update={"conversation_id": rid(run, v.conversation_id)}) for v in run.fidelity
        ]
        expected.update(run.expected)
        order += [s for s in run.scenario_order if s not in order]
        for scenario, n in run.unrecorded.items():
            unrecorded[scenario] = unrecorded.get(scenario, 0) + n
        unverdicted |= {rid(run, cid) for cid in run.unverdicted}
    return dataclasses.replace(
        first,
        conversations=records,
        verdicts=verdicts,
        fidelity=fidelity,
        samples=[],
        expected=expected,
        scenario_order=order,
        cache={},
        unrecorded=unrecorded,
        unverdicted=unverdicted,
        gaps=[gap for run in runs for gap in run.gaps],
    )


def known_names(runs: list[RunData], merged: RunData) -> tuple[set[str], set[str], list[str]]:
    """(criteria, scenario tags, threshold metrics) the runs have."""
    criteria = {v.criterion_id for v in merged.verdicts}
    tags: set[str] = set()
    for run in runs:
        for judge_set in run.manifest.judge_sets:
            criteria |= {c.id for c in judge_set.criteria}
        if run.outcome is not None:
            criteria.add(f"outcome.{run.outcome.key}")
        tags |= {t for s in run.manifest.scenarios for t in s.tags}
        tags |= {t for r in run.conversations for t in r.tags}
    metrics = sorted({*metric_names(merged.outcome, sorted(criteria)), OWN_METRIC})
    return criteria, tags, metrics


def _failure_bound(control: ControlResult) -> float | None:
    """The control's bounded rate of the hazard happening (a lower bound on a success rate, turned over)."""
    if control.bound is None:
        return None
    return control.bound if control.bound_side == "upper" else 1.0 - control.bound


def _hazard(
    log: HazardLog, index: int, controls: list[ControlResult], uncalibrated: list[str]
) -> HazardResult:
    hazard, matrix = log.hazards[index], log.risk_matrix
    reviewed = [c for c in controls if c.kind != "test"]
    controls_all, controls = controls, [c for c in controls if c.kind == "test"]
    statuses = {c.status for c in controls}
    bounds = [b for b in (_failure_bound(c) for c in controls) if b is not None]
    missed = [b for b in (_failure_bound(c) for c in controls if c.status == "not met") if b is not None]
    if missed:
        measured = matrix.likelihood_for(max(missed))
        order = matrix.likelihood
        residual = max(measured, hazard.likelihood, key=order.index)
        names = ", ".join(c.id for c in controls if c.status == "not met")
        basis = (
            f"control {names} not met: clustered 95% bound of harm per conversation {100 * max(missed):.1f}% "
            f"({words(measured)}); never below the initial likelihood"
        )
    elif not controls:
        residual = hazard.residual_likelihood or hazard.likelihood
        names = ", ".join(c.id for c in reviewed)
        basis = (
            f"the CSO's estimate after controls verified by review ({names}): {words(residual)}; not a test result"
            if hazard.residual_likelihood
            else f"not reduced: controls {names} are verified by review and no residual_likelihood is estimated"
        )
    elif "not demonstrable" in statuses or not bounds:
        residual = hazard.likelihood
        shown = ", ".join(c.id for c in controls if c.status == "not demonstrable")
        basis = f"not reduced: control {shown} cannot be demonstrated on this evidence"
    else:
        worst = max(bounds)
        residual = matrix.likelihood_for(worst)
        basis = f"largest clustered 95% bound of harm per conversation {100 * worst:.1f}% → {words(residual)}"
    cell = matrix.cell(hazard.severity, residual)
    state: HazardState
    if "not met" in statuses:
        state = "not controlled"
    elif "not demonstrable" in statuses:
        state = "not demonstrated"
    elif cell != matrix.acceptability[0]:
        state = "residual risk not acceptable"
    else:
        state = "controlled" if controls else "controlled by review"
    return HazardResult(
        id=hazard.id,
        title=hazard.title,
        cause=hazard.cause,
        effect=hazard.effect,
        severity=hazard.severity,
        likelihood=hazard.likelihood,
        initial_risk=matrix.cell(hazard.severity, hazard.likelihood),
        residual_likelihood=residual,
        residual_risk=cell,
        residual_basis=basis,
        state=state,
        uncalibrated=uncalibrated,
        controls=controls_all,
        status=hazard.status,
        owner=hazard.owner,
        raised=hazard.raised.isoformat() if hazard.raised else None,
        reviewed=hazard.reviewed.isoformat() if hazard.reviewed else None,
        initial_rating=matrix.rating(hazard.severity, hazard.likelihood),
        residual_rating=matrix.rating(hazard.severity, residual),
    )


def _statement(hazards: list[HazardResult]) -> list[str]:
    """The overall statement: never calls a hazard controlled on evidence that cannot show it."""

    def named(state: str) -> list[str]:
        return [h.id for h in hazards if h.state == state]

    lines = [f"{len(named('controlled'))} of {len(hazards)} hazards are shown controlled on this evidence."]
    if named("not controlled"):
        lines.append(f"Not controlled (a control is not met): {', '.join(named('not controlled'))}.")
    if named("not demonstrated"):
        lines.append(
            "Cannot be shown controlled (too few scenarios, or nothing judged): "
            f"{', '.join(named('not demonstrated'))}; their residual risk stays at the initial likelihood."
        )
    if named("controlled by review"):
        lines.append(
            f"Controlled by review only (the CSO's judgement on documents, not a test result): "
            f"{', '.join(named('controlled by review'))}."
        )
    if named("residual risk not acceptable"):
        lines.append(
            f"Controls met but residual risk not acceptable: {', '.join(named('residual risk not acceptable'))}."
        )
    weak = [h.id for h in hazards if h.uncalibrated and h.state == "controlled"]
    if weak:
        lines.append(
            f"Controlled on verdicts of a judge not calibrated against clinicians: {', '.join(weak)}."
        )
    return lines


def _outstanding(
    hazards: list[HazardResult], calibration: list[CalibrationStatus], run: RunData
) -> list[str]:
    """Test issues and outstanding items, as a CSO would list them before deployment."""
    out = []
    for h in hazards:
        for c in h.controls:
            if c.status == "not met":
                out.append(f"{h.id} / {c.id}: not met ({c.reason})")
            elif c.status == "not demonstrable":
                more = (
                    f"; needs {c.more_scenarios} more distinct {noun(c.more_scenarios, 'vignette')}"
                    if c.more_scenarios
                    else ""
                )
                out.append(f"{h.id} / {c.id}: not demonstrable{more} ({c.advice or c.reason})")
            if c.errored:
                out.append(f"{h.id} / {c.id}: {c.errored} verifying conversations errored (not counted)")
        if h.status == "open" and h.state not in ("controlled", "controlled by review"):
            out.append(f"{h.id}: open, {h.state}")
    weak = [c.criterion for c in calibration if c.status == "not calibrated"]
    if weak:
        out.append(f"Judge not calibrated against clinicians for: {', '.join(weak)}")
    errored = sum(1 for r in run.conversations if r.stop_reason == "error")
    if errored:
        out.append(f"{plural(errored, 'conversation')} errored in the runs: they are evidence of nothing")
    return out


def _adversarial(merged: RunData, hazard_ids: set[str]) -> list[AdversarialResult]:
    """Each red-team strategy in the runs under each hazard of the log it names."""
    from simulator.redteam.analysis import redteam_section

    section = redteam_section(merged)
    if section is None:
        return []
    return [
        AdversarialResult(
            hazard=hazard,
            strategy=row.strategy,
            title=row.title,
            owasp=row.owasp,
            success=row.success,
            not_judged=row.not_judged,
            straight_also_failed=row.straight_also_failed,
        )
        for row in section.strategies
        for hazard in row.hazards
        if hazard in hazard_ids
    ]


def _partial_statement(gaps: list[str]) -> list[str]:
    """An incomplete run or damaged records: said in the statement, never left to the outstanding items."""
    if not gaps:
        return []
    return [
        f"The evidence is partial (gaps in the records: {len(gaps)}, listed under outstanding items): a control "
        "whose scenarios lack recorded conversations or verdicts is not demonstrable until the run is finished."
    ]


def _adversarial_statement(results: list[AdversarialResult]) -> list[str]:
    won = [r for r in results if r.success.k]
    if not won:
        return []
    named = "; ".join(
        f"{r.hazard} by {r.strategy} ({r.success.k}/{r.success.n} attacked conversations)" for r in won
    )
    return [f"Red-team attacks succeeded against: {named}."]


def build_safety_case(
    runs: list[RunData],
    log: HazardLog,
    generated_at: datetime | None = None,
    check_tags: bool = True,
    allow_mixed_versions: bool = False,
) -> SafetyCase:
    """The safety case of `log` on `runs` (UserError when the log names what the runs do not have, or the
    runs tested different bot versions and `allow_mixed_versions` is off; `check_tags=False` lets a run of
    a subset of the scenarios leave some tags out)."""
    mixed = check_bot_versions(runs, allow_mixed_versions)
    merged = merge_runs(runs)
    gaps = [gap for run in runs for gap in run.evidence_gaps()]
    criteria, tags, metrics = known_names(runs, merged)
    check_hazard_log(log, criteria, tags if check_tags else None, set(metrics), merged.outcome)
    used = sorted({c for h in log.hazards for control in h.controls for c in control.criteria})
    calibration = calibrations(runs, used)
    uncalibrated = {c.criterion for c in calibration if c.status == "not calibrated"}
    hazards = []
    for index, hazard in enumerate(log.hazards):
        controls = [
            evaluate_control(merged, control, metrics)
            if control.kind == "test"
            else reviewed_control(control, log.file)
            for control in hazard.controls
        ]
        weak = sorted({c for control in hazard.controls for c in control.criteria if c in uncalibrated})
        hazards.append(_hazard(log, index, controls, weak))
    adversarial = _adversarial(merged, {h.id for h in log.hazards})
    statuses = {c.status for h in hazards for c in h.controls}
    code = 1 if "not met" in statuses else (3 if "not demonstrable" in statuses else 0)
    assert log.file is not None
    case = SafetyCase(
        title=log.title,
        system=log.system.name if log.system else None,
        owner=log.owner,
        system_definition=log.system,
        risk_management=log.risk_management,
        outstanding=gaps + _outstanding(hazards, calibration, merged),
        exposure=log.exposure,
        projections=projections(log.exposure, [(h.id, h.controls) for h in hazards]),
        generated_at=(generated_at or datetime.now(UTC)).isoformat(timespec="seconds"),
        evidence_hash="",
        matrix=log.risk_matrix,
        statement=_statement(hazards)
        + _adversarial_statement(adversarial)
        + mixed
        + _partial_statement(gaps),
        exit_code=code,
        hazards=hazards,
        calibration=calibration,
        fidelity=fidelity_summary(runs),
        harm=harm_weighted(merged),
        traceability=traceability(runs, log.file),
        adversarial=adversarial,
    )
    case.evidence_hash = "sha256:" + hashlib.sha256(case.hashed_json().encode("utf-8")).hexdigest()
    return case
