"""One session of work on one or more run folders: a pool of workers that simulate and judge items and
append each record as it finishes. `run`, `run --resume`, `judge` and a matrix of cells are all sessions;
they differ only in their work. A plain run is one cell; a matrix run feeds several cells to the same pool.

Nothing finished is held in memory, and each cell's call counts are checkpointed into its manifest as it
goes, so a session killed with `kill -9` loses only what was in flight.
"""

from __future__ import annotations

__all__ = ["CellRun", "RunResult", "RunSession", "SessionParts", "WorkItem", "pool", "pull"]

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from simulator.engine.budget import ErrorBudget
from simulator.engine.executor import Done, Executor, ItemLost, LocalExecutor, SessionParts, WorkItem
from simulator.engine.lending import LendingPool
from simulator.engine.progress import RunProgress
from simulator.record.counting import verdict_counts
from simulator.record.manifest import CallCounts, LimitCounts, RunStatus, Session
from simulator.record.redact import CredentialTally
from simulator.record.selection import counted, item_of

# The session's call counts reach the manifest at least this often while it runs.
CHECKPOINT_S = 5.0
# How often the progress line asks the providers whether calls wait for a rate limit.
WAITING_S = 1.0


T = TypeVar("T")


async def pull(
    work: Iterator[T], handle: Callable[[T], Awaitable[None]], stopped: Callable[[], bool] = lambda: False
) -> None:
    """One worker of the pool: take the next item from the shared `work` until it runs out or `stopped`."""
    while not stopped():
        item = next(work, None)
        if item is None:
            return
        await handle(item)


def _raise_first(outcomes: list[Any]) -> None:
    for outcome in outcomes:
        if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
            raise outcome


async def pool(work: Iterator[T], width: int, handle: Callable[[T], Awaitable[None]]) -> None:
    """`width` workers pull items from one iterator, so at most `width` are in flight; the first failure
    is raised once every worker has stopped (the pool of a run session, for work that writes no run)."""
    _raise_first(
        await asyncio.gather(*(pull(work, handle) for _ in range(max(1, width))), return_exceptions=True)
    )


@dataclass
class RunResult:
    folder: Any  # Path
    status: str
    stop_reasons: Counter[str] = field(default_factory=Counter)
    errors: int = 0  # conversations that ended in an error, this session
    finished: int = 0  # conversations simulated this session
    skipped: int = 0  # already in the run folder
    verdicts: int = 0  # by the rule of record/counting.py
    fidelity_checks: int = 0  # the simulated user's, counted apart
    rejudged: int = 0  # conversations from an earlier session judged (again) in this one
    judge_errors: int = 0  # error verdicts written this session
    abort_reason: str | None = None
    lost: int = 0  # items whose remote worker died mid-way: not recorded, run again on resume
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # per provider, from ModelHub.stats
    limits: dict[str, dict[str, Any]] = field(default_factory=dict)  # per provider, from ModelHub.limits
    # The most conversations worked on at once: above `concurrency` while calls waited out a retry and
    # their conversations lent their places (`engine/lending.py`).
    most_open: int = 0

    @property
    def judged_nothing(self) -> bool:
        """True when every conversation of this session errored: nothing could be judged."""
        return self.finished > 0 and self.errors == self.finished


class CellRun:
    """One run folder's share of a session: its parts, executor, error budget, manifest session entry and
    counts. Cells of a matrix share the hub, so its call counts belong to no single cell (`shared`): the
    manifest's session records none, and the matrix index records the hub's."""

    def __init__(
        self,
        parts: SessionParts,
        budget: ErrorBudget,
        session: Session,
        *,
        shared: bool = False,
        executor: Executor | None = None,
    ):
        self.parts = parts
        self.executor: Executor = executor or LocalExecutor(parts)
        self.budget = budget
        self.session = session
        self.shared = shared
        self.result = RunResult(folder=parts.folder.path, status="running")
        self.judged: set[tuple[str, str]] = set()
        self.audited: set[tuple[str, str]] = set()  # (conversation, fidelity check) already written
        self.status: dict[str, str] = {}
        self.last_checkpoint = time.monotonic()
        self.credentials = CredentialTally()  # the credentials replaced while this session runs

    def record(self, done: Done, progress: RunProgress) -> None:
        """Append what one item produced, in order: the conversation first, then its verdicts."""
        record = done.record
        if done.simulated:
            self.parts.folder.append_conversation(record)
            self.status[record.id] = record.stop_reason
            self.result.finished += 1
            self.result.stop_reasons[record.stop_reason] += 1
            self.result.errors += record.stop_reason == "error"
            progress.advance(record.stop_reason)
        else:
            self.result.rejudged += 1
        if done.fidelity:  # right after its record: a crash never orphans them
            self.parts.folder.append_verdicts(done.fidelity)
            self.audited.update((record.id, v.criterion_id) for v in done.fidelity)
        self.parts.folder.append_verdicts(done.verdicts)
        kept = counted(done.verdicts)  # the samples behind a verdict are not verdicts
        self.judged.update(item_of(v) for v in kept)
        verdicts, fidelity = verdict_counts([*done.verdicts, *done.fidelity])  # record/counting.py
        self.result.verdicts += verdicts
        self.result.fidelity_checks += fidelity
        if record.stop_reason != "error":
            self.result.judge_errors += sum(v.result == "error" for v in kept)

    def count_calls(self) -> None:
        if self.shared:
            return
        self.session.redacted = self.credentials.counts()
        calls, limits = self.executor.call_stats()
        self.session.calls = {name: CallCounts.model_validate(c) for name, c in calls.items()}
        self.session.limits = {name: LimitCounts.model_validate(c) for name, c in limits.items()}

    def checkpoint(self) -> None:
        """Write this session's counts so far into the manifest (atomically)."""
        self.last_checkpoint = time.monotonic()
        self.count_calls()
        self.session.checkpoint_at = datetime.now(UTC)
        self.parts.folder.write_manifest(self.parts.manifest)

    def finish(self, state: RunStatus) -> None:
        """Write the manifest's final status, this session's counts and what the folder holds."""
        manifest = self.parts.manifest
        self.count_calls()
        now = datetime.now(UTC)
        self.session.ended_at = self.session.checkpoint_at = now
        manifest.status = state
        manifest.ended_at = now
        if self.status:
            reasons = Counter(self.status.values())
            manifest.counts.conversations = len(self.status)
            manifest.counts.stop_reasons = dict(reasons)
            manifest.counts.errors = reasons.get("error", 0)
        self.parts.folder.write_manifest(manifest)
        self.result.status = state
        self.result.calls, self.result.limits = self.executor.call_stats()


