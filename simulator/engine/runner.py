"""Run a suite (`run_suite`), finish one (`resume`), or judge a stored run again (`judge_run`): each builds
a session's parts and its work, and hands them to the one worker pool in `engine/session.py`.
"""

from __future__ import annotations

__all__ = [
    "RunOptions",
    "RunResult",
    "judge_run",
    "new_manifest",
    "parse_max_errors",
    "redacted_suite",
    "run_suite",
]

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.bots import make_bot_factory
from simulator.engine.budget import ErrorBudget, parse_max_errors
from simulator.engine.conversation import ConversationPlan
from simulator.engine.progress import RunProgress
from simulator.engine.session import RunResult, RunSession, SessionParts, WorkItem
from simulator.errors import UserError
from simulator.judging.stage import JudgeStage, make_judge_stage
from simulator.providers.hub import ModelHub, current_scope, resolve_user_model
from simulator.record.folder import RunFolder, git_commit, new_run_id
from simulator.record.hashing import sha256_file, sha256_text
from simulator.record.manifest import Manifest, PromptEntry, RoleModels, ScenarioEntry, Session
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.redact import register_secrets, suite_secrets
from simulator.spec.scenario import Scenario
from simulator.spec.suite import Suite
from simulator.users.base import SimulatedUser
from simulator.users.prompt import USER_PROMPT_TEMPLATE, render_user_prompt


@dataclass
class RunOptions:
    out: Path | None = None  # the run folder to create; default runs/<run-id>
    resume: bool = False  # reopen `out` and finish what it lacks
    retry_errors: bool = False  # with resume: run errored conversations and judgements again
    progress: bool = True
    # None: stop after 10 failures in a row; a count, a share of finished items, or math.inf (never).
    max_errors: float | None = None
    # Freeze the start-up heap out of the garbage collector's sight for the run. The CLI turns it on; a
    # program that imports run_suite keeps its own collector settings.
    freeze_gc: bool = False


def redacted_suite(suite: Suite) -> Suite:
    """The suite as the manifest keeps it: `${VAR}` header templates kept (they name a variable, not its
    value), anything written literally replaced by `[redacted]`."""
    copy = suite.model_copy(deep=True)
    if copy.bot.type == "http":
        copy.bot.headers = {k: v if "${" in v else "[redacted]" for k, v in copy.bot.headers.items()}
    return copy


def new_manifest(
    suite: Suite, scenarios: list[Scenario], run_id: str, user_model: str, judges: JudgeStage
) -> Manifest:
    """The manifest written before the first conversation starts."""
    file_hashes = {f: sha256_file(Path(f)) for f in sorted({s._source for s in scenarios})}
    manifest = Manifest(
        run_id=run_id,
        created_at=datetime.now(UTC),
        git_commit=git_commit(suite.base_dir),
        suite_file=str(suite.file) if suite.file else None,
        suite_hash=sha256_file(suite.file) if suite.file else None,
        suite=redacted_suite(suite),
        models=RoleModels(user=user_model, bot=suite.bot.describe(), judge=suite.judges.model),
        # `expected` and `tags` too: reports must not depend on files that may change after the run.
        scenarios=[
            ScenarioEntry(
                id=s.id,
                file=s._source,
                line=s._line,
                sha256=file_hashes[s._source],
                expected=s.expected,
                tags=s.tags,
            )
            for s in scenarios
        ],
        prompts={
            "user": PromptEntry(template=USER_PROMPT_TEMPLATE, hash=sha256_text(USER_PROMPT_TEMPLATE)),
            "judge": judges.prompt(),
        },
        planned=len(scenarios) * suite.runs,
    )
    manifest.add_judge_set(judges.describe())
    return manifest


