"""One session of work on a run folder: a pool of workers that simulate and judge items and append each
record as it finishes. `run`, `run --resume` and `judge` are all sessions; they differ only in their work.

Nothing finished is held in memory, and the session's call counts are checkpointed into the manifest as it
goes, so a session killed with `kill -9` loses only what was in flight.
"""

from __future__ import annotations

__all__ = ["RunResult", "RunSession", "SessionParts", "WorkItem"]

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from simulator.engine.budget import ErrorBudget
from simulator.engine.executor import Done, Executor, ItemLost, LocalExecutor, SessionParts, WorkItem
from simulator.engine.progress import RunProgress
from simulator.record.manifest import CallCounts, LimitCounts, RunStatus, Session

# The session's call counts reach the manifest at least this often while it runs.
CHECKPOINT_S = 5.0


@dataclass
class RunResult:
    folder: Any  # Path
    status: str
    stop_reasons: Counter[str] = field(default_factory=Counter)
    errors: int = 0  # conversations that ended in an error, this session
    finished: int = 0  # conversations simulated this session
    skipped: int = 0  # already in the run folder
    verdicts: int = 0
    rejudged: int = 0  # conversations from an earlier session judged (again) in this one
    judge_errors: int = 0  # error verdicts written this session
    abort_reason: str | None = None
    lost: int = 0  # items whose remote worker died mid-way: not recorded, run again on resume
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # per provider, from ModelHub.stats

    @property
    def judged_nothing(self) -> bool:
        """True when every conversation of this session errored: nothing could be judged."""
        return self.finished > 0 and self.errors == self.finished


class RunSession:
    """Workers pull items (a record to judge, or a plan to simulate and then judge) until the work runs out
    or the error budget says stop."""

    def __init__(
        self,
        parts: SessionParts,
        budget: ErrorBudget,
        session: Session,
        progress: RunProgress,
        executor: Executor | None = None,
    ):
        self.parts = parts
        self.executor: Executor = executor or LocalExecutor(parts)
        self.budget = budget
        self.session = session
        self.progress = progress
        self.result = RunResult(folder=parts.folder.path, status="running")
        self.judged: set[tuple[str, str]] = set()
        self.status: dict[str, str] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._last_checkpoint = time.monotonic()

    async def run(self, work: Iterator[WorkItem], width: int) -> RunResult:
        """Work through `work` with `width` workers; the manifest's status says how it ended."""
        try:
            with self.progress:
                self._tasks = [asyncio.create_task(self._worker(work)) for _ in range(max(1, width))]
                outcomes = await asyncio.gather(*self._tasks, return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
                    raise outcome
        except (asyncio.CancelledError, KeyboardInterrupt):
            self.finish("interrupted")
            raise
        finally:
            await self.executor.aclose()
        self.result.abort_reason = self.budget.reason
        # Items whose remote worker died were recorded nowhere: the run is not complete until resumed.
        self.finish("aborted" if self.budget.reason else "interrupted" if self.result.lost else "complete")
        return self.result

    async def _worker(self, work: Iterator[WorkItem]) -> None:
        while self.budget.reason is None:
            item = next(work, None)
            if item is None:
                return
            try:
                done = await self.executor.process(item, self.judged)
            except ItemLost as exc:  # a remote worker died: nothing recorded, resume runs it again
                self.result.lost += 1
                self.progress.note(str(exc))
                continue
            self._record(done)
            cause = None
            if done.record.error is not None:
                error = done.record.error
                cause = f"{error.source}: {error.kind}: {error.message}"
            self._account(cause or done.judge_failure)

    def _record(self, done: Done) -> None:
        """Append what one item produced, in order: the conversation first, then its verdicts."""
        record = done.record
        if done.simulated:
            self.parts.folder.append_conversation(record)
            self.status[record.id] = record.stop_reason
            self.result.finished += 1
            self.result.stop_reasons[record.stop_reason] += 1
            self.result.errors += record.stop_reason == "error"
            self.progress.advance(record.stop_reason)
        else:
            self.result.rejudged += 1
        self.parts.folder.append_verdicts(done.verdicts)
        self.judged.update((v.conversation_id, v.criterion_id) for v in done.verdicts)
        self.result.verdicts += len(done.verdicts)
        if record.stop_reason != "error":
            self.result.judge_errors += sum(v.result == "error" for v in done.verdicts)

    def _account(self, cause: str | None) -> None:
        if self.budget.account(cause) is not None:
            current = asyncio.current_task()
            for task in self._tasks:
                if task is not current:
                    task.cancel()
        if time.monotonic() - self._last_checkpoint >= CHECKPOINT_S:
            self.checkpoint()

    def _count_calls(self) -> None:
        calls, limits = self.executor.call_stats()
        self.session.calls = {name: CallCounts.model_validate(c) for name, c in calls.items()}
        self.session.limits = {name: LimitCounts.model_validate(c) for name, c in limits.items()}

    def checkpoint(self) -> None:
        """Write this session's counts so far into the manifest (atomically)."""
        self._last_checkpoint = time.monotonic()
        self._count_calls()
        self.session.checkpoint_at = datetime.now(UTC)
        self.parts.folder.write_manifest(self.parts.manifest)

    def finish(self, state: RunStatus) -> None:
        """Write the manifest's final status, this session's counts and what the folder holds."""
        manifest = self.parts.manifest
        self._count_calls()
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
        self.result.calls = self.executor.call_stats()[0]
