"""A matrix run's index: `runs/<matrix-id>/index.json` lists the cells, each an ordinary run folder beside it.

One folder per cell (rather than one folder with the cell in every record) keeps every command that reads a
run (`report`, `show`, `compare`, `judge`, `calibrate`, `run --resume`) working on a cell unchanged; the
index is the only new file, and only the leaderboard and `run --resume MATRIX` read it.
"""

from __future__ import annotations

__all__ = ["INDEX", "IndexCell", "MatrixIndex", "is_matrix", "read_index", "write_index"]

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from simulator.errors import UserError
from simulator.models import StrictModel as _Record
from simulator.models import empty_list
from simulator.readers import missing, read_json_file
from simulator.record.migrations import refused
from simulator.safefiles import write_atomic

INDEX = "index.json"
INDEX_SCHEMA_VERSION = 1


class IndexCell(_Record):
    """One cell: its id, the variants it crosses, and its run folder (relative to the index)."""

    id: str
    bot_variant: str
    user_variant: str | None = None
    folder: str
    bot: str  # as the manifest describes it, e.g. python:examples.triage_bot:make_bot
    user_model: str


class MatrixIndex(_Record):
    """What a matrix run holds; each cell's own manifest says how far that cell got."""

    schema_version: int = INDEX_SCHEMA_VERSION
    kind: Literal["simulator.matrix"] = "simulator.matrix"
    matrix_id: str
    created_at: datetime
    suite_file: str | None = None
    baseline: str
    cells: list[IndexCell]
    # Provider call counts of the shared model hub, per session (cells share one hub, so no cell owns them).
    calls: list[dict[str, Any]] = Field(default_factory=empty_list)

    def cell(self, cell_id: str) -> IndexCell:
        """A cell by id; a UserError listing the cells when there is none."""
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        raise UserError(f"no cell '{cell_id}' in this matrix; cells: {', '.join(c.id for c in self.cells)}")


def is_matrix(path: Path) -> bool:
    """Whether `path` is a matrix run folder (holds an index.json)."""
    return (path / INDEX).is_file()


def matrix_not_one_run(path: Path, command: str | None = None) -> UserError:
    """A matrix folder named where one run is read: say it is a matrix, and how to name its cells (for
    `command` given, a whole command comparing two of them)."""
    try:
        cells = [str(path / cell.folder) for cell in read_index(path).cells]
    except UserError:
        cells = []
    named = f" ({len(cells)} cells: {', '.join(cells)})" if cells else ""
    if command and len(cells) >= 2:
        how = f"{command} its cells, e.g. simulator {command} {cells[0]} {cells[1]}"
    else:
        how = f"pass one cell's folder{', e.g. ' + cells[0] if cells else ''}"
    return UserError(f"{path} is a matrix run{named}, not one run: {how}")


def read_index(path: Path) -> MatrixIndex:
    """Read `path/index.json` through the one bounded reader; a UserError when it is missing or not an
    index (the field named, never the exception's)."""
    file = path / INDEX
    if missing(file):
        raise UserError(f"{path} is not a matrix run (no {INDEX}); pass runs/<matrix-id>")
    data = read_json_file(file, 64_000_000)
    try:
        return MatrixIndex.model_validate(data)
    except ValidationError as exc:
        raise refused(str(file), exc, "not a readable matrix index") from None


def write_index(path: Path, index: MatrixIndex) -> None:
    """Write the index atomically (a temporary file renamed over the old one)."""
    path.mkdir(parents=True, exist_ok=True)
    from simulator.record.folder import dump_line

    # Secrets redacted by dump_line.
    write_atomic(path / INDEX, dump_line(index, indent=2, exclude_none=False), sync=False)
