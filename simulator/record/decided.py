"""How a verdict was decided (`Verdict.decided_by`) for records written before the field existed.

For the v2 → v3 migration: the answer comes from the record's structure, never from its reasoning text.
- `kind` code or metric → `code` (a check in code);
- an aggregated verdict (`aggregate` set) → `jury` (several judgements combined by a rule);
- `not_judged` → None (nobody decided);
- an LLM-kind `not_applicable` with no `judge_model` → `applies_when` (only the applicability rule writes
  an LLM criterion's verdict without a model);
- a fidelity verdict with a `judge_model`, or an error (only the audit call fails) → `llm`, else `code`;
- any other LLM-kind verdict → `llm` (its errors included: the call was made).
"""

from __future__ import annotations

__all__ = ["decided_by_of"]

from typing import Any


def decided_by_of(raw: dict[str, Any]) -> str | None:
    """The `decided_by` of a verdict record (a JSON object) that does not say; its own value when it does."""
    if raw.get("decided_by") is not None:
        return str(raw["decided_by"])
    kind, result = raw.get("kind"), raw.get("result")
    if result == "not_judged":
        return None
    if kind in ("code", "metric"):
        return "code"
    if raw.get("aggregate") is not None:
        return "jury"
    if kind == "fidelity":
        return "llm" if raw.get("judge_model") or result == "error" else "code"
    if result == "not_applicable" and raw.get("judge_model") is None:
        return "applies_when"
    return "llm"
