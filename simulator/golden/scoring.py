"""Scoring golden replies: the verdict (exact match or assertions) and similarity metrics that gate nothing.

An item sampled k times passes only if every sample passes; a sample whose bot raised is an `error`, never
a pass or a fail. One failing sample makes the item fail; errors without a failure make it `error`.
"""

from __future__ import annotations

__all__ = [
    "GOLDEN_SCHEMA_VERSION",
    "METRICS",
    "Gate",
    "ItemResult",
    "ItemVerdict",
    "SampleResult",
    "aggregate_samples",
    "error_sample",
    "parse_gate",
    "score_reply",
]

from statistics import fmean
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from simulator.bots.base import BotError
from simulator.errors import UserError
from simulator.golden.items import GoldenItem, ItemKind
from simulator.judging.assertions import check_assertions
from simulator.judging.text_metrics import difflib_ratio, exact_match, rouge_l, token_f1
from simulator.record.models import ErrorInfo

GOLDEN_SCHEMA_VERSION = 1

ItemVerdict = Literal["pass", "fail", "error"]
Metric = Literal["token_f1", "rouge_l", "difflib_ratio", "exact_match"]
METRICS: tuple[Metric, ...] = ("token_f1", "rouge_l", "difflib_ratio", "exact_match")


class SampleResult(BaseModel):
    """One sample of one item: the bot's reply, its metrics, and its verdict (None when the bot errored)."""

    model_config = ConfigDict(extra="forbid")

    sample: int
    messages: list[str] = Field(default_factory=list)
    reply: str = ""
    # The bot's replies to the item's context user turns, in order (joined messages per turn).
    context_replies: list[str] = Field(default_factory=list)
    error: ErrorInfo | None = None
    passed: bool | None = None
    exact_match: bool | None = None
    token_f1: float | None = None
    rouge_l: float | None = None
    difflib_ratio: float | None = None
    # None when the item has no assertions.
    assertions_passed: bool | None = None
    failures: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)
    latency_s: float | None = None


class ItemResult(BaseModel):
    """One line of `results.jsonl`: an item's samples, mean metrics and overall verdict."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = GOLDEN_SCHEMA_VERSION
    index: int
    item_id: str
    intent: str
    kind: ItemKind
    verdict: ItemVerdict
    samples: list[SampleResult]
    n_pass: int
    n_fail: int
    n_error: int
    # Passing samples over samples that were scored (errors excluded); None when every sample errored.
    sample_pass_rate: float | None
    # Means over scored samples (exact_match as the share of samples matching).
    exact_match: float | None
    token_f1: float | None
    rouge_l: float | None
    difflib_ratio: float | None
    assertions_passed: bool | None
    failures: list[str] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)

    @property
    def reply(self) -> str:
        """The first scored sample's reply (what tables quote)."""
        return next((s.reply for s in self.samples if s.error is None), "")


def score_reply(
    item: GoldenItem,
    messages: list[str],
    *,
    sample: int = 0,
    context_replies: list[str] | None = None,
    latency_s: float | None = None,
) -> SampleResult:
    """Score one reply (the bot's messages for the item's user message) against the item."""
    reply = "\n".join(messages)
    em = exact_match(reply, item.reference)
    outcome = None if item.assertions.is_empty else check_assertions(item.assertions, reply)
    if item.kind == "exact":
        passed = em
        failures = [] if em else [f'not an exact match for the reference "{item.reference}"']
        evidence = [] if em else [reply]
    else:
        assert outcome is not None  # validation guarantees an assert item asserts something
        passed, failures, evidence = outcome.passed, outcome.failures, outcome.evidence
    return SampleResult(
        sample=sample,
        messages=list(messages),
        reply=reply,
        context_replies=list(context_replies or []),
        passed=passed,
        exact_match=em,
        token_f1=token_f1(reply, item.reference),
        rouge_l=rouge_l(reply, item.reference),
        difflib_ratio=difflib_ratio(reply, item.reference),
        assertions_passed=None if outcome is None else outcome.passed,
        failures=failures,
        evidence=evidence,
        latency_s=latency_s,
    )


def error_sample(sample: int, exc: BaseException, context_replies: list[str] | None = None) -> SampleResult:
    """A sample whose bot raised: recorded as an error, with no verdict and no metrics."""
    kind = exc.kind if isinstance(exc, BotError) else type(exc).__name__
    error = ErrorInfo(source="bot", kind=kind, message=str(exc))
    return SampleResult(sample=sample, error=error, context_replies=list(context_replies or []))


def _mean(values: list[float]) -> float | None:
    return fmean(values) if values else None


def aggregate_samples(item: GoldenItem, index: int, samples: list[SampleResult]) -> ItemResult:
    """Combine an item's samples: fail if any sample fails, else error if any errored, else pass."""
    scored = [s for s in samples if s.error is None]
    n_pass = sum(1 for s in scored if s.passed)
    n_fail = len(scored) - n_pass
    n_error = len(samples) - len(scored)
    verdict: ItemVerdict = "fail" if n_fail else ("error" if n_error or not samples else "pass")
    first_fail = next((s for s in scored if not s.passed), None)
    shown = first_fail or (scored[0] if scored else None)
    assertion_results = [s.assertions_passed for s in scored if s.assertions_passed is not None]
    return ItemResult(
        index=index,
        item_id=item.item_id,
        intent=item.intent,
        kind=item.kind,
        verdict=verdict,
        samples=samples,
        n_pass=n_pass,
        n_fail=n_fail,
        n_error=n_error,
        sample_pass_rate=n_pass / len(scored) if scored else None,
        exact_match=_mean([float(bool(s.exact_match)) for s in scored]),
        token_f1=_mean([s.token_f1 for s in scored if s.token_f1 is not None]),
        rouge_l=_mean([s.rouge_l for s in scored if s.rouge_l is not None]),
        difflib_ratio=_mean([s.difflib_ratio for s in scored if s.difflib_ratio is not None]),
        assertions_passed=all(assertion_results) if assertion_results else None,
        failures=list(shown.failures) if shown else [],
        evidence=list(shown.evidence) if shown else [],
    )


class Gate(BaseModel):
    """A similarity gate (metric >= threshold): reported next to the verdict, never used as the verdict."""

    model_config = ConfigDict(extra="forbid")

    metric: Metric = "token_f1"
    threshold: float = Field(default=0.5, ge=0.0, le=1.0)

    def __str__(self) -> str:
        return f"{self.metric}:{self.threshold:g}"

    def passes(self, result: ItemResult) -> bool | None:
        """Whether the item's mean metric reaches the threshold; None when the item has no score (error)."""
        value = getattr(result, self.metric)
        return None if value is None else value >= self.threshold


def parse_gate(text: str) -> Gate:
    """Parse `metric:threshold` (for example `token_f1:0.5`); a bad one is a UserError naming the choices."""
    metric, sep, threshold = text.partition(":")
    metric = metric.strip()
    if metric not in METRICS:
        raise UserError(f"--gate {text!r}: the metric must be one of {', '.join(METRICS)}")
    try:
        value = float(threshold) if sep else 0.5
    except ValueError:
        raise UserError(f"--gate {text!r}: the threshold must be a number between 0 and 1") from None
    if not 0.0 <= value <= 1.0:
        raise UserError(f"--gate {text!r}: the threshold must be between 0 and 1")
    return Gate.model_validate({"metric": metric, "threshold": value})
