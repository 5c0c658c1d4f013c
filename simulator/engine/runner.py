"""Run a suite (`run_suite`), finish one (`resume`), or judge a stored run again (`judge_run`): each builds
a session's parts and its work, and hands them to the one worker pool in `engine/session.py`.
"""

from __future__ import annotations

__all__ = [
    "CellSpec",
    "RunOptions",
    "RunResult",
    "judge_run",
    "new_manifest",
    "parse_max_errors",
    "run_cells",
    "run_suite",
]

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.bots import BotFactory, make_bot_factory
from simulator.config.bot_identity import identify_bot, with_answer
from simulator.config.bot_kinds import MODEL
from simulator.config.scenario import Scenario, refuse_drafts
from simulator.config.suite import Suite
from simulator.engine.budget import ErrorBudget, parse_max_errors
from simulator.engine.conversation import ConversationPlan
from simulator.engine.operational import carry_bot_operational
from simulator.engine.progress import RunProgress
from simulator.engine.ray_backend import RayBackendOptions, connect_ray, start_ray_executor
from simulator.engine.roles import (
    check_offline_languages,
    check_scripted,
    make_auditor,
    run_user_model,
    user_factory,
)
from simulator.engine.session import CellRun, RunResult, RunSession, SessionParts, WorkItem
from simulator.engine.shards import in_shard, plan_hash
from simulator.errors import UserError, in_both
from simulator.eventloop import frozen_heap
from simulator.judging.fidelity import FIDELITY_CHECKS
from simulator.judging.stage import JudgeStage, make_judge_stage
from simulator.providers.hub import ModelHub
from simulator.record.folder import RunFolder, git_commit, new_run_id, simulator_commit
from simulator.record.hashing import sha256_file, sha256_text
from simulator.record.manifest import Manifest, PromptEntry, RoleModels, ScenarioEntry, Session, ShardInfo
from simulator.record.models import ConversationRecord
from simulator.record.recorded import scenario_file_hashes, scenario_hash, setting_file_hashes
from simulator.record.redact import redacted_suite, register_secrets, suite_secrets
from simulator.record.selection import (
    fidelity_items,
    is_fidelity_check,
    item_of,
    judged_items,
    of_judge_set,
    outcome_items_moved,
)
from simulator.users.base import SimulatedUser
from simulator.users.prompt import USER_PROMPT_TEMPLATE


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
    # Run only this part of the plan (`--shard i/K`); a resumed shard takes it from its manifest.
    shard: ShardInfo | None = None
    # Where items run: None in this process; RayBackendOptions on a Ray cluster.
    backend: RayBackendOptions | None = None
    # A program that embeds the engine may bring its own simulated user: called with (plan, attempt) and
    # returning an object with `next_message(turns)` (and optionally `fact_provenance(turns)`).
    make_user: Callable[[ConversationPlan, int], SimulatedUser] | None = None
    # With resume: operational settings changed since the run began ({path: [old, new]}), for the manifest.
    settings_changed: dict[str, list[Any]] = field(default_factory=dict)


def new_manifest(
    suite: Suite, scenarios: list[Scenario], run_id: str, user_model: str, judges: JudgeStage
) -> Manifest:
    """The manifest written before the first conversation starts."""
    # Absolute paths: resume and judge find these very files from any working directory (record/recorded.py).
    file_hashes = scenario_file_hashes(scenarios)
    absolute = {f: str(Path(f).resolve()) for f in file_hashes}
    manifest = Manifest(
        kind="golden" if scenarios and all(s.script is not None for s in scenarios) else "simulation",
        run_id=run_id,
        created_at=datetime.now(UTC),
        git_commit=simulator_commit(),
        suite_git_commit=git_commit(suite.base_dir),
        bot_identity=identify_bot(suite.bot, suite.base_dir),
        suite_file=str(suite.file.resolve()) if suite.file else None,
        suite_hash=sha256_file(suite.file) if suite.file else None,
        suite=redacted_suite(suite),
        setting_files=setting_file_hashes(suite),
        models=RoleModels(user=user_model, bot=suite.bot.describe(), judge=suite.judges.model),
        # `expected` and `tags` too: reports must not depend on files that may change after the run.
        scenarios=[
            ScenarioEntry(
                id=s.id,
                file=absolute.get(s._source or ""),
                line=s._line if s._source in file_hashes else None,
                # In code: its content's hash, which a resume given scenarios again checks them against.
                sha256=scenario_hash(s, file_hashes),
                expected=s.expected,
                tags=s.tags,
                intent=s.script.intent if s.script else None,
                item_kind=s.script.kind if s.script else None,
                base=s.base,
                factors=s.factors,
            )
            for s in scenarios
        ],
        prompts={
            "user": PromptEntry(template=USER_PROMPT_TEMPLATE, hash=sha256_text(USER_PROMPT_TEMPLATE)),
            "judge": judges.prompt(),
        },
        planned=len(scenarios) * suite.runs,
        judge_sets=[judges.describe()],
    )
    return manifest


