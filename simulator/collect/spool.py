"""The collector's journal: every accepted span, redacted, on disk before the exporter hears "accepted".

Two append-only files under `OUT/.collect/`:
- `spool.jsonl`: one redacted span a line, fsync'd before the HTTP response, so an accepted span survives
  a crash or a restart;
- `closed.jsonl`: one line per conversation closed, written *before* its record is appended (a write-ahead
  marker: the run folder and record id it goes to, and the spans it is made of).

On start the collector replays both: a marker whose record is missing from its folder is written again
(the crash came between marker and record), a marker whose record is there is done, and every span of no
marker belongs to a conversation still open. Nothing accepted is lost and nothing is written twice. The
spool is then rewritten with the open spans only (and again whenever it grows past its size limit).
"""

from __future__ import annotations

__all__ = ["Marker", "Spool"]

import json
import os
from dataclasses import dataclass
from pathlib import Path

from simulator.collect.spans import Ref, from_line, to_line
from simulator.traces.otlp import Span

SPOOL = "spool.jsonl"
CLOSED = "closed.jsonl"


@dataclass
class Marker:
    """A closed conversation: its key, the run folder and record id it goes to, the spans it holds."""

    key: str
    folder: str
    scenario_id: str
    refs: list[Ref]

    def line(self) -> str:
        data = {"key": self.key, "folder": self.folder, "scenario": self.scenario_id, "refs": self.refs}
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def _lines(path: Path) -> list[str]:
    """Whole lines of a file (a last line without its newline was never acknowledged: skipped)."""
    if not path.exists():
        return []
    text = path.read_bytes().decode("utf-8", "replace")
    lines = text.split("\n")
    return [line for line in lines[:-1] if line.strip()]


class Spool:
    """The journal files of one collector output folder."""

    def __init__(self, root: Path, *, fsync: bool = True) -> None:
        self.root = root
        self.fsync = fsync
        root.mkdir(parents=True, exist_ok=True)
        self.spool_path = root / SPOOL
        self.closed_path = root / CLOSED

    def _write(self, path: Path, text: str) -> None:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if self.fsync:
                os.fsync(handle.fileno())

    def append(self, spans: list[Span]) -> list[tuple[int, int]]:
        """Append spans in one write; returns once they are on disk, with where each line is (offset and
        length in bytes), for the assembler to read them back when their conversation closes."""
        if not spans:
            return []
        lines = [to_line(s).encode("utf-8") for s in spans]
        with self.spool_path.open("ab") as handle:
            offset = handle.seek(0, os.SEEK_END)
            handle.write(b"".join(lines))
            handle.flush()
            if self.fsync:
                os.fsync(handle.fileno())
        return _locations(offset, lines)

    def read(self, locations: list[tuple[int, int]]) -> list[Span]:
        """The spans at these places of the spool (written by `append` or `compact`)."""
        with self.spool_path.open("rb") as handle:
            spans = []
            for offset, length in locations:
                handle.seek(offset)
                spans.append(from_line(handle.read(length).decode("utf-8")))
            return spans

    def mark(self, markers: list[Marker]) -> None:
        """Journal closed conversations, in one write (one fsync) before any of their records is written."""
        if markers:
            self._write(self.closed_path, "".join(m.line() for m in markers))

    def size(self) -> int:
        return self.spool_path.stat().st_size if self.spool_path.exists() else 0

    def load(self) -> tuple[list[Span], list[Marker]]:
        """Every spooled span (in arrival order; a damaged line skipped) and every marker."""
        spans = []
        for line in _lines(self.spool_path):
            try:
                spans.append(from_line(line))
            except (ValueError, TypeError, KeyError):
                continue
        markers = []
        for line in _lines(self.closed_path):
            try:
                raw = json.loads(line)
                refs = [(str(t), str(s)) for t, s in raw["refs"]]
                markers.append(Marker(str(raw["key"]), str(raw["folder"]), str(raw["scenario"]), refs))
            except (ValueError, TypeError, KeyError):
                continue
        return spans, markers

    def compact(self, open_spans: list[Span], recent: list[Marker]) -> list[tuple[int, int]]:
        """Keep only the spans of open conversations, and the `recent` markers (honoured already: kept so
        that a span sent again after a restart is still known as a duplicate); where each span now is.

        The spool is replaced first (write, fsync, rename): a crash before the markers are rewritten leaves
        markers whose records exist, which the next start recognises as done."""
        tmp = self.spool_path.with_suffix(".jsonl.tmp")
        lines = [to_line(s).encode("utf-8") for s in open_spans]
        with tmp.open("wb") as handle:
            handle.write(b"".join(lines))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.spool_path)
        self._rewrite_markers(recent)
        return _locations(0, lines)

    def compact_held(
        self, held: list[list[Span | tuple[int, int]]], recent: list[Marker]
    ) -> list[list[tuple[int, int]]]:
        """`compact` for spans held as their lines (`held`: each span's parts, a line's place or a span):
        the lines are copied as they are, one at a time, so compacting costs no more memory than a line;
        where each part now is."""
        tmp = self.spool_path.with_suffix(".jsonl.tmp")
        places: list[list[tuple[int, int]]] = []
        offset = 0
        with self.spool_path.open("rb") as old, tmp.open("wb") as handle:
            for parts in held:
                moved = []
                for part in parts:
                    if isinstance(part, tuple):
                        old.seek(part[0])
                        line = old.read(part[1])
                    else:
                        line = to_line(part).encode("utf-8")
                    handle.write(line)
                    moved.append((offset, len(line)))
                    offset += len(line)
                places.append(moved)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.spool_path)
        self._rewrite_markers(recent)
        return places

    def _rewrite_markers(self, recent: list[Marker]) -> None:
        tmp = self.closed_path.with_suffix(".jsonl.tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write("".join(m.line() for m in recent))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.closed_path)


def _locations(offset: int, lines: list[bytes]) -> list[tuple[int, int]]:
    """Where each of `lines`, written one after another from `offset`, is."""
    places = []
    for line in lines:
        places.append((offset, len(line)))
        offset += len(line)
    return places
