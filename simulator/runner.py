"""Run a suite: plan scenario x repeat, run conversations concurrently, judge each, append as they finish.

Nothing finished is held in memory: records are appended to the run folder as they finish, and a resumed
run reads back only ids, stop reasons and which judgements exist.
"""

from __future__ import annotations

__all__ = ["RunOptions", "RunResult", "latest_by_id", "parse_max_errors", "run_suite"]

import asyncio
import gc
import math
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.bots import make_bot_factory
from simulator.conversation import ConversationPlan, run_conversation
from simulator.errors import UserError
from simulator.llm import CallScope, ModelHub, current_scope, resolve_user_model, set_scope
from simulator.progress import RunProgress
from simulator.records import ConversationRecord, Verdict
from simulator.runs import (
    CONVERSATIONS,
    VERDICTS,
    Manifest,
    RunFolder,
    git_commit,
    new_run_id,
    sha256_file,
    sha256_text,
)
from simulator.scenario import Scenario
from simulator.suite import Suite
from simulator.users.base import SimulatedUser
from simulator.users.prompt import USER_PROMPT_TEMPLATE, render_user_prompt

# Without --max-errors, a run stops when this many items in a row failed (every call 401, a dead bot);
# a smaller run finishes, its errors counted.
DEFAULT_FAILURE_STREAK = 10
# A fractional --max-errors is judged only once this many items have finished.
MIN_FRACTION_SAMPLE = 10


@dataclass
class RunOptions:
    out: Path | None = None  # the run folder to create; default runs/<run-id>
    resume: bool = False  # reopen `out` and finish what it lacks
    retry_errors: bool = False  # with resume: run errored conversations and judgements again
    progress: bool = True
    # None: stop after DEFAULT_FAILURE_STREAK failures in a row; a count (0, 1, 2, ...) or a fraction
    # (0 < x < 1) of finished items; math.inf: never stop.
    max_errors: float | None = None


@dataclass
class RunResult:
    folder: Path
    status: str
    stop_reasons: Counter[str] = field(default_factory=Counter)
    errors: int = 0  # conversations that ended in an error, this session
    finished: int = 0  # conversations simulated this session
    skipped: int = 0  # already in the run folder
    verdicts: int = 0
    rejudged: int = 0  # conversations from an earlier session judged (again) in this one
    judge_errors: int = 0  # error verdicts written this session
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # per provider, from ModelHub.stats


def parse_max_errors(text: str) -> float:
    """`--max-errors`: `10` (a count), `0.05` or `5%` (a share of finished items), or `off`."""
    value = text.strip().lower()
    if value in ("off", "none", "inf"):
        return math.inf
    try:
        number = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        number = -1.0
    if number < 0 or (number >= 1 and not number.is_integer()) or (value.endswith("%") and number >= 1):
        raise ValueError(f"--max-errors takes a count (10), a share (0.05 or 5%) or off, not '{text}'")
    return number


def _budget_exceeded(limit: float | None, errors: int, finished: int, streak: int) -> str | None:
    """Why the run should stop now, or None."""
    if limit is None:
        if streak >= DEFAULT_FAILURE_STREAK:
            first = "the first " if streak == finished else "the last "
            return f"{first}{streak} items all failed"
        return None
    if limit == math.inf:
        return None
    if limit >= 1 or limit == 0:
        if errors > limit:
            return f"{errors} items failed, more than --max-errors {limit:g}"
        return None
    if finished >= MIN_FRACTION_SAMPLE and errors / finished > limit:
        return (
            f"{errors} of {finished} items failed ({errors / finished:.0%}), more than --max-errors {limit:g}"
        )
    return None


def latest_by_id(records: Iterable[ConversationRecord]) -> dict[str, ConversationRecord]:
    """The last record per conversation id (tolerates a file written before retries replaced records)."""
    latest: dict[str, ConversationRecord] = {}
    for record in records:
        latest[record.id] = record
    return latest


def _redacted_config(suite: Suite) -> dict[str, Any]:
    config = suite.model_dump(mode="json")
    bot = config.get("bot", {})
    if bot.get("type") == "http":
        # Keep ${VAR} templates (they name a variable, not its value); hide anything written literally.
        bot["headers"] = {k: v if "${" in v else "[redacted]" for k, v in bot.get("headers", {}).items()}
    return config