@dataclass
class _Existing:
    """What a run folder already holds: stop reason per conversation, judgements, what to judge."""

    status: dict[str, str] = field(default_factory=dict)
    judged: set[tuple[str, str]] = field(default_factory=set)
    rejudge: set[str] = field(default_factory=set)
    audited: set[tuple[str, str]] = field(default_factory=set)  # (conversation, fidelity check) written


def audited_ids(folder: RunFolder) -> set[tuple[str, str]]:
    """(conversation, check) pairs of the folder's simulator fidelity verdicts."""
    return fidelity_items(folder.verdicts())


def audit_pending(record: ConversationRecord, audited: set[tuple[str, str]]) -> bool:
    """True when some fidelity check of the conversation has no verdict yet."""
    return any((record.id, check) not in audited for check in FIDELITY_CHECKS)


def _scan(
    folder: RunFolder, judges: JudgeStage, retry_errors: bool, rerun_errors: bool, audit: bool = False
) -> _Existing:
    """Read a run folder back (streaming). With `retry_errors`, first drop this judge set's error verdicts;
    with `rerun_errors` also errored conversations (with their verdicts), so files keep one record per item."""
    current = judges.judge_set_hash
    if retry_errors:
        failed: set[str] = set()
        if rerun_errors:
            last = {record.id: record.stop_reason for record in folder.conversations()}
            failed = {conversation for conversation, reason in last.items() if reason == "error"}
        # Verdicts first: a crash between the two rewrites leaves an errored, unjudged conversation, which
        # the next resume judges or (with --retry-errors) runs again. Never a verdict without its record.
        redo = _errored_items(folder, current)
        folder.drop_verdicts(
            lambda v: (
                v.conversation_id not in failed
                and not (of_judge_set(v, current) and item_of(v) in redo)
                and not (v.result == "error" and is_fidelity_check(v))
            )
        )
        if failed:
            folder.drop_conversations(lambda r: r.id not in failed)
    # Verdicts of another judge set (`simulator judge --judges ...`) do not stand in for this run's own.
    existing = _Existing(judged=judged_items(folder.verdicts(), current))
    existing.audited = audited_ids(folder) if audit else set()
    for record in folder.conversations():
        existing.status[record.id] = record.stop_reason
        if judges.pending(record, existing.judged) or (audit and audit_pending(record, existing.audited)):
            existing.rejudge.add(record.id)
        else:
            existing.rejudge.discard(record.id)  # a later duplicate line that is fully judged
    return existing


def _errored_items(folder: RunFolder, judge_set: str) -> set[tuple[str, str]]:
    """(conversation, criterion) pairs whose counted verdict of this judge set is an error: with their
    samples, they are dropped and judged again, so an item never holds two batches of samples."""
    return judged_items(folder.verdicts(), judge_set, result="error")


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


def _keys(scenarios: list[Scenario], runs: int) -> list[str]:
    return [f"{s.id}#{r}" for s in scenarios for r in range(runs)]


@dataclass
class CellSpec:
    """One run folder a session writes: its suite, where, and whether it exists already."""

    suite: Suite
    out: Path | None = None
    resume: bool = False
    # Provenance kept in the manifest's `source` (a matrix cell records its matrix and cell id).
    source: dict[str, Any] = field(default_factory=dict)
    # A bot given in code (simulator.run(..., bot=obj)); None: the adapter the suite's `bot:` names.
    bots: BotFactory | None = None
    # With resume: this cell's operational settings changed ({path: [old, new]}); None: the options'.
    settings_changed: dict[str, list[Any]] | None = None


