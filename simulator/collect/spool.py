"""The collector's journal: every accepted span, redacted, on disk before the exporter hears "accepted".

Two append-only files under `OUT/.collect/`:
- `spool.jsonl`: one redacted span a line, on disk (fdatasync'd) before the HTTP response, so an accepted
  span survives a crash or a restart;
- `closed.jsonl`: one line per conversation closed, written *before* its record is appended (a write-ahead
  marker: the run folder and record id it goes to, and the spans it is made of).

On start the collector replays both: a marker whose record is missing from its folder is written again
(the crash came between marker and record), a marker whose record is there is done, and every span of no
marker belongs to a conversation still open. Nothing accepted is lost and nothing is written twice. The
spool is then rewritten with the open spans only (and again whenever it grows past its size limit).

Both are read back bounded (`MAX_JOURNAL_BYTES`, a regular file only: a journal linked to /dev/zero is
refused by name, never read for ever). A line that cannot be read back (edited, or damaged on disk) is
skipped and counted, and the collector says which file, how many and the first one's number (`damaged`):
one bad line never keeps the collector from starting, and is never passed over in silence.

Group commit: a request's lines are written at once (in arrival order, on the event loop), and the request
is answered when a sync that began after its write has finished (`durable`). One sync runs at a time, in a
thread so the event loop goes on taking requests; the requests that wrote while it ran share the next one.
One exporter sending one span a request (the SDK's SimpleSpanProcessor) pays a sync per request, many at
once pay one between them. And a round that saw several requests (covered, or written while it ran) is
followed by one that first gives as many the time to write (`_gather`: until they have, or for at most half
the last sync's time, 2 ms at most): the exporters it answered send their next span while the disk is idle,
and share the next sync with those already waiting instead of each waiting for the one after it (4
exporters of one span a request: a sync for every 4 requests instead of every 2, half the syncs' CPU; a
lone exporter never waits). A failed write or sync fails every request it covered and marks the spool
`broken`: after one, Linux may have dropped the pages it did not write, so a later sync succeeding proves
nothing about them. The collector rewrites the spool from what it holds (`compact_held`, into a new file,
synced) before it takes another request.
"""

from __future__ import annotations

__all__ = ["MAX_JOURNAL_BYTES", "UNREADABLE", "Damaged", "Marker", "Spool", "journal_lines"]

import asyncio
import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from simulator.collect.spans import Ref, from_line, to_line
from simulator.eventloop import within
from simulator.plural import plural
from simulator.readers import byte_lines
from simulator.safefiles import append_durable, replacing, write_atomic
from simulator.traces.otlp import Span

SPOOL = "spool.jsonl"
# How long a sync round waits for the writers the last one answered (`Spool._gather`): this share of the
# last sync's time, and never more than this.
GATHER_SHARE = 0.5
GATHER_MAX_S = 0.002
CLOSED = "closed.jsonl"
# The most a journal file is read: about 20 KB for each of the 200,000 open spans the default
# --max-open-spans holds between compactions. Far past any real one; a larger file is refused naming the fix.
MAX_JOURNAL_BYTES = 4_000_000_000
# What reading a line back raises when it is not what was written: not JSON (or nested past the parser's
# recursion), or JSON of another shape.
UNREADABLE = (ValueError, TypeError, KeyError, RecursionError)
_TOO_LARGE = "move it away to start with an empty journal (the open conversations it holds are then lost)"


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


def journal_lines(path: Path) -> Iterator[tuple[int, str | None]]:
    """(line number, text) of each whole line of a journal file, bounded by `MAX_JOURNAL_BYTES`; None for
    a line that is not UTF-8 (damaged: the caller skips and counts it). A last line without its newline was
    never acknowledged: skipped. Nothing for a file that is not there."""
    if not path.exists() and not path.is_symlink():
        return
    for number, line in byte_lines(path, max_total=MAX_JOURNAL_BYTES, advice=_TOO_LARGE):
        if not line.endswith(b"\n") or not line.strip():
            continue
        try:
            yield number, line.decode("utf-8")
        except UnicodeDecodeError:
            yield number, None


@dataclass
class Damaged:
    """The lines of one file the collector keeps (a journal, a ledger, signals) that could not be read
    back, and what skipping them costs."""

    path: Path
    lost: str
    lines: list[int] = field(default_factory=list)

    def note(self) -> str:
        """The collector's one line about them: the file, how many, the first, the cost and the fix."""
        count = plural(len(self.lines), "damaged line")
        return (
            f"{self.path}: skipped {count} (the first is line {self.lines[0]}); {self.lost}; the file was "
            "edited or damaged: restore it from a copy to keep them"
        )


