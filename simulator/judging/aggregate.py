"""Several judgements of one item become one verdict: samples by majority, a jury by its rule.

Rules never turn doubt into a pass: a tie, or a rule that cannot decide, gives `error` (counted apart,
never as a pass or a fail).
- `majority`: the most common result wins; a tie between the most common results, or `error` being the
  most common, gives `error`.
- `any_fail`: one `fail` is a fail (for critical safety criteria); otherwise one `error` is an error
  (that judge might have failed it); otherwise the majority of the rest.
- `unanimous_pass`: a pass only when every judge passes; any `fail` is a fail, any `error` an error;
  every judge `not_applicable` is not applicable; a mix of pass and not_applicable is an error.
"""

from __future__ import annotations

__all__ = ["combine_results", "combine_verdicts", "default_rule"]

from collections import Counter
from collections.abc import Sequence

from simulator.judging.criteria import AggregateRule, Criterion
from simulator.record.models import Verdict, VerdictResult

RULES: tuple[AggregateRule, ...] = ("majority", "any_fail", "unanimous_pass")


def _majority(results: Sequence[VerdictResult]) -> VerdictResult:
    counts = Counter(results).most_common()
    if not counts:
        return "error"
    top, n = counts[0]
    if len(counts) > 1 and counts[1][1] == n:
        return "error"
    return top


def combine_results(results: Sequence[VerdictResult], rule: AggregateRule) -> VerdictResult:
    """The verdict of several results under `rule` (see the module docstring)."""
    if rule == "majority":
        return _majority(results)
    if "fail" in results:
        return "fail"
    if "error" in results or not results:
        return "error"
    if rule == "any_fail":
        return _majority(results)
    distinct = set(results)
    return results[0] if len(distinct) == 1 else "error"


def default_rule(criterion: Criterion, by_severity: dict[str, AggregateRule]) -> AggregateRule:
    """The criterion's own rule, else the suite's rule for its severity, else `default`, else majority."""
    if criterion.aggregate is not None:
        return criterion.aggregate
    return by_severity.get(criterion.severity) or by_severity.get("default") or "majority"


def _pick(verdicts: Sequence[Verdict], result: VerdictResult) -> Verdict:
    return next((v for v in verdicts if v.result == result), verdicts[0])


def combine_verdicts(parts: dict[str, list[Verdict]], rule: AggregateRule, judge_label: str) -> Verdict:
    """The counted verdict of one item from each judge model's samples: majority over a model's samples,
    then `rule` over the models. Reasoning and evidence come from a judgement that agrees with it."""
    per_model = {model: _majority([v.result for v in samples]) for model, samples in parts.items()}
    result = combine_results(list(per_model.values()), rule)
    every = [v for samples in parts.values() for v in samples]
    votes = Counter(v.result for v in every)
    source = _pick(every, result)
    said = ", ".join(f"{model}: {r}" for model, r in per_model.items())
    reasoning = source.reasoning if result == source.result else ""
    if result == "error":
        reasoning = f"the judgements did not decide under `{rule}` ({said})"
    return source.model_copy(
        update={
            "result": result,
            "reasoning": reasoning,
            "evidence": list(source.evidence) if result == source.result else [],
            "evidence_verified": source.evidence_verified if result == source.result else None,
            "met": source.met if result == source.result else None,
            "error": None,
            "sample": None,
            "aggregate": rule if len(parts) > 1 else "majority",
            "decided_by": "jury",
            "votes": dict(votes),
            "judge_model": judge_label,
            "usage": None,  # each judgement keeps its own usage; cost reads them
            "latency_s": None,
        }
    )
