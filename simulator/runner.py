"""Run a suite: plan scenario x repeat, run conversations concurrently, judge each, append as they finish."""

from __future__ import annotations

__all__ = ["RunOptions", "RunResult", "latest_by_id", "run_suite"]

import asyncio
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.bots import make_bot_factory
from simulator.conversation import ConversationPlan, run_conversation
from simulator.errors import UserError
from simulator.llm import ModelHub, resolve_user_model
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


@dataclass
class RunOptions:
    out: Path | None = None  # the run folder to create; default runs/<run-id>
    resume: bool = False  # reopen `out` and finish what it lacks
    retry_errors: bool = False  # with resume: run errored conversations again
    progress: bool = True
    max_errors: float | None = None  # a count (>= 1) or a fraction (< 1) of finished conversations


@dataclass
class RunResult:
    folder: Path
    status: str
    stop_reasons: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    finished: int = 0
    skipped: int = 0
    verdicts: int = 0


def latest_by_id(records: Iterable[ConversationRecord]) -> dict[str, ConversationRecord]:
    """The last record per conversation id: a retried conversation supersedes its errored first try."""
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
            {"id": s.id, "file": s._source, "line": s._line, "sha256": file_hashes[s._source]}
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
        return LLMUser(
            client,
            model,
            render_user_prompt(plan.scenario),
            suite.user.temperature,
            suite.user.max_tokens,
            record_raw=suite.record_raw,
        )

    return llm


def _too_many_errors(errors: int, finished: int, limit: float | None) -> bool:
    if limit is None or errors == 0:
        return False
    if limit >= 1:
        return errors >= limit
    return finished >= 10 and errors / finished > limit


async def run_suite(suite: Suite, scenarios: list[Scenario], options: RunOptions) -> RunResult:
    """Run every planned conversation not already recorded; return what happened. Never loses a record."""
    from simulator.judging.stage import make_judge_stage

    hub = ModelHub.for_suite(suite)
    user_model = resolve_user_model(suite.user.model)
    make_user = _user_factory(suite, hub, user_model)
    bots = make_bot_factory(suite, hub)
    judges = make_judge_stage(suite, scenarios, hub)
    plans = [ConversationPlan(s, r) for s in scenarios for r in range(suite.runs)]

    if options.resume:
        assert options.out is not None
        folder = RunFolder.open(options.out)
        manifest = folder.read_manifest()
        done = latest_by_id(folder.conversations())
        judged = {(v.conversation_id, v.criterion_id) for v in folder.verdicts()}
        manifest.resumed_at.append(datetime.now(UTC))
    else:
        run_id = new_run_id(suite.name)
        path = options.out or Path("runs") / run_id
        manifest = _manifest(suite, scenarios, path.name, user_model, judges.describe(), len(plans))
        folder = RunFolder.create(path, manifest)
        done, judged = {}, set()

    todo: list[ConversationPlan] = []
    rejudge: list[ConversationRecord] = []
    for plan in plans:
        record = done.get(plan.id)
        if record is None or (options.retry_errors and record.stop_reason == "error"):
            todo.append(plan)
        elif judges.pending(record, judged):
            rejudge.append(record)  # simulated before the crash, judged only in part
    result = RunResult(folder=folder.path, status="running", skipped=len(plans) - len(todo))
    by_id = {s.id: s for s in scenarios}
    manifest.status = "running"
    folder.write_manifest(manifest)

    progress = RunProgress(total=len(todo), enabled=options.progress)
    queue: asyncio.Queue[ConversationPlan] = asyncio.Queue()
    for plan in todo:
        queue.put_nowait(plan)
    abort: list[str] = []

    async def judge_and_write(record: ConversationRecord) -> None:
        verdicts: list[Verdict] = await judges.judge(record, by_id[record.scenario_id], judged)
        folder.append(VERDICTS, verdicts)  # type: ignore[arg-type]
        result.verdicts += len(verdicts)

    async def worker() -> None:
        while not abort:
            try:
                plan = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            record = await run_conversation(
                plan,
                make_user,
                bots,
                max_character_breaks=suite.user.max_character_breaks,
                user_model=user_model,
                bot_name=suite.bot.describe(),
            )
            folder.append(CONVERSATIONS, [record])
            result.finished += 1
            result.stop_reasons[record.stop_reason] += 1
            if record.stop_reason == "error":
                result.errors += 1
            progress.advance(record.stop_reason)
            if _too_many_errors(result.errors, result.finished, options.max_errors):
                cause = record.error.message if record.error else "unknown"
                abort.append(f"{result.errors} of {result.finished} conversations failed (last: {cause})")
                return
            await judge_and_write(record)

    try:
        with progress:
            for record in rejudge:
                await judge_and_write(record)
            await asyncio.gather(*(worker() for _ in range(min(suite.concurrency, max(1, len(todo))))))
    except (asyncio.CancelledError, KeyboardInterrupt):
        manifest.status = "interrupted"
        manifest.ended_at = datetime.now(UTC)
        folder.write_manifest(manifest)
        raise
    finally:
        await hub.aclose()
        closer = getattr(bots, "aclose", None)
        if closer is not None:
            await closer()

    manifest.status = "aborted" if abort else "complete"
    manifest.ended_at = datetime.now(UTC)
    manifest.counts = {
        "conversations": len(latest_by_id(folder.conversations())),
        "stop_reasons": dict(Counter(r.stop_reason for r in latest_by_id(folder.conversations()).values())),
    }
    folder.write_manifest(manifest)
    result.status = manifest.status
    if abort:
        raise UserError(f"run aborted, too many errors: {abort[0]}; the run so far is in {folder.path}")
    return result
