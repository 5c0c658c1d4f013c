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

from simulator.config.bot_kinds import engine_model
from simulator.config.scenario import Scenario
from simulator.config.suite import Suite
from simulator.config.tool_checks import ToolCheck, ToolChecksConfig, unknown_tool
from simulator.config.vocabulary import load_vocabulary
from simulator.errors import Problem, UserError, field_path
from simulator.judging.aggregate import combine_verdicts, default_rule
from simulator.judging.applicability import applicability
from simulator.judging.code_checks import CODE_CHECKS_VERSION, code_check_ids, code_verdicts
from simulator.judging.criteria import AggregateRule, Criterion, load_criteria
from simulator.judging.hygiene import same_family_warnings
from simulator.judging.llm_judge import LLMJudge, not_applicable_verdict, not_judged_verdict
from simulator.judging.outcome_reader import OutcomeReader
from simulator.judging.outcome_setup import outcome_hash_payload, suite_outcome_reader
from simulator.judging.prompt import JUDGE_PROMPT_TEMPLATE, judge_prompt_hash, render_transcript_block
from simulator.judging.tool_checks import TOOL_CHECKS_VERSION, ToolCheckContext, tool_verdicts
from simulator.providers.hub import ModelHub, call_scope, resolve_user_model
from simulator.record.hashing import sha256_text
from simulator.record.manifest import CriterionEntry, JudgeSet, PromptEntry
from simulator.record.models import ConversationRecord, DecidedOutcome, Verdict
from simulator.record.redact import redacted_record
from simulator.text.content import gives_outcome
from simulator.visible import echo

# A criterion's fields the manifest records as they are (CriterionEntry has the same names).
_RECORDED = {
    "id",
    "criterion",
    "pass_",
    "fail",
    "not_applicable",
    "severity",
    "category",
    "applies_to",
    "points",
    "aggregate",
}
NO_MODEL = "no judge model configured (set judges.model in the suite or pass --judge-model)"