def _open_folder(
    spec: CellSpec,
    scenarios: list[Scenario],
    options: RunOptions,
    user_model: str,
    judges: JudgeStage,
    audit: bool = False,
) -> tuple[RunFolder, Manifest, _Existing, Session]:
    if spec.resume:
        assert spec.out is not None
        folder = RunFolder.resume(spec.out)
        manifest = folder.read_manifest()
        existing = _scan(folder, judges, options.retry_errors, rerun_errors=options.retry_errors, audit=audit)
        changed = options.settings_changed if spec.settings_changed is None else spec.settings_changed
        session = Session(command="resume", started_at=datetime.now(UTC), settings_changed=changed)
        if changed and manifest.suite is not None:
            # The next resume starts from the settings this one used.
            manifest.suite.concurrency = spec.suite.concurrency
            manifest.suite.providers = {k: v.model_copy() for k, v in spec.suite.providers.items()}
            carry_bot_operational(manifest.suite.bot, spec.suite.bot)
        if manifest.judge_set is None or manifest.judge_set.hash != judges.judge_set_hash:
            manifest.add_judge_set(judges.describe())  # the criteria files changed since the run started
    else:
        suite = spec.suite
        run_id = new_run_id(suite.name)
        path = spec.out or Path("runs") / run_id
        manifest = new_manifest(suite, scenarios, path.name, user_model, judges)
        manifest.source.update(spec.source)
        if options.shard is not None:
            total = manifest.planned
            manifest.shard = options.shard.model_copy(
                update={"plan_hash": plan_hash(manifest.scenarios, suite.runs), "total": total}
            )
            manifest.planned = sum(1 for key in _keys(scenarios, suite.runs) if in_shard(key, manifest.shard))
        folder = RunFolder.create(path, manifest)
        existing = _Existing()
        session = Session(command="run", started_at=manifest.created_at)
    manifest.sessions.append(session)
    manifest.status = "running"
    folder.write_manifest(manifest)
    return folder, manifest, existing, session


def _cell(
    spec: CellSpec, scenarios: list[Scenario], options: RunOptions, hub: ModelHub, shared: bool, warn: bool
) -> tuple[CellRun, Iterator[WorkItem], int]:
    """Build one cell's parts and its work: what its folder lacks, judging first. Returns the cell, the
    work and how many conversations it still has to simulate."""
    suite = spec.suite
    user_model = run_user_model(suite)
    check_scripted(user_model, scenarios)
    check_offline_languages(user_model, suite, scenarios)
    make_user = options.make_user or user_factory(suite, hub.for_role("user"), user_model)
    bots = spec.bots or make_bot_factory(suite, hub.for_role("bot"))
    judges = make_judge_stage(suite, scenarios, hub.for_role("judge"), warn=warn)
    auditor = make_auditor(suite, hub, user_model)
    started_ray = connect_ray(options.backend) if options.backend else False  # before any folder is made
    folder, manifest, existing, session = _open_folder(
        spec, scenarios, options, user_model, judges, audit=auditor is not None
    )
    shard = manifest.shard  # a shard (new, or resumed) runs only its part of the plan
    keys = {key for key in _keys(scenarios, suite.runs) if shard is None or in_shard(key, shard)}
    existing.rejudge &= keys
    todo = len(keys - set(existing.status))
    parts = SessionParts(
        suite,
        {s.id: s for s in scenarios},
        folder,
        manifest,
        hub,
        judges,
        make_user,
        bots,
        user_model,
        auditor,
    )
    width = min(suite.concurrency, max(1, todo + len(existing.rejudge)))
    executor = start_ray_executor(parts, options.backend, width, started_ray) if options.backend else None
    cell = CellRun(parts, ErrorBudget(options.max_errors), session, shared=shared, executor=executor)
    cell.status = existing.status
    cell.judged = existing.judged
    cell.audited = existing.audited
    cell.result.skipped = len(keys) - todo
    plans = (ConversationPlan(s, r) for s in scenarios for r in range(suite.runs))
    plans = (plan for plan in plans if plan.id in keys)
    return cell, _work(folder, existing.rejudge, plans, existing.status), todo + len(existing.rejudge)


def _round_robin(cells: list[tuple[CellRun, Iterator[WorkItem]]]) -> Iterator[tuple[CellRun, WorkItem]]:
    """One item of each cell in turn, so an interrupted matrix has every cell about equally far along."""
    live = list(cells)
    while live:
        for entry in list(live):
            item = next(entry[1], None)
            if item is None:
                live.remove(entry)
            else:
                yield entry[0], item


