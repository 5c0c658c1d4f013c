"""The fields every verdict decided in code shares: outcome, assertion, tool, environment and red-team checks
build their verdicts on this one base, so each says which conversation and check, when, and `decided_by: code`."""

from __future__ import annotations

__all__ = ["code_verdict_fields"]

from datetime import UTC, datetime
from typing import Any

from simulator.record.models import ConversationRecord


def code_verdict_fields(
    record: ConversationRecord, check_id: str, judge_set_hash: str, **meta: Any
) -> dict[str, Any]:
    """The shared fields of a code verdict on `record`; `meta` is its kind, severity and category."""
    return {
        "conversation_id": record.id,
        "scenario_id": record.scenario_id,
        "repeat": record.repeat,
        "criterion_id": check_id,
        "judge_set_hash": judge_set_hash,
        "judged_at": datetime.now(UTC),
        "decided_by": "code",
        **meta,
    }
