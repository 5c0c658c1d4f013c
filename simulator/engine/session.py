"""One session of work on one run folder, or on the cells of a matrix (one run folder each): a pool of
workers that simulate and judge items and append each record to its cell's folder as it finishes. `run`,
`run --resume`, `judge` and matrix runs are all sessions; they differ only in their cells and their work.

Nothing finished is held in memory, and the session's call counts are checkpointed into the manifest as it
goes, so a session killed with `kill -9` loses only what was in flight.
"""

from __future__ import annotations

__all__ = ["CellRun", "RunResult", "RunSession", "SessionParts", "WorkItem"]

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from simulator.engine.budget import ErrorBudget
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.engine.progress import RunProgress
from simulator.judging.stage import JudgeStage
from simulator.providers.hub import CallScope, ModelHub, set_scope
from simulator.record.folder import RunFolder
from simulator.record.manifest import CallCounts, LimitCounts, Manifest, RunStatus, Session
from simulator.record.models import ConversationRecord, Verdict
from simulator.spec.scenario import Scenario
from simulator.spec.suite import Suite

# The session's call counts reach the manifest at least this often while it runs.
CHECKPOINT_S = 5.0

WorkItem = ConversationRecord | ConversationPlan


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
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # per provider, from ModelHub.stats

    @property
    def judged_nothing(self) -> bool:
        """True when every conversation of this session errored: nothing could be judged."""
        return self.finished > 0 and self.errors == self.finished


@dataclass
class SessionParts:
    """What a session works with; built once per command by the runner."""

    suite: Suite
    scenarios: dict[str, Scenario]
    folder: RunFolder
    manifest: Manifest
    hub: ModelHub
    judges: JudgeStage
    make_user: Callable[[ConversationPlan, int], Any] | None = None
    bots: Any = None
    user_model: str = ""


class CellRun:
    """One run folder's share of a session: its parts, error budget, manifest session entry and counts.

    A plain run is one cell; a matrix run is several cells fed to the same worker pool and model hub."""

    def __init__(self, parts: SessionParts, budget: ErrorBudget, session: Session, *, shared: bool = False):
        self.parts = parts
        self.budget = budget
        self.session = session
        # Cells of a matrix share the hub, so its call counts belong to no single cell: the manifest's
        # session records none, and the matrix index records the hub's.
        self.shared = shared
        self.result = RunResult(folder=parts.folder.path, status="running")
        self.judged: set[tuple[str, str]] = set()
        self.status: dict[str, str] = {}
        self.last_checkpoint = time.monotonic()

    def count_calls(self) -> None:
        if self.shared:
            return
        hub = self.parts.hub
        self.session.calls = {name: CallCounts.model_validate(c) for name, c in hub.stats().items()}
        self.session.limits = {name: LimitCounts.model_validate(c) for name, c in hub.limits().items()}

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
        self.result.calls = self.parts.hub.stats()


class RunSession:
    """Workers pull items (a record to judge, or a plan to simulate and then judge), each for one cell,
    until the work runs out; a cell whose error budget says stop gets no more items."""

    def __init__(self, cells: list[CellRun], progress: RunProgress):
        self.cells = cells
        self.progress = progress
        self._tasks: list[asyncio.Task[None]] = []

    async def run(self, work: Iterator[tuple[CellRun, WorkItem]], width: int) -> list[RunResult]:
        """Work through `work` with `width` workers; each cell's manifest status says how it ended."""
        try:
            with self.progress:
                self._tasks = [asyncio.create_task(self._worker(work)) for _ in range(max(1, width))]
                outcomes = await asyncio.gather(*self._tasks, return_exceptions=True)
            for outcome in outcomes:
                if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
                    raise outcome
        except (asyncio.CancelledError, KeyboardInterrupt):
            for cell in self.cells:
                cell.finish("interrupted")
            raise
        for cell in self.cells:
            cell.result.abort_reason = cell.budget.reason
            cell.finish("aborted" if cell.budget.reason else "complete")
        return [cell.result for cell in self.cells]

    async def _worker(self, work: Iterator[tuple[CellRun, WorkItem]]) -> None:
        while not all(cell.budget.reason for cell in self.cells):
            pair = next(work, None)
            if pair is None:
                return
            cell, item = pair
            if cell.budget.reason is not None:
                continue  # this cell was stopped; its remaining items wait for a resume
            if isinstance(item, ConversationPlan):
                record = await self._simulate(cell, item)
            else:
                record = item
                cell.result.rejudged += 1
            cause = None
            if record.error is not None:
                cause = f"{record.error.source}: {record.error.kind}: {record.error.message}"
            judge_failure = await self._judge(cell, record)
            self._account(cell, cause or judge_failure)

    async def _simulate(self, cell: CellRun, plan: ConversationPlan) -> ConversationRecord:
        parts = cell.parts
        scope = CallScope(repeat=plan.repeat)
        set_scope(scope)
        assert parts.make_user is not None
        record = await run_conversation(
            plan,
            parts.make_user,
            parts.bots,
            max_character_breaks=parts.suite.user.max_character_breaks,
            user_model=parts.user_model,
            bot_name=parts.manifest.models.bot,
            run_id=parts.manifest.run_id,
        )
        if scope.cache_hits:
            record.cache_hits = dict(scope.cache_hits)
        parts.folder.append_conversation(record)
        cell.status[record.id] = record.stop_reason
        cell.result.finished += 1
        cell.result.stop_reasons[record.stop_reason] += 1
        cell.result.errors += record.stop_reason == "error"
        self.progress.advance(record.stop_reason)
        return record

    async def _judge(self, cell: CellRun, record: ConversationRecord) -> str | None:
        """Judge and append; the failure to count against the error budget, if any."""
        set_scope(CallScope(repeat=record.repeat))
        scenario = cell.parts.scenarios.get(record.scenario_id)
        if scenario is None:
            return None  # a scenario no longer in the suite: kept in the record, not judged
        try:
            verdicts: list[Verdict] = await cell.parts.judges.judge(record, scenario, cell.judged)
        except Exception as exc:  # a judge-stage bug must not end the run; resume judges it again
            return f"judge stage raised {type(exc).__name__}: {exc}"
        cell.parts.folder.append_verdicts(verdicts)
        cell.result.verdicts += len(verdicts)
        if record.stop_reason == "error":
            return None  # the conversation's own error is what counts, not the verdicts it could not get
        failed = [v for v in verdicts if v.result == "error"]
        cell.result.judge_errors += len(failed)
        if not failed:
            return None
        last = failed[-1]
        detail = f"{last.error.kind}: {last.error.message}" if last.error else last.reasoning
        return f"judge {last.criterion_id}: {detail}"

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
