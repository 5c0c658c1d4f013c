"""Rolling run folders: each closed conversation appended to the current one, a new one each day (UTC) or
every N conversations. Each is an ordinary imported run folder (manifest kind `imported`) that judge,
report, show, compare, serve and compare-populations read while the collector keeps writing.

The manifest's scenario list is rebuilt from the records whenever the collector opens a folder again, so a
crash between a record and the next manifest write loses nothing.
"""

from __future__ import annotations

__all__ = ["Roll", "RollingFolders"]

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.record.folder import RunFolder, simulator_commit
from simulator.record.manifest import Manifest, RoleModels, RunCounts, ScenarioEntry, Session
from simulator.record.models import ConversationRecord
from simulator.record.redact import safe_json

SIGNALS = "signals.jsonl"
# The current folder's manifest is rewritten, while conversations come, at most this often: it lists every
# conversation of the folder, so writing it every tick cost ~40 ms a second at 5,000 conversations (its
# depth and secret checks), and nothing is lost between two writes (the module's docstring). A folder
# finished, or the collector stopped, writes it at once; an idle collector does not write it at all.
MANIFEST_EVERY_S = 5.0


def collected_folders(out: Path, prefix: str = "live") -> list[Path]:
    """Every run folder a collector wrote into `out`, oldest first."""
    return sorted(p for p in out.glob(f"{prefix}-*") if (p / "manifest.json").is_file())


@dataclass(frozen=True)
class Roll:
    """When to start a new folder: every day (UTC), and/or after `every` conversations."""

    daily: bool = True
    every: int | None = None


class _Current:
    """The folder being written: its writer, manifest, record ids and scenario entries."""

    def __init__(self, folder: RunFolder, manifest: Manifest, day: str) -> None:
        self.folder = folder
        self.manifest = manifest
        self.day = day
        self.taken: set[str] = {e.id for e in manifest.scenarios}
        self.dirty = False  # changed since the manifest was last written
        self.written = -math.inf  # when it was (monotonic)

    @property
    def name(self) -> str:
        return self.folder.path.name