def _user_factory(suite: Suite, hub: ModelHub, user_model: str) -> Any:
    if user_model == "offline":
        from simulator.users.offline import OfflineUser

        def offline(plan: ConversationPlan, attempt: int) -> SimulatedUser:
            return OfflineUser(plan.scenario, seed=suite.seed, repeat=plan.repeat)

        return offline
    from simulator.users.llm_user import LLMUser

    client, model = hub.client(user_model)

    def llm(plan: ConversationPlan, attempt: int) -> SimulatedUser:
        scope = current_scope()
        if scope is not None:
            scope.attempt = attempt  # a replay after a character break is a new sample, not a cache hit
        return LLMUser(
            client,
            model,
            render_user_prompt(plan.scenario),
            suite.user.temperature,
            suite.user.max_tokens,
            record_raw=suite.record_raw,
        )

    return llm


@dataclass
class _Existing:
    """What a run folder already holds: stop reason per conversation, judgements, what to judge."""

    status: dict[str, str] = field(default_factory=dict)
    judged: set[tuple[str, str]] = field(default_factory=set)
    rejudge: set[str] = field(default_factory=set)


def _scan(folder: RunFolder, judges: JudgeStage, retry_errors: bool, rerun_errors: bool) -> _Existing:
    """Read a run folder back (streaming). With `retry_errors`, first drop this judge set's error verdicts;
    with `rerun_errors` also errored conversations (with their verdicts), so files keep one record per item."""
    current = judges.judge_set_hash

    def ours(verdict: Verdict) -> bool:
        return verdict.judge_set_hash == current

    if retry_errors:
        failed: set[str] = set()
        if rerun_errors:
            last = {record.id: record.stop_reason for record in folder.conversations()}
            failed = {conversation for conversation, reason in last.items() if reason == "error"}
        # Verdicts first: a crash between the two rewrites leaves an errored, unjudged conversation, which
        # the next resume judges or (with --retry-errors) runs again. Never a verdict without its record.
        folder.drop_verdicts(
            lambda v: v.conversation_id not in failed and not (v.result == "error" and ours(v))
        )
        if failed:
            folder.drop_conversations(lambda r: r.id not in failed)
    # Verdicts of another judge set (`simulator judge --judges ...`) do not stand in for this run's own.
    existing = _Existing(judged={(v.conversation_id, v.criterion_id) for v in folder.verdicts() if ours(v)})
    for record in folder.conversations():
        existing.status[record.id] = record.stop_reason
        if judges.pending(record, existing.judged):
            existing.rejudge.add(record.id)
        else:
            existing.rejudge.discard(record.id)  # a later duplicate line that is fully judged
    return existing


def _work(
    folder: RunFolder, rejudge: set[str], plans: Iterable[ConversationPlan], status: dict[str, str]
) -> Iterator[WorkItem]:
    """Conversations to judge (read back one at a time), then conversations to simulate."""
    if rejudge:
        for record in folder.conversations():
            if record.id in rejudge:
                rejudge.discard(record.id)
                yield record
    for plan in plans:
        if plan.id not in status:
            yield plan


@contextmanager
def _frozen_heap(enabled: bool) -> Iterator[None]:
    # Everything alive now (modules, SDKs, schemas) is moved out of the garbage collector's sight: a run
    # makes millions of short-lived objects, and each full collection would rescan the start-up heap and
    # stall the event loop (bench: 1.19x -> 1.10x the lower bound). Unfrozen when the run ends.
    if enabled:
        gc.collect()
        gc.freeze()
    try:
        yield
    finally:
        if enabled:
            gc.unfreeze()


def _open_folder(
    suite: Suite, scenarios: list[Scenario], options: RunOptions, user_model: str, judges: JudgeStage
) -> tuple[RunFolder, Manifest, _Existing, Session]:
    if options.resume:
        assert options.out is not None
        folder = RunFolder.resume(options.out)
        manifest = folder.read_manifest()
        existing = _scan(folder, judges, options.retry_errors, rerun_errors=options.retry_errors)
        session = Session(command="resume", started_at=datetime.now(UTC))
        if manifest.judge_set is None or manifest.judge_set.hash != judges.judge_set_hash:
            manifest.add_judge_set(judges.describe())  # the criteria files changed since the run started
    else:
        run_id = new_run_id(suite.name)
        path = options.out or Path("runs") / run_id
        manifest = new_manifest(suite, scenarios, path.name, user_model, judges)
        folder = RunFolder.create(path, manifest)
        existing = _Existing()
        session = Session(command="run", started_at=manifest.created_at)
    manifest.sessions.append(session)
    manifest.status = "running"
    folder.write_manifest(manifest)
    return folder, manifest, existing, session


