"""Judge calibration: human labels against judge verdicts (agreement, kappa, macro-F1, false passes; the
figures and the n/a rule of analysis/agreement.py) and blind exports."""

from __future__ import annotations

__all__ = [
    "LABELS",
    "Calibration",
    "CriterionCalibration",
    "LabelRow",
    "calibrate",
    "calibrate_labels",
    "export_labels",
    "read_labels",
]

import random
from pathlib import Path
from typing import Any

from simulator.analysis.agreement import (
    LABELS,
    Panel,
    confusion,
    kappa_note,
    kappa_of,
    macro_f1_of,
    panel,
    point,
    rates_of,
)
from simulator.analysis.rundata import RunData, short_hash
from simulator.errors import UserError, did_you_mean
from simulator.models import StrictModel as _Model
from simulator.readers import InputRefused, read_csv, write_sheet
from simulator.record.folder import LABELS as LABELS_FILE
from simulator.record.label_sheet import EXPECTED_LEVEL, REQUIRED, LabelRow, read_labels
from simulator.record.selection import by_item
from simulator.record.transcript import render_transcript
from simulator.stats.rates import RateView


class LabelDisagreement(_Model):
    conversation_id: str
    human: str
    judge: str
    reasoning: str


class CriterionCalibration(_Model):
    """Agreement of one criterion's judge with the human labels; false passes come first."""

    criterion_id: str
    labelled: int
    compared: int
    no_verdict: int
    judge_errors: int
    false_pass: RateView  # human fail, judge pass: the dangerous direction
    false_fail: RateView  # human pass, judge fail
    agreement: RateView
    kappa: float | None
    macro_f1: float | None = None  # mean of the F1 for pass and for fail (analysis/agreement.py)
    kappa_note: str = ""  # why kappa is low or n/a beside the agreement (one class only, prevalence)
    matrix: dict[str, dict[str, int]]
    disagreements: list[LabelDisagreement]
    severity: str | None = None


class Calibration(_Model):
    run_id: str
    labels_file: str
    judge_set: str | None
    criteria: list[CriterionCalibration]
    overall: CriterionCalibration | None
    unknown_conversations: list[str]


def _calibrate_one(
    criterion: str, labels: list[LabelRow], verdicts: dict[tuple[str, str], Any]
) -> CriterionCalibration:
    humans, judges, disagreements = [], [], []
    no_verdict = errors = 0
    for row in labels:
        verdict = verdicts.get((row.conversation_id, row.criterion_id))
        if verdict is None:
            no_verdict += 1
            continue
        if verdict.result not in LABELS:
            errors += 1  # error / not_judged: nothing to compare, counted apart
            continue
        humans.append(row.label)
        judges.append(verdict.result)
        if row.label != verdict.result:
            disagreements.append(
                LabelDisagreement(
                    conversation_id=row.conversation_id,
                    human=row.label,
                    judge=verdict.result,
                    reasoning=verdict.reasoning,
                )
            )
    m = confusion(humans, judges)
    rates = rates_of(m)
    disagreements.sort(key=lambda d: (not (d.human == "fail" and d.judge == "pass"), d.conversation_id))
    return CriterionCalibration(
        criterion_id=criterion,
        labelled=len(labels),
        compared=len(humans),
        no_verdict=no_verdict,
        judge_errors=errors,
        false_pass=rates["false_pass"],
        false_fail=rates["false_fail"],
        agreement=rates["agreement"],
        kappa=point(kappa_of(m)),
        macro_f1=point(macro_f1_of(m)),
        kappa_note=kappa_note(m, "the humans", "the judge"),
        matrix={h: {j: int(m[a, b]) for b, j in enumerate(LABELS)} for a, h in enumerate(LABELS)},
        disagreements=disagreements,
    )


def _critical_false_passes_first(criteria: list[CriterionCalibration], run: RunData) -> None:
    """Name each criterion's severity and put critical criteria with false passes first (most first)."""
    for row in criteria:
        entry = run.manifest.criterion(row.criterion_id)
        row.severity = entry.severity if entry is not None else None
    criteria.sort(key=lambda r: (not (r.severity == "critical" and r.false_pass.k), -r.false_pass.k))


def calibrate(run: RunData, labels_path: Path, rows: list[LabelRow] | None = None) -> Calibration:
    """Compare the labels in `labels_path` (or `rows`, e.g. from labels.jsonl) with the run's verdicts, per
    criterion: the chosen judge set's, and the simulator fidelity checks'."""
    labels = read_labels(labels_path) if rows is None else rows
    if not labels:
        raise UserError(f"{labels_path}: no labelled rows yet; fill in the label column (pass, fail or n/a)")
    verdicts = by_item([*run.verdicts, *run.fidelity])
    known = {r.id for r in run.conversations}
    unknown = sorted({row.conversation_id for row in labels if row.conversation_id not in known})
    by_criterion: dict[str, list[LabelRow]] = {}
    for row in labels:
        if row.conversation_id in known:
            by_criterion.setdefault(row.criterion_id, []).append(row)
    criteria = [_calibrate_one(c, rows, verdicts) for c, rows in sorted(by_criterion.items())]
    _critical_false_passes_first(criteria, run)
    overall = None
    if len(criteria) > 1:
        overall = _calibrate_one(
            "(all criteria)", [r for rows in by_criterion.values() for r in rows], verdicts
        )
    return Calibration(
        run_id=run.manifest.run_id,
        labels_file=str(labels_path),
        judge_set=short_hash(run.judge_set),
        criteria=criteria,
        overall=overall,
        unknown_conversations=unknown,
    )


