"""Sampled judging of collected conversations with the suite's criteria, and the review queue it fills.

The judge set is the suite's (`make_judge_stage`, the stage `simulator run` and `simulator judge` use), so
a live conversation is judged exactly as a simulated one. Verdicts go to the conversation's run folder;
every failure, and a seeded share of passes (calibration), go to the folder's `review.jsonl`, the desk's
review queue (`/label` with sampling `review`), where a clinician confirms or rejects them.
"""

from __future__ import annotations

__all__ = ["LiveJudge"]

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.api.judging import JudgeStage, render_transcript_block
from simulator.collect.sampling import Budget, SamplingPolicy, Spend
from simulator.collect.supervise import LOGGER, describe
from simulator.config.scenario import Scenario
from simulator.record.folder import RunFolder
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.redact import safe_json
from simulator.record.selection import counted

_FAILURES_KEPT = 20  # the last judgings that raised, named in /status

REVIEW = "review.jsonl"
VALIDATION_TRIES = 2  # a judge answer that is not a valid verdict is asked once more


@dataclass
class Job:
    folder: RunFolder
    record: ConversationRecord
    reasons: list[str]
    # Not sampled: only its outcome is recorded, read in code (docs/outcome-sources.md), at no cost.
    outcome_only: bool = False
    # The expected outcome level the trace carried (`--expected-attribute`), compared like a scenario's.
    expected: str | None = None


def _scenario(record: ConversationRecord, expected: dict[str, str] | None = None) -> Scenario:
    return Scenario(
        id=record.scenario_id,
        persona="a real user (collected conversation)",
        goal="unknown: this conversation was collected from the live service, not simulated",
        tags=list(record.tags),
        expected=dict(expected or {}),
    )


def worst_case(stage: JudgeStage, record: ConversationRecord, prices: Any) -> Spend:
    """The most one conversation's judging can cost: calls, and dollars at one token per prompt byte."""
    criteria = stage.applicable(record.tags)
    if not criteria or not stage.jury:
        return Spend()
    block = render_transcript_block(record.turns)
    calls = 0
    dollars = 0.0
    for judge in stage.jury:
        for criterion in criteria:
            request = judge.request(block, criterion)
            prompt = len((request.system or "").encode()) + sum(
                len(m.content.encode()) for m in request.messages
            )
            tries = stage.samples * VALIDATION_TRIES
            calls += tries
            if prices is not None:
                found = prices.lookup(judge.model_spec)
                if found is None:
                    raise ValueError(f"the judge model {judge.model_spec} has no price")
                price = found[1]
                dollars += tries * (prompt * price.input + request.max_tokens * price.output) / 1_000_000
    return Spend(calls, dollars)


def _actual(verdicts: list[Verdict], prices: Any) -> Spend:
    calls, dollars = 0, 0.0
    for verdict in verdicts:
        if verdict.usage is None:
            continue
        calls += verdict.usage.calls or 1
        if prices is not None and verdict.judge_model:
            found = prices.lookup(verdict.judge_model)
            if found is not None:
                dollars += prices.cost(found[1], verdict.usage)
    return Spend(calls, dollars)