def _manifest(
    suite: Suite,
    scenarios: list[Scenario],
    run_id: str,
    user_model: str,
    judge_info: dict[str, Any],
    planned: int,
) -> Manifest:
    files = sorted({s._source for s in scenarios})
    file_hashes = {f: sha256_file(Path(f)) for f in files}
    config = _redacted_config(suite)
    config["user"]["resolved_model"] = user_model
    return Manifest(
        run_id=run_id,
        created_at=datetime.now(UTC),
        git_commit=git_commit(suite.base_dir),
        suite_file=str(suite.file) if suite.file else None,
        suite_hash=sha256_file(suite.file) if suite.file else None,
        config=config,
        scenarios=[
            # `expected` and `tags` too: reports must not depend on files that may change after the run.
            {
                "id": s.id,
                "file": s._source,
                "line": s._line,
                "sha256": file_hashes[s._source],
                "expected": s.expected,
                "tags": s.tags,
            }
            for s in scenarios
        ],
        prompts={
            "user": {"template": USER_PROMPT_TEMPLATE, "hash": sha256_text(USER_PROMPT_TEMPLATE)},
            **judge_info.get("prompts", {}),
        },
        planned=planned,
        judges=judge_info.get("manifest", {}),
    )


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
    """What a resumed run folder already holds: stop reason per conversation, judgements, what to judge."""

    status: dict[str, str] = field(default_factory=dict)
    judged: set[tuple[str, str]] = field(default_factory=set)
    rejudge: set[str] = field(default_factory=set)


def _scan(folder: RunFolder, judges: Any, retry_errors: bool) -> _Existing:
    """Read a run folder back (streaming); with `retry_errors`, first remove errored conversations (with
    their verdicts) and this judge set's error verdicts, so the files keep one record per item."""
    current = getattr(judges, "judge_set_hash", None)

    def ours(verdict: Verdict) -> bool:
        return current is None or verdict.judge_set_hash == current

    if retry_errors:
        last = {record.id: record.stop_reason for record in folder.conversations()}
        failed = {conversation for conversation, reason in last.items() if reason == "error"}
        # Verdicts first: a crash between the two rewrites leaves an errored, unjudged conversation, which
        # the next resume judges or (with --retry-errors) runs again. Never a verdict without its record.
        folder.rewrite(
            VERDICTS,
            Verdict,
            lambda v: v.conversation_id not in failed and not (v.result == "error" and ours(v)),
        )
        folder.rewrite(CONVERSATIONS, ConversationRecord, lambda r: r.id not in failed)
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
) -> Iterator[ConversationRecord | ConversationPlan]:
    """Conversations to judge (read back one at a time), then conversations to simulate."""
    if rejudge:
        for record in folder.conversations():
            if record.id in rejudge:
                rejudge.discard(record.id)
                yield record
    for plan in plans:
        if plan.id not in status:
            yield plan