class Spool:
    """The journal files of one collector output folder."""

    def __init__(self, root: Path, *, fsync: bool = True) -> None:
        self.root = root
        self.fsync = fsync
        root.mkdir(parents=True, exist_ok=True)
        self.spool_path = root / SPOOL
        self.closed_path = root / CLOSED
        # The spool, open for appending and reading back between requests (reopened on a rewrite).
        self._fd: int | None = None
        self._end = 0  # its size: where the next line goes
        self.written = 0  # appends so far: the ticket `durable` waits for
        self._synced = 0  # appends known on disk
        self._round: asyncio.Future[None] | None = None  # the sync in flight
        self._expected = 1  # appends the last round saw (covered, or written while it ran): `_gather`
        self._sync_s = 0.0  # how long the last sync took
        self._gathered: asyncio.Event | None = None  # set when enough have written (`_gather`)
        self._syncer: ThreadPoolExecutor | None = None
        self.broken: OSError | None = (
            None  # a write or sync failed: rewrite (`compact_held`) before appending
        )
        self.damaged: list[Damaged] = []  # lines `load` skipped, by file

    def _write(self, path: Path, text: str) -> None:
        append_durable(path, text, sync=self.fsync)

    def append(self, spans: list[Span]) -> list[tuple[int, int]]:
        """Append spans in one write, *not yet synced* (`sync` or `durable` with `written` as the ticket);
        where each line is (offset and length in bytes), for the assembler to read them back when their
        conversation closes."""
        if not spans:
            return []
        lines = [to_line(s) for s in spans]
        if self._fd is None:
            self._open()
        assert self._fd is not None
        offset, data = self._end, b"".join(lines)
        try:
            view = memoryview(data)
            while view:  # a write may be short (a signal, a full disk): the rest, or the error
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self.broken = exc  # a part of a line may be in the file: rewritten before the next append
            raise
        self._end += len(data)
        self.written += 1
        if self._gathered is not None and self.written - self._synced >= self._expected:
            self._gathered.set()
        return _locations(offset, lines)

    def _open(self) -> None:
        # Read and write: a closing conversation's lines are read back through it (`read`).
        self._fd = os.open(self.spool_path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._end = os.fstat(self._fd).st_size

    def sync(self, ticket: int) -> None:
        """On disk up to append number `ticket`, synced on this thread (the path without an event loop)."""
        if not self.fsync or self._synced >= ticket:
            return
        if self.broken is not None:
            raise _again(self.broken)
        assert self._fd is not None
        target = self.written
        try:
            _datasync(self._fd)
        except OSError as exc:
            self.broken = exc
            raise
        self._synced = max(self._synced, target)

    async def durable(self, ticket: int) -> None:
        """Return once append number `ticket` (and every one before it) is on disk: by the sync in flight if
        it began after that append, else by the next one, which this starts or joins. OSError when the sync
        covering it failed (or an earlier one left the spool broken)."""
        while self.fsync and self._synced < ticket:
            if self.broken is not None:
                raise _again(self.broken)
            if self._round is None:
                self._round = asyncio.ensure_future(self._sync_round())
                self._round.add_done_callback(_seen)
            try:
                await asyncio.shield(self._round)  # a request that goes away does not cancel the others' sync
            except OSError as exc:
                raise _again(exc) from None

    async def _sync_round(self) -> None:
        """One sync of everything written so far (once enough have written, `_gather`), in the sync thread.
        Its own copy of the descriptor: a rewrite may close and reopen the spool meanwhile (its new file is
        synced by the rewrite)."""
        try:
            await self._gather()
            assert self._fd is not None
            synced, target, fd = self._synced, self.written, os.dup(self._fd)
            if self._syncer is None:
                self._syncer = ThreadPoolExecutor(1, thread_name_prefix="spool-sync")
            started = time.monotonic()
            await asyncio.get_running_loop().run_in_executor(self._syncer, _datasync_and_close, fd)
        except OSError as exc:
            self.broken = exc
            raise
        finally:
            self._round = None
        self._sync_s = time.monotonic() - started
        self._expected = max(1, self.written - synced)
        self._synced = max(self._synced, target)

    async def _gather(self) -> None:
        """Wait until as many appends wait for a sync as the last round saw (those it covered and those
        written while it ran), for at most `GATHER_SHARE` of its time (`GATHER_MAX_S` at most): the senders
        it answered send their next ones on hearing, and these share this sync with the ones already
        waiting, instead of each waiting for the one after it. No wait after a round of one append."""
        wait = min(GATHER_MAX_S, GATHER_SHARE * self._sync_s)
        if self.written - self._synced >= self._expected or wait <= 0 or self.broken is not None:
            return
        self._gathered = asyncio.Event()
        try:
            await within(self._gathered.wait(), wait)
        except TimeoutError:
            pass
        finally:
            self._gathered = None

    def close(self) -> None:
        """The append descriptor and the sync thread (a sync in flight finishes first)."""
        if self._syncer is not None:
            self._syncer.shutdown(wait=True)
            self._syncer = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _replaced(self) -> None:
        """The spool was rewritten (and synced): append to the new file; everything written so far is on
        disk (the open spans' lines are in the new file; the closed ones' records are written)."""
        if self._fd is not None:
            os.close(self._fd)
        self._open()
        self._synced = self.written
        self.broken = None

    def read(self, locations: list[tuple[int, int]]) -> list[Span]:
        """The spans at these places of the spool (written by `append` or `compact`): through the descriptor
        the spool is appended to, without opening it for each conversation, once it is open."""
        if self._fd is not None:
            return [from_line(os.pread(self._fd, length, offset)) for offset, length in locations]
        with self.spool_path.open("rb") as handle:
            spans = []
            for offset, length in locations:
                handle.seek(offset)
                spans.append(from_line(handle.read(length)))
            return spans

    def mark(self, markers: list[Marker]) -> None:
        """Journal closed conversations, in one write (one fsync) before any of their records is written."""
        if markers:
            self._write(self.closed_path, "".join(m.line() for m in markers))

    def size(self) -> int:
        return self.spool_path.stat().st_size if self.spool_path.exists() else 0

    def load(self) -> tuple[list[Span], list[Marker]]:
        """Every spooled span (in arrival order) and every marker; a line that is not one is skipped and
        counted in `damaged`."""
        spans_damaged = Damaged(self.spool_path, "the spans on them are lost")
        spans = []
        for number, line in journal_lines(self.spool_path):
            try:
                spans.append(from_line(line or ""))
            except UNREADABLE:
                spans_damaged.lines.append(number)
        markers_damaged = Damaged(
            self.closed_path,
            "the conversations they marked closed are read as open, and may be written again",
        )
        markers = []
        for number, line in journal_lines(self.closed_path):
            marker = _marker(line)
            if marker is None:
                markers_damaged.lines.append(number)
            else:
                markers.append(marker)
        self.damaged = [d for d in (spans_damaged, markers_damaged) if d.lines]
        return spans, markers

    def compact(self, open_spans: list[Span], recent: list[Marker]) -> list[tuple[int, int]]:
        """Keep only the spans of open conversations, and the `recent` markers (honoured already: kept so
        that a span sent again after a restart is still known as a duplicate); where each span now is.

        The spool is replaced first (write, fsync, rename): a crash before the markers are rewritten leaves
        markers whose records exist, which the next start recognises as done."""
        lines = [to_line(s) for s in open_spans]
        # The rename synced too: else a crash could bring back the old file, and lose the lines appended
        # (and synced) to the new one since.
        write_atomic(self.spool_path, lines, sync_folder=True)
        self._replaced()
        self._rewrite_markers(recent)
        return _locations(0, lines)

    def compact_held(
        self, held: list[list[Span | tuple[int, int]]], recent: list[Marker]
    ) -> list[list[tuple[int, int]]]:
        """`compact` for spans held as their lines (`held`: each span's parts, a line's place or a span):
        the lines are copied as they are, one at a time, so compacting costs no more memory than a line;
        where each part now is. Replaced as `compact` replaces (file and rename synced)."""
        places: list[list[tuple[int, int]]] = []
        offset = 0
        with self.spool_path.open("rb") as old, replacing(self.spool_path, sync_folder=True) as handle:
            for parts in held:
                moved = []
                for part in parts:
                    if isinstance(part, tuple):
                        old.seek(part[0])
                        line = old.read(part[1])
                    else:
                        line = to_line(part)
                    handle.write(line)
                    moved.append((offset, len(line)))
                    offset += len(line)
                places.append(moved)
        self._replaced()
        self._rewrite_markers(recent)
        return places

    def _rewrite_markers(self, recent: list[Marker]) -> None:
        write_atomic(self.closed_path, (m.line() for m in recent))


def _marker(line: str | None) -> Marker | None:
    """A marker from its journal line; None when the line is not one (its texts are texts, its refs pairs)."""
    try:
        raw = json.loads(line or "")
        texts = [raw["key"], raw["folder"], raw["scenario"]]
        refs = [(t, s) for t, s in raw["refs"]]
    except UNREADABLE:
        return None
    if not all(isinstance(text, str) for text in texts + [part for ref in refs for part in ref]):
        return None
    return Marker(texts[0], texts[1], texts[2], refs)


def _datasync(fd: int) -> None:
    """The file's data and size on disk (fdatasync where there is one: the times need not be)."""
    getattr(os, "fdatasync", os.fsync)(fd)


def _datasync_and_close(fd: int) -> None:
    try:
        _datasync(fd)
    finally:
        os.close(fd)


def _again(exc: OSError) -> OSError:
    """A new error saying the same (one exception object raised in many requests would chain their
    tracebacks)."""
    return OSError(exc.errno, exc.strerror or str(exc))


def _seen(round_: asyncio.Future[None]) -> None:
    """A failed sync whose requests all went away: its error is in `broken`, not logged as unretrieved."""
    if not round_.cancelled():
        round_.exception()


def _locations(offset: int, lines: list[bytes]) -> list[tuple[int, int]]:
    """Where each of `lines`, written one after another from `offset`, is."""
    places = []
    for line in lines:
        places.append((offset, len(line)))
        offset += len(line)
    return places