def calibrate_labels(run: RunData, allow_empty: bool = False) -> Panel:
    """Calibrate from the run folder's labels.jsonl (the review desk's labels, several labellers): the judge
    against each labeller and the labellers against each other, per criterion."""
    path = run.path / LABELS_FILE
    labels = run.labels
    if not labels and not allow_empty:
        raise UserError(
            f"{path}: no labels yet; label conversations in the review desk (`simulator serve`) or pass a "
            "labels CSV: simulator calibrate RUN LABELS.csv"
        )
    return panel(run.manifest.run_id, str(path), short_hash(run.judge_set), labels, run.verdicts)


def _rubric(run: RunData, criterion: str) -> str:
    """The criterion's own wording as the manifest recorded it, else ''."""
    entry = run.manifest.criterion(criterion)
    if entry is None:
        return ""
    meanings = [
        f"- **{label}**: {text}"
        for label, text in (
            ("pass", entry.pass_),
            ("fail", entry.fail),
            ("not_applicable", entry.not_applicable),
        )
        if text
    ]
    return "\n\n".join([entry.criterion, "\n".join(meanings)]).strip()


def _labellable(run: RunData, criterion: str) -> list[str]:
    """Conversations a person can label on `criterion`: the judge saw them (pass, fail, n/a) or would have,
    had the run had a judge model (`not_judged` of a conversation that did not error). People may label
    before any judge model is chosen; errored conversations have nothing to label."""
    errored = {r.id for r in run.conversations if r.error is not None}
    mine = [v for v in run.verdicts if v.criterion_id == criterion]
    labellable = sorted(
        {
            v.conversation_id
            for v in mine
            if v.result in LABELS or (v.result == "not_judged" and v.conversation_id not in errored)
        }
    )
    if labellable:
        return labellable
    if mine:
        raise UserError(
            f"criterion '{criterion}': all {len(mine)} of its verdicts in {run.path} are errors or belong to "
            "errored conversations; there is nothing to label (re-run with --resume --retry-errors)"
        )
    known = sorted({v.criterion_id for v in run.verdicts})
    hint = did_you_mean(criterion, known) or f"criteria in this run: {', '.join(known) or 'none'}"
    raise UserError(f"criterion '{criterion}' was not checked in {run.path}; {hint}")


def _has_work(row: dict[Any, Any]) -> bool:
    """A sheet row someone wrote in: a label, a note, or cells past the columns we wrote."""
    extra = row.get(None) or []
    return any(str(row.get(k) or "").strip() for k in ("label", "notes", EXPECTED_LEVEL)) or any(
        str(v).strip() for v in extra
    )


def refuse_filled_sheet(labels: Path) -> None:
    """Refuse to overwrite a labels sheet that holds anyone's work: any row with a label or a note, or a
    file that is not a sheet we wrote (clinicians' labels are never lost to a second export)."""
    if not labels.exists():
        return
    fix = f"it is never overwritten; pass --out NEW_FOLDER, or move {labels.name} away first"
    try:
        sheet = read_csv(labels)
    except InputRefused as exc:
        raise UserError(
            f"{labels}: a file is already there and cannot be read as a labels sheet "
            f"({exc.problem.message.split(';')[0]}); {fix}"
        ) from None
    filled = [row for _, row in sheet.dicts() if _has_work(row)]
    if filled or (sheet.header and "label" not in sheet.header):
        raise UserError(f"{labels}: holds labels already ({len(filled)} filled rows); {fix}")


def _level_column(run: RunData, criterion: str) -> list[str]:
    """The outcome levels a sheet's `expected_level` column takes: on the outcome criterion of a run
    without scenarios (imported, collected) only; [] for any other sheet (record/labelled_levels.py)."""
    outcome = run.outcome
    if run.manifest.kind != "imported" or outcome is None or criterion != f"outcome.{outcome.key}":
        return []
    return list(outcome.levels)


def export_labels(
    run: RunData, criterion: str, out: Path, sample: int | None = None, seed: int = 0
) -> tuple[Path, Path, int]:
    """Write blind transcripts (no verdicts, no expected outcome, no final state) and a labels.csv to fill in.

    Conversations are those the criterion's judge saw, shuffled with `seed` so their order says nothing
    about scenario or result; `sample` keeps only that many.
    """
    judged = _labellable(run, criterion)
    random.Random(seed).shuffle(judged)
    if sample is not None:
        judged = judged[:sample]
    records = {r.id: r for r in run.conversations}
    transcripts = out / "transcripts.md"
    labels = out / "labels.csv"
    refuse_filled_sheet(labels)
    out.mkdir(parents=True, exist_ok=True)
    rubric = _rubric(run, criterion)
    parts = [
        f"# Labelling: {criterion}\n",
        "Read each transcript and write pass, fail or n/a in labels.csv (column `label`) for this criterion "
        "only. The judge's verdicts are not shown, on purpose.\n",
    ]
    if rubric:
        parts.append(f"## The criterion\n\n{rubric.strip()}\n")
    levels = _level_column(run, criterion)
    if levels:
        parts.append(
            f"Also write in `{EXPECTED_LEVEL}` the level each conversation needed, one of {', '.join(levels)} "
            "(optional): it becomes the conversation's expected level, so its under- and over-triage count.\n"
        )
    for number, cid in enumerate(judged, start=1):
        parts.append(f"## {number}. {cid}\n\n```text\n{render_transcript(records[cid].turns)}\n```\n")
    transcripts.write_text("\n".join(parts), encoding="utf-8")
    extra = [EXPECTED_LEVEL] if levels else []
    write_sheet(
        labels, [*REQUIRED, *extra, "notes"], ([cid, criterion, "", *[""] * len(extra), ""] for cid in judged)
    )
    return transcripts, labels, len(judged)
