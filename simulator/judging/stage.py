"""The judging stage: code checks plus one LLM judge per applicable criterion, for each finished conversation.

The runner calls it after each conversation; `simulator judge RUN` calls it again on a stored run. Every
verdict is tagged with the judge set's hash (prompt, criteria, judge model and settings, code-check
version), so a changed rubric is judged again and the older verdicts stay in place, comparable.
Without a judge model the code checks still run and each LLM criterion is recorded as `not_judged`.
"""

from __future__ import annotations

__all__ = ["JudgeStage", "judge_set_hash", "make_judge_stage"]

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from simulator.judging.code_checks import CODE_CHECKS_VERSION, code_check_ids, code_verdicts
from simulator.judging.criteria import Criterion, load_criteria
from simulator.judging.hygiene import same_family_warnings
from simulator.judging.llm_judge import LLMJudge, not_judged_verdict
from simulator.judging.prompt import JUDGE_PROMPT_TEMPLATE, judge_prompt_hash, render_transcript_block
from simulator.providers.hub import ModelHub, call_scope, resolve_user_model
from simulator.record.hashing import sha256_text
from simulator.record.manifest import CriterionEntry, JudgeSet, PromptEntry
from simulator.record.models import ConversationRecord, Verdict
from simulator.spec.scenario import Scenario
from simulator.spec.suite import Suite

NO_MODEL = "no judge model configured (set judges.model in the suite or pass --judge-model)"


def judge_set_hash(
    criteria: list[Criterion], model: str | None, temperature: float | None, max_tokens: int
) -> str:
    """The hash of everything that decides a verdict, except the conversation itself."""
    payload = {
        "prompt": judge_prompt_hash(),
        "code_checks": CODE_CHECKS_VERSION,
        "model": model,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "criteria": sorted(c.canonical() for c in criteria),
    }
    return sha256_text(json.dumps(payload, sort_keys=True))


class JudgeStage:
    """Judges one conversation at a time; skips (conversation, criterion) pairs already judged."""

    def __init__(
        self,
        criteria: list[Criterion],
        judge: LLMJudge | None,
        set_hash: str,
        scenarios: list[Scenario],
        settings: dict[str, Any],
        warnings: list[str],
    ) -> None:
        self.criteria = criteria
        self.llm = judge
        self.judge_set_hash = set_hash
        self.scenarios = {s.id: s for s in scenarios}
        self.settings = settings
        self.warnings = warnings

    def describe(self) -> JudgeSet:
        """This judge set as the manifest records it: settings, prompt hash and every criterion's wording."""
        return JudgeSet(
            hash=self.judge_set_hash,
            **self.settings,
            prompt_hash=judge_prompt_hash(),
            code_checks=CODE_CHECKS_VERSION,
            criteria=[
                CriterionEntry(
                    id=c.id,
                    criterion=c.criterion,
                    **{"pass": c.pass_},
                    fail=c.fail,
                    not_applicable=c.not_applicable,
                    file=c._source,
                    line=c._line,
                    sha256=sha256_text(c.canonical()),
                    severity=c.severity,
                    category=c.category,
                    applies_to=c.applies_to,
                )
                for c in self.criteria
            ],
            warnings=self.warnings,
            not_judged_reason=None if self.llm is not None or not self.criteria else NO_MODEL,
            judged_at=datetime.now(UTC),
        )

    @staticmethod
    def prompt() -> PromptEntry:
        """The judge prompt template and its hash, for the manifest."""
        return PromptEntry(template=JUDGE_PROMPT_TEMPLATE, hash=judge_prompt_hash())

    def applicable(self, tags: list[str]) -> list[Criterion]:
        """The LLM criteria that apply to a scenario with these tags."""
        return [c for c in self.criteria if c.applies(tags)]

    def expected_ids(self, record: ConversationRecord) -> list[str]:
        """Every criterion id this stage writes for the conversation."""
        scenario = self.scenarios.get(record.scenario_id)
        tags = scenario.tags if scenario is not None else record.tags
        code = code_check_ids(scenario) if scenario is not None else []
        return code + [c.id for c in self.applicable(tags)]

    def pending(self, record: ConversationRecord, judged: set[tuple[str, str]]) -> bool:
        """True when some verdict of this conversation is still missing."""
        return any((record.id, cid) not in judged for cid in self.expected_ids(record))

    async def judge(
        self, record: ConversationRecord, scenario: Scenario, judged: set[tuple[str, str]]
    ) -> list[Verdict]:
        """Code checks and LLM criteria for one conversation, skipping the pairs in `judged`."""
        verdicts = [
            v
            for v in code_verdicts(record, scenario, self.judge_set_hash)
            if (record.id, v.criterion_id) not in judged
        ]
        todo = [c for c in self.applicable(scenario.tags) if (record.id, c.id) not in judged]
        if not todo:
            return verdicts
        if record.stop_reason == "error":
            cause = f" ({record.error.source}: {record.error.message})" if record.error else ""
            reason = f"the conversation ended in an error{cause}; nothing to judge"
            return verdicts + [not_judged_verdict(record, c, self.judge_set_hash, reason) for c in todo]
        if self.llm is None:
            return verdicts + [not_judged_verdict(record, c, self.judge_set_hash, NO_MODEL) for c in todo]
        llm = self.llm
        block = render_transcript_block(record.turns)
        # The repeat is part of a cached response's key: the runner and `simulator judge` must agree on it.
        with call_scope(repeat=record.repeat):
            # The first call writes the shared prefix to the provider's cache; the others then read it.
            first = await llm.judge(record, todo[0], block)
            rest = await asyncio.gather(*(llm.judge(record, c, block) for c in todo[1:]))
        return [*verdicts, first, *rest]


def _bot_model(suite: Suite) -> str | None:
    return getattr(suite.bot, "model", None) if suite.bot.type == "chat" else None


def make_judge_stage(
    suite: Suite, scenarios: list[Scenario], hub: ModelHub, *, warn: bool = True
) -> JudgeStage:
    """The stage for a suite: its criteria (judges.paths), its judge model or none, and hygiene warnings."""
    config = suite.judges
    criteria = load_criteria([suite.resolve(p) for p in config.paths]) if config.paths else []
    model = config.model
    set_hash = judge_set_hash(criteria, model, config.temperature, config.max_tokens)
    judge = None
    if model is not None and criteria:  # no criteria to judge: no provider (and no API key) needed
        client, bare = hub.for_role("judge").client(model)  # the cache is enabled per role
        judge = LLMJudge(client, model, bare, set_hash, config.temperature, config.max_tokens)
    warnings = same_family_warnings(
        model, {"bot": _bot_model(suite), "simulated user": resolve_user_model(suite.user.model)}
    )
    if warn:
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if criteria and model is None:
            print(
                f"note: {len(criteria)} LLM criteria will be recorded as not judged: {NO_MODEL}",
                file=sys.stderr,
            )
    settings = {
        "model": model,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "paths": [str(Path(p)) for p in config.paths],
    }
    return JudgeStage(criteria, judge, set_hash, scenarios, settings, warnings)
