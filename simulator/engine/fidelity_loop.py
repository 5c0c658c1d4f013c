"""Run a conversation, audit its simulated user, and keep it or play it again (`user.fidelity`).

With `on_fail: keep_and_flag` the conversation is kept and its failed fidelity checks flag it in the report;
with `regenerate` it is discarded and played again, up to `max_regenerations` times (the last attempt is
kept, flagged, whatever it scored), and the reasons are counted in the record like character breaks.
"""

from __future__ import annotations

__all__ = ["run_audited", "run_flagged"]

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from simulator.config.suite import FidelityConfig
from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.judging.fidelity import Audit, FidelityAuditor
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.transcript import Usage
from simulator.users.base import SimulatedUser

T = TypeVar("T")


async def _play(
    plan: ConversationPlan,
    make_user: Callable[[ConversationPlan, int], SimulatedUser],
    bots: Any,
    first_attempt: int,
    **options: Any,
) -> tuple[ConversationRecord, Any]:
    """One conversation, and what its last simulated user knows of its facts (None for an LLM user)."""
    users: list[SimulatedUser] = []

    def tracked(plan: ConversationPlan, attempt: int) -> SimulatedUser:
        user = make_user(plan, attempt)
        users.append(user)
        return user

    record = await run_conversation(plan, tracked, bots, first_attempt=first_attempt, **options)
    knows = getattr(users[-1], "fact_provenance", None) if users else None
    return record, knows(record.turns) if knows else None


def _keep_audit(record: ConversationRecord, audit: Audit) -> None:
    """The audit's provenance and usage, written into the record."""
    record.provenance = audit.provenance
    if audit.usage.calls:
        record.usage_by_role["audit"] = record.usage_by_role.get("audit", Usage()) + audit.usage


async def run_flagged(
    plan: ConversationPlan,
    make_user: Callable[[ConversationPlan, int], SimulatedUser],
    bots: Any,
    auditor: FidelityAuditor,
    then: Callable[[ConversationRecord], Awaitable[T]],
    **options: Any,
) -> tuple[ConversationRecord, list[Verdict], T]:
    """`keep_and_flag`: the conversation, then its audit and `then(record)` (the judges) at the same time.

    Nothing waits on the audit when its result cannot discard the conversation, so it is off the critical
    path: it reads the same transcript as the judges and writes only the record's provenance and usage,
    which the judges do not read. Each side runs in its own task (its own call scope)."""
    record, known = await _play(plan, make_user, bots, 0, **options)
    audit, after = await asyncio.gather(auditor.audit(record, plan.scenario, known), then(record))
    _keep_audit(record, audit)
    return record, audit.verdicts, after


async def run_audited(
    plan: ConversationPlan,
    make_user: Callable[[ConversationPlan, int], SimulatedUser],
    bots: Any,
    auditor: FidelityAuditor,
    config: FidelityConfig,
    **options: Any,
) -> tuple[ConversationRecord, list[Verdict]]:
    """The kept conversation (with provenance and regeneration reasons) and its fidelity verdicts."""
    regenerations: list[str] = []
    breaks: list[str] = []
    discarded = Usage()
    next_attempt = 0
    rounds = config.max_regenerations + 1 if config.on_fail == "regenerate" else 1
    for round_number in range(rounds):
        record, known = await _play(plan, make_user, bots, next_attempt, **options)
        next_attempt += len(record.character_breaks) + 1
        audit = await auditor.audit(record, plan.scenario, known)
        _keep_audit(record, audit)
        breaks += record.character_breaks
        if not audit.failed or round_number == rounds - 1:
            record.character_breaks = breaks
            record.fidelity_regenerations = regenerations
            if discarded.calls:
                record.usage_by_role["discarded"] = record.usage_by_role.get("discarded", Usage()) + discarded
            return record, audit.verdicts
        regenerations.append(", ".join(audit.failed))
        discarded = sum(record.usage_by_role.values(), discarded)
    raise AssertionError("unreachable: the last round always returns")