async def run_suite(suite: Suite, scenarios: list[Scenario], options: RunOptions) -> RunResult:
    """Run every planned conversation not already recorded; return what happened. Never loses a record."""
    register_secrets(suite_secrets(suite))  # before anything can be written
    hub = ModelHub.create(suite.providers, suite.cache, suite.base_dir)
    bots: Any = None
    folder: RunFolder | None = None
    try:
        user_model = resolve_user_model(suite.user.model)
        make_user = _user_factory(suite, hub.for_role("user"), user_model)
        bots = make_bot_factory(suite, hub.for_role("bot"))
        judges = make_judge_stage(suite, scenarios, hub.for_role("judge"))
        folder, manifest, existing, session = _open_folder(suite, scenarios, options, user_model, judges)
        keys = {f"{s.id}#{r}" for s in scenarios for r in range(suite.runs)}
        existing.rejudge &= keys
        todo = len(keys - set(existing.status))
        parts = SessionParts(
            suite, {s.id: s for s in scenarios}, folder, manifest, hub, judges, make_user, bots, user_model
        )
        runner = RunSession(
            parts, ErrorBudget(options.max_errors), session, RunProgress(todo, options.progress)
        )
        runner.status = existing.status
        runner.judged = existing.judged
        runner.result.skipped = len(keys) - todo
        plans = (ConversationPlan(s, r) for s in scenarios for r in range(suite.runs))
        work = _work(folder, existing.rejudge, plans, existing.status)
        with _frozen_heap(options.freeze_gc):
            result = await runner.run(work, min(suite.concurrency, max(1, todo + len(existing.rejudge))))
        if result.abort_reason:
            raise UserError(
                f"run aborted: {result.abort_reason}. Fix the cause, then finish the run with: "
                f"simulator run --resume {folder.path} --retry-errors"
            )
        return result
    finally:
        if folder is not None:
            folder.release()
        await hub.aclose()
        closer = getattr(bots, "aclose", None)
        if closer is not None:
            await closer()


async def judge_run(
    folder: RunFolder,
    suite: Suite,
    scenarios: list[Scenario],
    records: list[ConversationRecord],
    *,
    retry_errors: bool = False,
    concurrency: int | None = None,
) -> tuple[RunResult, JudgeStage, int]:
    """Judge stored conversations again with the suite's judge set, through the same worker pool as a run;
    return the result, the stage and how many conversations needed judging."""
    register_secrets(suite_secrets(suite))
    hub = ModelHub.create(suite.providers, suite.cache, suite.base_dir)
    try:
        judges = make_judge_stage(suite, scenarios, hub.for_role("judge"))
        if retry_errors:
            folder.drop_verdicts(
                lambda v: not (v.result == "error" and v.judge_set_hash == judges.judge_set_hash)
            )
        judged = {
            (v.conversation_id, v.criterion_id)
            for v in folder.verdicts()
            if v.judge_set_hash == judges.judge_set_hash
        }
        todo = [r for r in records if judges.pending(r, judged)]
        manifest = folder.read_manifest()
        manifest.add_judge_set(judges.describe())
        manifest.prompts["judge"] = judges.prompt()
        session = Session(command="judge", started_at=datetime.now(UTC))
        manifest.sessions.append(session)
        parts = SessionParts(suite, {s.id: s for s in scenarios}, folder, manifest, hub, judges)
        runner = RunSession(parts, ErrorBudget(float("inf")), session, RunProgress(0, enabled=False))
        runner.judged = judged
        status = manifest.status
        result = await runner.run(iter(todo), concurrency or suite.concurrency)
        manifest.status = status  # judging does not change whether the run itself finished
        folder.write_manifest(manifest)
        return result, judges, len(todo)
    finally:
        folder.release()
        await hub.aclose()