def judge_set_hash(
    criteria: list[Criterion],
    model: str | None,
    temperature: float | None,
    max_tokens: int,
    *,
    models: list[str] | None = None,
    samples: int = 1,
    aggregate: dict[str, str] | None = None,
    tool_checks: dict[str, Any] | None = None,
    outcome: dict[str, Any] | None = None,
) -> str:
    """The hash of everything that decides a verdict, except the conversation itself. A jury, samples and
    rules join the hash only when used, so a one-model, one-sample set keeps the hash it always had."""
    payload: dict[str, Any] = {
        "prompt": judge_prompt_hash(points=any(c.points is not None for c in criteria)),
        "code_checks": CODE_CHECKS_VERSION,
        "model": model,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "criteria": sorted(c.canonical() for c in criteria),
    }
    if models and len(models) > 1:
        payload["models"] = models
    if samples > 1:
        payload["samples"] = samples
    if aggregate:
        payload["aggregate"] = aggregate
    if tool_checks is not None:  # only a suite with an environment or tool checks: others keep their hash
        payload["tool_checks"] = tool_checks
    if outcome is not None:  # only an outcome read from more than the bot's state: others keep their hash
        payload["outcome"] = outcome
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
        *,
        jury: list[LLMJudge] | None = None,
        samples: int = 1,
        rules: dict[str, AggregateRule] | None = None,
        tools: ToolCheckContext | None = None,
        outcome: OutcomeReader | None = None,
    ) -> None:
        self.criteria = criteria
        # How the suite's outcome is read (judging/outcome_reader.py); None without `outcome:`.
        self.outcome = outcome
        # The suite's tool checks and claim rules, and how advice is told apart (judging/tool_checks.py).
        self.tools = tools or ToolCheckContext(gives_advice=gives_outcome)
        self.llm = judge
        # Every judge model (the first is `llm`); each judges every item `samples` times.
        self.jury = jury if jury is not None else ([judge] if judge is not None else [])
        self.samples = samples
        self.rules = rules or {}
        self.judge_set_hash = set_hash
        self.scenarios = {s.id: s for s in scenarios}
        self.settings = settings
        self.warnings = warnings

    def describe(self) -> JudgeSet:
        """This judge set as the manifest records it: settings, prompt hash and every criterion's wording."""
        return JudgeSet(
            hash=self.judge_set_hash,
            **self.settings,
            prompt_hash=judge_prompt_hash(points=any(c.points is not None for c in self.criteria)),
            code_checks=CODE_CHECKS_VERSION,
            criteria=[
                CriterionEntry(
                    **c.model_dump(include=_RECORDED),
                    file=c._source,
                    line=c._line,
                    sha256=sha256_text(c.canonical()),
                    applies_when=c.applies_when.model_dump(exclude_defaults=True) if c.applies_when else None,
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
        code = code_check_ids(scenario) + self._tool_ids(scenario, record) if scenario is not None else []
        if scenario is not None and record.stop_reason != "error" and self._records_outcome(scenario):
            code.append(f"outcome.{self.outcome.config.key}")  # type: ignore[union-attr]
        return code + [c.id for c in self.applicable(tags)]

    def _records_outcome(self, scenario: Scenario) -> bool:
        """True when the decided outcome is recorded although the scenario expects none: outcome sources
        beyond the bot's state (the default keeps the verdicts it always wrote)."""
        config = self.outcome.config if self.outcome is not None else None
        return config is not None and not config.default_source and config.key not in scenario.expected

    def _tool_checks(self, scenario: Scenario) -> list[ToolCheck]:
        return [*self.tools.checks, *scenario.tool_checks]

    def _tool_ids(self, scenario: Scenario, record: ConversationRecord) -> list[str]:
        return [c.check_id for c in self._tool_checks(scenario)] + self.tools.claim_ids(record)

    def _tool_verdicts(self, record: ConversationRecord, scenario: Scenario) -> list[Verdict]:
        """The tool checks and claim rules (none for a suite without them: no verdict lines)."""
        checks = self._tool_checks(scenario)
        if not checks and not self.tools.claim_ids(record):
            return []
        if record.stop_reason == "error":
            cause = f" ({record.error.source}: {record.error.message})" if record.error else ""
            return [
                Verdict(
                    conversation_id=record.id,
                    scenario_id=record.scenario_id,
                    repeat=record.repeat,
                    criterion_id=check_id,
                    kind="code",
                    category="tool",
                    result="not_judged",
                    judge_set_hash=self.judge_set_hash,
                    reasoning=f"the conversation ended in an error{cause}; nothing to check",
                )
                for check_id in self._tool_ids(scenario, record)
            ]
        return tool_verdicts(record, checks, self.tools, self.judge_set_hash)

    def pending(self, record: ConversationRecord, judged: set[tuple[str, str]]) -> bool:
        """True when some verdict of this conversation is still missing."""
        return any((record.id, cid) not in judged for cid in self.expected_ids(record))

    async def judge(
        self, record: ConversationRecord, scenario: Scenario, judged: set[tuple[str, str]]
    ) -> list[Verdict]:
        """Code checks and LLM criteria for one conversation, skipping the pairs in `judged`."""
        outcome = await self._decide(record, scenario, judged)
        verdicts = [
            v
            for v in code_verdicts(record, scenario, self.judge_set_hash, outcome)
            + self._tool_verdicts(record, scenario)
            if (record.id, v.criterion_id) not in judged
        ]
        todo = [c for c in self.applicable(scenario.tags) if (record.id, c.id) not in judged]
        if not todo:
            return verdicts
        if record.stop_reason == "error":
            cause = f" ({record.error.source}: {record.error.message})" if record.error else ""
            reason = f"the conversation ended in an error{cause}; nothing to judge"
            return verdicts + [not_judged_verdict(record, c, self.judge_set_hash, reason) for c in todo]
        # `applies_when` is decided in code: no judge call, and no judge model needed.
        skipped = self._not_applicable(record, scenario, todo)
        verdicts += skipped
        decided = {v.criterion_id for v in skipped}
        ask = [c for c in todo if c.id not in decided]
        if not ask:
            return verdicts
        if not self.jury:
            return verdicts + [not_judged_verdict(record, c, self.judge_set_hash, NO_MODEL) for c in ask]
        # A judge model is shown the record as it is written (no secret, no credential: record.redact); the
        # checks in code above read what the bot said, so a key it leaks still fails a `must_not_match`.
        shown = redacted_record(record)
        block = render_transcript_block(shown.turns)
        judgements = await self._ask_all(shown, ask, block)
        for criterion in ask:
            verdicts += self._combine(criterion, [v for v in judgements if v.criterion_id == criterion.id])
        return verdicts

    @property
    def outcome_in_code(self) -> bool:
        """True when the suite's outcome is read beyond the bot's state by code alone (no `judge` source): it
        costs nothing to record it for every conversation, judged or not."""
        config = self.outcome.config if self.outcome is not None else None
        return config is not None and not config.default_source and "judge" not in config.sources

    async def outcome_only(self, record: ConversationRecord, scenario: Scenario) -> list[Verdict]:
        """The outcome verdict alone (for a live conversation not sampled for judging)."""
        outcome = await self._decide(record, scenario, set())
        if outcome is None:
            return []
        wanted = f"outcome.{outcome[0]}"
        return [
            v
            for v in code_verdicts(record, scenario, self.judge_set_hash, outcome)
            if v.criterion_id == wanted
        ]

    async def _decide(
        self, record: ConversationRecord, scenario: Scenario, judged: set[tuple[str, str]]
    ) -> tuple[str, DecidedOutcome] | None:
        """The outcome the suite's sources decide, when the scenario expects one and it is still to judge."""
        if self.outcome is None or record.stop_reason == "error":
            return None
        key = self.outcome.config.key
        wanted = key in scenario.expected or self._records_outcome(scenario)
        if not wanted or (record.id, f"outcome.{key}") in judged:
            return None
        return key, await self.outcome.decide(record)

    async def _ask_all(self, record: ConversationRecord, ask: list[Criterion], block: str) -> list[Verdict]:
        """Every (criterion, judge, sample) call, in that order. A judge whose provider caches prompts on
        request (`Provider.warm_prompt_cache`) asks the first criterion alone first, which writes the shared
        prefix for its other calls to read; every other call goes at once."""
        calls = [(c, j, s) for c in ask for j in self.jury for s in range(self.samples)]
        warm = len(calls) > len(self.jury)  # nothing to read the cache when each judge makes one call
        first = [k for k, (c, j, s) in enumerate(calls) if warm and c is ask[0] and s == 0 and _warms(j)]
        others = sorted(set(range(len(calls))) - set(first))
        done: dict[int, Verdict] = {}
        for keys in (first, others):
            answers = await asyncio.gather(
                *(self._one(j, record, c, block, s) for c, j, s in map(calls.__getitem__, keys))
            )
            done.update(zip(keys, answers, strict=True))
        return [done[k] for k in range(len(calls))]

    def _not_applicable(
        self, record: ConversationRecord, scenario: Scenario, todo: list[Criterion]
    ) -> list[Verdict]:
        """`not_applicable` verdicts, written in code, for criteria whose `applies_when` does not hold."""
        out = []
        for criterion in todo:
            why = applicability(
                criterion.applies_when, record, scenario.tags, scenario.expected, scenario.facts
            )
            if why is not None:
                out.append(not_applicable_verdict(record, criterion, self.judge_set_hash, why))
        return out

    @staticmethod
    async def _one(
        judge: LLMJudge, record: ConversationRecord, criterion: Criterion, block: str, sample: int
    ) -> Verdict:
        # The repeat is part of a cached response's key: the runner and `simulator judge` must agree on it;
        # the sample index makes each sample its own draw rather than a cache hit of the first.
        with call_scope(repeat=record.repeat, sample=sample):
            verdict = await judge.judge(record, criterion, block)
        verdict.sample = sample
        return verdict

    def _combine(self, criterion: Criterion, judgements: list[Verdict]) -> list[Verdict]:
        """One judgement stays as it is; several are all kept (as samples) plus the verdict that counts."""
        if len(judgements) == 1:
            judgements[0].sample = None
            return judgements
        parts: dict[str, list[Verdict]] = {}
        for verdict in judgements:
            parts.setdefault(verdict.judge_model or "", []).append(verdict)
        label = next(iter(parts)) if len(parts) == 1 else "jury:" + ",".join(parts)
        rule = default_rule(criterion, self.rules)
        return [*judgements, combine_verdicts(parts, rule, label)]


def _warms(judge: LLMJudge) -> bool:
    """True when the judge's provider is one to warm (see `JudgeStage._ask_all`)."""
    return bool(getattr(judge.client.provider, "warm_prompt_cache", False))


def _other_models(suite: Suite) -> dict[str, str | None]:
    """The bot's and the simulated users' models, by role: a judge of their family draws a warning."""
    others = {"bot": engine_model(suite.bot), "simulated user": resolve_user_model(suite.user.model)}
    if suite.user.models is not None:  # several simulated users: each one named (config/simulators.py)
        from simulator.config.simulators import simulator_models

        del others["simulated user"]
        others |= {f"simulated user '{level}'": m for level, m in simulator_models(suite).items()}
    return others


def make_judge_stage(
    suite: Suite, scenarios: list[Scenario], hub: ModelHub, *, warn: bool = True
) -> JudgeStage:
    """The stage for a suite: its criteria (judges.paths), its judge model or none, and hygiene warnings."""
    config = suite.judges
    criteria = load_criteria(suite.named_paths("judges")) if config.paths else []
    models = config.judge_models()
    model = models[0] if len(models) == 1 else config.model
    rules: dict[str, AggregateRule] = {str(k): v for k, v in config.aggregate.items()}
    tools = _tool_context(suite)
    _check_tool_names(suite, scenarios)
    set_hash = judge_set_hash(
        criteria,
        model,
        config.temperature,
        config.max_tokens,
        models=models,
        samples=config.samples,
        aggregate=dict(rules),
        tool_checks=_tool_hash_payload(suite, tools),
        outcome=outcome_hash_payload(suite),
    )
    jury = []
    if criteria:  # no criteria to judge: no provider (and no API key) needed
        for spec in models:
            client, bare = hub.for_role("judge").client(spec)  # the cache is enabled per role
            jury.append(LLMJudge(client, spec, bare, set_hash, config.temperature, config.max_tokens))
    others = _other_models(suite)
    warnings = [w for spec in models for w in same_family_warnings(spec, others)]
    if warn:
        for warning in warnings:
            echo(f"warning: {warning}", file=sys.stderr)
        if criteria and not models:
            echo(
                f"note: {len(criteria)} LLM criteria will be recorded as not judged: {NO_MODEL}",
                file=sys.stderr,
            )
    settings = {
        "model": model,
        "models": models if len(models) > 1 else [],
        "samples": config.samples,
        "aggregate": dict(rules),
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "paths": [str(Path(p)) for p in config.paths],
    }
    judge = jury[0] if jury else None
    outcome = suite_outcome_reader(suite, hub)
    return JudgeStage(
        criteria,
        judge,
        set_hash,
        scenarios,
        settings,
        warnings,
        jury=jury,
        samples=config.samples,
        rules=rules,
        tools=tools,
        outcome=outcome,
    )


def _tool_context(suite: Suite) -> ToolCheckContext:
    """The suite's tool checks and claim rules; advice is what the offline user takes for an outcome,
    with the suite's vocabulary."""
    vocabulary = load_vocabulary(suite.resolve(suite.user.vocabulary)) if suite.user.vocabulary else None
    config = suite.tool_checks or ToolChecksConfig()

    def gives_advice(text: str) -> bool:
        return gives_outcome(text, vocabulary) if vocabulary is not None else gives_outcome(text)

    return ToolCheckContext(
        gives_advice=gives_advice,
        claims=config.claim_rules(),
        checks=list(config.checks),
        quiet_claims=config.quiet_claims(suite.environment is not None),
    )


def _check_tool_names(suite: Suite, scenarios: list[Scenario]) -> None:
    """A scenario's tool check may not take the id of one of the suite's, and with an environment it must
    name one of its tools (the suite's own checks are checked when it loads): one UserError listing each."""
    env = suite.environment
    bot, user = (list(env.tools), list(env.user_tools)) if env is not None else ([], [])
    suite_ids = {c.check_id for c in suite.tool_checks.checks} if suite.tool_checks else set()
    problems = []
    for scenario in scenarios:
        for index, check in enumerate(scenario.tool_checks):
            whys = [unknown_tool(check, bot, user) if env is not None else None]
            if check.check_id in suite_ids:
                whys.append(
                    f"the suite has a check with the id {check.check_id} too; give this one its own `id`"
                )
            problems += [
                Problem(
                    scenario.source,
                    f"scenario {scenario.id}: {why}",
                    field=field_path(("tool_checks", index)),
                )
                for why in whys
                if why is not None
            ]
    if problems:
        raise UserError("invalid tool checks", problems)


def _tool_hash_payload(suite: Suite, tools: ToolCheckContext) -> dict[str, Any] | None:
    if suite.environment is None and suite.tool_checks is None:
        return None
    return {
        "version": TOOL_CHECKS_VERSION,
        "checks": [c.model_dump(mode="json", by_alias=True) for c in tools.checks],
        "claims": [r.model_dump(mode="json") for r in tools.claims],
    }