class RunSession:
    """Workers pull items (a record to judge, or a plan to simulate and then judge), each for one cell,
    until the work runs out; a cell whose error budget says stop gets no more items."""

    def __init__(self, cells: list[CellRun], progress: RunProgress):
        self.cells = cells
        self.progress = progress
        self._tasks: list[asyncio.Task[None]] = []
        self.most_open = 0  # the most conversations worked on at once (above `width` while places were lent)

    async def run(self, work: Iterator[tuple[CellRun, WorkItem]], width: int) -> list[RunResult]:
        """Work through `work` with `width` workers (more while calls wait out a retry: `LendingPool`);
        each cell's manifest status says how it ended."""
        hub = self.cells[0].parts.hub if self.cells else None
        pool = LendingPool(width, lambda surplus: self._worker(work, surplus), getattr(hub, "waits", None))
        self._tasks = pool.tasks  # the live list: a stopped session cancels every worker in it
        try:
            with self.progress:
                watch = asyncio.create_task(self._watch_rate_limits())
                try:
                    outcomes = await pool.run()
                finally:
                    watch.cancel()
                    self.most_open = pool.most
                    for cell in self.cells:
                        cell.session.most_open = pool.most
            _raise_first(outcomes)
        except (asyncio.CancelledError, KeyboardInterrupt, OSError):
            # Stopped, or a write failed (a full disk): what finished is on disk and the run says it was
            # interrupted, so `run --resume` finishes it. A manifest that cannot be written stays `running`.
            for cell in self.cells:
                with contextlib.suppress(OSError):
                    cell.finish("interrupted")
            raise
        finally:
            for cell in self.cells:
                await cell.executor.aclose()
        for cell in self.cells:
            cell.result.most_open = self.most_open
            cell.result.abort_reason = cell.budget.reason
            # Items whose remote worker died were recorded nowhere: the run is not complete until resumed.
            lost = cell.result.lost
            cell.finish("aborted" if cell.budget.reason else "interrupted" if lost else "complete")
        return [cell.result for cell in self.cells]

    async def _watch_rate_limits(self) -> None:
        """Keep the progress line's `waiting for the provider's rate limit: openai 598/min (found from
        429s)` current (the cells of one session share one hub)."""
        hub = self.cells[0].parts.hub if self.cells else None
        if hub is None:
            return
        while True:
            await asyncio.sleep(WAITING_S)
            self.progress.waiting(hub.waiting())

    async def _worker(self, work: Iterator[tuple[CellRun, WorkItem]], surplus: Callable[[], bool]) -> None:
        def stopped() -> bool:
            return all(cell.budget.reason for cell in self.cells) or surplus()

        await pull(work, self._one, stopped=stopped)

    async def _one(self, pair: tuple[CellRun, WorkItem]) -> None:
        cell, item = pair
        if cell.budget.reason is not None:
            return  # this cell was stopped; its remaining items wait for a resume
        try:
            done = await cell.executor.process(item, cell.judged, cell.audited)
        except ItemLost as exc:  # a remote worker died: nothing recorded, resume runs it again
            cell.result.lost += 1
            self.progress.note(str(exc))
            return
        cell.record(done, self.progress)
        cause = None
        if done.record.error is not None:
            error = done.record.error
            cause = f"{error.source}: {error.kind}: {error.message}"
        self._account(cell, cause or done.judge_failure)

    def _account(self, cell: CellRun, cause: str | None) -> None:
        # When every cell has stopped, the items still in flight are cancelled (resume runs them again);
        # while other cells go on, a stopped cell's in-flight items just finish.
        if cell.budget.account(cause) is not None and all(c.budget.reason for c in self.cells):
            current = asyncio.current_task()
            for task in self._tasks:
                if task is not current:
                    task.cancel()
        if time.monotonic() - cell.last_checkpoint >= CHECKPOINT_S:
            cell.checkpoint()
