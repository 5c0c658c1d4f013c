"""One LLM call per criterion per conversation, returning a typed verdict whose evidence is checked in code.

The judge asks for structured output (each provider's own mechanism); the answer is validated with
pydantic, and an invalid one gets exactly one corrective retry that shows the model its error. A judge
that still fails, or whose provider fails after the client's retries, is recorded as `error`: never as a
pass or a fail.
"""

from __future__ import annotations

__all__ = [
    "POINTS_SCHEMA",
    "VERDICT_SCHEMA",
    "JudgeOutput",
    "LLMJudge",
    "not_applicable_verdict",
    "not_judged_verdict",
]

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from simulator.judging.criteria import Criterion
from simulator.judging.evidence import verify_evidence
from simulator.judging.prompt import build_judge_request, render_transcript_block, transcript_messages
from simulator.models import AnswerModel, empty_list
from simulator.providers.base import ModelRequest, ProviderError
from simulator.providers.hub import ModelClient
from simulator.providers.structured import Answer, ask_validated
from simulator.record.models import ConversationRecord, ErrorInfo, Verdict
from simulator.record.transcript import Usage

JudgeResult = Literal["pass", "fail", "not_applicable"]

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "description": "why, in a few sentences, written before the result"},
        "evidence": {
            "type": "array",
            "items": {"type": "string"},
            "description": "exact quotes from the transcript that justify the result",
        },
        "result": {"type": "string", "enum": ["pass", "fail", "not_applicable"]},
    },
    "required": ["reasoning", "evidence", "result"],
    "additionalProperties": False,
}

POINTS_SCHEMA: dict[str, Any] = {
    **VERDICT_SCHEMA,
    "properties": {
        **VERDICT_SCHEMA["properties"],
        "result": {"type": "string", "enum": ["met", "not_met", "not_applicable"]},
    },
}

VERDICT_FORM = (
    '{"reasoning": "<a few sentences>", "evidence": ["<exact quote>", ...], '
    '"result": "pass" | "fail" | "not_applicable"}'
)


POINTS_FORM = (
    '{"reasoning": "<a few sentences>", "evidence": ["<exact quote>", ...], '
    '"result": "met" | "not_met" | "not_applicable"}'
)


class JudgeOutput(AnswerModel):
    """What a judge model must answer: reasoning first, then evidence quotes, then the result."""

    reasoning: str
    evidence: list[str] = Field(default_factory=empty_list)
    result: JudgeResult

    @field_validator("result", mode="before")
    @classmethod
    def _plain_result(cls, value: Any) -> Any:
        """Accept `Not applicable`, `not-applicable`, ` PASS ` for the three results."""
        if isinstance(value, str):
            return "_".join(value.strip().lower().replace("-", " ").split())
        return value

    @field_validator("evidence", mode="before")
    @classmethod
    def _one_quote_is_a_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [value] if value.strip() else []
        return value


class PointsOutput(JudgeOutput):
    """A rubric item's answer: whether the behaviour it describes is present."""

    result: Literal["met", "not_met", "not_applicable"]  # type: ignore[assignment]


def verdict_base(
    record: ConversationRecord, criterion: Criterion, judge_set_hash: str, judge_model: str | None
) -> dict[str, Any]:
    """The fields every verdict of one (conversation, criterion) shares."""
    return {
        "conversation_id": record.id,
        "scenario_id": record.scenario_id,
        "repeat": record.repeat,
        "criterion_id": criterion.id,
        "kind": "llm",
        "severity": criterion.severity,
        "category": criterion.category,
        "judge_model": judge_model,
        "judge_set_hash": judge_set_hash,
        "judged_at": datetime.now(UTC),
        "points": criterion.points,
    }


def not_judged_verdict(
    record: ConversationRecord, criterion: Criterion, judge_set_hash: str, reason: str
) -> Verdict:
    """A criterion that was deliberately not judged (no judge model, an errored conversation), and why."""
    return Verdict(
        **verdict_base(record, criterion, judge_set_hash, None), result="not_judged", reasoning=reason
    )


def not_applicable_verdict(
    record: ConversationRecord, criterion: Criterion, judge_set_hash: str, reason: str
) -> Verdict:
    """A criterion that cannot apply, decided in code (`applies_when`) without asking a judge."""
    return Verdict(
        **verdict_base(record, criterion, judge_set_hash, None),
        result="not_applicable",
        reasoning=reason,
        decided_by="applies_when",
    )


@dataclass
class LLMJudge:
    """Judges conversations against criteria with one model, through the shared provider client."""

    client: ModelClient
    model_spec: str  # provider:model, as recorded in verdicts
    model: str  # the bare model name the provider is called with
    judge_set_hash: str
    temperature: float | None = 0.0
    max_tokens: int = 1024

    def request(self, transcript_block: str, criterion: Criterion) -> ModelRequest:
        return build_judge_request(
            self.model,
            transcript_block,
            criterion,
            output_schema=VERDICT_SCHEMA if criterion.points is None else POINTS_SCHEMA,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )

    async def judge(
        self, record: ConversationRecord, criterion: Criterion, transcript_block: str | None = None
    ) -> Verdict:
        """Judge one conversation against one criterion; failures come back as `error` verdicts."""
        block = transcript_block if transcript_block is not None else render_transcript_block(record.turns)
        request = self.request(block, criterion)
        base = {**verdict_base(record, criterion, self.judge_set_hash, self.model_spec), "decided_by": "llm"}
        points = criterion.points is not None
        try:
            if points:
                answer: Answer[Any] = await ask_validated(self.client, request, PointsOutput, POINTS_FORM)
            else:
                answer = await ask_validated(self.client, request, JudgeOutput, VERDICT_FORM)
        except ProviderError as exc:
            return Verdict(
                **base,
                result="error",
                reasoning=f"the judge model call failed: {exc}",
                error=ErrorInfo(source="judge", kind=exc.kind, message=str(exc)),
            )
        output, usage, latency = answer.output, answer.usage, answer.latency_s
        if output is None:
            return Verdict(
                **base,
                result="error",
                reasoning=f"the judge answered twice without a valid verdict; last answer: {answer.text[:300]!r}",
                usage=usage,
                latency_s=latency,
                error=ErrorInfo(source="judge", kind="invalid_output", message=answer.problem),
            )
        messages = [text for _, text in transcript_messages(record.turns)]
        if points:
            return self._points_verdict(base, criterion, output, messages, usage, latency)
        evidence, verified = verify_evidence(output.evidence, messages, output.result)
        return Verdict(
            **base,
            result=output.result,
            reasoning=output.reasoning,
            evidence=evidence,
            evidence_verified=verified,
            usage=usage,
            latency_s=latency,
        )

    @staticmethod
    def _points_verdict(
        base: dict[str, Any],
        criterion: Criterion,
        output: PointsOutput,
        messages: list[str],
        usage: Usage,
        latency: float,
    ) -> Verdict:
        """A rubric item's verdict: met or not met, mapped to pass / fail by the sign of its points."""
        met = None if output.result == "not_applicable" else output.result == "met"
        if met is None:
            result: Any = "not_applicable"
        else:
            result = criterion.met_result if met else ("pass" if criterion.met_result == "fail" else "fail")
        # A quote is required where the behaviour is shown (met), not for its absence.
        evidence, verified = verify_evidence(output.evidence, messages, "pass" if met else "not_applicable")
        return Verdict(
            **base,
            result=result,
            met=met,
            reasoning=output.reasoning,
            evidence=evidence,
            evidence_verified=verified,
            usage=usage,
            latency_s=latency,
        )