class RollingFolders:
    """The collector's output folder `out`: run folders `live-YYYYMMDD-NNN` inside it."""

    def __init__(
        self,
        out: Path,
        roll: Roll,
        source: dict[str, Any],
        prefix: str = "live",
        decorate: Callable[[Manifest], None] | None = None,
        on_finish: Callable[[Path], None] | None = None,
    ) -> None:
        self.out = out
        self.on_finish = on_finish  # called with each folder once it is complete (population drift)
        self.decorate = decorate  # adds the suite and judge set to each folder's manifest
        self.roll = roll
        self.source = source
        self.prefix = prefix
        self.current: _Current | None = None
        self.retired: list[_Current] = []  # rolled over, finished at the next flush (after their writes)
        out.mkdir(parents=True, exist_ok=True)

    def folders(self) -> list[Path]:
        """Every run folder this collector wrote, oldest first."""
        return collected_folders(self.out, self.prefix)

    def _new(self, day: str) -> _Current:
        numbers = [
            int(p.name.rsplit("-", 1)[1]) for p in self.folders() if p.name.rsplit("-", 1)[1].isdigit()
        ]
        name = f"{self.prefix}-{day}-{max(numbers, default=0) + 1:03d}"
        now = datetime.now(UTC)
        manifest = Manifest(
            kind="imported",
            run_id=name,
            status="running",
            created_at=now,
            git_commit=simulator_commit(),
            models=RoleModels(user="real", bot="unknown"),
            sessions=[Session(command="collect", started_at=now)],
            source=dict(self.source),
        )
        if self.decorate is not None:
            self.decorate(manifest)
        return _Current(RunFolder.create(self.out / name, manifest), manifest, day)

    def reopen(self, name: str) -> _Current:
        """A folder written before (this or an earlier start), opened to write, manifest rebuilt."""
        folder = RunFolder.resume(self.out / name)
        manifest = folder.read_manifest()
        records = list(folder.conversations())
        known = {e.id for e in manifest.scenarios}
        manifest.scenarios += [_entry(r) for r in records if r.scenario_id not in known]
        _count(manifest, records)
        manifest.status, manifest.ended_at = "running", None
        manifest.sessions.append(Session(command="collect", started_at=datetime.now(UTC)))
        if self.decorate is not None:
            self.decorate(manifest)
        day = name.split("-")[-2] if name.count("-") >= 2 else ""
        current = _Current(folder, manifest, day)
        folder.write_manifest(manifest)
        return current

    def start(self) -> None:
        """Go on writing the newest folder (after a restart) unless it is due to roll."""
        existing = self.folders()
        if existing:
            self.current = self.reopen(existing[-1].name)

    def target(self, when: datetime) -> _Current:
        """The folder a conversation closed at `when` goes to (starting a new one when due)."""
        day = when.astimezone(UTC).strftime("%Y%m%d")
        current = self.current
        full = self.roll.every is not None and current is not None and len(current.taken) >= self.roll.every
        if current is None or full or (self.roll.daily and current.day != day):
            if current is not None:
                self.retired.append(current)
            self.current = current = self._new(day)
        return current

    def name_for(self, current: _Current, key: str) -> str:
        from simulator.traces.records import safe_id

        name = safe_id(
            key, current.taken
        )  # it adds the name: taken back until the record is written, without
        current.taken.discard(name)  # copying the folder's ids for each conversation (quadratic over a day)
        return name

    def write(self, current: _Current, record: ConversationRecord, signals: dict[str, Any]) -> None:
        """Append the record (and its quality signals); the manifest follows at the next flush."""
        current.folder.append_conversation(record)
        with (current.folder.path / SIGNALS).open("a", encoding="utf-8") as handle:
            handle.write(safe_json(signals, ensure_ascii=False, separators=(",", ":")) + "\n")
        current.taken.add(record.scenario_id)
        current.manifest.scenarios.append(_entry(record))
        bots = {b for b in current.manifest.models.bot.split(", ") if b and b != "unknown"} | {record.bot}
        current.manifest.models.bot = ", ".join(sorted(b for b in bots if b != "unknown")) or "unknown"
        current.manifest.counts.conversations += 1
        stops = current.manifest.counts.stop_reasons
        stops[record.stop_reason] = stops.get(record.stop_reason, 0) + 1
        current.dirty = True

    def flush(self, source: dict[str, Any] | None = None, *, now: float | None = None) -> None:
        """Finish the folders rolled over; write the current manifest when it changed (its records or the
        `source` figures), at most every `MANIFEST_EVERY_S` seconds (`now`: monotonic, for tests)."""
        for old in self.retired:
            self.finish(old)
        self.retired = []
        current = self.current
        if current is None:
            return
        manifest = current.manifest
        if source and any(manifest.source.get(key) != value for key, value in source.items()):
            manifest.source.update(source)
            current.dirty = True
        now = time.monotonic() if now is None else now
        if not current.dirty or now - current.written < MANIFEST_EVERY_S:
            return
        manifest.sessions[-1].checkpoint_at = datetime.now(UTC)
        current.folder.write_manifest(manifest)
        current.dirty, current.written = False, now

    def finish(self, current: _Current, status: str = "complete") -> None:
        """Close a folder: final manifest, writer lock released."""
        now = datetime.now(UTC)
        current.manifest.status = status  # type: ignore[assignment]
        current.manifest.ended_at = now
        current.manifest.sessions[-1].ended_at = now
        current.folder.write_manifest(current.manifest)
        current.folder.release()
        if self.on_finish is not None:
            self.on_finish(current.folder.path)

    def stop(self) -> None:
        """The collector stops: the current folder is `interrupted` (its day may go on: the next start
        reopens it, `running` again); only a `kill -9` leaves it `running`."""
        self.flush()
        if self.current is not None:
            now = datetime.now(UTC)
            self.current.manifest.status = "interrupted"
            self.current.manifest.sessions[-1].ended_at = self.current.manifest.ended_at = now
            self.current.folder.write_manifest(self.current.manifest)
            self.current.folder.release()
            self.current = None


def _entry(record: ConversationRecord) -> ScenarioEntry:
    return ScenarioEntry(id=record.scenario_id, tags=list(record.tags))


def _count(manifest: Manifest, records: list[ConversationRecord]) -> None:
    manifest.counts = RunCounts(
        conversations=len(records), stop_reasons=dict(Counter(r.stop_reason for r in records))
    )