def _sum_counts(old: Any, new: Any) -> Any:
    """Add this session's call statistics to those of earlier sessions of the same run."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {k: _sum_counts(old.get(k), new.get(k)) for k in old.keys() | new.keys()}
    if old is None:
        return new
    if new is None:
        return old
    if isinstance(old, int) and isinstance(new, int):
        return old + new
    return new


async def run_suite(suite: Suite, scenarios: list[Scenario], options: RunOptions) -> RunResult:
    """Run every planned conversation not already recorded; return what happened. Never loses a record."""
    from simulator.judging.stage import make_judge_stage

    hub = ModelHub.for_suite(suite)
    bots: Any = None
    try:
        user_model = resolve_user_model(suite.user.model)
        make_user = _user_factory(suite, hub.for_role("user"), user_model)
        bots = make_bot_factory(suite, hub.for_role("bot"))
        judges = make_judge_stage(suite, scenarios, hub.for_role("judge"))
        return await _run(suite, scenarios, options, hub, make_user, bots, judges, user_model)
    finally:
        await hub.aclose()
        closer = getattr(bots, "aclose", None)
        if closer is not None:
            await closer()


async def _run(
    suite: Suite,
    scenarios: list[Scenario],
    options: RunOptions,
    hub: ModelHub,
    make_user: Any,
    bots: Any,
    judges: Any,
    user_model: str,
) -> RunResult:
    planned = len(scenarios) * suite.runs
    plans = (ConversationPlan(s, r) for s in scenarios for r in range(suite.runs))
    if options.resume:
        assert options.out is not None
        folder = RunFolder.open(options.out)
        manifest = folder.read_manifest()
        existing = _scan(folder, judges, options.retry_errors)
        manifest.resumed_at.append(datetime.now(UTC))
    else:
        run_id = new_run_id(suite.name)
        path = options.out or Path("runs") / run_id
        manifest = _manifest(suite, scenarios, path.name, user_model, judges.describe(), planned)
        folder = RunFolder.create(path, manifest)
        existing = _Existing()

    by_id = {s.id: s for s in scenarios}
    status = existing.status
    existing.rejudge &= {f"{s.id}#{r}" for s in scenarios for r in range(suite.runs)}
    todo = planned - sum(1 for s in scenarios for r in range(suite.runs) if f"{s.id}#{r}" in status)
    result = RunResult(folder=folder.path, status="running", skipped=planned - todo)
    manifest.status = "running"
    folder.write_manifest(manifest)

    work = _work(folder, existing.rejudge, plans, status)
    items_planned = todo + len(existing.rejudge)
    judged = existing.judged
    progress = RunProgress(total=todo, enabled=options.progress)
    tally = {"items": 0, "failed": 0, "streak": 0}
    abort: list[str] = []
    tasks: list[asyncio.Task[None]] = []

    async def simulate(plan: ConversationPlan) -> ConversationRecord:
        scope = CallScope(repeat=plan.repeat)
        set_scope(scope)
        record = await run_conversation(
            plan,
            make_user,
            bots,
            max_character_breaks=suite.user.max_character_breaks,
            user_model=user_model,
            bot_name=suite.bot.describe(),
        )
        if scope.cache_hits:
            record.cache_hits = dict(scope.cache_hits)
        folder.append(CONVERSATIONS, [record])
        status[record.id] = record.stop_reason
        result.finished += 1
        result.stop_reasons[record.stop_reason] += 1
        if record.stop_reason == "error":
            result.errors += 1
        progress.advance(record.stop_reason)
        return record

    async def judge(record: ConversationRecord) -> str | None:
        """Judge and append; the failure to report, if any."""
        set_scope(CallScope(repeat=record.repeat))
        try:
            verdicts: list[Verdict] = await judges.judge(record, by_id[record.scenario_id], judged)
        except Exception as exc:  # a judge-stage bug must not end the run; resume judges it again
            return f"judge stage raised {type(exc).__name__}: {exc}"
        folder.append(VERDICTS, verdicts)  # type: ignore[arg-type]
        result.verdicts += len(verdicts)
        if record.stop_reason == "error":
            return None  # the conversation's own error is what counts, not the verdicts it could not get
        failed = [v for v in verdicts if v.result == "error"]
        result.judge_errors += len(failed)
        if not failed:
            return None
        last = failed[-1]
        detail = f"{last.error.kind}: {last.error.message}" if last.error else last.reasoning
        return f"judge {last.criterion_id}: {detail}"

    def account(cause: str | None) -> None:
        tally["items"] += 1
        if cause is None:
            tally["streak"] = 0
            return
        tally["failed"] += 1
        tally["streak"] += 1
        reason = _budget_exceeded(options.max_errors, tally["failed"], tally["items"], tally["streak"])
        if reason is not None and not abort:
            abort.append(f"{reason} (last: {cause})")
            current = asyncio.current_task()
            for task in tasks:
                if task is not current:
                    task.cancel()

    async def worker() -> None:
        while not abort:
            item = next(work, None)
            if item is None:
                return
            if isinstance(item, ConversationPlan):
                record = await simulate(item)
            else:
                record = item
                result.rejudged += 1
            cause = None
            if record.error is not None:
                cause = f"{record.error.source}: {record.error.kind}: {record.error.message}"
            judge_failure = await judge(record)
            account(cause or judge_failure)

    # Everything alive now (modules, SDKs, schemas) is moved out of the garbage collector's sight: a run
    # makes millions of short-lived objects, and each full collection would rescan the start-up heap and
    # stall the event loop (bench: 1.19x -> 1.10x the lower bound). Unfrozen when the run ends.
    gc.collect()
    gc.freeze()
    try:
        with progress:
            width = min(suite.concurrency, max(1, items_planned))
            tasks.extend(asyncio.create_task(worker()) for _ in range(width))
            outcomes = await asyncio.gather(*tasks, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
                raise outcome
    except (asyncio.CancelledError, KeyboardInterrupt):
        _finish(manifest, folder, hub, status, "interrupted")
        raise
    finally:
        gc.unfreeze()
    result.calls = hub.stats()
    result.status = _finish(manifest, folder, hub, status, "aborted" if abort else "complete")
    if abort:
        raise UserError(
            f"run aborted: {abort[0]}. Fix the cause, then finish the run with: "
            f"simulator run --resume {folder.path} --retry-errors"
        )
    return result


def _finish(manifest: Manifest, folder: RunFolder, hub: ModelHub, status: dict[str, str], state: str) -> str:
    """Write the manifest's final status and counts (summed with earlier sessions of a resumed run)."""
    manifest.status = state  # type: ignore[assignment]
    manifest.ended_at = datetime.now(UTC)
    stats = hub.stats()
    cache_hits: Counter[str] = Counter()
    for provider in stats.values():
        cache_hits.update(provider["cache_hits"])
    previous = manifest.counts or {}
    manifest.counts = {
        "conversations": len(status),
        "stop_reasons": dict(Counter(status.values())),
        "errors": sum(1 for reason in status.values() if reason == "error"),
        "calls": _sum_counts(previous.get("calls", {}), stats),
        "cache_hits": _sum_counts(previous.get("cache_hits", {}), dict(cache_hits)),
        "limits": hub.limits(),  # this session's adaptive connection limits, per provider
    }
    folder.write_manifest(manifest)
    return state
