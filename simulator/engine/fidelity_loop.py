"""Run a conversation, audit its simulated user, and keep it or play it again (`user.fidelity`).

With `on_fail: keep_and_flag` the conversation is kept and its failed fidelity checks flag it in the report;
with `regenerate` it is discarded and played again, up to `max_regenerations` times (the last attempt is
kept, flagged, whatever it scored), and the reasons are counted in the record like character breaks.
"""

from __future__ import annotations

__all__ = ["run_audited"]

from collections.abc import Callable
from typing import Any

from simulator.engine.conversation import ConversationPlan, run_conversation
from simulator.judging.fidelity import FidelityAuditor
from simulator.record.models import ConversationRecord, Verdict
from simulator.record.transcript import Usage
from simulator.spec.suite import FidelityConfig
from simulator.users.base import SimulatedUser


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
        users: list[SimulatedUser] = []

        def tracked(
            plan: ConversationPlan, attempt: int, users: list[SimulatedUser] = users
        ) -> SimulatedUser:
            user = make_user(plan, attempt)
            users.append(user)
            return user

        record = await run_conversation(plan, tracked, bots, first_attempt=next_attempt, **options)
        next_attempt += len(record.character_breaks) + 1
        knows = getattr(users[-1], "fact_provenance", None) if users else None
        audit = await auditor.audit(record, plan.scenario, knows(record.turns) if knows else None)
        record.provenance = audit.provenance
        if audit.usage.calls:
            record.usage_by_role["audit"] = record.usage_by_role.get("audit", Usage()) + audit.usage
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