async def run_cells(specs: list[CellSpec], scenarios: list[Scenario], options: RunOptions) -> list[RunResult]:
    """Run every cell's missing conversations in one session: one model hub (shared provider limits and
    cache), one worker pool, one record per item in each cell's own folder. Never loses a record."""
    base = specs[0].suite
    refuse_drafts(scenarios, base.scenarios.include_drafts)
    for spec in specs:
        register_secrets(suite_secrets(spec.suite))  # before anything can be written
    if options.backend is not None and len(specs) > 1:
        raise UserError("--backend ray runs one suite at a time: run a matrix locally, or each cell's suite")
    hub = ModelHub.create(base)
    cells: list[tuple[CellRun, Iterator[WorkItem]]] = []
    try:
        pending = 0
        for index, spec in enumerate(specs):
            # Judge-setup notes once; a bot played by a model can change the same-family warning, so its cells warn.
            warn = index == 0 or spec.suite.bot.has(MODEL)
            cell, work, todo = _cell(spec, scenarios, options, hub, shared=len(specs) > 1, warn=warn)
            cells.append((cell, work))
            pending += todo
            starter = getattr(cell.parts.bots, "start", None)  # a service bot the suite starts (bot.start)
            if todo and starter is not None:
                await starter(cell.parts.folder.path)  # its output goes to the run folder's bot.log
            identify = getattr(cell.parts.bots, "identify", None)  # a release the bot answers (version_url)
            if todo and identify is not None:
                answered = await identify()
                if answered:
                    manifest = cell.parts.manifest
                    manifest.bot_identity = with_answer(manifest.bot_identity, answered)
                    cell.parts.folder.write_manifest(manifest)
        session = RunSession([cell for cell, _ in cells], RunProgress(pending, options.progress))
        with frozen_heap(options.freeze_gc):
            return await session.run(_round_robin(cells), min(base.concurrency, max(1, pending)))
    finally:
        for cell, _ in cells:
            cell.parts.folder.release()
        await hub.aclose()
        for cell, _ in cells:
            closer = getattr(cell.parts.bots, "aclose", None)
            if closer is not None:
                await closer()


async def run_suite(
    suite: Suite, scenarios: list[Scenario], options: RunOptions, bots: BotFactory | None = None
) -> RunResult:
    """Run every planned conversation not already recorded; return what happened. Never loses a record.
    `bots`: a bot given in code, instead of the adapter the suite's `bot:` names."""
    spec = CellSpec(suite, options.out, options.resume, bots=bots)
    [result] = await run_cells([spec], scenarios, options)
    if result.abort_reason:
        raise UserError(
            f"run aborted: {result.abort_reason}.{rate_limit_note(result)} Fix the cause, then finish the "
            f"run with: {resume_words(result.folder)}"
        )
    return result


def resume_words(folder: Path | str) -> str:
    """How to finish an aborted run, errored items again, from the command line and from Python."""
    return in_both(
        f"simulator run --resume {folder} --retry-errors",
        f"simulator.resume({str(folder)!r}, retry_errors=True)",
    )


def rate_limit_note(result: RunResult) -> str:
    """For a run whose provider refused calls: what rate it was seen to allow, and the `rpm` option."""
    notes = []
    for name, calls in sorted(result.calls.items()):
        if not calls.get("rate_limits"):
            continue
        limits = result.limits.get(name, {})
        seen = limits.get("observed_rpm") or limits.get("rpm")
        rate = f", delivering about {seen:g} requests/min" if seen else ""
        notes.append(
            f" {name} refused {calls['rate_limits']} calls for its rate limit{rate}: set providers.{name}.rpm "
            f"in the suite, or resume with --rpm {name}=N."
        )
    return "".join(notes)


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
    hub = ModelHub.create(suite)
    try:
        judges = make_judge_stage(suite, scenarios, hub.for_role("judge"))
        current = judges.judge_set_hash
        if retry_errors:
            redo = _errored_items(folder, current)
            folder.drop_verdicts(lambda v: not (of_judge_set(v, current) and item_of(v) in redo))
        stored = list(folder.verdicts())
        judged = judged_items(stored, current) - outcome_items_moved(stored, current, scenarios)
        auditor = make_auditor(suite, hub, folder.read_manifest().models.user)
        audited = audited_ids(folder) if auditor is not None else set()
        todo = [r for r in records if judges.pending(r, judged) or (auditor and audit_pending(r, audited))]
        manifest = folder.read_manifest()
        manifest.add_judge_set(judges.describe())
        manifest.prompts["judge"] = judges.prompt()
        session = Session(command="judge", started_at=datetime.now(UTC))
        manifest.sessions.append(session)
        parts = SessionParts(
            suite, {s.id: s for s in scenarios}, folder, manifest, hub, judges, auditor=auditor
        )
        cell = CellRun(parts, ErrorBudget(float("inf")), session)
        cell.judged = judged
        cell.audited = audited
        status = manifest.status
        runner = RunSession([cell], RunProgress(0, enabled=False))
        [result] = await runner.run(((cell, r) for r in todo), concurrency or suite.concurrency)
        manifest.status = status  # judging does not change whether the run itself finished
        folder.write_manifest(manifest)
        return result, judges, len(todo)
    finally:
        folder.release()
        await hub.aclose()
