"""The runs the desk can see, each read through `load_run` (RunFolder.open: never modifies a file) and
turned into the report model once per change of its files (and per judge set asked for).

A run is a folder directly under the runs folder, or a cell of a matrix folder there (its index.json lists
the cells): a cell is named `MATRIX:CELL` in the desk's URLs, one path segment like any run's name."""

from __future__ import annotations

__all__ = ["RunIndex"]

import sys
from dataclasses import dataclass
from pathlib import Path

from simulator.analysis.rundata import RunData, load_labels, load_run
from simulator.errors import UserError
from simulator.record.folder import CONVERSATIONS, LABELS, MANIFEST, VERDICTS
from simulator.record.index import INDEX, read_index
from simulator.report.model import Report, build_report
from simulator.serve.config import child_folder
from simulator.visible import echo

Signature = tuple[tuple[str, int, int], ...]


@dataclass
class RunSummary:
    """One row of the runs page."""

    name: str
    report: Report | None
    error: str | None = None

    @property
    def matrix(self) -> tuple[str, str] | None:
        """(matrix, cell) for a cell of a matrix run, else None."""
        matrix, colon, cell = self.name.partition(CELL)
        return (matrix, cell) if colon else None


def _signature(path: Path, names: tuple[str, ...] = (MANIFEST, CONVERSATIONS, VERDICTS)) -> Signature:
    out = []
    for name in names:
        try:
            stat = (path / name).stat()
        except OSError:
            continue
        out.append((name, stat.st_size, stat.st_mtime_ns))
    return tuple(out)


CELL = ":"  # between a matrix folder's name and its cell's in a run's name (never in a folder name)


class RunIndex:
    """Run folders directly under the runs folder; reports are rebuilt only when a run's files change."""

    def __init__(self, root: Path) -> None:
        self.root = root
        # Per (run, judge set): the run's file signature, its data and report, and its labels' signature.
        self._cache: dict[tuple[Path, str | None], tuple[Signature, RunData, Report, Signature]] = {}

    def names(self) -> list[str]:
        """Run names, newest first (run ids start with their UTC time): run folders, and each cell of a
        matrix folder as `MATRIX:CELL` in the index's order."""
        if not self.root.is_dir():
            return []
        found: list[tuple[float, str]] = []
        for folder in self.root.iterdir():
            if (folder / MANIFEST).is_file():
                found.append(((folder / MANIFEST).stat().st_mtime, folder.name))
            elif (folder / INDEX).is_file():
                found += self._cells(folder)
        # Newest first; a matrix's cells stay together, in the index's order.
        return [name for _, name in sorted(found, key=lambda item: (-item[0], item[1].partition(CELL)[0]))]

    def _cells(self, folder: Path) -> list[tuple[float, str]]:
        try:
            index = read_index(folder)
        except UserError:
            return []
        when = (folder / INDEX).stat().st_mtime
        cells = [c.id for c in index.cells if (folder / c.folder / MANIFEST).is_file()]
        # One time for the whole matrix, each cell a hair older than the one before: index order.
        return [(when - i * 1e-6, f"{folder.name}{CELL}{cell}") for i, cell in enumerate(cells)]

    def path(self, name: str) -> Path:
        matrix, colon, cell = name.partition(CELL)
        if colon:
            folder = child_folder(self.root, matrix)
            entry = next((c for c in read_index(folder).cells if c.id == cell), None)
            if entry is None:
                raise UserError(f"no cell '{cell}' in the matrix run {matrix}")
            path = child_folder(folder, entry.folder)
        else:
            path = child_folder(self.root, name)
        if not (path / MANIFEST).is_file():
            raise UserError(f"no run named '{name}' in {self.root}")
        return path

    def load(self, name: str, judge_set: str | None = None) -> tuple[RunData, Report]:
        """The run's data and its report (the model `simulator report` renders), of `judge_set` (a hash or
        its prefix; default the latest, as `simulator report`)."""
        path = self.path(name)
        signature = _signature(path)
        cached = self._cache.get((path, judge_set or None))
        if cached is not None and cached[0] == signature:
            _, run, report, seen = cached
            labels = _signature(path, (LABELS,))
            if labels != seen:  # a labeller saved: the labels are read again, the report kept
                run.labels, run.labels_sha256 = load_labels(path)
                self._cache[(path, judge_set or None)] = (signature, run, report, labels)
            return run, report
        labels = _signature(path, (LABELS,))  # before reading: a label saved meanwhile is read next time
        run = load_run(path, judge_set or None)
        report = build_report(run)
        self._cache[(path, judge_set or None)] = (signature, run, report, labels)
        return run, report

    def summaries(self) -> list[RunSummary]:
        rows = []
        for name in self.names():
            try:
                rows.append(RunSummary(name, self.load(name)[1]))
            except UserError as exc:
                rows.append(RunSummary(name, None, str(exc)))
            except (RecursionError, ValueError, OSError) as exc:
                # One damaged folder never takes the runs page down: it is listed with what is wrong.
                note = f"{self.root / name}: cannot be read ({type(exc).__name__}); skipped"
                echo(f"note: {note}", file=sys.stderr)
                rows.append(RunSummary(name, None, note))
        return rows
