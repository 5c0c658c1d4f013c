"""One session of work on a run folder: a pool of workers that simulate and judge items and append each
record as it finishes. `run`, `run --resume` and `judge` are all sessions; they differ only in their work.

Nothing finished is held in memory, and the session's call counts are checkpointed into the manifest as it
goes, so a session killed with `kill -9` loses only what was in flight.
"""

from __future__ import annotations

__all__ = ["RunResult", "RunSession", "SessionParts"]

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from simulator.engine.budget import ErrorBudget
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.engine.fidelity_loop import run_audited
from simulator.engine.progress import RunProgress
from simulator.judging.fidelity import FIDELITY_CHECKS, FidelityAuditor
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
    auditor: FidelityAuditor | None = None  # audits the simulated user (user.fidelity)


class RunSession:
    """Workers pull items (a record to judge, or a plan to simulate and then judge) until the work runs out
    or the error budget says stop."""

    def __init__(self, parts: SessionParts, budget: ErrorBudget, session: Session, progress: RunProgress):
        self.parts = parts
        self.budget = budget
        self.session = session
        self.progress = progress
        self.result = RunResult(folder=parts.folder.path, status="running")
        self.judged: set[tuple[str, str]] = set()
        self.audited: set[tuple[str, str]] = set()  # (conversation, fidelity check) already written
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
        self.result.abort_reason = self.budget.reason
        self.finish("aborted" if self.budget.reason else "complete")
        return self.result

    async def _worker(self, work: Iterator[WorkItem]) -> None:
        while self.budget.reason is None:
            item = next(work, None)
            if item is None:
                return
            if isinstance(item, ConversationPlan):
                record = await self._simulate(item)
            else:
                record = item
                self.result.rejudged += 1
                await self._audit_stored(record)
            cause = None
            if record.error is not None:
                cause = f"{record.error.source}: {record.error.kind}: {record.error.message}"
            judge_failure = await self._judge(record)
            self._account(cause or judge_failure)

    async def _simulate(self, plan: ConversationPlan) -> ConversationRecord:
        parts = self.parts
        scope = CallScope(repeat=plan.repeat)
        set_scope(scope)
        assert parts.make_user is not None
        options: dict[str, Any] = {
            "max_character_breaks": parts.suite.user.max_character_breaks,
            "user_model": parts.user_model,
            "bot_name": parts.manifest.models.bot,
            "run_id": parts.manifest.run_id,
        }
        fidelity: list[Verdict] = []
        if parts.auditor is None:
            record = await run_conversation(plan, parts.make_user, parts.bots, **options)
        else:
            record, fidelity = await run_audited(
                plan, parts.make_user, parts.bots, parts.auditor, parts.suite.user.fidelity, **options
            )
        if scope.cache_hits:
            record.cache_hits = dict(scope.cache_hits)
        parts.folder.append_conversation(record)
        if fidelity:
            parts.folder.append_verdicts(fidelity)  # right after its record: a crash never orphans them
        self.status[record.id] = record.stop_reason
        self.result.finished += 1
        self.result.stop_reasons[record.stop_reason] += 1
        self.result.errors += record.stop_reason == "error"
        self.progress.advance(record.stop_reason)
        return record

    async def _audit_stored(self, record: ConversationRecord) -> None:
        """Fidelity verdicts for a stored conversation that has none (a re-judge, or a run recorded before
        its verdicts): the offline user's stored provenance is reused, exact; an LLM user is audited again."""
        parts = self.parts
        scenario = parts.scenarios.get(record.scenario_id)
        if parts.auditor is None or scenario is None:
            return
        if all((record.id, check) in self.audited for check in FIDELITY_CHECKS):
            return
        exact = record.provenance and all(p.source == "offline" for p in record.provenance)
        audit = await parts.auditor.audit(record, scenario, list(record.provenance) if exact else None)
        missing = [v for v in audit.verdicts if (record.id, v.criterion_id) not in self.audited]
        parts.folder.append_verdicts(missing)
        self.audited.update((record.id, v.criterion_id) for v in missing)

    async def _judge(self, record: ConversationRecord) -> str | None:
        """Judge and append; the failure to count against the error budget, if any."""
        set_scope(CallScope(repeat=record.repeat))
        scenario = self.parts.scenarios.get(record.scenario_id)
        if scenario is None:
            return None  # a scenario no longer in the suite: kept in the record, not judged
        try:
            verdicts: list[Verdict] = await self.parts.judges.judge(record, scenario, self.judged)
        except Exception as exc:  # a judge-stage bug must not end the run; resume judges it again
            return f"judge stage raised {type(exc).__name__}: {exc}"
        self.parts.folder.append_verdicts(verdicts)
        self.result.verdicts += len(verdicts)
        if record.stop_reason == "error":
            return None  # the conversation's own error is what counts, not the verdicts it could not get
        failed = [v for v in verdicts if v.result == "error"]
        self.result.judge_errors += len(failed)
        if not failed:
            return None
        last = failed[-1]
        detail = f"{last.error.kind}: {last.error.message}" if last.error else last.reasoning
        return f"judge {last.criterion_id}: {detail}"

    def _account(self, cause: str | None) -> None:
        if self.budget.account(cause) is not None:
            current = asyncio.current_task()
            for task in self._tasks:
                if task is not current:
                    task.cancel()
        if time.monotonic() - self._last_checkpoint >= CHECKPOINT_S:
            self.checkpoint()

    def _count_calls(self) -> None:
        hub = self.parts.hub
        self.session.calls = {name: CallCounts.model_validate(c) for name, c in hub.stats().items()}
        self.session.limits = {name: LimitCounts.model_validate(c) for name, c in hub.limits().items()}

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
        self.result.calls = self.parts.hub.stats()
