"""A labelling sheet (CSV: conversation_id, criterion_id, label, and optionally expected_level; other columns
ignored) read into label rows, and imported into a run folder's labels.jsonl under a labeller's name.
`simulator calibrate RUN labels.csv` reads a sheet; `simulator labels import` adds one to the run.
`expected_level` (the outcome criterion of an imported or collected conversation only) is the level the
clinician says the conversation needed: its expected level from then on (record/labelled_levels.py)."""

from __future__ import annotations

__all__ = ["REQUIRED", "LabelRow", "import_labels", "read_labels"]

from datetime import UTC, datetime
from pathlib import Path

from simulator.errors import Problem, UserError
from simulator.models import StrictModel
from simulator.names import person_name
from simulator.readers import read_csv, unquote_cell
from simulator.record.folder import LABELS, RunFolder
from simulator.record.models import Label

_ALIASES = {
    "pass": "pass", "passed": "pass", "p": "pass", "ok": "pass",
    "fail": "fail", "failed": "fail", "f": "fail",
    "not_applicable": "not_applicable", "n/a": "not_applicable", "na": "not_applicable",
    "n.a.": "not_applicable", "not applicable": "not_applicable", "not-applicable": "not_applicable",
}  # fmt: skip
REQUIRED = ("conversation_id", "criterion_id", "label")
EXPECTED_LEVEL = "expected_level"  # the optional column of a clinician's level (outcome criterion only)


class LabelRow(StrictModel):
    """One human label, with the line it came from."""

    conversation_id: str
    criterion_id: str
    label: str
    line: int
    expected_level: str | None = None


def _read_label_rows(path: Path, problems: list[Problem]) -> list[LabelRow]:
    rows: list[LabelRow] = []
    sheet = read_csv(path)  # the one bounded CSV reader: a regular file, UTF-8, capped, one-line errors
    missing = [c for c in REQUIRED if c not in sheet.header]
    if missing:
        raise UserError(
            f"{path}:1: the header needs columns {', '.join(REQUIRED)} (missing {', '.join(missing)}); "
            "export a sheet with `simulator labels export RUN --criterion X`"
        )
    for line, cells in sheet.dicts():
        raw_row = {key: unquote_cell(value) for key, value in cells.items() if isinstance(key, str)}
        raw = (raw_row.get("label") or "").strip()
        level = (raw_row.get(EXPECTED_LEVEL) or "").strip() or None
        if not raw and level is not None:
            problems.append(
                Problem(
                    str(path),
                    f"expected_level '{level}' without a label; write pass, fail or n/a in `label` too",
                    line=line,
                    field="label",
                )
            )
            continue
        if not raw:
            continue  # not labelled yet
        label = _ALIASES.get(raw.lower())
        if label is None:
            # `yes` / `no` are refused: "yes" to what? (it passed, or yes, it failed?)
            problems.append(
                Problem(
                    str(path),
                    f"label '{raw}' is not pass, fail or n/a; write one of those",
                    line=line,
                    field="label",
                )
            )
            continue
        conversation, criterion = (
            (raw_row.get("conversation_id") or "").strip(),
            (raw_row.get("criterion_id") or "").strip(),
        )
        if not conversation or not criterion:
            problems.append(Problem(str(path), "conversation_id and criterion_id are required", line=line))
            continue
        rows.append(
            LabelRow(
                conversation_id=conversation,
                criterion_id=criterion,
                label=label,
                line=line,
                expected_level=level,
            )
        )
    return rows


def read_labels(path: Path) -> list[LabelRow]:
    """Read a labels CSV (conversation_id, criterion_id, label; other columns ignored); blank labels are skipped."""
    if not path.exists() and not path.is_symlink():  # a folder, FIFO or link loop is refused by the reader
        raise UserError(
            f"{path}: no such labels file; export one with `simulator labels export RUN --criterion X`"
        )
    problems: list[Problem] = []
    rows = _read_label_rows(path, problems)
    if problems:
        raise UserError("invalid labels file", problems)
    seen: dict[tuple[str, str], LabelRow] = {}
    for row in rows:
        first = seen.setdefault((row.conversation_id, row.criterion_id), row)
        if first is not row and (first.label, first.expected_level) != (row.label, row.expected_level):
            problems.append(
                Problem(
                    str(path),
                    f"conflicting label for {row.conversation_id} / {row.criterion_id} "
                    f"(line {first.line} says {first.label})",
                    line=row.line,
                )
            )
    if problems:
        raise UserError("invalid labels file", problems)
    return list(seen.values())


def import_labels(run: Path, sheet: Path, labeller: str) -> tuple[int, Path]:
    """Append a filled-in sheet's labels to the run folder's labels.jsonl as `labeller`'s; every row must
    name a conversation of the run. Returns how many labels were added and the file."""
    labeller = person_name(labeller, "--labeller")
    folder = RunFolder.open(run)
    known = {record.id for record in folder.conversations()}
    rows = read_labels(sheet)
    unknown = [
        Problem(str(sheet), f"conversation '{r.conversation_id}' is not in {run}", line=r.line)
        for r in rows
        if r.conversation_id not in known
    ]
    if unknown:
        raise UserError("labels for conversations this run does not have", unknown)
    if not rows:
        raise UserError(f"{sheet}: no labelled rows yet; fill in the label column (pass, fail or n/a)")
    levels = _checked_levels(folder, sheet, rows)
    now = datetime.now(UTC)
    folder.append_labels(
        Label(labeller=labeller, labelled_at=now, conversation_id=r.conversation_id, criterion_id=r.criterion_id,
              label=r.label, expected_level=levels.get(r.line))  # type: ignore[arg-type]
        for r in rows
    )  # fmt: skip
    return len(rows), folder.path / LABELS


def _checked_levels(folder: RunFolder, sheet: Path, rows: list[LabelRow]) -> dict[int, str]:
    """Each row's expected_level, spelt as the suite spells the level, by sheet line. A level is only for
    the outcome criterion of a run without scenarios (imported, collected) whose suite has outcome levels;
    anything else is a one-line error naming the file, row and column (and the allowed levels)."""
    given = [r for r in rows if r.expected_level is not None]
    if not given:
        return {}
    manifest = folder.read_manifest()
    outcome = manifest.suite.outcome if manifest.suite is not None else None
    first = given[0]
    where = f"{sheet}:{first.line} [{EXPECTED_LEVEL}]"
    if manifest.kind != "imported":
        raise UserError(
            f"{where}: {folder.path} is a simulated run; its conversations' expected level is their "
            "scenario's (edit `expected` in the scenario). expected_level is for imported or collected runs"
        )
    if outcome is None:
        raise UserError(
            f"{where}: {folder.path} has no outcome levels to check it against; judge it with a suite that "
            f"has `outcome:` first (simulator judge {folder.path} --suite SUITE)"
        )
    criterion = f"outcome.{outcome.key}"
    spelt = {level.casefold(): level for level in outcome.levels}
    for row in given:
        where = f"{sheet}:{row.line} [{EXPECTED_LEVEL}]"
        if row.criterion_id != criterion:
            raise UserError(
                f"{where}: a level is given on criterion '{row.criterion_id}'; it belongs on the outcome "
                f"criterion '{criterion}' only"
            )
        if (row.expected_level or "").casefold() not in spelt:
            raise UserError(
                f"{where}: '{row.expected_level}' is not an outcome level; write one of "
                f"{', '.join(outcome.levels)}"
            )
    return {row.line: spelt[(row.expected_level or "").casefold()] for row in given}