class LiveJudge:
    """A bounded queue of sampled conversations and the workers that judge them within the budget."""

    def __init__(
        self,
        stage: JudgeStage,
        policy: SamplingPolicy,
        budget: Budget,
        prices: Any,
        *,
        concurrency: int = 4,
        queue_size: int = 1000,
        hub: Any = None,
    ) -> None:
        self.hub = hub  # the providers' clients, closed when the judge stops
        self.stage = stage
        self.policy = policy
        self.budget = budget
        self.prices = prices
        self.concurrency = concurrency
        self.queue: asyncio.Queue[Job] = asyncio.Queue(queue_size)
        self.counts = {
            "sampled": 0,
            "judged": 0,
            "over_budget": 0,
            "queue_full": 0,
            "reviewed": 0,
            "failed": 0,
        }
        self.failures: list[str] = []  # the last few judgings that raised: the conversation and why
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self.tasks = [asyncio.create_task(self._worker()) for _ in range(self.concurrency)]

    async def stop(self) -> None:
        """Stop the workers (conversations still queued are not judged: docs/collect.md)."""
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks = []
        if self.hub is not None:
            await self.hub.aclose()

    async def drain(self) -> None:
        """Wait until every queued conversation is judged (or refused)."""
        await self.queue.join()

    def offer(self, folder: RunFolder, record: ConversationRecord, signals: dict[str, Any]) -> list[str]:
        """Queue a conversation when the policy samples it; the reasons (empty: not sampled)."""
        reasons = self.policy.reasons(signals)
        if not reasons and not self.stage.outcome_in_code:
            return []
        try:
            expected = signals.get("expected")
            job = Job(folder, record, reasons, outcome_only=not reasons, expected=expected)
            self.queue.put_nowait(job)
            self.counts["sampled"] += bool(reasons)
        except asyncio.QueueFull:
            self.counts["queue_full"] += 1
            return []
        return reasons

    async def _worker(self) -> None:
        while True:
            job = await self.queue.get()
            try:
                await self.judge(job)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                self.failed(job, exc)
            finally:
                self.queue.task_done()

    def failed(self, job: Job, exc: BaseException) -> None:
        """A judging that raised (anything, SystemExit from a judge's code too: a worker that died would
        leave `drain` waiting forever): said with the conversation and run it was, counted in the status's
        `judge.failed` (the health figure), and its id kept with the last few failures; the worker goes on."""
        self.counts["failed"] += 1
        where = f"{job.record.id} of {job.folder.path.name}"
        self.failures = [*self.failures[-(_FAILURES_KEPT - 1) :], f"{where}: {describe(exc)}"]
        LOGGER.warning(
            "collect: judging %s failed (%s); it is not judged, the judge goes on", where, describe(exc)
        )

    async def judge(self, job: Job) -> list[Verdict]:
        """Judge one sampled conversation within the budget; write verdicts and review items. A conversation
        not sampled gets its outcome verdict alone (read in code: nothing to budget, nothing to review)."""
        record = job.record
        outcome = self.stage.outcome
        scenario = _scenario(
            record, {outcome.config.key: job.expected} if outcome is not None and job.expected else None
        )
        if job.outcome_only:
            verdicts = await self.stage.outcome_only(record, scenario)
            job.folder.append_verdicts(verdicts)
            return verdicts
        worst = worst_case(self.stage, record, self.prices)
        day = self.budget.reserve(record.id + "@" + job.folder.path.name, worst)
        if day is None:
            self.counts["over_budget"] += 1
            return []
        verdicts = await self.stage.judge(record, scenario, set())
        self.budget.settle(day, record.id + "@" + job.folder.path.name, _actual(verdicts, self.prices))
        job.folder.append_verdicts(verdicts)
        self.counts["judged"] += 1
        self._review(job, counted(verdicts))
        return verdicts

    def _review(self, job: Job, verdicts: list[Verdict]) -> None:
        items = []
        for verdict in verdicts:
            if verdict.result == "fail":
                why = "fail"
            elif verdict.result == "pass" and self.policy.review_pass(
                f"{verdict.conversation_id}:{verdict.criterion_id}"
            ):
                why = "calibration"
            else:
                continue
            items.append(
                {
                    "conversation_id": verdict.conversation_id,
                    "criterion_id": verdict.criterion_id,
                    "why": why,
                    "sampled": job.reasons,
                }
            )
        if items:
            append_review(job.folder.path, items)
            self.counts["reviewed"] += len(items)


def append_review(folder: Path, items: list[dict[str, Any]]) -> None:
    text = "".join(safe_json(i, ensure_ascii=False, separators=(",", ":")) + "\n" for i in items)
    with (folder / REVIEW).open("a", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
