"""The runs the desk can see, each read through `load_run` (RunFolder.open: never modifies a file) and
turned into the report model once per change of its files."""

from __future__ import annotations

__all__ = ["RunIndex", "RunSummary"]

import sys
from dataclasses import dataclass
from pathlib import Path

from simulator.analysis.rundata import RunData, load_run
from simulator.errors import UserError
from simulator.record.folder import CONVERSATIONS, MANIFEST, VERDICTS
from simulator.report.model import Report, build_report
from simulator.serve.config import child_folder


@dataclass
class RunSummary:
    """One row of the runs page."""

    name: str
    report: Report | None
    error: str | None = None


def _signature(path: Path) -> tuple[tuple[str, int, int], ...]:
    out = []
    for name in (MANIFEST, CONVERSATIONS, VERDICTS):  # labels are read apart: they change no report
        try:
            stat = (path / name).stat()
        except OSError:
            continue
        out.append((name, stat.st_size, stat.st_mtime_ns))
    return tuple(out)


class RunIndex:
    """Run folders directly under the runs folder; reports are rebuilt only when a run's files change."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[Path, tuple[tuple[tuple[str, int, int], ...], RunData, Report]] = {}

    def names(self) -> list[str]:
        """Run folder names, newest first (run ids start with their UTC time)."""
        if not self.root.is_dir():
            return []
        found = [p.name for p in self.root.iterdir() if (p / MANIFEST).is_file()]
        return sorted(found, key=lambda n: ((self.root / n / MANIFEST).stat().st_mtime, n), reverse=True)

    def path(self, name: str) -> Path:
        path = child_folder(self.root, name)
        if not (path / MANIFEST).is_file():
            raise UserError(f"no run named '{name}' in {self.root}")
        return path

    def load(self, name: str) -> tuple[RunData, Report]:
        """The run's data and its report (the model `simulator report` renders)."""
        path = self.path(name)
        signature = _signature(path)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == signature:
            return cached[1], cached[2]
        run = load_run(path)
        report = build_report(run)
        self._cache[path] = (signature, run, report)
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
                print(f"note: {note}", file=sys.stderr)
                rows.append(RunSummary(name, None, note))
        return rows
