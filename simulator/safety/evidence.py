"""What a safety case rests on: how valid the measurement is, and the hashes of everything it read.

Measurement validity: a control "verified" by an LLM judge is only as good as the judge. Each verifying
criterion shows the judge's meta-evaluation against human labellers (analysis/meta_eval.py: false-pass
rate, macro-F1, kappa, labellers, items) or says "not calibrated"; a code check needs no judge. The
simulated user's fidelity (analysis/fidelity.py) is shown beside it.

Traceability: run ids, suite hash, scenario and criterion file hashes, bot and model ids, package version,
git commit, judge set hash, the hazard log's and each labels file's hash. Nothing here depends on the time
the document is made, so the same folders give the same document.
"""

from __future__ import annotations

__all__ = [
    "CalibrationStatus",
    "FidelitySummary",
    "Traceability",
    "calibrations",
    "fidelity_summary",
    "traceability",
]

import hashlib
from pathlib import Path
from typing import Literal

from pydantic import Field

from simulator.analysis.fidelity import simulated_user_section
from simulator.analysis.meta_eval import MetaGroup, meta_evaluate
from simulator.analysis.outcome import outcome_source
from simulator.analysis.rundata import RunData
from simulator.errors import UserError
from simulator.models import ResultModel as _Model
from simulator.models import empty_dict, empty_list
from simulator.stats.rates import RateView

REPLICATES = 400  # bootstrap replicates of the meta-evaluation (seeded: the same document every time)


class CalibrationStatus(_Model):
    """One verifying criterion: is its judge known to agree with clinicians?"""

    criterion: str
    status: Literal["calibrated", "not calibrated", "checked in code"]
    severity: str | None = None
    run_id: str | None = None
    labellers: list[str] = Field(default=[])
    items: int = 0
    false_pass: float | None = None  # the worst over labellers: share of a labeller's fails the judge passed
    false_passes: int = 0
    reference_fails: int = 0
    macro_f1: float | None = None
    kappa: float | None = None
    kappa_note: str = ""  # why kappa is low or n/a beside the agreement (one class only, prevalence)


class FidelitySummary(_Model):
    """The simulated user's fidelity over the runs (unit: audited conversations)."""

    run_id: str
    audited: int
    faulted: RateView | None
    checks: dict[str, str]
    regenerations: int


class RunTrace(_Model):
    """One run as the document read it."""

    run_id: str
    status: str
    created_at: str
    suite: str | None
    suite_hash: str | None
    bot: str
    # The release of the bot tested (config/bot_identity.py): shown version and how it was identified.
    bot_version: str | None = None
    bot_identity: dict[str, str] = Field(default_factory=empty_dict)
    user_model: str
    judge_model: str | None
    package_version: str
    git_commit: str | None  # the simulator's
    suite_git_commit: str | None = None  # the suite's checkout
    judge_set: str | None
    # What the run's outcome figures rest on: its outcome sources in order (docs/outcome-sources.md).
    outcome_source: list[str] = Field(default_factory=empty_list)
    conversations: int
    scenario_files: dict[str, str | None]
    criterion_files: dict[str, str | None]
    labels_sha256: str | None


class Traceability(_Model):
    hazard_log: str
    hazard_log_sha256: str
    runs: list[RunTrace]


def _is_code(run: RunData, criterion: str) -> bool:
    kinds = {v.kind for v in run.verdicts if v.criterion_id == criterion}
    return criterion.startswith("outcome.") or (bool(kinds) and kinds <= {"code", "metric"})


def _from_group(criterion: str, run_id: str, group: MetaGroup) -> CalibrationStatus:
    worst = max(group.judge, key=lambda p: p.false_pass.value or 0.0, default=None)
    f1 = group.judge_macro_f1.value
    kappas = [p.kappa.value for p in group.judge if p.kappa.value is not None]
    return CalibrationStatus(
        criterion=criterion,
        status="calibrated",
        severity=group.severity,
        run_id=run_id,
        labellers=list(group.labellers),
        items=group.items,
        false_pass=worst.false_pass.value if worst else None,
        false_passes=sum(p.false_passes for p in group.judge),
        reference_fails=sum(p.reference_fails for p in group.judge),
        macro_f1=f1,
        kappa=sum(kappas) / len(kappas) if kappas else None,
        kappa_note=next((p.kappa_note for p in group.judge if p.kappa_note), ""),
    )


def calibrations(runs: list[RunData], criteria: list[str]) -> list[CalibrationStatus]:
    """One row per criterion, from the first run whose labels cover it; code checks need no judge."""
    groups: dict[str, tuple[str, MetaGroup]] = {}
    for run in runs:
        if not run.labels:
            continue
        try:
            meta = meta_evaluate(run, replicates=REPLICATES, seed=0)
        except UserError:
            continue
        for group in meta.criteria:
            if group.judge:
                groups.setdefault(group.name, (run.manifest.run_id, group))
    rows = []
    for criterion in criteria:
        if any(_is_code(run, criterion) for run in runs):
            rows.append(CalibrationStatus(criterion=criterion, status="checked in code"))
        elif criterion in groups:
            rows.append(_from_group(criterion, *groups[criterion]))
        else:
            rows.append(CalibrationStatus(criterion=criterion, status="not calibrated"))
    return rows


def fidelity_summary(runs: list[RunData]) -> list[FidelitySummary]:
    out = []
    for run in runs:
        section = simulated_user_section(run)
        if section is None:
            out.append(
                FidelitySummary(
                    run_id=run.manifest.run_id, audited=0, faulted=None, checks={}, regenerations=0
                )
            )
            continue
        out.append(
            FidelitySummary(
                run_id=run.manifest.run_id,
                audited=section.audited,
                faulted=section.faulted,
                checks={
                    c.id: f"{c.counts.failed}/{c.counts.passed + c.counts.failed} failed"
                    for c in section.checks
                },
                regenerations=section.regenerations,
            )
        )
    return out


def _trace(run: RunData) -> RunTrace:
    manifest = run.manifest
    judge_set = next((s for s in manifest.judge_sets if s.hash == run.judge_set), manifest.judge_set)
    return RunTrace(
        run_id=manifest.run_id,
        status=manifest.status,
        created_at=manifest.created_at.isoformat(),
        suite=manifest.suite.name if manifest.suite is not None else None,
        suite_hash=manifest.suite_hash,
        bot=manifest.models.bot,
        bot_version=manifest.bot_identity.version if manifest.bot_identity else None,
        bot_identity=dict(manifest.bot_identity.parts) if manifest.bot_identity else {},
        user_model=manifest.models.user,
        judge_model=manifest.models.judge,
        package_version=manifest.package_version,
        git_commit=manifest.git_commit,
        suite_git_commit=manifest.suite_git_commit,
        judge_set=run.judge_set,
        outcome_source=outcome_source(run),
        conversations=len(run.conversations),
        scenario_files={s.id: s.sha256 for s in sorted(manifest.scenarios, key=lambda s: s.id)},
        criterion_files={c.id: c.sha256 for c in sorted(judge_set.criteria, key=lambda c: c.id)}
        if judge_set
        else {},
        labels_sha256=run.labels_sha256,
    )


def traceability(runs: list[RunData], hazard_file: Path) -> Traceability:
    return Traceability(
        hazard_log=hazard_file.name,
        hazard_log_sha256="sha256:" + hashlib.sha256(hazard_file.read_bytes()).hexdigest(),
        runs=[_trace(run) for run in runs],
    )
